"""Multi30k tasks 1 and 2: turn the fetched official files into checked plain-text splits.

The official data lives in the ``multi30k/dataset`` GitHub repository under ``data/task1``
(gzipped raw sentences ``raw/{split}.{lang}.gz``, image names ``image_splits/{split}.txt``) and
``data/task2`` (five comparable descriptions per image, ``raw/{split}.{k}.{lang}.gz``, images
``image_splits/{split}_images.txt``). Fetching (URL or local mirror, sha256) is
:mod:`mmt_repro.corpora.fetch`'s job, driven by ``config/manifest.yaml`` (inputs
``multi30k_task1`` and ``multi30k_task2``); the functions here read a fetched file, decode it
strictly as UTF-8, refuse empty lines, check the line count the manifest declares for it and
write the plain text atomically, so a failed step never leaves a file behind.

No split or language is named in this module: the released splits and languages are the files
the manifest declares (:func:`release`), and a run uses those that its config lists under
``datasets.<name>.splits`` and ``datasets.<name>.langs``, checked by :func:`check_config` when
the workflow is planned. A new test set or language is declared there, not here (docs/data.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..config import ConfigError
from ..io import DataError, read_lines, write_lines

from .manifest import EXTRA_KEY, Input, Manifest, load_manifest

#: The manifest input of task 1 (translation) unless a dataset names its own (``input``).
TASK1_INPUT = "multi30k_task1"
#: The manifest input of task 2 (comparable descriptions).
TASK2_INPUT = "multi30k_task2"
#: File names inside the task 1 input: the text of a split in a language, and its image list.
TEXT_FILE = "raw/{split}.{lang}.gz"
IMAGE_LIST_FILE = "image_splits/{split}.txt"
_TEXT_RE = re.compile(r"raw/(?P<split>[A-Za-z0-9_-]+)\.(?P<lang>[a-z]{2})\.gz")
_IMAGE_LIST_RE = re.compile(r"image_splits/(?P<split>[A-Za-z0-9_-]+)\.txt")
_COMPARABLE_RE = re.compile(r"raw/(?P<split>[A-Za-z0-9_-]+)\.(?P<k>[0-9]+)\.(?P<lang>[a-z]{2})\.gz")
# Task 2 ("M30k_C"): five independent English and five German descriptions per image.
COMPARABLE_PER_IMAGE = 5


@dataclass(frozen=True)
class Release:
    """What a manifest input declares of Multi30k task 1: per split, the languages with text
    (and the declared line count of each file), and the image list's line count."""

    input: str
    where: str
    text: dict[str, dict[str, int | None]] = field(default_factory=dict)
    image_lists: dict[str, int | None] = field(default_factory=dict)

    @property
    def splits(self) -> list[str]:
        return sorted(self.text)

    @property
    def langs(self) -> list[str]:
        return sorted({lang for langs in self.text.values() for lang in langs})

    def size(self, split: str) -> int | None:
        """The split's declared number of lines (sentences = images); None when no file of it
        declares ``lines``. Files of one split that declare different counts are an error."""
        counts = {f"raw/{split}.{lang}.gz": n for lang, n in self.text.get(split, {}).items()}
        counts[IMAGE_LIST_FILE.format(split=split)] = self.image_lists.get(split)
        declared = {name: n for name, n in counts.items() if n is not None}
        if len(set(declared.values())) > 1:
            listing = ", ".join(f"{name}: {n}" for name, n in declared.items())
            raise DataError(self.where, f"the files of Multi30k split {split!r} (input {self.input!r}) declare "
                            f"different line counts ({listing})",
                            "every file of a split has one line per image: correct `lines` in the manifest")
        return next(iter(declared.values()), None)


def release(manifest: Manifest | None = None, input_name: str = TASK1_INPUT, manifest_extra=()) -> Release:
    """The splits and languages that ``input_name`` of the manifest declares (file names
    ``raw/{split}.{lang}.gz`` and ``image_splits/{split}.txt``), with their line counts.
    Without ``manifest``: config/manifest.yaml with the ``manifest_extra`` files merged on top."""
    manifest = manifest if manifest is not None else load_manifest(extra=manifest_extra)
    inp: Input = manifest.input(input_name)
    rel = Release(input_name, manifest.where)
    for name, f in inp.files.items():
        if m := _TEXT_RE.fullmatch(name):
            rel.text.setdefault(m["split"], {})[m["lang"]] = f.lines
        elif m := _IMAGE_LIST_RE.fullmatch(name):
            rel.image_lists[m["split"]] = f.lines
    return rel


