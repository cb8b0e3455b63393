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
    from ..train.trainer import train_from_files

    inp = job.inputs
    summary = train_from_files(
        model_name=job.model, model_config=dict(job.model_config), train_config=dict(job.train_config),
        src_vocab=inp["src_vocab"], tgt_vocab=inp["tgt_vocab"], train_src=inp["train_src"],
        train_tgt=inp["train_tgt"], val_src=inp["val_src"], val_tgt=inp["val_tgt"], val_ref=inp["val_ref"],
        best_checkpoint=job.best, last_checkpoint=job.last, curve=job.curve,
        train_features=(inp.get("train_npy"), inp.get("train_index")),
        val_features=(inp.get("val_npy"), inp.get("val_index")), device=job.device,
        init_checkpoint=inp.get("init"), train_image_list=inp.get("train_image_list"), subword=job.subword,
        resources=dict(job.resources), imports=list(job.imports), train_extras=dict(job.extras), pair=job.pair,
        tasks=list(job.tasks), code=code_of(job),
    )
    ckpt = read_checkpoint(Path(job.best))
    # A re-run for new code that finds the run finished restores its outputs: the record says
    # which code trained the weights and which restored them.
    code = {"trained_by": summary["trained_by_code"],
            "restored_by": code_of(job) if summary["restored"] else None}
    write_json(job.record, {**provenance(job), "code": code, "model": ckpt.get("model"),
                            "model_config_resolved": ckpt.get("model_config"),
                            "checkpoint_package_version": ckpt.get("package_version")})
