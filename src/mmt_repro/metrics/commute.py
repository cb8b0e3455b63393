"""CoMMuTE's contrastive accuracy (Futeral et al., ACL 2023, section 4): the share of lines whose
correct translation has a lower perplexity than the incorrect one, under the line's image.

As the authors' ``evaluate.py`` (``int(c < i)``): a tie counts as a miss. Perplexity is the
exponential of the per-token mean negative log-likelihood, so comparing mean NLLs gives the same
ranking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def contrastive_accuracy(correct: Sequence[float], incorrect: Sequence[float]) -> dict:
    """``accuracy`` (percent) of ``correct[i] < incorrect[i]`` over the lines (scores: per-token
    mean NLL or perplexity, lower is better), with ``n``, ``right`` and ``ties`` (counted as misses)."""
    if len(correct) != len(incorrect):
        raise ValueError(f"{len(correct)} correct scores but {len(incorrect)} incorrect ones")
    if not correct:
        raise ValueError("no scores")
    bad = [i for i, v in enumerate([*correct, *incorrect]) if not math.isfinite(v)]
    if bad:
        raise ValueError(f"non-finite score(s) at {bad[:5]}")
    right = sum(c < i for c, i in zip(correct, incorrect))
    ties = sum(c == i for c, i in zip(correct, incorrect))
    return {"accuracy": 100.0 * right / len(correct), "n": len(correct), "right": right, "ties": ties}


__all__ = ["contrastive_accuracy"]
