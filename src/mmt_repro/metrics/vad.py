"""Visual agreement distance (Yang et al. 2020, eqs. 21-22, Table 5).

For one instance ``(v, x, y)`` the forward model (x -> y) attends over the ``m`` image regions
with ``A_{y_j -> v}`` when it generates target word ``y_j``, the backward model (y -> x) with
``A_{x_i -> v}`` when it generates source word ``x_i``. Then

* eq. 22: ``N(x, y)`` = pairs ``(x_i, y_j)`` aligned uniquely to each other: the word alignment
  links ``i`` to ``j`` and to nothing else, and ``j`` to ``i`` and to nothing else;
* eq. 21: ``VAD = 1/|N| sum_{(x, y) in N} || A_{x -> v} - A_{y -> v} ||_1``.

Eq. 21 is per instance; Table 5 gives one number per test set. ``average="instance"`` (default)
takes the mean of the instance VADs over the instances with at least one unique pair;
``average="pair"`` pools all pairs of the test set. Table 5 also splits pairs into visual and
non-visual ones (labelled by hand in the paper): pass ``visual_words`` and a pair counts as
visual when its source or its target word is in that set.

Alignments use the Pharaoh format fast_align writes: ``"0-0 1-2 ..."``, source index first.
The rows of the attention matrices must be indexed like the alignment's tokens (word level:
force-decode the reference words, or average sub-word rows before calling).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from mmt_repro.io import DataError, atomic_write, read_lines

AVERAGES = ("instance", "pair")


def parse_alignment(line: str) -> list[tuple[int, int]]:
    """``"0-0 1-2"`` -> ``[(0, 0), (1, 2)]`` (source index, target index)."""
    pairs = []
    for item in line.split():
        src, sep, tgt = item.partition("-")
        if not sep or not src.isdigit() or not tgt.isdigit():
            raise ValueError(f"not a Pharaoh alignment link: {item!r} (expected i-j)")
        pairs.append((int(src), int(tgt)))
    return pairs


def unique_pairs(alignment: str | Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The links ``(i, j)`` whose source ``i`` and target ``j`` take part in no other link (eq. 22)."""
    links = parse_alignment(alignment) if isinstance(alignment, str) else [tuple(a) for a in alignment]
    links = sorted(set(links))
    src_n = Counter(i for i, _ in links)
    tgt_n = Counter(j for _, j in links)
    return [(i, j) for i, j in links if src_n[i] == 1 and tgt_n[j] == 1]


def _as_matrix(a, what: str) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be a (words, regions) matrix, got shape {arr.shape}")
    return arr


def _tokens(lines, k: int) -> list[str] | None:
    if lines is None:
        return None
    return lines[k].split() if isinstance(lines[k], str) else list(lines[k])


