"""CoMMuTE (Futeral et al., ACL 2023, doi:10.18653/v1/2023.acl-long.295): the text of the
contrastive test set, read and checked.

Each split folder (``en-de``, ``en-fr``, ``en-cs``, ``en-fr_dev``) holds four line-aligned files:
``src.en`` (a lexically ambiguous English sentence), ``correct.<lang>`` and ``incorrect.<lang>``
(its translation under the line's image, and the other reading's), ``img.order`` (the line's image
file, inside the authors' ``images.tar.gz``). Every source sentence is given twice, with two
images, and the correct and incorrect translations swap between the two lines
(:func:`swapped_pairs`): a scorer that ignores the image wins exactly one line of each such pair.

The en-de, en-fr and en-cs files of the pinned release (commit 7b172b74, CoMMuTE v3) end without a
final newline and en-fr_dev ends with one; :func:`read_commute_file` reads both alike (one
trailing newline is dropped, nothing else: an empty line is an error).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..io import DataError

#: split -> (target language, lines) of the pinned release.
SPLITS = {"en-de": ("de", 300), "en-fr": ("fr", 308), "en-cs": ("cs", 308), "en-fr_dev": ("fr", 60)}
#: The language pairs of the test splits (en-fr_dev is the French validation split).
TEST_PAIRS = ("en-de", "en-fr", "en-cs")


def read_commute_file(path: str | Path) -> list[str]:
    """The lines of one CoMMuTE file, with or without a final newline (UTF-8, no empty line)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "missing", "download CoMMuTE's text (manifest input commute)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(path, f"is not UTF-8 ({err})", "download the file again") from err
    lines = text.removesuffix("\n").split("\n")
    empty = [i + 1 for i, line in enumerate(lines) if not line.strip()]
    if empty:
        raise DataError(path, f"has empty line(s) {empty[:5]}", "download the file again (the release has none)")
    return [line.rstrip("\r") for line in lines]


@dataclass(frozen=True)
class CommuteSplit:
    """One split's lines: ``src``, ``correct``, ``incorrect`` and ``images`` (file names), aligned."""

    name: str
    lang: str
    src: list[str]
    correct: list[str]
    incorrect: list[str]
    images: list[str]

    def __len__(self) -> int:
        return len(self.src)


def split_files(folder: str | Path, split: str) -> dict[str, Path]:
    """The four files of ``split`` under ``folder`` (the release's root, holding one folder per split)."""
    if split not in SPLITS:
        raise DataError(folder, f"CoMMuTE has no split {split!r}", f"use one of {', '.join(SPLITS)}")
    lang = SPLITS[split][0]
    base = Path(folder) / split
    return {"src": base / "src.en", "correct": base / f"correct.{lang}", "incorrect": base / f"incorrect.{lang}",
            "images": base / "img.order"}


def read_commute(folder: str | Path, split: str, check_count: bool = True) -> CommuteSplit:
    """Read ``split`` of the release under ``folder``: the four files have one line per
    (sentence, image), as many as the release's (``check_count``)."""
    files = split_files(folder, split)
    cols = {k: read_commute_file(p) for k, p in files.items()}
    lang, want = SPLITS[split]
    counts = {k: len(v) for k, v in cols.items()}
    if len(set(counts.values())) != 1:
        raise DataError(files["src"].parent, f"the files are not line-aligned: {counts}", "download them again")
    if check_count and counts["src"] != want:
        raise DataError(files["src"], f"has {counts['src']} lines; CoMMuTE v3 (commit 7b172b74) has {want}",
                        "use the pinned release (earlier versions had 100 lines per split)")
    return CommuteSplit(split, lang, **cols)


def first_lines(data: CommuteSplit, lines: int | None) -> CommuteSplit:
    """``data`` cut to its first ``lines`` lines (None: all of it). The release pairs consecutive
    lines (one source, its two translations swapped), so an odd cut is refused."""
    if lines is None:
        return data
    if isinstance(lines, bool) or not isinstance(lines, int) or lines < 2 or lines % 2:
        raise ValueError(f"CoMMuTE lines: {lines!r}; give an even number of lines (its lines come in swapped pairs)")
    if lines > len(data):
        raise ValueError(f"CoMMuTE lines: {lines}, but split {data.name} has {len(data)}; give at most {len(data)}")
    return CommuteSplit(data.name, data.lang, data.src[:lines], data.correct[:lines], data.incorrect[:lines],
                        data.images[:lines])


def swapped_pairs(data: CommuteSplit) -> tuple[list[tuple[int, int]], list[int]]:
    """Consecutive lines ``(i, i + 1)`` with the same source whose correct and incorrect
    translations swap (0-based), and the lines that are in no such pair. On each swapped pair a
    scorer blind to the image is right exactly once, unless it ties the two translations."""
    pairs, single = [], []
    i = 0
    while i < len(data):
        j = i + 1
        if (j < len(data) and data.src[i] == data.src[j] and data.correct[i] == data.incorrect[j]
                and data.incorrect[i] == data.correct[j]):
            pairs.append((i, j))
            i += 2
        else:
            single.append(i)
            i += 1
    return pairs, single


__all__ = ["SPLITS", "TEST_PAIRS", "CommuteSplit", "first_lines", "read_commute", "read_commute_file", "split_files",
           "swapped_pairs"]
