"""CoMMuTE's contrastive accuracy of a trained system (Futeral et al., ACL 2023).

:func:`score_commute` (``python -m mmt_repro commute``) reads one split of CoMMuTE's text
(:mod:`mmt_repro.corpora.commute`), prepares the English sentences and both translations with
the system's own text recipe (:class:`~mmt_repro.text.system_recipe.SystemRecipe`: the paper's
lowercasing, Moses tokenisation and BPE or WordPiece segmentation; a word-level system maps a
word outside its vocabulary to its ``<unk>``, counted in the result), turns each line's image
into the system's own kind of features (:func:`~mmt_repro.decode.system.extract_for_system`:
the extractor and scaling it was trained with), and forces both translations through the model
(:func:`~mmt_repro.decode.forced.forced_nll`). A line is right when the correct translation's
per-token mean NLL (the log of its perplexity) is below the incorrect one's
(:func:`~mmt_repro.metrics.commute.contrastive_accuracy`; a tie is a miss, as the authors'
``evaluate.py``).

:func:`score_commute_checkpoint` does the same for a checkpoint with its training job record
(what the workflow has), by exporting it to a temporary folder first.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

from ..corpora.commute import SPLITS, first_lines, read_commute
from ..io import DataError, atomic_write, write_lines
from ..metrics.commute import contrastive_accuracy
from ..text.system_recipe import SystemRecipe

log = logging.getLogger(__name__)


def _target_pair(split: str) -> str:
    return f"en-{SPLITS[split][0]}" if split in SPLITS else split


def score_commute(system: Path, commute: Path, split: str, out: Path | None = None, images: Path | None = None,
                  features_npy: Path | None = None, features_index: Path | None = None, device: str = "auto",
                  batch_size: int = 64, lines: int | None = None) -> dict:
    """CoMMuTE accuracy of the exported ``system`` on ``split`` (``en-de``, ``en-fr``, ``en-cs``,
    ``en-fr_dev``) of the release under ``commute`` (its first ``lines`` lines only, if given).
    A multimodal system needs ``images`` (the folder of the authors' ``images.tar.gz``, unpacked)
    or a feature store with one row per line (``features_npy``, ``features_index``). Writes the
    result (accuracy, counts, each line's two mean NLLs) as JSON to ``out`` and returns it."""
    from ..datasets.batching import ParallelData
    from ..settings import pair_langs
    from .forced import forced_nll, scoring_capable
    from .system import extract_for_system
    from .translate import load_for_decoding

    system = Path(system)
    recipe = SystemRecipe.load(system)
    data = first_lines(read_commute(commute, split), lines)
    pair = _target_pair(split)
    if recipe.pair != pair:
        raise DataError(system, f"translates {recipe.pair}; CoMMuTE's {split} is {pair}",
                        f"score it on the CoMMuTE split of its own pair ({', '.join(SPLITS)})")
    with tempfile.TemporaryDirectory(prefix="mmt_commute_") as tmp:
        work = Path(tmp)
        if images is not None:
            if features_npy is not None:
                raise DataError(images, "both images and a feature store were given", "give one of them")
            media = [Path(images) / name for name in data.images]
            missing = [m.name for m in media if not m.is_file()]
            if missing:
                raise DataError(images, f"lacks {len(missing)} of the {len(media)} images of {split} "
                                f"(e.g. {missing[0]})", "unpack the authors' images.tar.gz there "
                                "(manifest input commute_images)")
            features_npy, features_index = extract_for_system(system, media, work, device)
        model, _, sv, tv, feats, dev = load_for_decoding(system, system / "src_vocab.json", system / "tgt_vocab.json",
                                                         features_npy, features_index, device)
        ok, why = scoring_capable(model)
        if not ok:
            raise DataError(system, why, "CoMMuTE ranks translations by their probability: score a system "
                            "with a softmax output")
        src = write_lines(work / "src", recipe.prepare(data.src, "src"))
        nll = {}
        unk = 0
        for which in ("correct", "incorrect"):
            prepared = recipe.prepare(getattr(data, which), "tgt")
            unk += sum(tv.encode(line.split()).count(tv.unk_id) for line in prepared)
            tgt = write_lines(work / which, prepared)
            pairs = ParallelData(src, sv, tgt, tv, features=feats, langs=pair_langs(recipe.pair))
            total, n_tokens = forced_nll(model, pairs, dev, batch_size)
            nll[which] = (total / n_tokens).tolist()
    result = contrastive_accuracy(nll["correct"], nll["incorrect"])
    result.update(split=split, pair=pair, paper=recipe.paper, model=model.registry_name,
                  images=model.uses_visual, segmentation=recipe.tgt.subword,
                  tgt_unk_tokens=unk, correct_nll=nll["correct"], incorrect_nll=nll["incorrect"])
    log.info("CoMMuTE %s: %.2f %% (%d of %d lines; %d ties)", split, result["accuracy"], result["right"],
             result["n"], result["ties"])
    if out is not None:
        with atomic_write(out) as fh:
            json.dump(result, fh, indent=1, sort_keys=True)
    return result


def score_commute_checkpoint(checkpoint: Path, commute: Path, split: str, out: Path, images: Path | None = None,
                             record: Path | None = None, device: str = "auto", batch_size: int = 64,
                             lines: int | None = None) -> dict:
    """:func:`score_commute` of a trained checkpoint (its job record ``<stem>.job.json`` beside it
    unless ``record`` is given), exported to a temporary folder first."""
    from .system import export_system

    with tempfile.TemporaryDirectory(prefix="mmt_commute_system_") as tmp:
        export_system(Path(checkpoint), Path(tmp), record=record)
        return score_commute(Path(tmp), commute, split, out, images=images, device=device, batch_size=batch_size,
                             lines=lines)


__all__ = ["score_commute", "score_commute_checkpoint"]