def __getattr__(name: str):
    # SPLIT_SIZES: split -> number of sentences of every split that config/manifest.yaml
    # declares for task 1 (read from the manifest, not written here).
    if name == "SPLIT_SIZES":
        rel = release()
        return {split: rel.size(split) for split in rel.text}
    if name == "COMPARABLE_SIZES":
        return comparable_sizes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def comparable_sizes(manifest: Manifest | None = None, input_name: str = TASK2_INPUT,
                     manifest_extra=()) -> dict[str, int | None]:
    """split -> lines of each comparable description file that the task 2 input declares
    (without ``manifest``: config/manifest.yaml with the ``manifest_extra`` files merged on top)."""
    manifest = manifest if manifest is not None else load_manifest(extra=manifest_extra)
    sizes: dict[str, int | None] = {}
    for name, f in manifest.input(input_name).files.items():
        if m := _COMPARABLE_RE.fullmatch(name):
            sizes[m["split"]] = f.lines
    return sizes


def _listing(values) -> str:
    return ", ".join(values) or "none"


def check_config(name: str, settings: dict, manifest: Manifest | None = None) -> dict[str, list[str]]:
    """Check the splits and languages that ``datasets.<name>`` asks for against what its
    manifest input declares; return ``{"splits": [...], "langs": [...]}``.

    Every configured split must have text in every configured language and an image list,
    all declaring the same ``lines``; ``train`` and ``val`` must name configured splits.
    ``langs`` defaults to the languages released for every configured split. An unknown split
    or language is a :class:`~mmt_repro.config.ConfigError` naming the key and the valid values.
    """
    key = f"datasets.{name}"
    rel = release(manifest, dataset_input(settings))
    fix_manifest = (f"or declare its files ({TEXT_FILE}, {IMAGE_LIST_FILE}, each with `lines`) under input "
                    f"{rel.input!r} in config/manifest.yaml or in an extra manifest listed in `{EXTRA_KEY}`")
    splits = list(settings.get("splits") or [])
    unknown = [s for s in splits if s not in rel.text]
    if unknown:
        raise ConfigError(
            f"{key}.splits: unknown Multi30k split(s) {_listing(unknown)}; valid values (declared by manifest input "
            f"{rel.input!r}): {_listing(rel.splits)}\n  fix: use one of these, {fix_manifest}")
    no_images = [s for s in splits if s not in rel.image_lists]
    if no_images:
        raise ConfigError(
            f"{key}.splits: split(s) {_listing(no_images)} have text but no image list "
            f"({IMAGE_LIST_FILE.format(split=no_images[0])}) in manifest input {rel.input!r}; splits with one: "
            f"{_listing(sorted(rel.image_lists))}\n  fix: declare the image list in the manifest")
    everywhere = sorted(set.intersection(*(set(rel.text[s]) for s in splits))) if splits else []
    langs = list(settings.get("langs") or everywhere)
    for lang in langs:
        missing = [s for s in splits if lang not in rel.text[s]]
        if lang not in rel.langs:
            raise ConfigError(
                f"{key}.langs: unknown Multi30k language {lang!r}; valid values for the configured splits: "
                f"{_listing(everywhere)} (manifest input {rel.input!r} declares {_listing(rel.langs)})\n"
                f"  fix: use one of these, {fix_manifest}")
        if missing:
            has = [s for s in rel.splits if lang in rel.text[s]]
            raise ConfigError(
                f"{key}.langs: language {lang!r} is not released for split(s) {_listing(missing)} of {key}.splits; "
                f"valid values for the configured splits: {_listing(everywhere)}\n"
                f"  fix: drop {lang!r}, or give it a dataset of its own (source: multi30k) whose splits are the "
                f"ones that have it: {_listing(has)}")
    for role in ("train", "val"):
        if settings.get(role) is not None and settings[role] not in splits:
            raise ConfigError(f"{key}.{role}: {settings[role]!r} is not one of {key}.splits; valid values: "
                              f"{_listing(splits)}")
    for split in splits:
        rel.size(split)  # the files of a split agree on their line count
    return {"splits": splits, "langs": langs}


def dataset_input(settings: dict) -> str:
    """The manifest input a Multi30k dataset is prepared from (``datasets.<name>.input``)."""
    return settings.get("input") or TASK1_INPUT


