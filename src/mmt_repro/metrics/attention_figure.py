"""Calixto et al. (2017) Figure 2 from an attention dump written by
:func:`mmt_repro.decode.translate.dump_attention` (which stores the tokens with the weights)."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from ..io import DataError
from .figures import plot_attention, plot_beta_words


def plot_attention_from_dump(attention_dump: Path, index: int, out_png: Path, image: Path | None = None,
                             kind: str = "attention"):
    """Figure 2 for sentence ``index``: the image grid is the square of the number of regions
    (14x14 for res4f at 224 pixels, 4x4 for the grounded smoke set at 64). ``kind="beta"``:
    Yang et al. (2020)'s Figure 4 instead, the gate beta of every generated word."""
    dumps = torch.load(attention_dump, weights_only=True)  # our own dumps: tensors, lists, strings
    if not 0 <= index < len(dumps):
        raise DataError(attention_dump, f"sentence {index} requested, the dump has {len(dumps)}", "pick another `sentence`")
    item = dumps[index]
    if kind == "beta":
        if "beta" not in item:
            raise DataError(attention_dump, "no beta in this dump", "dump a model with a visual gate (beta_gate: true)")
        return plot_beta_words(item["hyp_tokens"], item["beta"], out_png, source=item.get("src_tokens"))
    if kind != "attention":
        raise ValueError(f"unknown figure kind {kind!r}; valid: attention, beta")
    if "alpha_img" not in item:
        raise DataError(attention_dump, "no image attention in this dump", "dump a multimodal model (NMT_SRC+IMG)")
    side = math.isqrt(item["alpha_img"].shape[-1])
    if side * side != item["alpha_img"].shape[-1]:
        raise DataError(attention_dump, f"{item['alpha_img'].shape[-1]} image regions are not a square grid", "")
    return plot_attention(
        dumps, index, item["src_tokens"], item["hyp_tokens"], out_png, grid=(side, side), image=image
    )
