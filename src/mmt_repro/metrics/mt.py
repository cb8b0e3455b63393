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
``bleu_lc``
    ``bleu`` on lowercased hypotheses and references (multi-bleu.perl ``-lc``, sacreBLEU
    ``lowercase=True``; signature ``case:lc``), whatever ``lowercase`` says: a paper scored cased
    carries the lowercased figure beside it (Yang et al. follow Elliott and Kadar, whose
    Multi30k text and metrics are lowercased).
``bleu_1ref``
    Only for a set with several references (captions: five per image): ``bleu`` against each
    reference stream alone, averaged over the streams (Mitzalis et al. 2021, footnote 7:
    "evaluating English captions using one reference at a time, yields 7.9 BLEU on average,
    compared to 27.0 BLEU in Table 2"). Same tokeniser, case and compatibility as ``bleu``; the
    signature is one stream's prefixed ``mean-of-<k>-single-ref``, ``details`` holds each
    stream's BLEU. With one reference it would equal ``bleu`` and is not written.
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
``meteor``
    METEOR 1.5 through the official jar (:mod:`mmt_repro.metrics.meteor`), ``100 x`` the jar's
    final score; needs ``lang`` (the target language). Its signature records language,
    modules, weights, parameters and whether the paraphrase table was there
    (``meteor-1.5|lang:de|modules:exact,stem|...|paraphrase:missing|norm:yes|nrefs:1|official:no``).
``cider``
    CIDEr-D as coco-caption computes it (:mod:`mmt_repro.metrics.cider`), on coco's scale
    (BertGen prints 0.587, not 58.7).

BLEU variants:

* ``bleu_compat="multi-bleu"`` (or :func:`multibleu`): Moses ``multi-bleu.perl`` on tokenised
  text, i.e. sacreBLEU with ``tokenize="none"`` and no smoothing (multi-bleu.perl gives 0 when an
  n-gram order has no match; sacreBLEU's default ``exp`` smoothing would not). The signature
  starts with ``multi-bleu.perl-compatible|``. Calixto et al. 2017 and Yang et al. 2020 used it.
* Chinese (``lang="zh"``, :func:`chinese_bleu`): BLEU moves by ~25 points between
  segmentations, so the tokeniser must be declared: ``zh`` (sacreBLEU's Chinese tokeniser:
  every CJK character a token, 13a for the rest), ``char`` (every character), or ``none``
  (text segmented beforehand, e.g. by jieba: say which in the config). ``13a`` is refused.

Across seeds, :func:`aggregate_seeds` gives mean, sample standard deviation and count.

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
import math
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric
from sacrebleu.significance import PairedTest

from mmt_repro.io import DataError, atomic_write, read_lines

log = logging.getLogger(__name__)

#: Metric names accepted by :func:`corpus_scores`. ``chrf3`` also adds ``chrf3_prec``/``chrf3_rec``.
VALID_METRICS = ("bleu", "bleu_lc", "bleu_1ref", "chrf3", "chrf3_prec", "chrf3_rec", "ter", "meteor", "cider")
#: How BLEU is computed: sacreBLEU's defaults (exp smoothing) or Moses multi-bleu.perl's.
BLEU_COMPAT = ("sacrebleu", "multi-bleu")
#: Tokenisers allowed for Chinese BLEU (see the module docstring).
CHINESE_TOKENIZERS = ("zh", "char", "none")
MULTIBLEU_PREFIX = "multi-bleu.perl-compatible"
#: Metric names accepted by :func:`paired_significance`.
SIGNIFICANCE_METRICS = ("bleu", "chrf3", "ter")
#: Keys every score JSON's ``meta`` must carry (``make_table`` groups by them).

CHRF_BETA = 3


def _check_metrics(metrics: Sequence[str], valid: Sequence[str]) -> list[str]:
    if isinstance(metrics, str):
        metrics = [metrics]
    unknown = [m for m in metrics if m not in valid]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; valid: {', '.join(valid)}")
    return list(metrics)


def _make_metric(name: str, tokenize: str, lowercase: bool, smooth: str = "exp") -> Metric:
    """The sacreBLEU metric object behind one of our metric names."""
    if name == "bleu":
        # force=True only silences sacreBLEU's "looks tokenised" warning, which is expected
        # when we deliberately score tokenised text multi-bleu style.
        return BLEU(tokenize=tokenize, lowercase=lowercase, force=(tokenize == "none"), smooth_method=smooth)
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


def _bleu_entry(
    hyps: list[str], refs: list[list[str]], tokenize: str, lowercase: bool, smooth: str = "exp", prefix: str = ""
) -> dict:
    m = _make_metric("bleu", tokenize, lowercase, smooth=smooth)
    s = m.corpus_score(hyps, refs)
    sig = m.get_signature().format()
    return {
        "value": float(s.score),
        "signature": f"{prefix}|{sig}" if prefix else sig,
        "details": {
            "counts": [int(c) for c in s.counts],
            "totals": [int(t) for t in s.totals],
            "precisions": [float(p) for p in s.precisions],
            "bp": float(s.bp),
            "sys_len": int(s.sys_len),
            "ref_len": int(s.ref_len),
        },
    }


def multibleu(hyps: list[str], refs: list[list[str]], lowercase: bool = False) -> dict:
    """BLEU exactly as Moses ``multi-bleu.perl`` (``-lc`` = ``lowercase``) on tokenised text.

    Whitespace tokens, closest reference length for the brevity penalty, no smoothing (0 when
    an n-gram order has no match). Reproduces multi-bleu.perl's 18.54 on MultEval's example.
    """
    _check_lengths(hyps, refs)
    return _bleu_entry(list(hyps), [list(r) for r in refs], "none", lowercase, smooth="none", prefix=MULTIBLEU_PREFIX)


def bleu_one_reference(hyps: list[str], refs: list[list[str]], tokenize: str = "13a", lowercase: bool = False,
                       bleu_compat: str = "sacrebleu") -> dict:
    """BLEU against each reference stream alone, averaged over the streams (``bleu_1ref`` in the
    module docstring); ``bleu_compat`` and ``tokenize`` as for ``bleu``."""
    _check_lengths(hyps, refs)
    if bleu_compat == "multi-bleu":
        per = [multibleu(list(hyps), [list(r)], lowercase=lowercase) for r in refs]
    else:
        per = [_bleu_entry(list(hyps), [list(r)], tokenize, lowercase) for r in refs]
    values = [p["value"] for p in per]
    return {
        "value": sum(values) / len(values),
        "signature": f"mean-of-{len(refs)}-single-ref|{per[0]['signature']}",
        "details": {"per_reference": values},
    }


def chinese_bleu(hyps: list[str], refs: list[list[str]], tokenize: str, lowercase: bool = False) -> dict:
    """BLEU of Chinese output with the segmentation declared: ``tokenize`` in ``zh``, ``char``, ``none``.

    ``zh``: sacreBLEU's Chinese tokeniser (each CJK character is a token, 13a elsewhere);
    ``char``: every non-space character is a token; ``none``: the text is already segmented
    (record the segmenter, e.g. jieba, in the config). The choice is in the signature (``tok:zh``).
    """
    _check_chinese_tokenize(tokenize)
    _check_lengths(hyps, refs)
    return _bleu_entry(list(hyps), [list(r) for r in refs], tokenize, lowercase)


def _is_chinese(lang: str | None) -> bool:
    return lang is not None and lang.lower().split("-")[0].split("_")[0] in ("zh", "cmn")


def _check_chinese_tokenize(tokenize: str) -> None:
    if tokenize not in CHINESE_TOKENIZERS:
        raise ValueError(
            f"Chinese BLEU needs a declared segmentation, got tokenize={tokenize!r}; valid: "
            f"{', '.join(CHINESE_TOKENIZERS)} (zh: sacreBLEU's CJK tokeniser, char: characters, "
            "none: pre-segmented text)"
        )


def aggregate_seeds(values: Iterable[float]) -> tuple[float, float | None, int]:
    """``(mean, sample standard deviation, n)`` of one score over seeds; std is None for one seed.

    Sample standard deviation (``n - 1`` in the denominator), as ``make_table`` reports it.
    Hirasawa et al. 2019 print "mean and variance" over three seeds as ``51.00 +- .37``; the
    magnitudes there are standard deviations, which is what we compare them with.
    """
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("no values to aggregate")
    if any(math.isnan(v) for v in vals):
        raise ValueError(f"NaN among the values {vals}")
    n = len(vals)
    mean = sum(vals) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1)) if n > 1 else None
    return mean, std, n


