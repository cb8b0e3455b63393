"""Checks for prepared corpora, and the table of published split sizes they are held to.

A prepared corpus is a set of parallel text files (``{split}.{lang}`` or, for captions,
``{split}.{k}.{lang}``), one sentence per line, optionally with an image (or video) list
whose line i names the image of line i. :func:`check_corpus` checks such files on disk;
:func:`check_lines` does the same on lines still in memory, so that the preparers in
:mod:`mmt_repro.corpora.preparers` can refuse bad input *before* writing anything.

:data:`KNOWN_SIZES` gives, per corpus and split, the number of lines of each prepared text
file (= sentences for translation corpora; = images for the caption corpora, written one
``{split}.{k}.{lang}`` file per caption index k; = videos x 5 for VATEX). Corpus keys are
snake_case with the language pair, if any, after an underscore (``iwslt14_de-en``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import multi30k
from ..io import DataError, read_lines

#: Lines per prepared text file, by corpus and split (see the module docstring for units).
KNOWN_SIZES: dict[str, dict[str, int]] = {
    # Multi30k task 1: sentences = images, as config/manifest.yaml declares them (`lines`).
    "multi30k": dict(multi30k.SPLIT_SIZES),
    # fairseq prepare-iwslt14.sh. de-en: train/valid from the fairseq log (174,443 raw lines ->
    # 167,522 cleaned; valid = every 23rd = 7283, checked on ../shared/datasets/iwslt14-de-en);
    # test = dev2010 887 + TEDX.dev2012 1165 + tst2010 1565 + tst2011 1433 + tst2012 1700.
    "iwslt14_de-en": {"train": 160239, "valid": 7283, "test": 6750},
    # fr-en: dev2010 + tst2010-2012 = 4,493 (BertGen section 2.2.3); train/valid not published.
    "iwslt14_fr-en": {"test": 4493},
    # WMT news test sets (sentences).
    "newstest2016_en-tr": {"test": 3000},
    "newstest2017_en-tr": {"test": 3007},
    "newstest2018_en-tr": {"test": 3000},
    "newstest2019_de-fr": {"test": 1701},
    # BertGen's SETIMES2 En-Tr dev (newstest2016 + newstest2017) and test (newstest2018).
    "setimes2_en-tr": {"valid": 6007, "test": 3000},
    # BertGen's WMT19 De-Fr zero-shot test set (the "euelections" newstest2019).
    "wmt19_de-fr": {"test": 1701},
    # Karpathy caption splits, images (= lines of each {split}.{k}.{lang}). COCO: 82,783 train +
    # 30,504 restval = 113,287 when restval is merged into train (prepare_karpathy's default).
    "coco_karpathy": {"train": 113287, "val": 5000, "test": 5000},
    "flickr30k_karpathy": {"train": 29000, "val": 1014, "test": 1000},
    "flickr8k_karpathy": {"train": 6000, "val": 1000, "test": 1000},
    # BertGen's own TasvirEt split (images; 2 Turkish captions each, 13,828 train captions).
    "tasviret": {"train": 6914, "val": 543, "test": 543},
    # VATEX v1.0 parallel pairs: 5 per video (official val: 3000 videos; train 25,991 videos).
    "vatex": {"train": 25991 * 5, "val": 3000 * 5},
}

#: Images per Karpathy split label *before* restval is merged (the JSON's own "split" field).
KARPATHY_SPLIT_IMAGES: dict[str, dict[str, int]] = {
    "coco": {"train": 82783, "restval": 30504, "val": 5000, "test": 5000},
    "flickr30k": {"train": 29000, "val": 1014, "test": 1000},
    "flickr8k": {"train": 6000, "val": 1000, "test": 1000},
}

#: VATEX v1.0 videos per official split.
VATEX_VIDEOS: dict[str, int] = {"train": 25991, "val": 3000}


def known_size(corpus: str, split: str) -> int | None:
    """Published number of lines of ``split`` of ``corpus`` (:data:`KNOWN_SIZES`), or None."""
    return KNOWN_SIZES.get(corpus, {}).get(split)


def _expected(expected_lines: int | None, corpus: str | None, split: str | None) -> int | None:
    if expected_lines is not None:
        return int(expected_lines)
    if corpus is None and split is None:
        return None
    if corpus not in KNOWN_SIZES:
        raise DataError(None, f"unknown corpus {corpus!r}; known corpora: {', '.join(sorted(KNOWN_SIZES))}",
                        "use one of the known corpus names, or pass expected_lines")
    if split not in KNOWN_SIZES[corpus]:
        raise DataError(None, f"no published size for split {split!r} of {corpus!r}; known splits: "
                        f"{', '.join(KNOWN_SIZES[corpus])}", "pass expected_lines, or leave corpus/split unset")
    return KNOWN_SIZES[corpus][split]


def check_lines(
    named: Mapping[str, Sequence[str]],
    source: str | os.PathLike | None = None,
    image_list: Sequence[str] | None = None,
    expected_lines: int | None = None,
    allow_empty: bool = False,
    corpus: str | None = None,
    split: str | None = None,
) -> int:
    """Check parallel lines held in memory; return their common count.

    ``named`` maps a name (a language, or the file that will be written) to its lines;
    ``source`` is the input file named in errors. Checks: every list has the same length;
    no line is empty or blank (unless ``allow_empty``); no line holds a line break; the image
    list (if any) has one non-empty name per line; the count equals ``expected_lines``, or the
    published size of ``corpus``/``split`` in :data:`KNOWN_SIZES` when those are given.
    """
    if not named:
        raise ValueError("check_lines needs at least one list of lines")
    counts = {name: len(lines) for name, lines in named.items()}
    listing = "; ".join(f"{name}: {n} lines" for name, n in counts.items())
    if len(set(counts.values())) > 1:
        raise DataError(source, f"parallel sides have different numbers of lines ({listing})",
                        "the source is truncated or misaligned; fetch it again")
    count = next(iter(counts.values()))
    for name, lines in named.items():
        for i, line in enumerate(lines, start=1):
            if "\n" in line or "\r" in line:
                raise DataError(source, f"{name}: line {i} contains a line break", "fix the reader: one sentence per line")
            if not allow_empty and not line.strip():
                raise DataError(source, f"{name}: line {i} is empty",
                                "an empty line means a lost sentence; drop the pair from every side or fix the source")
    if image_list is not None:
        if len(image_list) != count:
            raise DataError(source, f"the image list has {len(image_list)} names for {count} caption lines",
                            "re-create the image list and the captions from the same source")
        for i, name in enumerate(image_list, start=1):
            if not name.strip() or "\n" in name:
                raise DataError(source, f"image list: entry {i} is empty or holds a line break", "fix the source")
    want = _expected(expected_lines, corpus, split)
    if want is not None and count != want:
        what = f"published size of {corpus} {split}" if expected_lines is None else "expected size"
        raise DataError(source, f"{count} lines, but the {what} is {want} ({listing})",
                        "the input is incomplete, from another release, or the wrong split; fetch it again")
    return count


def check_corpus(
    files: Mapping[str, str | os.PathLike],
    image_list: str | os.PathLike | None = None,
    expected_lines: int | None = None,
    allow_empty: bool = False,
    corpus: str | None = None,
    split: str | None = None,
) -> int:
    """Check prepared parallel files on disk; return their common number of lines.

    ``files`` maps a language (or any name, e.g. ``"1.en"``) to a path. Every file must be
    strict UTF-8 (gzip allowed), all must have the same number of lines, no line may be empty
    unless ``allow_empty``, the image list (if given) must have one name per line, and the
    count must equal ``expected_lines`` or the published size of ``corpus``/``split``
    (:data:`KNOWN_SIZES`). Raises :class:`~mmt_repro.io.DataError` naming the file and the fix.
    """
    if not files:
        raise ValueError("check_corpus needs at least one file")
    paths = {name: Path(p) for name, p in files.items()}
    lines = {}
    for name, path in paths.items():
        lines[name] = read_lines(path, allow_empty_lines=True)
    counts = {name: len(v) for name, v in lines.items()}
    if len(set(counts.values())) > 1:
        listing = "; ".join(f"{paths[n]}: {c} lines" for n, c in counts.items())
        raise DataError(next(iter(paths.values())), f"parallel files have different numbers of lines ({listing})",
                        "re-create the files from the same source so that line i of each is the same sentence")
    if not allow_empty:
        for name, ls in lines.items():
            for i, line in enumerate(ls, start=1):
                if not line.strip():
                    raise DataError(paths[name], f"line {i} is empty",
                                    "an empty line means a lost sentence; re-create the corpus, dropping the pair "
                                    "from every side")
    count = next(iter(counts.values()))
    if image_list is not None:
        images = read_lines(image_list, allow_empty_lines=False)
        if len(images) != count:
            raise DataError(image_list, f"{len(images)} image names for {count} caption lines "
                            f"(in {', '.join(str(p) for p in paths.values())})",
                            "re-create the image list and the captions from the same source")
    want = _expected(expected_lines, corpus, split)
    if want is not None and count != want:
        what = f"published size of {corpus} {split}" if expected_lines is None else "expected size"
        listing = "; ".join(str(p) for p in paths.values())
        raise DataError(next(iter(paths.values())), f"{count} lines, but the {what} is {want} ({listing})",
                        "the files are incomplete or from another split or release; re-create them")
    return count
