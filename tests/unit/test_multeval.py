"""MultEval's stratified approximate randomisation (mmt_repro.metrics.multeval)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from mmt_repro.io import DataError
from mmt_repro.metrics.multeval import BleuStats, MeteorStats, StatScorer, TerStats, stratified_ar

XRAY = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "metric-validation" / "meteor-xray-example"


class Sum(StatScorer):
    """A metric that is the sum of one statistic: its p-values can be counted by hand."""

    def score(self, summed):
        return float(summed[0])


def exact_p(a: np.ndarray, b: np.ndarray) -> float:
    """One run: P(|sum_i s_i (b_i - a_i)| > |sum_i (b_i - a_i)|) over all sign vectors s."""
    d = b - a
    observed = abs(d.sum())
    signs = itertools.product((1, -1), repeat=len(d))
    return np.mean([abs(np.dot(s, d)) > observed + 1e-12 for s in signs])


def test_one_run_is_paired_approximate_randomisation_with_the_exact_p():
    a = np.array([[1.0], [2.0], [0.0], [3.0], [1.0], [0.0], [2.0]])
    b = np.array([[2.0], [2.5], [1.0], [3.0], [4.0], [0.0], [2.0]])
    res = stratified_ar([a], [b], Sum(), n_shuffles=20000, seed=3)
    assert res["baseline"] == 9.0 and res["system"] == 14.5 and res["runs"] == 1
    # p = (c + 1) / (N + 1) estimates the share of the 2^7 sign vectors that beat the observed sum
    assert res["p_value"] == pytest.approx(exact_p(a[:, 0], b[:, 0]), abs=0.004)


def test_identical_systems_get_p_one():
    a = np.arange(12.0).reshape(6, 2)
    assert stratified_ar([a, a], [a.copy(), a.copy()], Sum(), n_shuffles=100)["p_value"] == 1.0


def test_all_runs_count_consistent_gains_beat_a_mixed_one():
    """A system better on every sentence of all three runs is significant; one better in one
    run and worse in another by the same amounts is not."""
    rng = np.random.default_rng(0)
    a = [rng.normal(size=(40, 1)) for _ in range(3)]
    better = [x + 0.5 for x in a]
    mixed = [a[0] + 0.5, a[1] - 0.5, a[2].copy()]
    assert stratified_ar(a, better, Sum(), n_shuffles=2000)["p_value"] < 0.001
    assert stratified_ar(a, mixed, Sum(), n_shuffles=2000)["p_value"] > 0.5


def test_every_shuffle_takes_each_sentence_once_per_run():
    """Stratification: each pseudo-system takes one version of every sentence per run, from
    either system and any run. With sentence i tagged 10**i in both systems (and system B a
    hair apart, so that the test runs), every shuffle's sum is m * 1111 for n = 4, m = 3."""
    n, m = 4, 3
    a = [np.array([[10.0**i] for i in range(n)]) for _ in range(m)]
    b = [x * (1 + 1e-9) for x in a]
    seen: list[float] = []

    class Tag(StatScorer):
        def scores(self, summed):
            seen.extend(summed[:, 0].tolist())
            return summed[:, 0]

    stratified_ar(a, b, Tag(), n_shuffles=50, seed=1)
    assert len(seen) == 2 + 2 * 50
    assert all(round(v) == m * 1111 for v in seen)


def test_runs_must_match():
    a = np.ones((3, 1))
    with pytest.raises(DataError, match="same seeds"):
        stratified_ar([a, a], [a], Sum())
    with pytest.raises(DataError, match="different shapes"):
        stratified_ar([a], [np.ones((4, 1))], Sum())


def test_bleu_and_ter_statistics_sum_to_the_corpus_scores():
    from mmt_repro.metrics.mt import corpus_scores

    hyps = ["a man rides a horse .", "Two dogs play in the snow .", "a woman is cooking"]
    refs = [["a man is riding a horse .", "two dogs are playing in the snow .", "a woman cooks dinner ."]]
    bleu, ter = BleuStats(), TerStats(lowercase=True)
    want = corpus_scores(hyps, refs, metrics=("bleu", "ter"), tokenize="none", bleu_compat="multi-bleu",
                         ter_lowercase=True)
    assert bleu.score(bleu.stats(hyps, refs).sum(0)) == pytest.approx(want["bleu"]["value"])
    assert ter.score(ter.stats(hyps, refs).sum(0)) == pytest.approx(want["ter"]["value"])
    cased = corpus_scores(hyps, refs, metrics=("ter",), tokenize="none")["ter"]["value"]
    assert cased > want["ter"]["value"]  # "Two" counts as an edit only when TER is case-sensitive


@pytest.mark.skipif(not (XRAY / "system1.hyp").is_file(), reason=f"needs {XRAY} (../shared/datasets)")
def test_meteor_statistics_summed_give_the_corpus_score():
    from mmt_repro.metrics.meteor import meteor_score
    from mmt_repro.io import read_lines

    hyps = read_lines(XRAY / "system1.hyp")[:200]
    refs = [read_lines(XRAY / "reference")[:200]]
    scorer = MeteorStats("de", norm=False)  # de: exact + stem, no paraphrase table to load (fast)
    try:
        stats = scorer.stats(hyps, refs)
        halves = scorer.scores(np.stack([stats.sum(0), stats[:100].sum(0)]))
    finally:
        scorer.close()
    assert halves[0] == pytest.approx(meteor_score(hyps, refs, lang="de", norm=False)["value"], abs=1e-9)
    assert halves[1] == pytest.approx(meteor_score(hyps[:100], [refs[0][:100]], lang="de", norm=False)["value"],
                                      abs=1e-9)
