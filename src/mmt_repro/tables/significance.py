"""Significance of every system of a table against the table's baseline system.

For each test set and image condition, each system's translations are compared with the
baseline's by paired approximate randomisation (MultEval-style, as Calixto et al. 2017 report
for BLEU, METEOR and TER) or paired bootstrap. With several seeds, the first seed of each system
is compared (one run each, as MultEval does with a single optimiser run).
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
) -> dict[str, float]:
    """``translations`` maps ``"system|test_set|condition|seed"`` to a hypothesis file,
    ``references`` maps a test set to its reference file. ``baseline`` is one system for all,
    or a map from each system to its own baseline (e.g. the pre-trained NMT_SRC+IMG against the
    pre-trained NMT, as in Table 1 of Calixto et al.). Writes ``out_json`` with p-values keyed
    ``"system|pair|test_set|condition|metric"`` (the keys :func:`make_table` reads).
    ``ref_subword``: segmentation undone on the references first, as in scoring."""
    from ..text.recipes import merge_subwords

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
