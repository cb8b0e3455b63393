"""Multi30k tasks 1 and 2: turn the fetched official files into checked plain-text splits.

The official data lives in the ``multi30k/dataset`` GitHub repository under ``data/task1``
(gzipped raw sentences ``raw/{split}.{lang}.gz``, image names ``image_splits/{split}.txt``) and
``data/task2`` (five comparable descriptions per image, ``raw/{split}.{k}.{lang}.gz``, images
``image_splits/{split}_images.txt``). Fetching (URL or local mirror, sha256) is
:mod:`mmt_repro.data.fetch`'s job, driven by ``config/manifest.yaml`` (inputs
``multi30k_task1`` and ``multi30k_task2``); the functions here read a fetched file, decode it
strictly as UTF-8, refuse empty lines, check the published line count in :data:`SPLIT_SIZES`
and write the plain text atomically, so a failed step never leaves a file behind.
"""

from __future__ import annotations

from pathlib import Path

from mmt_repro.io import DataError, read_lines, write_lines

#: Published number of sentences (= images) per split.
SPLIT_SIZES = {
    "train": 29000,
    "val": 1014,
    "test_2016_flickr": 1000,
    "test_2017_flickr": 1000,
    "test_2017_mscoco": 461,
}

#: Languages released for each split (Czech exists only for the 2016-era splits).
SPLIT_LANGUAGES = {
    "train": ("en", "de", "fr", "cs"),
    "val": ("en", "de", "fr", "cs"),
    "test_2016_flickr": ("en", "de", "fr", "cs"),
    "test_2017_flickr": ("en", "de", "fr"),
    "test_2017_mscoco": ("en", "de", "fr"),
}

# Task 2 ("M30k_C"): five independent English and five German descriptions per image.
COMPARABLE_SIZES = {"train": 29000, "val": 1014, "test_2016": 1000}
COMPARABLE_PER_IMAGE = 5


def _check_split(split: str, sizes: dict) -> None:
    if split not in sizes:
        raise DataError(None, f"unknown Multi30k split {split!r}; valid splits: {', '.join(sizes)}",
                        "use one of the valid split names in the config")


def _check_lang(split: str, lang: str) -> None:
    _check_split(split, SPLIT_SIZES)
    valid = SPLIT_LANGUAGES[split]
    if lang not in valid:
        raise DataError(
            None,
            f"unknown language {lang!r} for Multi30k split {split!r}; valid languages: {', '.join(valid)}",
            "use one of the valid language codes in the config",
        )


def _prepare(src: str | Path, out: str | Path, expected: int, what: str) -> Path:
    lines = read_lines(src, allow_empty_lines=False)  # an empty line means a lost sentence
    if len(lines) != expected:
        raise DataError(
            src,
            f"wrong number of lines for {what}: expected {expected}, got {len(lines)}",
            "the file is incomplete or not the official one; delete it and fetch it again "
            "(check the local copy under `inputs.mirror` / `inputs.local` if one is set)",
        )
    return write_lines(out, lines)


def prepare_multi30k(src: str | Path, split: str, lang: str, out: str | Path) -> Path:
    """Write the raw text of task 1 ``split`` in ``lang`` (from the fetched
    ``raw/{split}.{lang}.gz``) to ``out``, checked against :data:`SPLIT_SIZES`."""
    _check_lang(split, lang)
    return _prepare(src, out, SPLIT_SIZES[split], f"Multi30k split {split!r}")


def prepare_multi30k_image_list(src: str | Path, split: str, out: str | Path) -> Path:
    """Write the image file names of task 1 ``split`` (one per sentence) to ``out``."""
    _check_split(split, SPLIT_SIZES)
    return _prepare(src, out, SPLIT_SIZES[split], f"Multi30k split {split!r}")


def prepare_multi30k_comparable(src: str | Path, k: int, lang: str, out: str | Path, split: str = "train") -> Path:
    """The ``k``-th (1-5) comparable description of every task 2 ``split`` image in ``lang``
    (en or de); line i describes image i of ``task2/image_splits/{split}_images.txt``."""
    _check_split(split, COMPARABLE_SIZES)
    if lang not in ("en", "de") or not 1 <= int(k) <= COMPARABLE_PER_IMAGE:
        raise DataError(None, f"Multi30k task 2 has en/de descriptions 1-5, not {lang!r} {k!r}", "use lang en or de, k 1-5")
    return _prepare(src, out, COMPARABLE_SIZES[split], f"Multi30k task 2 split {split!r}")


def prepare_multi30k_comparable_image_list(src: str | Path, out: str | Path, split: str = "train") -> Path:
    """The image names of Multi30k task 2 ``split`` (``task2/image_splits/{split}_images.txt``)."""
    _check_split(split, COMPARABLE_SIZES)
    return _prepare(src, out, COMPARABLE_SIZES[split], f"Multi30k task 2 split {split!r}")


def check_parallel(paths: list[Path], expected: int | None = None, allow_empty_lines: bool = False) -> int:
    """Check that parallel text files line up; return their common number of lines.

    Every file must decode as UTF-8, all must have the same number of lines (and ``expected``
    lines when given), and unless ``allow_empty_lines`` no line may be empty or blank (an empty
    line usually means a sentence was lost and the files are misaligned from there on).
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("check_parallel needs at least one file")
    counts = {p: len(read_lines(p, allow_empty_lines=allow_empty_lines)) for p in paths}
    listing = "; ".join(f"{p}: {n} lines" for p, n in counts.items())
    if len(set(counts.values())) > 1:
        raise DataError(
            paths[0],
            f"parallel files have different numbers of lines ({listing})",
            "re-create the files from the same source so that line i of each is the same sentence",
        )
    count = counts[paths[0]]
    if expected is not None and count != expected:
        raise DataError(
            paths[0],
            f"parallel files have {count} lines, expected {expected} ({listing})",
            "the files are incomplete or from another split; re-create them",
        )
    return count

