"""Training jobs for the tests: a :class:`~mmt_repro.plan.jobs.TrainJob` built from files, as the
plan builds one for the workflow, so the tests train through the one public seam
(``train(job) = fit(build_run(job))``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mmt_repro.plan.jobs import TrainJob


def write_store(folder: Path, name: str, array: np.ndarray) -> tuple[Path, Path]:
    """A feature store (``<name>.npy`` + its parquet index, one image name per row) of
    ``array`` (N, L, D); returns ``(npy, index)``."""
    from mmt_repro.features.store import write_index

    folder.mkdir(parents=True, exist_ok=True)
    npy, index = folder / f"{name}.npy", folder / f"{name}.index.parquet"
    np.save(npy, array)
    write_index(index, [f"img{k}.png" for k in range(len(array))], {"shape": list(array.shape)})
    return npy, index


def corpus_inputs(d: Path, stores: dict | None = None, *, src_vocab="src.json", tgt_vocab="tgt.json",
                  train="train", val="val", src="src", tgt="tgt", val_ref: Path | None = None) -> dict:
    """The job's ``inputs`` for a corpus in folder ``d`` (``train.src``/``train.tgt``,
    ``val.src``/``val.tgt``, vocabularies ``src.json``/``tgt.json``); ``stores``: ``{"train":
    (npy, index), "val": (npy, index)}`` for a model with images."""
    inputs = {"src_vocab": d / src_vocab, "tgt_vocab": d / tgt_vocab, "train_src": d / f"{train}.{src}",
              "train_tgt": d / f"{train}.{tgt}", "val_src": d / f"{val}.{src}", "val_tgt": d / f"{val}.{tgt}",
              "val_ref": val_ref or d / f"{val}.{tgt}"}
    if stores:
        (inputs["train_npy"], inputs["train_index"]), (inputs["val_npy"], inputs["val_index"]) = stores["train"], stores["val"]
    return {role: (str(v) if v is not None else None) for role, v in inputs.items()}


def train_job(out: Path, model: str, model_config: dict, train_config: dict, inputs: dict, *, pair: str = "",
              subword: str = "none", resources: dict | None = None, extras: dict | None = None,
              imports=(), tasks=(), device: str = "cpu", paper: str = "test", system: str = "test",
              seed: int | None = None) -> TrainJob:
    """The training job of ``model`` writing ``best.pt``, ``last.pt`` and ``curve.tsv`` in ``out``."""
    out = Path(out)
    return TrainJob(
        paper=paper, system=system, dataset="test", pair=pair, seed=int(train_config.get("seed", 1) if seed is None else seed),
        model=model, model_config=dict(model_config), train_config=dict(train_config), subword=subword,
        resources={k: str(v) for k, v in (resources or {}).items()},
        extras={k: str(v) for k, v in (extras or {}).items()}, imports=list(imports), tasks=list(tasks),
        inputs={k: v for k, v in inputs.items() if v is not None}, best=str(out / "best.pt"), curve=str(out / "curve.tsv"),
        last=str(out / "last.pt"), record=str(out / "best.job.json"), device=device,
    )
