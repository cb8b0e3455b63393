"""Rule make_cross_paper_table: every paper's systems under one protocol (docs/scoring.md)."""

from __future__ import annotations

from ..plan.jobs import CrossPaperJob
from .record import add_provenance


def run(job: CrossPaperJob) -> None:
    """The table and its legend (mmt_repro.tables.cross_paper), the job record in the legend."""
    from ..tables.cross_paper import make_cross_paper

    make_cross_paper(rows=list(job.rows), bleu=job.bleu, meteor=job.meteor, out_tsv=job.out, out_json=job.legend,
                     meteor_jar=job.meteor_jar, meta={"dataset": job.dataset})
    add_provenance(job.legend, job)
