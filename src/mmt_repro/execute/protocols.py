"""Rule protocol_grid: a translation table's runs scored under every scoring protocol."""

from __future__ import annotations

from ..plan.jobs import ProtocolGridJob
from .record import add_provenance


def run(job: ProtocolGridJob) -> None:
    """The grid and its legend (mmt_repro.tables.protocols), the job record in the legend."""
    from ..tables.protocols import protocol_grid

    protocol_grid(
        translations=dict(job.translations), references=dict(job.references), protocols=list(job.protocols),
        lang=job.lang, out_tsv=job.out, out_json=job.legend, table_metrics=dict(job.table_metrics),
        scores=dict(job.scores), ref_subword=job.ref_subword, meteor_jar=job.meteor_jar,
        meta={"paper": job.paper, "table": job.table, "pair": job.pair},
    )
    add_provenance(job.legend, job)
