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

Reading never unpickles code: ``torch.load(weights_only=True)``, with the four NumPy names the
NumPy RNG state needs allowed (:data:`SAFE_GLOBALS`); a file that needs anything else is refused.

To hand a trained system to someone, :func:`export_checkpoint` (``python -m mmt_repro export``)
writes one folder: ``model.safetensors`` (the weights), ``config.json`` (model, its config,
vocabulary sizes and fingerprints, training config and progress, package version), the source
and target vocabularies (``src_vocab.json``, ``tgt_vocab.json``) and the training job record
(``job.json``: which text recipe and subword form the model reads). :func:`load_model` takes
such a folder as well as a checkpoint file; the optimiser state stays in the resume file
(``.last.pt``) only. The command adds the system's text recipe, decoding and feature recipe
(:func:`mmt_repro.decode.system.export_system`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import __version__
from .io import DataError, atomic_path
from .models import Vocabs, build_model

FORMAT = 2
#: What a checkpoint may hold besides tensors and plain containers: NumPy's RNG state (an array).
_MULTIARRAY = np._core.multiarray if hasattr(np, "_core") else np.core.multiarray  # NumPy 2 renamed it
SAFE_GLOBALS = [_MULTIARRAY._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32))]
#: Files of an exported folder.
EXPORT_WEIGHTS, EXPORT_CONFIG = "model.safetensors", "config.json"


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
    if path.is_dir():
        raise DataError(path, "is an exported folder, not a checkpoint file", "load it with load_model(folder)")
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS):
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unpickling failure means a bad (or unsafe) file
        raise DataError(path, f"not a readable checkpoint ({str(err).splitlines()[0][:300]}); files that need "
                        "code to load are refused", "delete it and re-run training") from err
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


