"""The one checkpoint format of the project.

A checkpoint is a single ``torch.save`` file holding everything needed to rebuild the model
and to resume training exactly:

``format`` (int), ``package_version``, ``model`` (registry key), ``model_config`` (dict),
``imports`` (extra modules that register the model, see ``imports`` in a paper's settings),
``vocab`` (``{"src": fingerprint, "tgt": fingerprint, "src_size": n, "tgt_size": n}``),
``vocabs`` (sizes and special-token ids, :class:`~mmt_repro.models.base.Vocabs`),
``weights`` (state dict), ``optimizer``, ``scheduler`` (state dicts or None),
``progress`` (epoch, batch within epoch, step, best score, bad epochs, history), ``rng`` (Python,
NumPy and torch CPU/CUDA states) and ``train_config`` (dict).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import __version__
from .io import DataError, atomic_path
from .models import Vocabs, build_model

FORMAT = 2


def rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    path: Path,
    model: torch.nn.Module,
    vocab: dict[str, Any],
    optimizer=None,
    scheduler=None,
    progress: dict | None = None,
    train_config: dict | None = None,
    with_rng: bool = True,
    imports: list[str] | tuple[str, ...] = (),
) -> Path:
    """Write a checkpoint atomically (a killed job never leaves a half-written file)."""
    payload = {
        "format": FORMAT,
        "package_version": __version__,
        "model": model.registry_name,
        "model_config": dataclasses.asdict(model.config),
        "imports": list(imports),
        "vocabs": model.vocabs.to_dict(),
        "vocab": vocab,
        "weights": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "progress": progress or {},
        "rng": rng_state() if with_rng else None,
        "train_config": train_config or {},
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
    return Path(path)


def read_checkpoint(path: Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise DataError(path, "checkpoint does not exist", "train the model first (rule train_model)")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - any unpickling failure means a bad file
        raise DataError(path, f"not a readable checkpoint ({err})", "delete it and re-run training") from err
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise DataError(path, "not an mmt-repro checkpoint of format %d" % FORMAT, "re-train with this version")
    return ckpt


def check_vocab(ckpt: dict, path: Path, src_fingerprint: str | None, tgt_fingerprint: str | None) -> None:
    """Refuse a checkpoint trained with other vocabularies than the ones given."""
    for side, fp in (("src", src_fingerprint), ("tgt", tgt_fingerprint)):
        if fp is not None and ckpt["vocab"].get(side) != fp:
            raise DataError(
                path,
                f"checkpoint was trained with another {side} vocabulary "
                f"(fingerprint {ckpt['vocab'].get(side)}, given {fp})",
                "decode with the vocabulary the model was trained with, or re-train the model",
            )


def load_model(path: Path, expect_model: str | None = None, device: str | torch.device = "cpu"):
    """Rebuild a model from a checkpoint file alone. Returns ``(model, checkpoint dict)``."""
    from .settings import import_model_modules

    ckpt = read_checkpoint(path)
    if expect_model is not None and ckpt["model"] != expect_model:
        raise DataError(
            path, f"checkpoint holds model {ckpt['model']!r}, expected {expect_model!r}", "point to the right checkpoint"
        )
    import_model_modules(ckpt.get("imports", ()))
    model = build_model(ckpt["model"], ckpt["model_config"], Vocabs.from_dict(ckpt["vocabs"]))
    model.load_state_dict(ckpt["weights"])
    model.to(device)
    model.eval()
    return model, ckpt
