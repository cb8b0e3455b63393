"""Rule train_model: one training run, then its job record beside the checkpoint."""

from __future__ import annotations

from pathlib import Path

from ..plan.jobs import TrainJob
from .record import code_of, provenance, write_json


def run(job: TrainJob) -> None:
    """Train one system (resumes from ``job.last``), then write ``job.record``
    (<model>.job.json) with the model config as the checkpoint resolved it, and which code
    trained the weights (``code.trained_by``) and, when this run only restored a finished run's
    outputs, which code restored them (``code.restored_by``)."""
    from ..checkpoint import read_checkpoint
    from ..train.trainer import train

    summary = train(job, code=code_of(job))
    ckpt = read_checkpoint(Path(job.best))
    # A re-run for new code that finds the run finished restores its outputs: the record says
    # which code trained the weights and which restored them.
    code = {"trained_by": summary["trained_by_code"],
            "restored_by": code_of(job) if summary["restored"] else None}
    write_json(job.record, {**provenance(job), "code": code, "model": ckpt.get("model"),
                            "model_config_resolved": ckpt.get("model_config"),
                            "checkpoint_package_version": ckpt.get("package_version")})
