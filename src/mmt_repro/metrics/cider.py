"""CIDEr-D (Vedantam et al. 2015) computed by pycocoevalcap's ``Cider`` scorer.

pycocoevalcap (1.2, a dependency) is the pip release of coco-caption's evaluation code, and
its ``Cider`` class is coco-caption's CIDEr-D: the scorer BertGen (Mitzalis et al. 2021,
Table 2) reports, so there is no difference from what the paper used. Its scale is
coco-caption's (0.587, not 58.7), and so is ``value``. What the scorer computes, per test set
of N segments (images), each with one hypothesis and references ``r_1..r_m``:

* n-grams of orders 1..4 on whitespace tokens (coco-caption tokenises with the Stanford PTB
  tokeniser, lowercases and drops punctuation tokens first; our text is already tokenised,
  ``lowercase``/``remove_punct`` reproduce the rest and are recorded in the signature);
* document frequency ``df(g)`` = number of segments whose reference set contains ``g``: the
  references of the scored set itself are the corpus (coco-caption's default, signature
  ``df:test-refs``), which is why the whole test set goes to the scorer in one call;
* tf-idf ``v(g) = count(g) * (log N - log max(1, df(g)))``, the clipped cosine per reference
  and order times the length penalty ``exp(-(l_h - l_r)^2 / (2 sigma^2))`` (``l``: the number of
  bigrams, coco-caption's quirk), ``sigma = 6``; segment score ``10 * mean_n(sum over
  references) / m``; corpus score the mean over segments.

tests/unit/test_cider.py checks these equations by hand on small cases.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Tokens coco-caption's PTB tokenizer wrapper removes after tokenising.
COCO_PUNCTUATION = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)


def _prepare(line: str, lowercase: bool, remove_punct: bool) -> str:
    if lowercase:
        line = line.lower()
    tokens = line.split()
    if remove_punct:
        tokens = [t for t in tokens if t not in COCO_PUNCTUATION]
    return " ".join(tokens)


def cider_d_segments(
    hyps: Sequence[str],
    refs_per_segment: Sequence[Sequence[str]],
    n: int = 4,
    sigma: float = 6.0,
    lowercase: bool = False,
    remove_punct: bool = False,
) -> list[float]:
    """CIDEr-D of every segment; ``refs_per_segment[i]`` lists the references of segment i."""
    from pycocoevalcap.cider.cider import Cider

    if len(hyps) != len(refs_per_segment):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs_per_segment)} reference sets")
    if not hyps:
        raise ValueError("no segments to score")
    gts, res = {}, {}
    for i, (hyp, refs) in enumerate(zip(hyps, refs_per_segment)):
        if not refs:
            raise ValueError(f"segment {i} has no reference")
        gts[i] = [_prepare(r, lowercase, remove_punct) for r in refs]
        res[i] = [_prepare(hyp, lowercase, remove_punct)]
    if not any(r.split() for refs in gts.values() for r in refs):
        return [0.0] * len(hyps)  # no reference n-gram at all: every vector is zero (the scorer cannot take it)
    _, scores = Cider(n=n, sigma=sigma).compute_score(gts, res)
    return [float(x) for x in scores]


def cider_score(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    n: int = 4,
    sigma: float = 6.0,
    lowercase: bool = False,
    remove_punct: bool = False,
) -> dict:
    """Corpus CIDEr-D of ``hyps`` against reference streams (each line-parallel to ``hyps``).

    Empty reference lines are skipped, so streams can be padded when segments have different
    numbers of references. Returns ``{"value", "signature", "details"}`` like
    :func:`mmt_repro.metrics.mt.corpus_scores`; ``value`` is on coco-caption's scale.
    """
    if isinstance(refs, str) or (refs and isinstance(refs[0], str)):
        raise TypeError("refs must be a list of reference streams (a list of lists of lines), e.g. [ref_lines]")
    for i, stream in enumerate(refs):
        if len(stream) != len(hyps):
            raise ValueError(f"reference stream {i} has {len(stream)} lines but there are {len(hyps)} hypotheses")
    per_seg = [[r for r in seg if r.strip()] for seg in zip(*refs)]
    segs = cider_d_segments(hyps, per_seg, n=n, sigma=sigma, lowercase=lowercase, remove_punct=remove_punct)
    value = sum(segs) / len(segs)
    signature = "|".join(
        [
            "cider-d",
            f"n:{n}",
            f"sigma:{sigma:g}",
            f"nrefs:{len(refs)}",
            "df:test-refs",
            "tok:none",
            f"case:{'lc' if lowercase else 'mixed'}",
            f"punct:{'coco-removed' if remove_punct else 'kept'}",
            "scale:coco",
        ]
    )
    details = {
        "n_segments": len(segs),
        "refs_per_segment": sorted({len(r) for r in per_seg}),
        "min_segment": min(segs),
        "max_segment": max(segs),
    }
    return {"value": float(value), "signature": signature, "details": details}
