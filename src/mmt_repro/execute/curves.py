"""Rule make_curves: the learning curves of a table's systems, as a table and a figure."""

from __future__ import annotations

from ..plan.jobs import CurvesJob


def run(job: CurvesJob) -> None:
    from ..tables.curves import make_curves

    make_curves(curves=dict(job.curves), paper=job.paper, table=job.table, pair=job.pair, test_set=job.test_set,
                out_tsv=job.out, out_png=job.png, out_pdf=job.pdf, note=job.note)
