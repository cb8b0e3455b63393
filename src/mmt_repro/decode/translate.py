"""Translate a file with a trained checkpoint (greedy or beam), optionally with the images
shuffled across sentences (the incongruent-image condition of adversarial evaluation) or blank
(every feature zero, or the training split's average image: :mod:`mmt_repro.datasets.blank`);
dump attention weights and gates for figures."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import torch

from ..checkpoint import check_vocab, load_model
from ..datasets.batching import ParallelData, check_feature_dim
from ..datasets.blank import blank_images
from ..device import pick_device
from ..features.store import open_features
from ..io import DataError, atomic_path, atomic_write, write_lines
from ..settings import DecodeSettings, pair_langs
from ..text.vocab import Vocab
from .loop import decode_data, to_text

log = logging.getLogger(__name__)


def load_for_decoding(checkpoint, src_vocab, tgt_vocab, features_npy=None, features_index=None, device="auto",
                      direction: str = "forward"):
    """Model, checkpoint, vocabularies, feature store (None for text-only models) and device,
    after checking that they belong together (vocabulary fingerprints, features iff the model
    reads them, feature dimension). ``src_vocab`` is None for tasks without source text.
    ``direction="backward"``: decode a model that holds a backward (target -> source) model
    (:mod:`mmt_repro.models.base`); ``src_vocab`` is then the checkpoint's target vocabulary
    and ``tgt_vocab`` its source vocabulary."""
    dev = pick_device(device)
    model, ckpt = load_model(checkpoint, device=dev)
    try:
        model.set_direction(direction)
    except ValueError as err:
        raise DataError(checkpoint, str(err), "decode it forward, or point reverse_of at a bidirectional system") from err
    sv = Vocab.load(src_vocab) if src_vocab is not None else None
    tv = Vocab.load(tgt_vocab)
    fps = (sv.fingerprint() if sv is not None else None, tv.fingerprint())
    check_vocab(ckpt, checkpoint, *(fps if direction == "forward" else fps[::-1]))
    feats = open_features(features_npy, features_index)
    if model.uses_visual and feats is None and not getattr(model, "visual_optional", False):
        raise DataError(checkpoint, f"model {ckpt['model']} needs {model.visual} features", "pass the split's feature store")
    if feats is not None and not model.uses_visual:
        raise DataError(checkpoint, f"holds the text-only model {ckpt['model']}, but image features were given "
                        "(a checkpoint of another system?)", "re-train this system (rule train_model)")
    check_feature_dim(model, feats)
    return model, ckpt, sv, tv, feats, dev


def translate(
    checkpoint: Path,
    src: Path | None,
    out: Path,
    src_vocab: Path | None,
    tgt_vocab: Path,
    features_npy: Path | None = None,
    features_index: Path | None = None,
    decode: dict | None = None,
    subword: str = "none",
    shuffle_images_seed: int | None = None,
    device: str = "auto",
    stats_out: Path | None = None,
    direction: str = "forward",
    pair: str | None = None,
    blank: str | None = None,
    mean_npy: Path | None = None,
    mean_index: Path | None = None,
) -> dict:
    """Write one translation per source line (or per image, without source text) to ``out``, in
    the scoring form: ``subword`` segmentation (the paper recipe's, of the target language)
    merged back. ``decode``: :class:`~mmt_repro.settings.DecodeSettings` keys. ``stats_out``:
    a JSON of what decoding did (sentences, speed, empty hypotheses, hypotheses cut at
    max_len), which scoring reads to flag degenerate output. ``direction``: ``backward`` decodes
    the target-to-source model of a bidirectional checkpoint (see :func:`load_for_decoding`).
    ``pair``: the language pair (``src-tgt``; ``im-tgt`` captions images, ``src`` None), which
    batches carry for multilingual models. Without ``features_npy`` a model whose images are
    optional (``visual_optional``) translates the text alone (BertGen's MT task). ``blank``:
    every image blank (``zero``: features zero, masks and boxes kept; ``mean``: the average image
    of the training split's store ``mean_npy``/``mean_index``; :mod:`mmt_repro.datasets.blank`)."""
    settings = DecodeSettings(**(decode or {}))
    model, _, sv, tv, feats, dev = load_for_decoding(checkpoint, src_vocab, tgt_vocab, features_npy, features_index,
                                                     device, direction)
    if blank is not None:
        if feats is None:
            raise DataError(checkpoint, f"blank images ({blank}) need the split's feature store", "pass features_npy")
        feats = blank_images(feats, blank, open_features(mean_npy, mean_index) if blank == "mean" else None)
    langs = pair_langs(pair) if pair else None
    data = ParallelData(src, sv, features=feats, shuffle_images_seed=shuffle_images_seed, langs=langs)
    started = time.monotonic()
    result = decode_data(model, data, settings, dev)
    hyps = to_text(result.hyps, tv, subword)
    elapsed = time.monotonic() - started
    if result.cut:
        log.warning("%d of %d translations of %s reached max_len=%d without <eos> and are cut off; "
                    "raise decode.max_len in the paper's settings", result.cut, len(hyps), src, settings.max_len)
    write_lines(out, hyps)
    info = {
        "sentences": len(hyps),
        "seconds": round(elapsed, 2),
        "sentences_per_s": round(len(hyps) / max(elapsed, 1e-9), 1),
        "beam_size": settings.beam_size,
        "shuffled_images": shuffle_images_seed is not None,
        "cut_at_max_len": result.cut,
        "empty": sum(not h.strip() for h in hyps),
        "max_len": settings.max_len,
        "max_len_a": settings.max_len_a,
        "max_len_b": settings.max_len_b,
    }
    if direction != "forward":
        info["direction"] = direction
    if blank is not None:
        info["blank_images"] = blank
    log.info("translated %s -> %s: %s", src, out, info)
    if stats_out is not None:
        with atomic_write(stats_out) as fh:
            json.dump(info, fh, indent=1, sort_keys=True)
    return info


def dump_attention(
    checkpoint: Path,
    src: Path,
    out: Path,
    src_vocab: Path,
    tgt_vocab: Path,
    features_npy: Path | None = None,
    features_index: Path | None = None,
    decode: dict | None = None,
    device: str = "auto",
    direction: str = "forward",
) -> dict:
    """Greedy-decode ``src`` and save, per sentence, what the model reports at every step (for
    Calixto et al.: ``alpha_src (T, S)``, ``alpha_img (T, L)``, ``beta (T,)``) with the source
    and hypothesis tokens as the model saw and emitted them (``torch.save`` of a list of dicts)."""
    settings = DecodeSettings(**{**(decode or {}), "beam_size": 1})
    model, ckpt, sv, tv, feats, dev = load_for_decoding(
        checkpoint, src_vocab, tgt_vocab, features_npy, features_index, device, direction
    )
    data = ParallelData(src, sv, features=feats)
    result = decode_data(model, data, settings, dev, collect_info=True)
    dumps = []
    for i, (hyp, info) in enumerate(zip(result.hyps, result.infos)):
        entry = {k: v.float() for k, v in info.items()}
        entry["src_tokens"] = [sv.id_to_token(t) for t in data.src[i]]
        entry["hyp_tokens"] = tv.decode(hyp)
        dumps.append(entry)
    with atomic_path(out) as tmp:
        torch.save(dumps, tmp)
    return {"sentences": len(dumps), "model": ckpt["model"]}
