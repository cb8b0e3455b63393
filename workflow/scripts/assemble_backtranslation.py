"""Rule assemble_backtranslation: (synthetic source, real target, image) training triples."""

from mmt_repro.data.backtranslation import assemble_backtranslation
from mmt_repro.runtime import run_step

inp = snakemake.input
run_step(
    snakemake.log[0],
    snakemake.threads,
    assemble_backtranslation,
    synthetic_sources=list(inp.synthetic),
    targets=list(inp.targets),
    image_lists=list(inp.image_lists),
    codes=inp.codes,
    out_src=snakemake.output.src,
    out_tgt=snakemake.output.tgt,
    out_images=snakemake.output.images,
)
