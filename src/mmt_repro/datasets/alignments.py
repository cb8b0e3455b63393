"""Word alignments of training pairs as tensors (Yang et al. 2020, eq. 14): the data side of
hard visual agreement. The align stage writes symmetrised links ``i-j`` per pair (one line
each); a training split given them as its extra ``align``
(:class:`~mmt_repro.datasets.batching.ParallelData`) lays them out in every batch as
``align_fwd (batch, max target length)`` and ``align_bwd (batch, max source length)``: the
source word ``x^`` aligned with each target word, and the target word aligned with each source
word for the backward model, -1 where there is none. The model reads the tensors only.
"""

from __future__ import annotations

import torch


def parse_alignment_batch(lines: list[str], src_len: list[int], tgt_len: list[int], device=None) -> torch.Tensor:
    """Eq. 14 from symmetrised links: for every target word ``j`` of each sentence the source word
    ``x^`` it is aligned with, ``(batch, max tgt_len)`` long, -1 where ``j`` has no link (then no
    agreement term) or is padding. Where ``j`` has several links, the one nearest the diagonal
    (``|i / n - j / l|``, ties: the first) stands for the argmax of eq. 14 (the links carry no
    probabilities)."""
    out = torch.full((len(lines), max(tgt_len) if tgt_len else 0), -1, dtype=torch.long)
    for b, line in enumerate(lines):
        n, length = max(src_len[b], 1), max(tgt_len[b], 1)
        best: dict[int, tuple[float, int]] = {}
        for item in (line or "").split():
            i, _, j = item.partition("-")
            i, j = int(i), int(j)
            if i >= src_len[b] or j >= tgt_len[b]:
                raise ValueError(f"alignment link {item} outside a pair of {src_len[b]} source and {tgt_len[b]} "
                                 "target words: the alignment file does not belong to this text")
            key = (abs(i / n - j / length), i)
            if j not in best or key < best[j]:
                best[j] = key
        for j, (_, i) in best.items():
            out[b, j] = i
    return out.to(device) if device is not None else out


def reverse_alignment_lines(lines: list[str]) -> list[str]:
    """``i-j`` -> ``j-i`` for the backward model (its source is the target)."""
    return [" ".join("-".join(reversed(item.split("-"))) for item in (line or "").split()) for line in lines]


def alignment_tensors(lines: list[str], src_len: list[int], tgt_len: list[int]) -> dict[str, torch.Tensor]:
    """``{"align_fwd", "align_bwd"}`` of a batch's alignment lines (module docstring)."""
    return {"align_fwd": parse_alignment_batch(lines, src_len, tgt_len),
            "align_bwd": parse_alignment_batch(reverse_alignment_lines(lines), tgt_len, src_len)}