def corpus_scores(
    hyps: list[str],
    refs: list[list[str]],
    metrics: Sequence[str] = ("bleu", "chrf3", "ter"),
    tokenize: str = "13a",
    lowercase: bool = False,
    lang: str | None = None,
    bleu_compat: str = "sacrebleu",
    meteor_jar: str | os.PathLike | None = None,
    meteor_norm: bool = True,
    cider_remove_punct: bool = False,
    ter_lowercase: bool | None = None,
) -> dict[str, dict]:
    """Corpus scores of ``hyps`` against one or more reference streams.

    ``refs`` is a list of reference streams, each line-parallel to ``hyps``. Returns
    ``{metric: {"value": float, "signature": str, "details": {...}}}``; asking for ``chrf3``
    also returns ``chrf3_prec`` and ``chrf3_rec`` (see the module docstring for definitions).
    ``tokenize`` and ``lowercase`` apply to BLEU; ``lowercase`` also to chrF, TER and CIDEr.
    ``lang`` is the target language: required for ``meteor``; for Chinese (``zh``) BLEU refuses
    any ``tokenize`` outside :data:`CHINESE_TOKENIZERS`. ``bleu_compat="multi-bleu"`` computes
    ``bleu`` as :func:`multibleu` (``tokenize`` must then be ``none``). ``meteor_jar``: a
    Meteor 1.5 jar (see :mod:`mmt_repro.metrics.meteor` for the lookup), ``meteor_norm``: pass
    ``-norm``. ``cider_remove_punct``: drop coco-caption's punctuation tokens before CIDEr.
    ``ter_lowercase``: TER on lowercased text whatever ``lowercase`` says (MultEval's TER
    lowercases); None follows ``lowercase``.
    """
    metrics = _check_metrics(metrics, VALID_METRICS)
    if bleu_compat not in BLEU_COMPAT:
        raise ValueError(f"unknown bleu_compat {bleu_compat!r}; valid: {', '.join(BLEU_COMPAT)}")
    if {"bleu", "bleu_lc"} & set(metrics) and bleu_compat == "multi-bleu" and tokenize != "none":
        raise ValueError(f"bleu_compat='multi-bleu' scores tokenised text as is: use tokenize='none', not {tokenize!r}")
    if {"bleu", "bleu_lc"} & set(metrics) and _is_chinese(lang):
        _check_chinese_tokenize(tokenize)
    if "meteor" in metrics and not lang:
        raise ValueError("metric 'meteor' needs lang= (the target language, e.g. 'de'); Meteor's modules depend on it")
    _check_lengths(hyps, refs)
    hyps = list(hyps)
    refs = [list(r) for r in refs]
    out: dict[str, dict] = {}

    if "bleu" in metrics:
        if bleu_compat == "multi-bleu":
            out["bleu"] = multibleu(hyps, refs, lowercase=lowercase)
        else:
            out["bleu"] = _bleu_entry(hyps, refs, tokenize, lowercase)
    if "bleu_lc" in metrics:  # BLEU as above on lowercased text (multi-bleu.perl -lc), beside a cased bleu
        if bleu_compat == "multi-bleu":
            out["bleu_lc"] = multibleu(hyps, refs, lowercase=True)
        else:
            out["bleu_lc"] = _bleu_entry(hyps, refs, tokenize, True)

    if "bleu_1ref" in metrics and len(refs) > 1:  # footnote 7 of Mitzalis et al.: one reference at a time
        out["bleu_1ref"] = bleu_one_reference(hyps, refs, tokenize, lowercase, bleu_compat)

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
        m = _make_metric("ter", tokenize, lowercase if ter_lowercase is None else ter_lowercase)
        s = m.corpus_score(hyps, refs)
        out["ter"] = {
            "value": float(s.score),
            "signature": m.get_signature().format(),
            "details": {"num_edits": float(s.num_edits), "ref_length": float(s.ref_length)},
        }

    if "meteor" in metrics:
        from mmt_repro.metrics.meteor import meteor_score

        out["meteor"] = meteor_score(hyps, refs, lang=lang, norm=meteor_norm, jar=meteor_jar)

    if "cider" in metrics:
        from mmt_repro.metrics.cider import cider_score

        out["cider"] = cider_score(hyps, refs, lowercase=lowercase, remove_punct=cider_remove_punct)
    return out


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
    details: bool = False,
) -> float | dict:
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

    With ``details=True`` the result is a dict: ``p_value``, ``test``, ``n_samples``, ``seed``,
    ``metric``, ``signature``, and per side (``baseline``, ``system``) the corpus ``score`` and,
    for the bootstrap, the resampled ``mean`` and 95% ``ci`` half-width (sacreBLEU's estimate).
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

    def summary(p: float, base: dict, system: dict) -> float | dict:
        if not details:
            return float(p)
        return {
            "p_value": float(p),
            "test": test,
            "n_samples": int(n_samples),
            "seed": int(seed),
            "metric": metric,
            "signature": m.get_signature().format(),
            "baseline": base,
            "system": system,
        }

    if all(norm(a) == norm(b) for a, b in zip(baseline_hyp, system_hyp)):
        same = {"score": float(m.corpus_score(list(baseline_hyp), refs).score), "mean": None, "ci": None} if details else {}
        return summary(1.0, same, same)

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
    base, system = ({"score": float(r.score), "mean": r.mean, "ci": r.ci} for r in results[names[0]])
    return summary(results[names[0]][1].p_value, base, system)
