"""Rule make_probe_table: a table's image-use probe (docs/probes.md)."""

from __future__ import annotations

from ..plan.jobs import ProbeJob


def run(job: ProbeJob) -> None:
    """Each probed multimodal system beside its text-only counterpart under every image condition."""
    from ..tables.probe import make_probe

    make_probe(scores=dict(job.scores), pairs=dict(job.pairs), out_tsv=job.out, paper=job.paper, table=job.table,
               pair=job.pair, metric=job.metric, note=job.note)
