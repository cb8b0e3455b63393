"""Translate a file with a trained checkpoint (greedy or beam), optionally with the images
shuffled across sentences (the incongruent-image condition of adversarial evaluation); dump
attention weights and gates for figures."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from ..data.batching import ParallelData, check_feature_dim, move
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


def load_for_decoding(checkpoint, src_vocab, tgt_vocab, features_npy=None, features_index=None, device="auto"):
    """Model, checkpoint, vocabularies, feature store (None for text-only models) and device,
    after checking that they belong together (vocabulary fingerprints, image features iff the
    model reads images, feature dimension)."""
    dev = pick_device(device)
    model, ckpt = load_model(checkpoint, device=dev)
    sv, tv = Vocab.load(src_vocab), Vocab.load(tgt_vocab)
    check_vocab(ckpt, checkpoint, sv.fingerprint(), tv.fingerprint())
    feats = open_features(features_npy, features_index)
    if getattr(model, "use_image", False) and feats is None:
        raise DataError(checkpoint, f"model {ckpt['model']} needs image features", "pass the split's feature store")
    if feats is not None and not getattr(model, "use_image", False):
        raise DataError(checkpoint, f"holds the text-only model {ckpt['model']}, but image features were given "
                        "(a checkpoint of another system?)", "re-train this system (rule train_model)")
    check_feature_dim(model, feats)
    return model, ckpt, sv, tv, feats, dev


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
    device: str = "auto",
) -> dict:
    """Write one translation per source line to ``out`` (BPE merged, tokenised as trained)."""
    model, _, sv, tv, feats, dev = load_for_decoding(checkpoint, src_vocab, tgt_vocab, features_npy, features_index, device)
    data = ParallelData(src, sv, features=feats, shuffle_images_seed=shuffle_images_seed)
    started = time.monotonic()
    hyps: list[str] = []
    cut = 0  # hypotheses that hit max_len without <eos>
    with torch.inference_mode():
        for batch in data.eval_batches(batch_size):
            batch = move(batch, dev)
            if beam_size <= 1:
                ids, _ = greedy(model, batch, max_len, Vocab.bos_id, Vocab.eos_id)
            else:
                ids = beam_search(model, batch, beam_size, max_len, Vocab.bos_id, Vocab.eos_id, alpha=alpha)
            hyps.extend(merge_bpe(" ".join(tv.decode(h))) for h in ids)
            cut += sum(len(h) >= max_len for h in ids)
    elapsed = time.monotonic() - started
    if cut:
        log.warning("%d of %d translations of %s reached max_len=%d without <eos> and are cut off; "
                    "raise decode.max_len in the config", cut, len(hyps), src, max_len)
    write_lines(out, hyps)
    info = {
        "sentences": len(hyps),
        "seconds": round(elapsed, 2),
        "sentences_per_s": round(len(hyps) / max(elapsed, 1e-9), 1),
        "beam_size": beam_size,
        "shuffled_images": shuffle_images_seed is not None,
        "cut_at_max_len": cut,
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
    model, ckpt, sv, tv, feats, dev = load_for_decoding(
        checkpoint, src_vocab, tgt_vocab, features_npy, features_index, device
    )
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
