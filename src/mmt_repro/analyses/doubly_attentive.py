"""Calixto, Liu and Campbell (2017), doubly-attentive decoder (:mod:`mmt_repro.models.doubly_attentive`):
the analysis of its image gate beta."""

from __future__ import annotations

import torch

from .registry import register_analysis


@register_analysis("doubly_attentive.beta_shares", inputs="attention")
def beta_shares(files: dict) -> dict:
    """Section 5.2: the shares (%) of emitted target tokens whose gate beta exceeds 0.5 and 0.8
    (the paper: 20% and 8%), from a greedy attention dump."""
    from ..io import DataError
    from ..metrics.figures import beta_shares as shares_of

    dumps = torch.load(files["attention"], weights_only=True)  # our own dumps: tensors, lists, strings
    if not dumps or "beta" not in dumps[0]:
        raise DataError(files["attention"], "attention dump has no beta gate", "dump a model with image attention (NMT_SRC+IMG)")
    shares = shares_of(dumps, hyp_lengths=[len(d["hyp_tokens"]) for d in dumps])
    sig = "beta share|greedy|emitted tokens (no <eos>)|n_sentences:%d" % len(dumps)
    return {
        "beta_gt_0.5": {"value": round(100.0 * shares["gt_0.5"], 4), "signature": sig},
        "beta_gt_0.8": {"value": round(100.0 * shares["gt_0.8"], 4), "signature": sig},
    }