def visual_agreement_distance(
    forward_attn: Sequence,
    backward_attn: Sequence,
    alignments: Sequence[str | Sequence[tuple[int, int]]],
    src_tokens: Sequence[str | Sequence[str]] | None = None,
    tgt_tokens: Sequence[str | Sequence[str]] | None = None,
    visual_words: Iterable[str] | None = None,
    average: str = "instance",
) -> dict:
    """VAD over a test set.

    ``forward_attn[k]``: ``(len(y_k), m)`` image attention of the forward model, row ``j`` for
    target word ``j``; ``backward_attn[k]``: ``(len(x_k), m)`` of the backward model, row ``i``
    for source word ``i``; ``alignments[k]``: Pharaoh string or list of ``(i, j)``. Returns
    ``{"vad", "n_pairs", "n_instances", "average"}`` and, with ``visual_words`` (needs
    ``src_tokens`` and ``tgt_tokens``), ``vad_visual``/``vad_non_visual`` with their pair counts.
    """
    if average not in AVERAGES:
        raise ValueError(f"unknown average {average!r}; valid: {', '.join(AVERAGES)}")
    if not (len(forward_attn) == len(backward_attn) == len(alignments)):
        raise ValueError(
            f"{len(forward_attn)} forward, {len(backward_attn)} backward attention matrices and "
            f"{len(alignments)} alignments: they must be parallel"
        )
    visual = set(visual_words) if visual_words is not None else None
    if visual is not None and (src_tokens is None or tgt_tokens is None):
        raise ValueError("visual_words needs src_tokens and tgt_tokens to look the words up")

    groups = ("all", "visual", "non_visual") if visual is not None else ("all",)
    per_instance: dict[str, list[float]] = {g: [] for g in groups}
    pooled: dict[str, list[float]] = {g: [] for g in groups}
    for k, (fwd, bwd, align) in enumerate(zip(forward_attn, backward_attn, alignments)):
        a_y = _as_matrix(fwd, f"forward attention {k}")
        a_x = _as_matrix(bwd, f"backward attention {k}")
        if a_y.shape[1] != a_x.shape[1]:
            raise ValueError(f"instance {k}: forward attends over {a_y.shape[1]} regions, backward over {a_x.shape[1]}")
        src = _tokens(src_tokens, k)
        tgt = _tokens(tgt_tokens, k)
        dists: dict[str, list[float]] = {g: [] for g in groups}
        for i, j in unique_pairs(align):
            if i >= a_x.shape[0] or j >= a_y.shape[0]:
                raise ValueError(
                    f"instance {k}: alignment link {i}-{j} outside the attention matrices "
                    f"({a_x.shape[0]} source rows, {a_y.shape[0]} target rows)"
                )
            d = float(np.abs(a_x[i] - a_y[j]).sum())
            dists["all"].append(d)
            if visual is not None:
                if i >= len(src) or j >= len(tgt):
                    raise ValueError(f"instance {k}: link {i}-{j} outside the tokens ({len(src)} source, {len(tgt)} target)")
                is_visual = src[i] in visual or tgt[j] in visual
                dists["visual" if is_visual else "non_visual"].append(d)
        for g in groups:
            if dists[g]:
                per_instance[g].append(sum(dists[g]) / len(dists[g]))
                pooled[g].extend(dists[g])

    def summary(g: str) -> float:
        vals = per_instance[g] if average == "instance" else pooled[g]
        return sum(vals) / len(vals) if vals else math.nan

    out = {
        "vad": summary("all"),
        "n_pairs": len(pooled["all"]),
        "n_instances": len(per_instance["all"]),
        "average": average,
    }
    if visual is not None:
        out.update(
            {
                "vad_visual": summary("visual"),
                "n_pairs_visual": len(pooled["visual"]),
                "vad_non_visual": summary("non_visual"),
                "n_pairs_non_visual": len(pooled["non_visual"]),
            }
        )
    return out


def vad_files(
    forward_dump: str | os.PathLike,
    backward_dump: str | os.PathLike,
    alignment: str | os.PathLike,
    out_json: str | os.PathLike,
    key: str = "alpha_img",
    src: str | os.PathLike | None = None,
    tgt: str | os.PathLike | None = None,
    visual_words: str | os.PathLike | None = None,
    average: str = "instance",
) -> dict:
    """:func:`visual_agreement_distance` from attention dumps (``torch.save`` lists of dicts
    holding ``key`` as ``(words, regions)``, one per sentence, as ``translate`` writes them), a
    fast_align Pharaoh file, optional token files and a visual-word list (one word a line).
    Writes the result JSON atomically."""
    import torch

    dumps = []
    for path in (forward_dump, backward_dump):
        try:
            items = torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError as err:
            raise DataError(path, "attention dump does not exist", "run the decode rule with attention_out") from err
        if not items or key not in items[0]:
            raise DataError(path, f"attention dump has no {key!r} entries", "dump the image attention of the model")
        dumps.append([item[key] for item in items])
    aligns = read_lines(alignment)
    src_lines = read_lines(src) if src is not None else None
    tgt_lines = read_lines(tgt) if tgt is not None else None
    words = [w.strip() for w in read_lines(visual_words) if w.strip()] if visual_words is not None else None
    result = visual_agreement_distance(dumps[0], dumps[1], aligns, src_lines, tgt_lines, words, average=average)
    with atomic_write(out_json) as fh:
        json.dump(result, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return result
