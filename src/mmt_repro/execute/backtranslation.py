"""Rule assemble_backtranslation: (synthetic source, real target, image) training triples."""

from __future__ import annotations

from ..plan.jobs import BacktranslationJob


def run(job: BacktranslationJob) -> None:
    from ..corpora.backtranslation import assemble_backtranslation

    inp = job.inputs
    assemble_backtranslation(synthetic_sources=list(inp["synthetic"]), targets=list(inp["targets"]),
                             image_lists=list(inp["image_lists"]), codes=inp["codes"], out_src=job.out_src,
                             out_tgt=job.out_tgt, out_images=job.out_images)
