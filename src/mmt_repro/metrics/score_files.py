"""Scoring one translation file: every metric of the paper's scoring block
(:func:`mmt_repro.metrics.mt.corpus_scores`) with its signature, the run's meta and the decoder's
degenerate-output counts, written as the score JSON that tables read (rule score).

Apart from :mod:`.mt` (which training imports for validation BLEU), so that a change here
re-runs the score jobs and not the training (mmt_repro.plan_tools.version)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from mmt_repro.io import DataError, atomic_write, read_lines

from .mt import _check_lengths, corpus_scores

log = logging.getLogger(__name__)

META_KEYS = ("paper", "table", "system", "pair", "test_set", "seed", "condition")


def score_files(
    hyp: Path,
    refs: list[Path],
    out_json: Path,
    meta: dict,
    metrics: Sequence[str] = ("bleu", "chrf3", "ter"),
    tokenize: str = "13a",
    lowercase: bool = False,
    lang: str | None = None,
    bleu_compat: str = "sacrebleu",
    meteor_jar: str | os.PathLike | None = None,
    meteor_norm: bool = True,
    cider_remove_punct: bool = False,
    ref_subword: str = "none",
    decode_stats: Path | None = None,
    ter_lowercase: bool | None = None,
) -> dict:
    """Score a hypothesis file against reference files and write the score JSON atomically.

    Writes and returns ``{"meta": meta, "scores": corpus_scores(...), "n_sentences": N}``.
    ``meta`` must carry ``paper, table, system, pair, test_set, seed, condition``. ``lang``
    defaults to the target side of ``meta["pair"]`` (``en-de`` -> ``de``); the other keyword
    arguments go to :func:`corpus_scores`. ``ref_subword``: segmentation to undo on the
    references first (``wordpiece`` for recipes whose chain has the ``wp`` step, so both sides
    are scored as merged words); hypotheses arrive merged from decoding. ``decode_stats``: the
    translate rule's JSON; with it the result has ``degenerate`` (:func:`degenerate_output`):
    empty hypotheses and hypotheses cut at max_len, warned about above
    :data:`DEGENERATE_SHARE`.
    """
    from ..text.recipes import merge_subwords

    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise DataError(
            out_json, f"meta lacks {missing}", f"pass all of {', '.join(META_KEYS)} in the rule's params"
        )
    if isinstance(refs, (str, os.PathLike)):
        refs = [refs]
    hyp_lines = read_lines(hyp)
    ref_lines = [merge_subwords(read_lines(r), ref_subword) for r in refs]
    _check_lengths(hyp_lines, ref_lines, names=[str(hyp)] + [str(r) for r in refs])
    if lang is None and "-" in str(meta.get("pair", "")):
        lang = str(meta["pair"]).split("-")[-1]
    scores = corpus_scores(
        hyp_lines,
        ref_lines,
        metrics=metrics,
        tokenize=tokenize,
        lowercase=lowercase,
        lang=lang,
        bleu_compat=bleu_compat,
        meteor_jar=meteor_jar,
        meteor_norm=meteor_norm,
        cider_remove_punct=cider_remove_punct,
        ter_lowercase=ter_lowercase,
    )
    result = {"meta": dict(meta), "scores": scores, "n_sentences": len(hyp_lines)}
    if decode_stats is not None:
        result["degenerate"] = degenerate_output(hyp_lines, json.loads(Path(decode_stats).read_text(encoding="utf-8")))
        if result["degenerate"]["warning"]:
            log.warning("%s: %s", hyp, result["degenerate"]["warning"])
    with atomic_write(out_json) as fh:
        json.dump(result, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return result


DEGENERATE_SHARE = 0.05  # above this share of empty or cut-off hypotheses, tables say so


def bound_note(decode_stats: dict) -> str:
    """``, 2.0 n + 10`` when decoding also bounded hypotheses by the source length n."""
    a, b = decode_stats.get("max_len_a") or 0, decode_stats.get("max_len_b") or 0
    return f", {a:g} n + {b}" if a else ""


def degenerate_output(hyp_lines: Sequence[str], decode_stats: dict) -> dict:
    """Counts of empty hypotheses and of hypotheses that hit max_len without ``<eos>``, their
    shares, and a warning (or "") when either share exceeds :data:`DEGENERATE_SHARE`."""
    n = max(len(hyp_lines), 1)
    empty = sum(not line.strip() for line in hyp_lines)
    cut = int(decode_stats.get("cut_at_max_len", 0))
    parts = []
    if empty / n > DEGENERATE_SHARE:
        parts.append(f"{100 * empty / n:.1f}% of hypotheses are empty")
    if cut / n > DEGENERATE_SHARE:
        parts.append(f"{100 * cut / n:.1f}% of hypotheses reached their length bound (max_len={decode_stats.get('max_len')}"
                     f"{bound_note(decode_stats)}) without <eos>")
    return {"n": len(hyp_lines), "empty": empty, "cut_at_max_len": cut, "warning": "; ".join(parts)}