@contextlib.contextmanager
def _initialisers_skipped():
    """``torch.nn.init``'s in-place initialisers as no-ops while a model is built whose every
    tensor its weights replace (transformers' ``no_init_weights`` does the same)."""
    names = [n for n in dir(torch.nn.init) if n.endswith("_") and not n.startswith("_")]
    saved = {n: getattr(torch.nn.init, n) for n in names}
    for n in names:
        setattr(torch.nn.init, n, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(torch.nn.init, n, f)


def _all_state_saved(model: torch.nn.Module) -> bool:
    """Whether the state dict holds every tensor of the model: no buffer left out of it (a
    sinusoidal table) and no tensor kept as a plain attribute."""
    keys = set(model.state_dict())
    named = {n for n, _ in itertools.chain(model.named_parameters(remove_duplicate=False),
                                           model.named_buffers(remove_duplicate=False))}
    return named <= keys and not any(isinstance(v, torch.Tensor) for m in model.modules() for v in vars(m).values())


def model_with_weights(name: str, config: dict, vocabs: Vocabs, weights: dict) -> torch.nn.Module:
    """Model ``name`` holding ``weights`` (a full state dict). It is built without drawing the
    random initialisation its weights overwrite (2 s on one CPU thread for Calixto et al.'s
    paper-size model, once per decoding job; no global RNG state is used) when its state dict
    holds every tensor it has; otherwise (a buffer left out of it, a tensor attribute, which an
    initialiser might have set) it is built the usual way. Either way the weights are loaded
    strictly, so a missing or unexpected key is refused."""
    with _initialisers_skipped():
        model = build_model(name, config, vocabs)
    if not _all_state_saved(model):
        model = build_model(name, config, vocabs)
    model.load_state_dict(weights)
    return model


def load_model(path: Path, expect_model: str | None = None, device: str | torch.device = "cpu"):
    """Rebuild a model from a checkpoint file, or from a folder written by
    :func:`export_checkpoint`, alone. Returns ``(model, checkpoint dict)`` (for a folder: its
    ``config.json`` with the weights under ``weights``)."""
    from .settings import import_model_modules

    path = Path(path)
    ckpt = read_export(path) if path.is_dir() else read_checkpoint(path)
    if expect_model is not None and ckpt["model"] != expect_model:
        raise DataError(
            path, f"checkpoint holds model {ckpt['model']!r}, expected {expect_model!r}", "point to the right checkpoint"
        )
    import_model_modules(ckpt.get("imports", ()))
    model = model_with_weights(ckpt["model"], ckpt["model_config"], Vocabs.from_dict(ckpt["vocabs"]), ckpt["weights"])
    model.to(device)
    model.eval()
    return model, ckpt


def export_checkpoint(checkpoint: Path, out_dir: Path, src_vocab: Path | None = None, tgt_vocab: Path | None = None,
                      record: Path | None = None) -> Path:
    """Write ``out_dir``: the model's weights as safetensors, ``config.json`` and the
    vocabularies and job record (by default those the job record beside ``checkpoint`` names:
    ``<stem>.job.json`` for ``<stem>.best.pt``). No optimiser state, nothing pickled."""
    import json
    import shutil

    from safetensors.torch import save_file

    checkpoint, out_dir = Path(checkpoint), Path(out_dir)
    ckpt = read_checkpoint(checkpoint)
    if record is None:
        guess = checkpoint.with_name(checkpoint.name.removesuffix(".best.pt").removesuffix(".pt") + ".job.json")
        record = guess if guess.exists() else None
    job = json.loads(Path(record).read_text(encoding="utf-8")) if record else None
    inputs = (job or {}).get("job", {}).get("inputs", {})
    src_vocab = src_vocab or inputs.get("src_vocab")
    tgt_vocab = tgt_vocab or inputs.get("tgt_vocab")
    if tgt_vocab is None:
        raise DataError(checkpoint, "no target vocabulary given and no job record beside the checkpoint names one",
                        "pass --tgt-vocab (and --src-vocab)")
    out_dir.mkdir(parents=True, exist_ok=True)
    # tied weights share storage; safetensors stores each tensor on its own (the loader re-ties)
    weights = {k: v.detach().clone().contiguous() for k, v in ckpt["weights"].items()}
    with atomic_path(out_dir / EXPORT_WEIGHTS) as tmp:
        save_file(weights, str(tmp), metadata={"format": "mmt-repro", "model": ckpt["model"]})
    config = {k: ckpt.get(k) for k in ("format", "package_version", "model", "model_config", "imports", "vocabs",
                                        "vocab", "train_config", "progress")}
    config["vocab_files"] = {"src": "src_vocab.json" if src_vocab else None, "tgt": "tgt_vocab.json"}
    with atomic_path(out_dir / EXPORT_CONFIG) as tmp:
        Path(tmp).write_text(json.dumps(config, indent=1, sort_keys=True, default=str), encoding="utf-8")
    for name, file in (("src_vocab.json", src_vocab), ("tgt_vocab.json", tgt_vocab), ("job.json", record)):
        if file:
            shutil.copyfile(file, out_dir / name)
    return out_dir


def read_export(folder: Path) -> dict:
    """``config.json`` of an exported folder with its safetensors weights under ``weights``."""
    import json

    from safetensors.torch import load_file

    folder = Path(folder)
    for name in (EXPORT_CONFIG, EXPORT_WEIGHTS):
        if not (folder / name).exists():
            raise DataError(folder / name, "missing from the exported model folder",
                            "export it again with `python -m mmt_repro export <checkpoint> <folder>`")
    try:
        config = json.loads((folder / EXPORT_CONFIG).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(folder / EXPORT_CONFIG, f"not valid JSON ({err})", "export the model again") from err
    if config.get("format") != FORMAT:
        raise DataError(folder / EXPORT_CONFIG, f"format {config.get('format')} is not {FORMAT}", "export it again")
    return {**config, "weights": load_file(str(folder / EXPORT_WEIGHTS)), "optimizer": None, "scheduler": None}
