"""Significance of every system of a table against the table's baseline system.

For each test set and image condition, each system's translations are compared with the
baseline's. Two ways (the paper's ``scoring.significance_seeds``):

- ``first``: the first seed of each system against the baseline's first seed, by paired
  approximate randomisation or bootstrap (sacreBLEU's ``PairedTest``), BLEU, chrF, TER;
- ``all``: every seed of both at once, MultEval's stratified approximate randomisation
  (:mod:`mmt_repro.metrics.multeval`; Calixto et al. 2017 report MultEval's p-values), with
  BLEU, TER and METEOR from sufficient statistics.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..io import atomic_write, read_lines
from ..metrics.mt import paired_significance

log = logging.getLogger(__name__)


def table_significance(
    translations: dict[str, str],
    references: dict[str, str],
    baseline: str | dict[str, str],
    pair: str,
    out_json: Path,
    metrics: tuple[str, ...] = ("bleu", "ter"),
    test: str = "ar",
    n_samples: int = 1000,
    tokenize: str = "none",
    ref_subword: str = "none",
    seeds: str = "first",
    lang: str | None = None,
    ter_lowercase: bool = True,
    meteor_norm: bool = False,
    meteor_jar: str | None = None,
) -> dict[str, float]:
    """``translations`` maps ``"system|test_set|condition|seed"`` to a hypothesis file,
    ``references`` maps a test set to its reference file. ``baseline`` is one system for all,
    or a map from each system to its own baseline (e.g. the pre-trained NMT_SRC+IMG against the
    pre-trained NMT, as in Table 1 of Calixto et al.). Writes ``out_json`` with p-values keyed
    ``"system|pair|test_set|condition|metric"`` (the keys :func:`make_table` reads).
    ``ref_subword``: segmentation undone on the references first, as in scoring.
    ``seeds``: ``first`` or ``all`` (module docstring); with ``all``, ``lang`` (METEOR's
    language), ``ter_lowercase``, ``meteor_norm`` and ``meteor_jar`` set the statistics."""
    from ..text.recipes import merge_subwords

    if seeds == "all":
        out = _all_seeds(translations, references, baseline, pair, metrics, n_samples, tokenize, ref_subword,
                         lang, ter_lowercase, meteor_norm, meteor_jar)
        with atomic_write(out_json) as fh:
            json.dump(out, fh, indent=1, sort_keys=True)
        return out
    runs: dict[tuple[str, str, str], tuple[int, str]] = {}
    for key, path in translations.items():
        system, test_set, condition, seed = key.split("|")
        current = runs.get((system, test_set, condition))
        if current is None or int(seed) < current[0]:
            runs[(system, test_set, condition)] = (int(seed), path)
    out: dict[str, float] = {}
    for (system, test_set, condition), (_, path) in sorted(runs.items()):
        base_system = baseline.get(system) if isinstance(baseline, dict) else baseline
        if base_system is None or (system == base_system and condition == "congruent"):
            continue
        base = runs.get((base_system, test_set, "congruent"))
        if base is None:
            continue
        refs = [merge_subwords(read_lines(references[test_set]), ref_subword)]
        base_hyp, sys_hyp = read_lines(base[1]), read_lines(path)
        for metric in metrics:
            p = paired_significance(base_hyp, sys_hyp, refs, metric=metric, test=test, n_samples=n_samples, tokenize=tokenize)
            out[f"{system}|{pair}|{test_set}|{condition}|{metric}"] = round(float(p), 4)
            log.info("%s vs %s on %s (%s), %s: p = %.4f", system, baseline, test_set, condition, metric, p)
    with atomic_write(out_json) as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    return out


def _all_seeds(translations, references, baseline, pair, metrics, n_samples, tokenize, ref_subword, lang,
               ter_lowercase, meteor_norm, meteor_jar) -> dict[str, float]:
    """MultEval's test over every seed of a system and its baseline (the seeds both have)."""
    from ..metrics.multeval import make_scorer, stratified_ar
    from ..text.recipes import merge_subwords

    runs: dict[tuple[str, str, str], dict[int, str]] = {}
    for key, path in translations.items():
        system, test_set, condition, seed = key.split("|")
        runs.setdefault((system, test_set, condition), {})[int(seed)] = path
    comparisons = []
    for (system, test_set, condition), by_seed in sorted(runs.items()):
        base_system = baseline.get(system) if isinstance(baseline, dict) else baseline
        if base_system is None or (system == base_system and condition == "congruent"):
            continue
        base = runs.get((base_system, test_set, "congruent"))
        if base is None:
            continue
        common = sorted(set(base) & set(by_seed))
        if len(common) < max(len(base), len(by_seed)):
            log.warning("%s (%s) has seeds %s, its baseline %s has %s: testing over the seeds both have, %s",
                        system, condition, sorted(by_seed), base_system, sorted(base), common)
        comparisons.append((system, test_set, condition, base_system, [base[k] for k in common],
                            [by_seed[k] for k in common]))
    out: dict[str, float] = {}
    for metric in metrics:
        scorer = make_scorer(metric, lang=lang, tokenize=tokenize, ter_lowercase=ter_lowercase,
                             meteor_norm=meteor_norm, meteor_jar=meteor_jar)
        cache: dict[str, object] = {}
        try:
            for system, test_set, condition, base_system, base_files, sys_files in comparisons:
                refs = [merge_subwords(read_lines(references[test_set]), ref_subword)]

                def stats(path, refs=refs):
                    if path not in cache:
                        cache[path] = scorer.stats(read_lines(path), refs)
                    return cache[path]

                res = stratified_ar([stats(f) for f in base_files], [stats(f) for f in sys_files], scorer,
                                    n_shuffles=n_samples)
                out[f"{system}|{pair}|{test_set}|{condition}|{metric}"] = round(res["p_value"], 4)
                log.info("%s vs %s on %s (%s), %s over %d seed(s), %d shuffles: %.2f vs %.2f, p = %.4f", system,
                         base_system, test_set, condition, metric, res["runs"], n_samples, res["baseline"],
                         res["system"], res["p_value"])
        finally:
            scorer.close()
    return out
