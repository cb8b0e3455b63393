"""Word F-score by training frequency (Hirasawa et al. 2019, Fig. 1).

Hirasawa et al. (section 3.2, following Kumar & Tsvetkov 2019) score each target word ``w`` by
sentence presence over the test set:

* precision(w) = share of the output sentences containing ``w`` whose reference also contains
  ``w`` = ``both(w) / hyp_sents(w)``;
* recall(w) = share of the reference sentences containing ``w`` whose output also contains
  ``w`` = ``both(w) / ref_sents(w)``;
* F(w) = harmonic mean of the two.

Fig. 1 plots this "per frequency breakdown in the training corpus": words are put in bins by
how often they occur in the target side of the training data. The paper does not say how the
words of a bin are combined; we report both the pooled score (sum ``both``, ``hyp_sents`` and
``ref_sents`` over the bin's words, then precision, recall, F, as compare-mt does for its
frequency buckets; column ``fscore``) and the mean of the words' own F-scores
(``fscore_word_mean``). The default bins are compare-mt's: unseen, 1, 2, 3, 4, 5-9, 10-99,
100-999, 1000+.

Text is compared as whitespace tokens, exactly as given (Hirasawa et al. lowercase and tokenise
everything and use no BPE, so score the merged, tokenised output against tokenised references).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from mmt_repro.io import DataError, atomic_write, read_lines

#: Lower edges of the frequency bins; the last bin is open-ended.
DEFAULT_BINS = (0, 1, 2, 3, 4, 5, 10, 100, 1000)
COLUMNS = [
    "bin", "lo", "hi", "n_words", "hyp_sents", "ref_sents", "both",
    "precision", "recall", "fscore", "fscore_word_mean",
]  # fmt: skip


def training_frequencies(train_lines: Iterable[str]) -> Counter:
    """Token counts of the (target-side) training text."""
    freq: Counter = Counter()
    for line in train_lines:
        freq.update(line.split())
    return freq


def _bin_labels(bins: Sequence[int]) -> list[tuple[str, int, int | None]]:
    edges = [int(b) for b in bins]
    if not edges or edges != sorted(set(edges)) or edges[0] < 0:
        raise ValueError(f"bins must be strictly increasing non-negative lower edges, got {list(bins)}")
    out = []
    for k, lo in enumerate(edges):
        hi = edges[k + 1] if k + 1 < len(edges) else None  # exclusive
        if hi is None:
            label = f"{lo}+"
        elif hi == lo + 1:
            label = str(lo)
        else:
            label = f"{lo}-{hi - 1}"
        out.append((label, lo, hi))
    return out


def word_presence(hyps: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> pd.DataFrame:
    """Per word: ``hyp_sents``, ``ref_sents``, ``both`` and its own precision, recall, F.

    ``refs`` is one reference stream or a list of streams (a word is in the reference of a
    segment if any of its references contains it).
    """
    streams = [list(refs)] if refs and isinstance(refs[0], str) else [list(r) for r in refs]
    if not streams:
        raise DataError(None, "no reference stream given", "pass the reference file")
    for i, stream in enumerate(streams):
        if len(stream) != len(hyps):
            raise DataError(None, f"reference stream {i} has {len(stream)} lines but there are {len(hyps)} hypotheses",
                            "hypotheses and references must be line-parallel")
    hyp_n: Counter = Counter()
    ref_n: Counter = Counter()
    both: Counter = Counter()
    for k, hyp in enumerate(hyps):
        h = set(hyp.split())
        r = set().union(*(set(s[k].split()) for s in streams))
        hyp_n.update(h)
        ref_n.update(r)
        both.update(h & r)
    words = sorted(set(hyp_n) | set(ref_n))
    df = pd.DataFrame(
        {
            "word": words,
            "hyp_sents": [hyp_n[w] for w in words],
            "ref_sents": [ref_n[w] for w in words],
            "both": [both[w] for w in words],
        }
    )
    df["precision"] = [b / h if h else 0.0 for b, h in zip(df["both"], df["hyp_sents"])]
    df["recall"] = [b / r if r else 0.0 for b, r in zip(df["both"], df["ref_sents"])]
    df["fscore"] = [_f1(p, r) for p, r in zip(df["precision"], df["recall"])]
    return df


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def rare_word_fscore(
    hyps: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    train_lines: Iterable[str],
    bins: Sequence[int] = DEFAULT_BINS,
) -> pd.DataFrame:
    """Word F-score per training-frequency bin (one row per bin, columns :data:`COLUMNS`).

    ``bins`` are the lower edges (training counts) of the bins, the last one open-ended; a word
    goes to the bin with the largest edge not above its count. ``precision``, ``recall`` and
    ``fscore`` are pooled over the bin's words (NaN when the bin has no word in the test set's
    outputs or references); ``fscore_word_mean`` averages the words' own F-scores.
    """
    freq = training_frequencies(train_lines)
    words = word_presence(hyps, refs)
    labels = _bin_labels(bins)
    edges = [lo for _, lo, _ in labels]

    def bin_of(count: int) -> int:
        k = 0
        for i, lo in enumerate(edges):
            if count >= lo:
                k = i
        return k if count >= edges[0] else -1

    words["bin_index"] = [bin_of(freq.get(w, 0)) for w in words["word"]]
    rows = []
    for k, (label, lo, hi) in enumerate(labels):
        sub = words[words["bin_index"] == k]
        h, r, b = int(sub["hyp_sents"].sum()), int(sub["ref_sents"].sum()), int(sub["both"].sum())
        p = b / h if h else math.nan
        rc = b / r if r else math.nan
        f = math.nan if (math.isnan(p) and math.isnan(rc)) else _f1(0.0 if math.isnan(p) else p, 0.0 if math.isnan(rc) else rc)
        rows.append(
            {
                "bin": label,
                "lo": lo,
                "hi": hi,
                "n_words": len(sub),
                "hyp_sents": h,
                "ref_sents": r,
                "both": b,
                "precision": p,
                "recall": rc,
                "fscore": f,
                "fscore_word_mean": float(sub["fscore"].mean()) if len(sub) else math.nan,
            }
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["hi"] = out["hi"].astype("Int64")
    return out


def rare_word_fscore_files(
    hyp: str | os.PathLike,
    refs: str | os.PathLike | Sequence[str | os.PathLike],
    train: str | os.PathLike,
    out_tsv: str | os.PathLike,
    bins: Sequence[int] = DEFAULT_BINS,
) -> pd.DataFrame:
    """:func:`rare_word_fscore` on files (``train``: target side of the training corpus); writes a TSV atomically."""
    if isinstance(refs, (str, os.PathLike)):
        refs = [refs]
    hyp_lines = read_lines(hyp)
    ref_lines = [read_lines(r) for r in refs]
    for path, lines in zip(refs, ref_lines):
        if len(lines) != len(hyp_lines):
            raise DataError(path, f"has {len(lines)} lines but {hyp} has {len(hyp_lines)}",
                            "score the hypothesis against the references of the same test set")
    table = rare_word_fscore(hyp_lines, ref_lines, read_lines(train), bins=bins)
    with atomic_write(Path(out_tsv)) as fh:
        table.to_csv(fh, sep="\t", index=False, float_format="%.6f", na_rep="")
    return table
