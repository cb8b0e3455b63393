"""Corpus-level MT metrics (BLEU, chrF3 with character precision/recall, TER) and paired tests.

Everything is computed with sacreBLEU so that every number carries sacreBLEU's reproducibility
signature (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`` and friends); the
signature travels into the score JSON and from there into the tables.

Metric keys (all values in percent, like the papers report them):

``bleu``
    ``sacrebleu.metrics.BLEU(tokenize=..., lowercase=...)``. ``tokenize="none"`` scores text that
    is already tokenised exactly like Moses ``multi-bleu.perl`` (Calixto et al. 2017 report
    "cased, tokenized sentences with punctuation"); ``"13a"`` is sacreBLEU's default for
    detokenised text.
``chrf3``
    ``sacrebleu.metrics.CHRF(beta=3)``: character 6-gram F3, sacreBLEU's default
    effective-order averaging (no eps smoothing), whitespace ignored.
``chrf3_prec`` / ``chrf3_rec``
    The character precision and recall behind that F3, as the chrF tool prints them next to the
    score. From the corpus-summed chrF statistics (per order n: hypothesis n-grams ``H_n``,
    reference n-grams ``R_n``, matched n-grams ``M_n``; with several references each segment
    contributes the statistics of its best-F reference; sacreBLEU counts no hypothesis n-grams
    of an order for which that segment's reference has none), ``prec = 100 * mean_n M_n / H_n`` and
    ``rec = 100 * mean_n M_n / R_n``, the mean running over the orders with ``H_n > 0`` and
    ``R_n > 0``. chrF3 is exactly ``(1 + 9) * prec * rec / (9 * prec + rec)`` of these two
    numbers (checked on every call).
``ter``
    ``sacrebleu.metrics.TER(case_sensitive=not lowercase)``: tercom-compatible TER in percent
    (edits / average reference length * 100). Note sacreBLEU's own default is case-insensitive;
    we score case like the other metrics, and the signature (``case:mixed`` / ``case:lc``)
    records which was used.

Score JSON written by :func:`score_files`::

    {"meta": {"paper": ..., "table": ..., "system": ..., "pair": ..., "test_set": ...,
              "seed": ..., "condition": "congruent" | "shuffled" | ...},
     "scores": {"bleu": {"value": 36.51, "signature": "nrefs:1|case:mixed|...",
                         "details": {...}}, ...},
     "n_sentences": 1000}
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric
from sacrebleu.significance import PairedTest

from mmt_repro.io import DataError, atomic_write, read_lines

log = logging.getLogger(__name__)

#: Metric names accepted by :func:`corpus_scores`. ``chrf3`` also adds ``chrf3_prec``/``chrf3_rec``.
VALID_METRICS = ("bleu", "chrf3", "chrf3_prec", "chrf3_rec", "ter")
#: Metric names accepted by :func:`paired_significance`.
SIGNIFICANCE_METRICS = ("bleu", "chrf3", "ter")
#: Keys every score JSON's ``meta`` must carry (``make_table`` groups by them).
META_KEYS = ("paper", "table", "system", "pair", "test_set", "seed", "condition")

CHRF_BETA = 3


def _check_metrics(metrics: Sequence[str], valid: Sequence[str]) -> list[str]:
    if isinstance(metrics, str):
        metrics = [metrics]
    unknown = [m for m in metrics if m not in valid]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; valid: {', '.join(valid)}")
    return list(metrics)


def _make_metric(name: str, tokenize: str, lowercase: bool) -> Metric:
    """The sacreBLEU metric object behind one of our metric names."""
    if name == "bleu":
        # force=True only silences sacreBLEU's "looks tokenised" warning, which is expected
        # when we deliberately score tokenised text multi-bleu style.
        return BLEU(tokenize=tokenize, lowercase=lowercase, force=(tokenize == "none"))
    if name in ("chrf3", "chrf3_prec", "chrf3_rec"):
        return CHRF(beta=CHRF_BETA, lowercase=lowercase)
    if name == "ter":
        return TER(case_sensitive=not lowercase)
    raise ValueError(f"unknown metric {name!r}; valid: {', '.join(VALID_METRICS)}")


def _check_lengths(hyps: Sequence[str], refs: Sequence[Sequence[str]], names: Sequence | None = None) -> None:
    """Every reference stream must have one line per hypothesis."""
    if isinstance(refs, str) or (refs and isinstance(refs[0], str)):
        raise TypeError("refs must be a list of reference streams (a list of lists of lines), e.g. [ref_lines]")
    if len(refs) == 0:
        raise DataError(None, "no reference stream given", "pass at least one reference file")
    for i, stream in enumerate(refs):
        if len(stream) != len(hyps):
            where = names[i + 1] if names else None
            hyp_where = names[0] if names else "hypotheses"
            raise DataError(
                where,
                f"reference stream {i} has {len(stream)} lines but {hyp_where} has {len(hyps)}",
                "hypothesis and every reference must be line-parallel; re-run the decode rule or fix the test set",
            )
    if len(hyps) == 0:
        raise DataError(names[0] if names else None, "no hypotheses to score", "check the decode output")


def _chrf_prec_rec(metric: CHRF, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> tuple[float, float]:
    """Corpus character n-gram precision and recall in percent, averaged like chrF does.

    Uses sacreBLEU's per-segment chrF statistics ``[H_1, R_1, M_1, ..., H_6, R_6, M_6]``
    summed over the corpus, then averages ``M_n/H_n`` and ``M_n/R_n`` over the orders with
    ``H_n > 0`` and ``R_n > 0`` (sacreBLEU's "effective order", see ``CHRF._compute_f_score``).
    """
    seg_stats = metric._extract_corpus_statistics(hyps, refs)
    totals = [sum(col) for col in zip(*seg_stats)]
    precs, recs = [], []
    for n in range(metric.order):
        n_hyp, n_ref, n_match = totals[3 * n : 3 * n + 3]
        if n_hyp > 0 and n_ref > 0:
            precs.append(n_match / n_hyp)
            recs.append(n_match / n_ref)
    if not precs:
        return 0.0, 0.0
    return 100.0 * sum(precs) / len(precs), 100.0 * sum(recs) / len(recs)


def _f_beta(prec: float, rec: float, beta: float) -> float:
    if prec + rec == 0:
        return 0.0
    factor = beta**2
    return (1 + factor) * prec * rec / (factor * prec + rec)


def corpus_scores(
    hyps: list[str],
    refs: list[list[str]],
    metrics: Sequence[str] = ("bleu", "chrf3", "ter"),
    tokenize: str = "13a",
    lowercase: bool = False,
) -> dict[str, dict]:
    """Corpus scores of ``hyps`` against one or more reference streams.

    ``refs`` is a list of reference streams, each line-parallel to ``hyps``. Returns
    ``{metric: {"value": float, "signature": str, "details": {...}}}``; asking for ``chrf3``
    also returns ``chrf3_prec`` and ``chrf3_rec`` (see the module docstring for definitions).
    ``tokenize`` and ``lowercase`` apply to BLEU; ``lowercase`` also to chrF and TER.
    """
    metrics = _check_metrics(metrics, VALID_METRICS)
    _check_lengths(hyps, refs)
    hyps = list(hyps)
    refs = [list(r) for r in refs]
    out: dict[str, dict] = {}

    if "bleu" in metrics:
        m = _make_metric("bleu", tokenize, lowercase)
        s = m.corpus_score(hyps, refs)
        out["bleu"] = {
            "value": float(s.score),
            "signature": m.get_signature().format(),
            "details": {
                "counts": [int(c) for c in s.counts],
                "totals": [int(t) for t in s.totals],
                "precisions": [float(p) for p in s.precisions],
                "bp": float(s.bp),
                "sys_len": int(s.sys_len),
                "ref_len": int(s.ref_len),
            },
        }

    if any(k in metrics for k in ("chrf3", "chrf3_prec", "chrf3_rec")):
        m = _make_metric("chrf3", tokenize, lowercase)
        s = m.corpus_score(hyps, refs)
        sig = m.get_signature().format()
        prec, rec = _chrf_prec_rec(m, hyps, refs)
        if abs(_f_beta(prec, rec, CHRF_BETA) - s.score) > 1e-6:
            raise RuntimeError(
                f"chrF3 {s.score} is not F3 of the derived precision {prec} and recall {rec}: "
                "sacreBLEU's chrF averaging has changed; update _chrf_prec_rec"
            )
        details = {"beta": CHRF_BETA, "char_order": m.char_order, "word_order": m.word_order}
        out["chrf3"] = {"value": float(s.score), "signature": sig, "details": details}
        out["chrf3_prec"] = {"value": float(prec), "signature": sig, "details": details}
        out["chrf3_rec"] = {"value": float(rec), "signature": sig, "details": details}

    if "ter" in metrics:
        m = _make_metric("ter", tokenize, lowercase)
        s = m.corpus_score(hyps, refs)
        out["ter"] = {
            "value": float(s.score),
            "signature": m.get_signature().format(),
            "details": {"num_edits": float(s.num_edits), "ref_length": float(s.ref_length)},
        }
    return out


def score_files(
    hyp: Path,
    refs: list[Path],
    out_json: Path,
    meta: dict,
    metrics: Sequence[str] = ("bleu", "chrf3", "ter"),
    tokenize: str = "13a",
    lowercase: bool = False,
) -> dict:
    """Score a hypothesis file against reference files and write the score JSON atomically.

    Writes and returns ``{"meta": meta, "scores": corpus_scores(...), "n_sentences": N}``.
    ``meta`` must carry ``paper, table, system, pair, test_set, seed, condition``.
    """
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise DataError(
            out_json, f"meta lacks {missing}", f"pass all of {', '.join(META_KEYS)} in the rule's params"
        )
    if isinstance(refs, (str, os.PathLike)):
        refs = [refs]
    hyp_lines = read_lines(hyp)
    ref_lines = [read_lines(r) for r in refs]
    _check_lengths(hyp_lines, ref_lines, names=[str(hyp)] + [str(r) for r in refs])
    scores = corpus_scores(hyp_lines, ref_lines, metrics=metrics, tokenize=tokenize, lowercase=lowercase)
    result = {"meta": dict(meta), "scores": scores, "n_sentences": len(hyp_lines)}
    with atomic_write(out_json) as fh:
        json.dump(result, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return result


@contextlib.contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """sacreBLEU's PairedTest reads its RNG seed from ``$SACREBLEU_SEED``; set it for one test."""
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if old is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = old


def paired_significance(
    baseline_hyp: list[str],
    system_hyp: list[str],
    refs: list[list[str]],
    metric: str = "bleu",
    test: str = "ar",
    n_samples: int = 1000,
    seed: int = 12345,
    tokenize: str = "13a",
    lowercase: bool = False,
) -> float:
    """p-value that ``system_hyp`` differs from ``baseline_hyp`` on ``metric`` (two-sided).

    Uses ``sacrebleu.significance.PairedTest`` with ``test_type="ar"`` (approximate
    randomisation, a port of MultEval's test, which Calixto et al. 2017 used) or ``"bs"``
    (paired bootstrap resampling, as Moses' script). ``p = (c + 1) / (n_samples + 1)``
    where ``c`` counts trials whose score difference *strictly* exceeds the observed one.

    Because of that strict comparison, MultEval and sacreBLEU report ``p = 1/(n+1)`` for a
    system compared with an identical copy of itself (jhclark/multeval issue #5). We return
    ``1.0`` instead when the two systems are identical after the metric's own preprocessing
    (case folding, tokenisation, whitespace), since no test can tell them apart.

    ``seed`` must be >= 1 (sacreBLEU treats a seed of 0 as "unseeded").
    """
    _check_metrics([metric], SIGNIFICANCE_METRICS)
    if test not in ("ar", "bs"):
        raise ValueError(f"unknown test {test!r}; valid: ar (approximate randomisation), bs (paired bootstrap)")
    if int(seed) < 1:
        raise ValueError(f"seed must be a positive integer, got {seed!r} (sacreBLEU treats 0 as unseeded)")
    if n_samples < 1:
        raise ValueError(f"n_samples must be positive, got {n_samples}")
    _check_lengths(baseline_hyp, refs)
    if len(system_hyp) != len(baseline_hyp):
        raise DataError(
            None,
            f"system has {len(system_hyp)} hypotheses but the baseline has {len(baseline_hyp)}",
            "compare outputs on the same test set",
        )
    refs = [list(r) for r in refs]
    m = _make_metric(metric, tokenize, lowercase)

    def norm(line: str) -> str:
        return " ".join(m._preprocess_segment(line).split())

    if all(norm(a) == norm(b) for a, b in zip(baseline_hyp, system_hyp)):
        return 1.0

    with _sacrebleu_seed(int(seed)):
        paired = PairedTest(
            [("baseline", list(baseline_hyp)), ("system", list(system_hyp))],
            {metric: m},
            refs,
            test_type=test,
            n_samples=int(n_samples),
            n_ar_confidence=-1,
            n_jobs=1,
        )
        _, results = paired()
    # results maps the metric's display name (e.g. "BLEU", "chrF3", "TER") to
    # [baseline Result, system Result]; the baseline carries no p-value.
    names = [k for k in results if k != "System"]
    if len(names) != 1:
        raise RuntimeError(f"unexpected PairedTest result keys {list(results)}")
    p = results[names[0]][1].p_value
    return float(p)
