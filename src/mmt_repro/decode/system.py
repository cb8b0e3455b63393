"""A trained system on new input: export it with its text recipe and its image features'
recipe, then translate raw sentences (and images or videos) with the exported folder.

:func:`export_system` (``python -m mmt_repro export``) writes the folder of
:func:`mmt_repro.checkpoint.export_checkpoint` (safetensors weights, ``config.json``,
vocabularies, ``job.json``) plus

* ``recipe.json`` and the files it reads (BPE codes, a WordPiece ``vocab.txt``):
  :class:`~mmt_repro.text.system_recipe.SystemRecipe`, read off the prepared files the job
  record names and checked on the run's own raw and prepared validation text;
* ``decode.json``: how the paper decodes the system (beam size, length bounds), the default of
  :func:`translate_raw`;
* for a multimodal system, ``features.json``: the feature set the model was trained on (its
  store's metadata: extractor or detector, layer, image size, weights, seed...) and how it was
  standardised, with the training split's statistics in ``features_stats.npz``.

:func:`translate_raw` (``python -m mmt_repro translate``) applies the recipe to raw sentences,
decodes, and writes detokenised text. Images (or videos) are turned into features by the
extractor the system was trained with (:func:`mmt_repro.features.grid.extract_features`,
:func:`~mmt_repro.features.regions.extract_regions`,
:func:`~mmt_repro.features.video.extract_video_features` with the recorded settings, then
:func:`~mmt_repro.features.standardize.standardize_store` with the recorded statistics); a
feature store as the workflow writes it can be given instead.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..checkpoint import export_checkpoint
from ..features.store import read_index
from ..io import DataError, atomic_path, read_lines, write_lines
from ..text.system_recipe import RECIPE_FILE, SystemRecipe, check_recipe, recipe_from_record, run_root

log = logging.getLogger(__name__)

FEATURES_FILE, STATS_FILE, DECODE_FILE = "features.json", "features_stats.npz", "decode.json"
#: The store metadata each kind of feature set is extracted with (the extractor's own arguments);
#: a feature set imported from someone else's files (weights ``pretrained``) cannot be made here.
_EXTRACT_KEYS = {
    "grid": ("extractor", "layer", "weights", "image_size", "seed"),
    "regions": ("backend", "weights", "max_boxes", "min_boxes", "conf_thresh", "full_image", "min_size", "max_size",
                "proposals", "nms_thresh", "config_file", "seed"),
    "video": ("weights", "n_segments", "frames_per_segment", "crop_size", "short_side", "mode", "fps", "seed"),
}


def _record_of(checkpoint: Path, record: Path | None) -> Path | None:
    if record is not None:
        return Path(record)
    guess = checkpoint.with_name(checkpoint.name.removesuffix(".best.pt").removesuffix(".pt") + ".job.json")
    return guess if guess.exists() else None


def export_system(checkpoint: Path, out: Path, src_vocab: Path | None = None, tgt_vocab: Path | None = None,
                  record: Path | None = None) -> dict:
    """Export ``checkpoint`` to the folder ``out`` with its text recipe and feature recipe.

    Paths in the job record (``<stem>.job.json`` beside the checkpoint unless ``record`` is
    given) are relative to the run folder it lies in. Returns what was written: ``recipe``
    (the lines of the run's validation text it was checked on, per side) and ``features``
    (the feature set's name, or None)."""
    checkpoint, out = Path(checkpoint), Path(out)
    record = _record_of(checkpoint, record)
    if record is None:
        export_checkpoint(checkpoint, out, src_vocab=src_vocab, tgt_vocab=tgt_vocab)
        log.warning("%s: no job record beside it, so the export has no text recipe; translate it with "
                    "--segmented (model-form input)", checkpoint)
        return {"recipe": None, "features": None, "decode": None}
    job = _read_job(record)
    root = run_root(record, job)
    inputs = job.get("inputs", {})
    src_vocab = src_vocab or (root / inputs["src_vocab"] if inputs.get("src_vocab") else None)
    tgt_vocab = tgt_vocab or (root / inputs["tgt_vocab"] if inputs.get("tgt_vocab") else None)
    recipe, files, checks = recipe_from_record(record)
    with tempfile.TemporaryDirectory(prefix="mmt_export_") as tmp:
        # everything made and checked in a staging folder before anything is written to ``out``
        staging = Path(tmp)
        for name, source in files.items():
            if isinstance(source, str):
                (staging / name).write_text(source, encoding="utf-8")
            else:
                shutil.copyfile(source, staging / name)
        checked = check_recipe(dataclasses.replace(recipe, folder=staging), checks)
        recipe.save(staging)
        features = _export_features(inputs, root, staging)
        decode = _export_decode(job, staging)
        export_checkpoint(checkpoint, out, src_vocab=src_vocab, tgt_vocab=tgt_vocab, record=record)
        earlier = (RECIPE_FILE, FEATURES_FILE, STATS_FILE, DECODE_FILE, "wordpiece_vocab.txt", *out.glob("bpe.*.codes"))
        for stale in earlier:
            if not (staging / Path(stale).name).exists():  # an earlier export's, into the same folder
                (out / Path(stale).name).unlink(missing_ok=True)
        for made in staging.iterdir():
            shutil.copyfile(made, out / made.name)
    return {"recipe": checked, "features": features, "decode": decode}


def _export_decode(job: dict, out: Path) -> dict | None:
    """``decode.json``: how the paper decodes the system (``config/papers/<paper>.yaml``'s
    ``decode`` with the system's own keys), the default of ``translate``; None when the
    repository has no such paper or system."""
    from ..settings import load_paper
    from ..text.recipes import PAPERS_DIR

    path = PAPERS_DIR / f"{job['paper']}.yaml"
    if not path.is_file():
        return None
    try:
        decode = dataclasses.asdict(load_paper(job["paper"], path).decode_for(job["system"]))
    except (KeyError, ValueError) as err:
        log.warning("%s: no decoding settings for system %s (%s); translate uses its defaults", path,
                    job.get("system"), err)
        return None
    (out / DECODE_FILE).write_text(json.dumps(decode, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return decode


def system_decode(system: Path, given: dict) -> dict:
    """The decoding settings of an exported system (``decode.json``) with ``given`` (values not
    None) on top."""
    path = Path(system) / DECODE_FILE
    base = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return {**base, **{k: v for k, v in given.items() if v is not None}}


def _read_job(record: Path) -> dict:
    try:
        return json.loads(Path(record).read_text(encoding="utf-8"))["job"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(record, f"not a readable training job record ({err})",
                        "give the <stem>.job.json written beside the checkpoint by the training") from err


def _train_store(inputs: dict) -> Path | None:
    """The training split's feature index of a job's inputs (a multi-task job: its first task's)."""
    if inputs.get("train_index"):
        return Path(inputs["train_index"])
    found = sorted(k for k in inputs if k.startswith("task_") and k.endswith("_index"))
    return Path(inputs[found[0]]) if found else None


def _export_features(inputs: dict, root: Path, out: Path) -> str | None:
    """``features.json`` and ``features_stats.npz`` of a multimodal system (None for text-only)."""
    from ..features.standardize import _sibling_lengths, feature_stats

    index = _train_store(inputs)
    if index is None:
        return None
    _, _, meta, key = read_index(root / index)
    kind = "constant" if meta.get("extractor") == "constant" else meta.get("kind")
    shape = meta.get("shape") or [None, None, None]
    if kind == "constant":  # a stand-in without images: the same block for every image
        extract, note = {"n_regions": shape[1], "dim": shape[2], "value": meta.get("value", 0.0)}, None
    elif kind in _EXTRACT_KEYS and meta.get("weights") != "pretrained":
        extract, note = {k: meta.get(k) for k in _EXTRACT_KEYS[kind]}, None
    else:  # imported (someone else's extractor) or of a kind not made here: a feature store is needed
        extract = None
        note = (f"the features were imported ({meta.get('backend') or meta.get('extractor')}, weights "
                f"{meta.get('weights')!r}), not extracted by this package: translate needs a store of the same "
                "features for the new images")
    scaling = "standardized" if "standardized" in meta else "centered" if "centered" in meta else None
    info = {"feature_set": index.parent.name, "kind": kind, "item": key, "extract": extract, "note": note,
            "feature_dim": meta.get("feature_dim") or shape[-1], "shape_per_item": shape[1:], "scaling": scaling,
            "stats": STATS_FILE if scaling else None, "trained_on": str(index),
            "given_boxes": meta.get("given_boxes")}
    if scaling:
        raw_npy = root / meta[scaling]["stats_from"]
        raw_index = raw_npy.with_name(raw_npy.stem + ".index.parquet")
        if not raw_npy.is_file():
            raise DataError(raw_npy, "the training features the system's store was scaled with are missing",
                            "export from the run folder that trained the system")
        stats = feature_stats(raw_npy, _sibling_lengths(raw_npy))
        raw_meta = read_index(raw_index)[2] if raw_index.is_file() else {}
        with atomic_path(out / STATS_FILE) as tmp:
            np.savez(tmp, mean=stats["mean"], std=stats["std"], n_vectors=np.int64(stats["n_vectors"]),
                     source=np.array(str(meta[scaling]["stats_from"])),
                     meta=np.array(json.dumps(raw_meta, sort_keys=True, default=str)))
    (out / FEATURES_FILE).write_text(json.dumps(info, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return info["feature_set"]


# --- translating new input ---------------------------------------------------------------------


def read_source(src: str | Path) -> list[str]:
    """Raw sentences of ``src`` (``-``: standard input), one a line."""
    if str(src) == "-":
        lines = sys.stdin.read().splitlines()
        if not lines:
            raise DataError("<stdin>", "no sentences on standard input", "give one sentence a line")
        return lines
    return read_lines(src)


def extract_for_system(system: Path, media: list[Path], work: Path, device: str = "auto",
                       boxes: Path | None = None) -> tuple[Path, Path]:
    """A feature store of ``media`` (image or video files, one per sentence) made as the system's
    training features were: the recorded extractor and settings, then the recorded scaling.
    ``boxes``: for a region feature set, a JSON ``{image file name: [[x1, y1, x2, y2], ...]}``
    whose boxes are pooled instead of detected ones (the grounded sets' training regions are
    pooled from their object boxes). Returns the store's ``.npy`` and index, under ``work``."""
    system = Path(system)
    path = system / FEATURES_FILE
    if not path.is_file():
        raise DataError(path, "the exported system records no feature set (a text-only system, or an old export)",
                        "translate without images, or export the system again")
    info = json.loads(path.read_text(encoding="utf-8"))
    if info.get("extract") is None:
        raise DataError(path, info.get("note") or f"records no extractor for {info.get('feature_set')}",
                        "give --features-npy and --features-index: a store of the same features, one row per sentence")
    missing = [str(m) for m in media if not Path(m).is_file()]
    if missing:
        raise DataError(missing[0], f"{len(missing)} of the {len(media)} media files do not exist",
                        "give existing files")
    media = [Path(m).resolve() for m in media]
    folder = Path(os.path.commonpath([m.parent for m in media]))
    listing = work / "media.txt"  # names relative to their common folder (the keys of a boxes file)
    write_lines(listing, [str(m.relative_to(folder)) for m in media])
    raw_npy, raw_index = work / "raw.npy", work / "raw.index.parquet"
    ex = info["extract"]
    given = {k: v for k, v in ex.items() if v is not None}  # a setting recorded as None is the default
    if info["kind"] == "constant":
        from ..features.constant import constant_features

        constant_features(listing, raw_npy, raw_index, **given)
    elif info["kind"] == "grid":
        from ..features.grid import extract_features

        extract_features(listing, folder, raw_npy, raw_index, extractor=ex["extractor"], layer=ex["layer"],
                         weights=ex["weights"], image_size=ex["image_size"], seed=ex.get("seed") or 0, device=device)
    elif info["kind"] == "regions":
        from ..features.regions import extract_regions

        if info.get("given_boxes") and boxes is None:
            log.warning("%s was trained on regions pooled from given boxes (%s); these images get detected boxes "
                        "instead: pass their boxes (a JSON {image: [[x1, y1, x2, y2], ...]}) to pool the same way",
                        system, info["given_boxes"])
        extract_regions(listing, folder, raw_npy, work / "raw.boxes.npy", raw_index, device=device,
                        given_boxes=boxes, **given)
    else:
        from ..features.video import extract_video_features

        extract_video_features(listing, folder, raw_npy, raw_index, device=device, **given)
    if not info.get("scaling"):
        return raw_npy, raw_index
    from ..features.standardize import standardize_store

    npy, index = work / "media.npy", work / "media.index.parquet"
    boxes = work / "raw.boxes.npy"
    standardize_store(raw_npy, raw_index, npy, index, stats_from=system / info["stats"],
                      in_boxes=boxes if boxes.is_file() else None,
                      out_boxes=work / "media.boxes.npy" if boxes.is_file() else None,
                      scale=info["scaling"] == "standardized")
    return npy, index


def translate_raw(system: Path, src: str | Path | None, out: str | Path | None, media: list[Path] | None = None,
                  features_npy: Path | None = None, features_index: Path | None = None, decode: dict | None = None,
                  device: str = "auto", boxes: Path | None = None) -> dict:
    """Translate raw sentences with an exported system: its recipe prepares ``src`` (a file;
    ``-`` or None: standard input; None for a captioning system, which reads no text), the model decodes as the paper
    does (``decode.json``; ``decode``: keys to change, e.g. ``beam_size``) (with the
    features of ``media`` extracted as in training, or a given feature store), and the output
    is restored to plain text (:meth:`SystemRecipe.restore`) and written to ``out`` (None:
    standard output). Returns the decode summary of :func:`mmt_repro.decode.translate.translate`."""
    from .translate import translate

    system = Path(system)
    if not system.is_dir():
        raise DataError(system, "is not an exported system folder (raw input needs its text recipe)",
                        "export it with `python -m mmt_repro export <checkpoint> <folder>`, or pass --segmented "
                        "with a model-form source")
    recipe = SystemRecipe.load(system)
    if media and features_npy:
        raise DataError(features_npy, "both media files and a feature store were given", "give one of them")
    with tempfile.TemporaryDirectory(prefix="mmt_translate_") as tmp:
        work = Path(tmp)
        src_file = None
        n = None
        if recipe.src is not None:
            lines = read_source("-" if src is None else src)
            n = len(lines)
            src_file = write_lines(work / "src.txt", recipe.prepare(lines, "src"))
        elif src is not None:
            raise DataError(system, f"the {recipe.pair} system captions images and reads no source text",
                            "give only the images")
        if media:
            if n is not None and len(media) != n:
                raise DataError(src, f"has {n} sentences but {len(media)} media files were given",
                                "give one image (or video) per sentence, in order")
            features_npy, features_index = extract_for_system(system, list(media), work, device, boxes)
        hyp = work / "hyp.txt"
        info = translate(checkpoint=system, src=src_file, out=hyp,
                         src_vocab=system / "src_vocab.json" if recipe.src is not None else None,
                         tgt_vocab=system / "tgt_vocab.json", features_npy=features_npy,
                         features_index=features_index, decode=system_decode(system, decode or {}),
                         subword="none", device=device, pair=recipe.pair)
        text = recipe.restore(read_lines(hyp), "tgt")
    if out is None or str(out) == "-":
        sys.stdout.write("".join(f"{line}\n" for line in text))
    else:
        write_lines(out, text)
    return info


__all__ = ["DECODE_FILE", "FEATURES_FILE", "RECIPE_FILE", "STATS_FILE", "export_system", "extract_for_system",
           "translate_raw"]
