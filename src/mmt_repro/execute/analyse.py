"""Rule analyse: one registered analysis of one run."""

from __future__ import annotations

from ..plan.jobs import AnalyseJob
from .record import add_provenance


def run(job: AnalyseJob) -> None:
    """One registered analysis of one run, with the job record."""
    from ..analyses.run import run_analysis

    run_analysis(name=job.name, inputs=job.input_kind, files=dict(job.inputs), out_json=job.out,
                 meta=dict(job.meta), imports=list(job.imports), options=dict(job.options))
    add_provenance(job.out, job)
