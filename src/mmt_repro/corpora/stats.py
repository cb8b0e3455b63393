"""Corpus statistics: sentences, whitespace tokens, types and OOV rate per split and language.

:func:`corpus_stats` gives one row per (split, language) of a corpus::

    corpus  split  lang  sentences  tokens  types  oov_rate

``tokens`` counts whitespace-separated tokens (the files are already tokenised), ``types``
distinct tokens, and ``oov_rate`` is the share of a split's *tokens* whose type never occurs
in the train split of the same language (0 for train itself; NaN, written empty, when the
corpus has no train split in that language). :func:`write_stats` gathers several corpora
into one TSV.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from ..io import DataError, atomic_path, read_lines

COLUMNS = ["corpus", "split", "lang", "sentences", "tokens", "types", "oov_rate"]


def _counts(path: Path) -> tuple[int, Counter]:
    lines = read_lines(path)
    counter: Counter = Counter()
    for line in lines:
        counter.update(line.split())
    return len(lines), counter


def corpus_stats(
    corpus: str,
    split_files: Mapping[tuple[str, str], str | os.PathLike],
    train_split: str = "train",
) -> pd.DataFrame:
    """One row per ``(split, lang)`` of ``split_files`` (columns :data:`COLUMNS`; module docstring).

    ``split_files`` maps ``(split, lang)`` to a prepared text file (gzip allowed). Rows come in
    the order of ``split_files``.
    """
    if not split_files:
        raise DataError(None, f"no files given for corpus {corpus!r}", "pass {(split, lang): path}")
    counted = {}
    for key, path in split_files.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise DataError(path, f"key {key!r} is not a (split, lang) pair", "use {(split, lang): path}")
        counted[key] = _counts(Path(path))
    rows = []
    for (split, lang), (n_sent, counter) in counted.items():
        n_tok = sum(counter.values())
        train = counted.get((train_split, lang))
        if train is None:
            oov = math.nan
        elif n_tok == 0:
            oov = 0.0
        else:
            vocab = train[1]
            oov = sum(c for t, c in counter.items() if t not in vocab) / n_tok
        rows.append({"corpus": corpus, "split": split, "lang": lang, "sentences": n_sent,
                     "tokens": n_tok, "types": len(counter), "oov_rate": oov})
    return pd.DataFrame(rows, columns=COLUMNS)


def write_stats(frames: Iterable[pd.DataFrame], out_tsv: str | os.PathLike) -> Path:
    """Concatenate stats frames, sort by corpus, split, lang and write a TSV atomically.

    ``oov_rate`` is written with 6 decimals, NaN as an empty field. Duplicate
    (corpus, split, lang) rows are an error.
    """
    frames = list(frames)
    if not frames:
        raise DataError(out_tsv, "no statistics to write", "pass at least one corpus_stats frame")
    df = pd.concat(frames, ignore_index=True)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise DataError(out_tsv, f"frames lack columns {missing}", "pass frames made by corpus_stats")
    dup = df.duplicated(["corpus", "split", "lang"])
    if dup.any():
        row = df[dup].iloc[0]
        raise DataError(out_tsv, f"row {row.corpus}/{row.split}/{row.lang} appears twice", "pass each corpus once")
    df = df[COLUMNS].sort_values(["corpus", "split", "lang"], kind="stable").reset_index(drop=True)
    with atomic_path(out_tsv) as tmp:
        df.to_csv(tmp, sep="\t", index=False, na_rep="", float_format="%.6f")
    return Path(out_tsv)
