"""CIDEr-D (Vedantam et al. 2015) exactly as the coco-caption evaluation computes it.

BertGen (Mitzalis et al. 2021, Table 2) reports CIDEr for captioning on coco-caption's scale
(0.587, not 58.7), so ``value`` is on that scale too. The computation, per test set of N
segments (images), each with one hypothesis ``h`` and references ``r_1..r_m``:

* n-grams ``g`` of orders 1..4 on whitespace tokens (coco-caption tokenises with the Stanford
  PTB tokeniser, lowercases and drops punctuation tokens first; our text is already tokenised,
  ``lowercase``/``remove_punct`` reproduce the rest and are recorded in the signature);
* document frequency ``df(g)`` = number of segments whose reference set contains ``g``; the
  references of the scored set itself are the corpus;
* tf-idf vector per sentence and order: ``v(g) = count(g) * (log N - log max(1, df(g)))``;
* per reference and order n: clipped cosine
  ``sum_g min(v_h(g), v_r(g)) * v_r(g) / (|v_h| |v_r|)`` (no division when a norm is 0),
  times the length penalty ``exp(-(l_h - l_r)^2 / (2 sigma^2))``, ``sigma = 6``;
* segment score = ``10 * mean_n(sum over references) / m``; corpus score = mean over segments.

coco-caption measures the length ``l`` as the number of bigrams of the sentence (a quirk of
its ``counts2vec``), which is the word count minus one for sentences of two or more words; we
keep that so the numbers match the reference implementation (checked in the tests against
pycocoevalcap 1.2's ``CiderScorer``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

#: Tokens coco-caption's PTB tokenizer wrapper removes after tokenising.
COCO_PUNCTUATION = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    counts: Counter = Counter()
    for k in range(1, n + 1):
        for i in range(len(tokens) - k + 1):
            counts[tuple(tokens[i : i + k])] += 1
    return counts


def _prepare(line: str, lowercase: bool, remove_punct: bool) -> list[str]:
    if lowercase:
        line = line.lower()
    tokens = line.split()
    if remove_punct:
        tokens = [t for t in tokens if t not in COCO_PUNCTUATION]
    return tokens


def cider_d_segments(
    hyps: Sequence[str],
    refs_per_segment: Sequence[Sequence[str]],
    n: int = 4,
    sigma: float = 6.0,
    lowercase: bool = False,
    remove_punct: bool = False,
) -> list[float]:
    """CIDEr-D of every segment; ``refs_per_segment[i]`` lists the references of segment i."""
    if len(hyps) != len(refs_per_segment):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs_per_segment)} reference sets")
    if not hyps:
        raise ValueError("no segments to score")
    hyp_tokens = [tuple(_prepare(h, lowercase, remove_punct)) for h in hyps]
    ref_tokens = []
    for i, refs in enumerate(refs_per_segment):
        if not refs:
            raise ValueError(f"segment {i} has no reference")
        ref_tokens.append([tuple(_prepare(r, lowercase, remove_punct)) for r in refs])
    counts_of: dict[tuple, Counter] = {}  # sentences repeat (shared references): count once

    def counts(tokens: tuple) -> Counter:
        if tokens not in counts_of:
            counts_of[tokens] = _ngrams(tokens, n)
        return counts_of[tokens]

    df: Counter = Counter()
    for refs in ref_tokens:
        df.update({g for r in refs for g in counts(r)})
    log_n = math.log(float(len(ref_tokens)))
    vectors: dict[tuple, tuple] = {}

    def vectorise(tokens: tuple):
        """tf-idf vector per order, its norms, and coco's length (number of bigrams)."""
        if tokens in vectors:
            return vectors[tokens]
        vec: list[dict] = [{} for _ in range(n)]
        sq = [0.0] * n
        length = 0
        for g, tf in counts(tokens).items():
            k = len(g) - 1
            w = float(tf) * (log_n - math.log(max(1.0, df[g])))
            vec[k][g] = w
            sq[k] += w * w
            if k == 1:  # coco-caption's length: number of bigrams
                length += tf
        vectors[tokens] = (vec, [math.sqrt(x) for x in sq], length)
        return vectors[tokens]

    scores = []
    for ht, rts in zip(hyp_tokens, ref_tokens):
        vh, nh, lh = vectorise(ht)
        total = [0.0] * n
        for rt in rts:
            vr, nr, lr = vectorise(rt)
            penalty = math.exp(-((lh - lr) ** 2) / (2 * sigma**2))
            for k in range(n):
                ref_k = vr[k]
                dot = 0.0
                for g, w in vh[k].items():
                    wr = ref_k.get(g)
                    if wr is not None:
                        dot += min(w, wr) * wr
                if nh[k] != 0 and nr[k] != 0:
                    dot /= nh[k] * nr[k]
                total[k] += dot * penalty
        scores.append(10.0 * (sum(total) / n) / len(rts))
    return scores


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