def text_file(split: str, lang: str) -> str:
    """The name of a split's text in a language inside the task 1 input."""
    return TEXT_FILE.format(split=split, lang=lang)


def image_list_file(split: str) -> str:
    return IMAGE_LIST_FILE.format(split=split)


def _expected(rel: Release, split: str, lang: str | None) -> int | None:
    if split not in rel.text:
        raise DataError(rel.where, f"unknown Multi30k split {split!r}; valid splits: {_listing(rel.splits)}",
                        "use one of the valid split names in the config, or declare the split's files in the manifest")
    if lang is None:
        if split not in rel.image_lists:
            raise DataError(rel.where, f"Multi30k split {split!r} has no image list in input {rel.input!r}",
                            f"declare {IMAGE_LIST_FILE.format(split=split)} in the manifest")
        return rel.size(split)
    if lang not in rel.text[split]:
        raise DataError(
            rel.where,
            f"unknown language {lang!r} for Multi30k split {split!r}; valid languages: {_listing(sorted(rel.text[split]))}",
            "use one of the valid language codes in the config",
        )
    return rel.size(split)


def _prepare(src: str | Path, out: str | Path, expected: int | None, what: str) -> Path:
    lines = read_lines(src, allow_empty_lines=False)  # an empty line means a lost sentence
    if expected is not None and len(lines) != expected:
        raise DataError(
            src,
            f"wrong number of lines for {what}: expected {expected}, got {len(lines)}",
            "the file is incomplete or not the official one; delete it and fetch it again "
            "(check the local copy under `inputs.mirror` / `inputs.local` if one is set)",
        )
    return write_lines(out, lines)


def prepare_multi30k(src: str | Path, split: str, lang: str, out: str | Path, manifest: Manifest | None = None,
                     input_name: str = TASK1_INPUT, manifest_extra=()) -> Path:
    """Write the raw text of task 1 ``split`` in ``lang`` (from the fetched
    ``raw/{split}.{lang}.gz``) to ``out``, checked against the line count the manifest
    declares for the split (see :func:`release` for ``manifest``/``manifest_extra``)."""
    rel = release(manifest, input_name, manifest_extra)
    return _prepare(src, out, _expected(rel, split, lang), f"Multi30k split {split!r}")


def prepare_multi30k_image_list(src: str | Path, split: str, out: str | Path, manifest: Manifest | None = None,
                                input_name: str = TASK1_INPUT, manifest_extra=()) -> Path:
    """Write the image file names of task 1 ``split`` (one per sentence) to ``out``."""
    rel = release(manifest, input_name, manifest_extra)
    return _prepare(src, out, _expected(rel, split, None), f"Multi30k split {split!r}")


def _comparable_size(split: str, manifest: Manifest | None, manifest_extra=()) -> int | None:
    sizes = comparable_sizes(manifest, manifest_extra=manifest_extra)
    if split not in sizes:
        raise DataError(None, f"unknown Multi30k task 2 split {split!r}; valid splits: {_listing(sorted(sizes))}",
                        "use one of the valid split names in the config")
    return sizes[split]


def prepare_multi30k_comparable(src: str | Path, k: int, lang: str, out: str | Path, split: str = "train",
                                manifest: Manifest | None = None, manifest_extra=()) -> Path:
    """The ``k``-th (1-5) comparable description of every task 2 ``split`` image in ``lang``
    (en or de); line i describes image i of ``task2/image_splits/{split}_images.txt``; checked
    against the line count of the run's manifest (``manifest_extra`` merged, as for task 1)."""
    expected = _comparable_size(split, manifest, manifest_extra)
    if lang not in ("en", "de") or not 1 <= int(k) <= COMPARABLE_PER_IMAGE:
        raise DataError(None, f"Multi30k task 2 has en/de descriptions 1-5, not {lang!r} {k!r}", "use lang en or de, k 1-5")
    return _prepare(src, out, expected, f"Multi30k task 2 split {split!r}")


def prepare_multi30k_comparable_image_list(src: str | Path, out: str | Path, split: str = "train",
                                           manifest: Manifest | None = None, manifest_extra=()) -> Path:
    """The image names of Multi30k task 2 ``split`` (``task2/image_splits/{split}_images.txt``)."""
    return _prepare(src, out, _comparable_size(split, manifest, manifest_extra), f"Multi30k task 2 split {split!r}")


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

