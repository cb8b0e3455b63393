"""Rule make_table: one paper table, each row naming its runs."""

from __future__ import annotations

from ..plan.jobs import TableJob


def run(job: TableJob) -> None:
    """One paper table: our numbers beside the published ones, each row naming its runs."""
    from ..tables.build import make_table_from_files

    make_table_from_files(
        score_jsons=list(job.inputs["scores"]), paper=job.paper, table=job.table,
        published=job.inputs["published"], out_tsv=job.out, significance_json=job.inputs.get("significance"),
        note=job.note, unavailable_systems=dict(job.unavailable), not_comparable=dict(job.not_comparable),
        differences=dict(job.differences), unavailable_rows=list(job.unavailable_rows),
    )
