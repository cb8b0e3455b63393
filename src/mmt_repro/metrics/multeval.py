"""MultEval's significance test: stratified approximate randomisation over optimiser runs.

Calixto et al. (2017) report p-values from MultEval (Clark et al. 2011, "Better Hypothesis
Testing for Statistical Machine Translation"), which tests a system against a baseline over
*all* their optimiser runs (here: training seeds) at once:

- every sentence of every run is one data point with the metric's sufficient statistics
  (row ``run * n + sentence``); a side's score is the metric of the statistics summed over all
  its rows, i.e. of the concatenation of its runs' outputs;
- the observed statistic is ``|score(A) - score(B)|``;
- a shuffle decides, per row, whether the two systems swap, and permutes each sentence's rows
  across the runs (stratified on like hypotheses); pseudo-system X takes ``(B if swap else
  A)[perm[row]]``, Y takes ``(A if swap else B)[perm^-1[row]]`` (MultEval's
  ``StratifiedApproximateRandomizationTest.Shuffling``, version 0.5.1);
- ``p = (c + 1) / (shuffles + 1)`` where ``c`` counts shuffles with ``|score(X) - score(Y)|``
  strictly above the observed difference.

With one run per side it is the ordinary paired approximate randomisation.

Sufficient statistics (:class:`StatScorer`): BLEU as MultEval's jBLEU (sacreBLEU on tokenised
text, no smoothing, closest reference length: multi-bleu.perl), TER as MultEval's (tercom,
lowercased by default) and METEOR 1.5 through the jar's own statistics (``SCORE``), scored
from summed statistics by the jar (``EVAL``; every shuffle's two sums go to the JVM in one
line). MultEval draws its shuffles unseeded; here ``seed`` makes them reproducible.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..io import DataError

__all__ = ["StatScorer", "BleuStats", "TerStats", "MeteorStats", "make_scorer", "stratified_ar"]


class StatScorer:
    """Per-sentence sufficient statistics of one metric and the score of summed statistics.
    ``lower_is_better`` only documents the direction (the test is two-sided)."""

    name = ""
    lower_is_better = False

    def stats(self, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> np.ndarray:
        """``(n, k)`` float64 statistics of ``hyps`` against reference streams ``refs``."""
        raise NotImplementedError

    def score(self, summed: np.ndarray) -> float:
        """The metric of one summed statistics vector ``(k,)``."""
        return float(self.scores(summed[None, :])[0])

    def scores(self, summed: np.ndarray) -> np.ndarray:
        """The metric of every row of ``(s, k)`` summed statistics."""
        return np.array([self.score(row) for row in summed])

    def close(self) -> None:
        pass


class BleuStats(StatScorer):
    """BLEU on tokenised text without smoothing (multi-bleu.perl, MultEval's jBLEU)."""

    name = "bleu"

    def __init__(self, tokenize: str = "none", lowercase: bool = False):
        from sacrebleu.metrics import BLEU

        self.metric = BLEU(tokenize=tokenize, lowercase=lowercase, smooth_method="none", force=(tokenize == "none"))

    def stats(self, hyps, refs):
        return np.asarray(self.metric._extract_corpus_statistics(list(hyps), [list(r) for r in refs]), dtype=np.float64)

    def score(self, summed):
        return float(self.metric._compute_score_from_stats([int(round(v)) for v in summed]).score)


class TerStats(StatScorer):
    """TER (tercom-compatible, sacreBLEU); MultEval's TER lowercases (``lowercase=True``)."""

    name = "ter"
    lower_is_better = True

    def __init__(self, lowercase: bool = True):
        from sacrebleu.metrics import TER

        self.metric = TER(case_sensitive=not lowercase)

    def stats(self, hyps, refs):
        return np.asarray(self.metric._extract_corpus_statistics(list(hyps), [list(r) for r in refs]), dtype=np.float64)

    def score(self, summed):
        return float(self.metric._compute_score_from_stats(list(summed)).score)


class MeteorStats(StatScorer):
    """METEOR 1.5 statistics and scores from the jar (one JVM for the scorer's lifetime)."""

    name = "meteor"

    def __init__(self, lang: str, norm: bool = False, jar: str | os.PathLike | None = None):
        from .meteor import _MeteorProcess, _plan, find_java, find_meteor_jar

        jar_path, _ = find_meteor_jar(jar)
        self.plan = _plan(lang, norm, jar_path, ())
        self.proc = _MeteorProcess(find_java(None), jar_path, self.plan["args"])

    def stats(self, hyps, refs):
        from .meteor import _clean, _refs_per_segment

        per_seg = [[_clean(r)[0] for r in seg] for seg in _refs_per_segment(list(hyps), refs)]
        lines = self.proc.stats([_clean(h)[0] for h in hyps], per_seg)
        stats = np.array([[float(x) for x in line.split()] for line in lines], dtype=np.float64)
        # Meteor's corpus aggregation (MeteorStats.addStats) leaves out the one chunk of a
        # segment aligned perfectly (every test and reference word matched, one chunk): zero it
        # here, so that plain sums of rows are Meteor's aggregate. Layout: test/ref length,
        # test/ref function words, 4 stages x (test content, ref content, test function, ref
        # function) matches, chunks, test/ref word matches.
        test_matches = stats[:, 4:20:2].sum(1)
        ref_matches = stats[:, 5:20:2].sum(1)
        perfect = (test_matches == stats[:, 0]) & (ref_matches == stats[:, 1]) & (stats[:, 20] == 1)
        stats[perfect, 20] = 0.0
        return stats

    def scores(self, summed):
        # A summed statistics vector scored as one segment is the corpus score of what it sums.
        segs, _ = self.proc.evaluate([" ".join(repr(float(v)) for v in row) for row in summed])
        return 100.0 * np.array(segs)

    def close(self):
        self.proc.close()


def make_scorer(metric: str, lang: str | None = None, tokenize: str = "none", ter_lowercase: bool = True,
                meteor_norm: bool = False, meteor_jar: str | os.PathLike | None = None) -> StatScorer:
    """The :class:`StatScorer` of ``metric`` (bleu, ter, meteor) with the paper's settings."""
    if metric == "bleu":
        return BleuStats(tokenize=tokenize)
    if metric == "ter":
        return TerStats(lowercase=ter_lowercase)
    if metric == "meteor":
        if not lang:
            raise ValueError("METEOR statistics need the target language (lang=)")
        return MeteorStats(lang, norm=meteor_norm, jar=meteor_jar)
    raise ValueError(f"no sufficient statistics for metric {metric!r}; valid: bleu, ter, meteor")


def stratified_ar(runs_a: Sequence[np.ndarray], runs_b: Sequence[np.ndarray], scorer: StatScorer,
                  n_shuffles: int = 10000, seed: int = 1, chunk: int = 1000) -> dict:
    """MultEval's two-sided p-value that system B differs from baseline A (module docstring).

    ``runs_a``, ``runs_b``: per run (seed), the ``(n, k)`` statistics of the same ``n``
    sentences; both systems need the same number of runs. Returns ``p_value``, both scores
    (of all runs together), the observed difference, the number of runs and shuffles."""
    if len(runs_a) != len(runs_b) or not runs_a:
        raise DataError(None, f"baseline has {len(runs_a)} runs and the system {len(runs_b)}",
                        "compare systems trained with the same seeds (MultEval needs as many optimiser runs each)")
    shapes = {r.shape for r in [*runs_a, *runs_b]}
    if len(shapes) != 1:
        raise DataError(None, f"runs have statistics of different shapes {sorted(shapes)}",
                        "every run must translate the same test set")
    n, _ = runs_a[0].shape
    m = len(runs_a)
    a, b = np.concatenate(runs_a), np.concatenate(runs_b)  # row = run * n + sentence
    score_a, score_b = scorer.scores(np.stack([a.sum(0), b.sum(0)]))
    observed = abs(score_a - score_b)
    result = {"baseline": float(score_a), "system": float(score_b), "observed_difference": float(observed), "runs": m,
              "shuffles": int(n_shuffles), "seed": int(seed)}
    if np.array_equal(a, b):
        # Identical outputs: no test can tell them apart. (MultEval's strict comparison would
        # give 1 / (shuffles + 1) here: jhclark/multeval issue #5.)
        return {"p_value": 1.0, **result}
    rng = np.random.default_rng(seed)
    rows = np.arange(n)
    above = 0
    for start in range(0, n_shuffles, chunk):
        size = min(chunk, n_shuffles - start)
        sums = np.empty((2 * size, a.shape[1]))
        for s in range(size):
            swap = rng.random(m * n) < 0.5
            runs = rng.permuted(np.tile(np.arange(m), (n, 1)), axis=1)  # (n, m): run k of sentence i -> runs[i, k]
            perm = (rows[:, None] + n * runs).T.reshape(-1)  # perm[k * n + i] = runs[i, k] * n + i
            inv = np.empty_like(perm)
            inv[perm] = np.arange(m * n)
            sums[2 * s] = np.where(swap[:, None], b[perm], a[perm]).sum(0)
            sums[2 * s + 1] = np.where(swap[:, None], a[inv], b[inv]).sum(0)
        scores = scorer.scores(sums)
        above += int((np.abs(scores[0::2] - scores[1::2]) > observed).sum())
    return {"p_value": (above + 1) / (n_shuffles + 1), **result}
