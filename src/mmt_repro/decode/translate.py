"""Translate a file with a trained checkpoint (greedy or beam), optionally with the images
shuffled across sentences (the incongruent-image condition of adversarial evaluation)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from ..data.batching import ParallelData, move
from ..io import DataError, atomic_path, write_lines
from ..text.bpe import merge_bpe
from ..text.vocab import Vocab
from ..train.checkpoint import check_vocab, load_model
from ..train.trainer import pick_device
from .search import beam_search, greedy

log = logging.getLogger(__name__)


def open_features(npy: Path | None, index: Path | None):
    if npy is None:
        return None
    from ..features.store import FeatureStore

    return FeatureStore(Path(npy), Path(index))


def translate(
    checkpoint: Path,
    src: Path,
    out: Path,
    src_vocab: Path,
    tgt_vocab: Path,
    features_npy: Path | None = None,
    features_index: Path | None = None,
    beam_size: int = 12,
    max_len: int = 80,
    batch_size: int = 32,
    alpha: float = 1.0,
    shuffle_images_seed: int | None = None,
    attention_out: Path | None = None,
    device: str = "auto",
) -> dict:
    """Write one translation per source line to ``out`` (BPE merged, tokenised as trained).

    ``attention_out``: also dump greedy-decoding attention weights and gates per sentence
    (``torch.save`` of a list of dicts) for figures."""
    dev = pick_device(device)
    model, ckpt = load_model(checkpoint, device=dev)
    sv, tv = Vocab.load(src_vocab), Vocab.load(tgt_vocab)
    check_vocab(ckpt, checkpoint, sv.fingerprint(), tv.fingerprint())
    feats = open_features(features_npy, features_index)
    if getattr(model, "use_image", False) and feats is None:
        raise DataError(checkpoint, f"model {ckpt['model']} needs image features", "pass the split's feature store")
    data = ParallelData(src, sv, features=feats if getattr(model, "use_image", False) else None,
                        shuffle_images_seed=shuffle_images_seed)
    started = time.monotonic()
    hyps: list[str] = []
    dumps = []
    with torch.inference_mode():
        for batch in data.eval_batches(batch_size):
            batch = move(batch, dev)
            if beam_size <= 1 or attention_out is not None:
                ids, infos = greedy(model, batch, max_len, Vocab.bos_id, Vocab.eos_id, collect_info=attention_out is not None)
                if infos is not None:
                    dumps.extend(infos)
            if beam_size > 1:
                ids = beam_search(model, batch, beam_size, max_len, Vocab.bos_id, Vocab.eos_id, alpha=alpha)
            hyps.extend(merge_bpe(" ".join(tv.decode(h))) for h in ids)
    elapsed = time.monotonic() - started
    write_lines(out, hyps)
    if attention_out is not None:
        with atomic_path(attention_out) as tmp:
            torch.save(dumps, tmp)
    info = {
        "sentences": len(hyps),
        "seconds": round(elapsed, 2),
        "sentences_per_s": round(len(hyps) / max(elapsed, 1e-9), 1),
        "beam_size": beam_size,
        "shuffled_images": shuffle_images_seed is not None,
    }
    log.info("translated %s -> %s: %s", src, out, info)
    return info


def dump_attention(
    checkpoint: Path,
    src: Path,
    out: Path,
    src_vocab: Path,
    tgt_vocab: Path,
    features_npy: Path | None = None,
    features_index: Path | None = None,
    max_len: int = 80,
    batch_size: int = 32,
    device: str = "auto",
) -> dict:
    """Greedy-decode ``src`` and save, per sentence, the attention weights and gates of every
    step (``alpha_src (T, S)``, ``alpha_img (T, L)``, ``beta (T,)``) with the source and
    hypothesis tokens as the model saw and emitted them (``torch.save`` of a list of dicts)."""
    dev = pick_device(device)
    model, ckpt = load_model(checkpoint, device=dev)
    sv, tv = Vocab.load(src_vocab), Vocab.load(tgt_vocab)
    check_vocab(ckpt, checkpoint, sv.fingerprint(), tv.fingerprint())
    feats = open_features(features_npy, features_index) if getattr(model, "use_image", False) else None
    data = ParallelData(src, sv, features=feats)
    dumps = []
    with torch.inference_mode():
        for batch in data.eval_batches(batch_size):
            ids = batch["ids"].tolist()
            hyps, infos = greedy(model, move(batch, dev), max_len, Vocab.bos_id, Vocab.eos_id, collect_info=True)
            for i, hyp, info in zip(ids, hyps, infos):
                entry = {k: v.float() for k, v in info.items()}
                entry["src_tokens"] = [sv.id_to_token(t) for t in data.src[i]]
                entry["hyp_tokens"] = tv.decode(hyp)
                dumps.append(entry)
    with atomic_path(out) as tmp:
        torch.save(dumps, tmp)
    return {"sentences": len(dumps), "model": ckpt["model"]}


def beta_scores(dump: Path, out_json: Path, meta: dict) -> dict:
    """Shares (in %) of emitted target tokens whose beta gate exceeds 0.5 and 0.8 (Calixto et
    al. 2017, section 5.2: 20% and 8%), as a score JSON that :func:`make_table` reads."""
    import json

    from ..io import atomic_write
    from ..metrics.figures import beta_shares

    dumps = torch.load(dump, weights_only=False)
    if not dumps or "beta" not in dumps[0]:
        raise DataError(dump, "attention dump has no beta gate", "dump a model with image attention (NMT_SRC+IMG)")
    shares = beta_shares(dumps, hyp_lengths=[len(d["hyp_tokens"]) for d in dumps])
    sig = "beta share|greedy|emitted tokens (no <eos>)|n_sentences:%d" % len(dumps)
    result = {
        "meta": meta,
        "scores": {
            "beta_gt_0.5": {"value": round(100.0 * shares["gt_0.5"], 4), "signature": sig},
            "beta_gt_0.8": {"value": round(100.0 * shares["gt_0.8"], 4), "signature": sig},
        },
        "n_sentences": len(dumps),
    }
    with atomic_write(out_json) as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    return result
