"""Multi30k task 1: fetch the raw parallel text and image lists, and check parallel files.

The official data lives in the ``multi30k/dataset`` GitHub repository under ``data/task1``:
gzipped raw sentences in ``raw/{split}.{lang}.gz`` and the image file names, one per
sentence, in ``image_splits/{split}.txt``. A *mirror* is a local directory laid out like that
repository's ``data/`` folder (``mirror/task1/raw/...``, ``mirror/task1/image_splits/...``);
with one configured (config key ``datasets.multi30k.mirror``) nothing is downloaded.

Every fetched file is decoded strictly as UTF-8, checked against the published line count in
:data:`SPLIT_SIZES` and written atomically, so a failed fetch never leaves a file behind.
"""

from __future__ import annotations

import http.client
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from mmt_repro.io import DataError, read_lines, write_lines

OFFICIAL_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1"

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

#: Config key that holds the mirror directory (named in error messages).
MIRROR_KEY = "datasets.multi30k.mirror"
DOWNLOAD_TIMEOUT_S = 60.0


def _check_split(split: str) -> None:
    if split not in SPLIT_SIZES:
        raise DataError(
            None,
            f"unknown Multi30k split {split!r}; valid splits: {', '.join(SPLIT_SIZES)}",
            "use one of the valid split names in the config",
        )


def _check_lang(split: str, lang: str) -> None:
    _check_split(split)
    valid = SPLIT_LANGUAGES[split]
    if lang not in valid:
        raise DataError(
            None,
            f"unknown language {lang!r} for Multi30k split {split!r}; valid languages: {', '.join(valid)}",
            "use one of the valid language codes in the config",
        )


def _check_count(where: str | Path, lines: list[str], split: str) -> None:
    expected = SPLIT_SIZES[split] if split in SPLIT_SIZES else COMPARABLE_SIZES[split]
    if len(lines) != expected:
        raise DataError(
            where,
            f"wrong number of lines for Multi30k split {split!r}: expected {expected}, got {len(lines)}",
            f"the file is incomplete or not the official one; delete it and fetch it again "
            f"(check the copy under `{MIRROR_KEY}` if one is set)",
        )


def _from_mirror(mirror: str | Path, rel: str) -> list[str]:
    mirror = Path(mirror)
    src = mirror / rel
    if not mirror.is_dir():
        raise DataError(
            mirror,
            f"the Multi30k mirror directory does not exist (looked for {src})",
            f"set `{MIRROR_KEY}` to a directory laid out like the official repo's data/ folder "
            f"(with task1/raw/ and task1/image_splits/), or unset it to download",
        )
    if not src.is_file():
        raise DataError(
            src,
            "file missing from the Multi30k mirror",
            f"copy data/{rel} from the official multi30k/dataset repository into the directory "
            f"set as `{MIRROR_KEY}`, or unset `{MIRROR_KEY}` to download it",
        )
    return read_lines(src, allow_empty_lines=False)  # an empty line means a lost sentence


def _download(url: str, tmp_dir: Path, name: str) -> list[str]:
    tmp = tmp_dir / name
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as resp, open(tmp, "wb") as fh:
            shutil.copyfileobj(resp, fh)
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as err:
        raise DataError(
            url,
            f"download failed ({err})",
            f"check the network connection, or download the Multi30k data once and set `{MIRROR_KEY}` "
            f"to a local copy of the official repo's data/ folder",
        ) from err
    try:
        return read_lines(tmp, allow_empty_lines=False)
    except DataError as err:
        # read_lines names the temporary file; name the URL that produced it instead
        raise DataError(
            url,
            f"downloaded file is unusable: {err.problem}",
            f"retry the download, or set `{MIRROR_KEY}` to a local copy of the official data",
        ) from err


def _fetch(rel: str, split: str, out: Path, mirror: str | Path | None, base_url: str, task: str = "task1") -> Path:
    out = Path(out)
    if mirror is not None and str(mirror) != "":  # an empty config value means "no mirror"
        lines = _from_mirror(mirror, f"{task}/{rel}")
        _check_count(Path(mirror) / task / rel, lines, split)
    else:
        base = base_url.rstrip("/")
        if task != "task1":  # the configured URL points at task1; task2 sits beside it
            base = base[: -len("task1")] + task if base.endswith("task1") else f"{base}/../{task}"
        url = f"{base}/{rel}"
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp_dir:
            lines = _download(url, Path(tmp_dir), Path(rel).name)
        _check_count(url, lines, split)
    return write_lines(out, lines)


def fetch_multi30k(
    split: str,
    lang: str,
    out: Path,
    mirror: str | Path | None = None,
    base_url: str = OFFICIAL_URL,
) -> Path:
    """Write the decompressed raw text of ``split`` in ``lang`` to ``out`` (UTF-8, atomic).

    With ``mirror`` the file is read from ``mirror/task1/raw/{split}.{lang}.gz``; otherwise it
    is downloaded from ``{base_url}/raw/{split}.{lang}.gz``. Raises :class:`DataError` for an
    unknown split or language, a missing mirror file, a failed download, bad gzip or UTF-8,
    or a line count that differs from :data:`SPLIT_SIZES`.
    """
    _check_lang(split, lang)
    return _fetch(f"raw/{split}.{lang}.gz", split, out, mirror, base_url)


def fetch_multi30k_image_list(
    split: str,
    out: Path,
    mirror: str | Path | None = None,
    base_url: str = OFFICIAL_URL,
) -> Path:
    """Write the image file names of ``split`` (one per sentence) to ``out`` (atomic).

    Same sources and checks as :func:`fetch_multi30k`, for ``task1/image_splits/{split}.txt``.
    """
    _check_split(split)
    return _fetch(f"image_splits/{split}.txt", split, out, mirror, base_url)


# Task 2 ("M30k_C"): five independent English and five German descriptions per training image.
COMPARABLE_SIZES = {"train": 29000, "val": 1014}
COMPARABLE_PER_IMAGE = 5


def fetch_multi30k_comparable(
    k: int,
    lang: str,
    out: Path,
    split: str = "train",
    mirror: str | Path | None = None,
    base_url: str = OFFICIAL_URL,
) -> Path:
    """Write the ``k``-th (1-5) comparable description of every ``split`` image of Multi30k
    task 2 in ``lang`` (en or de) to ``out``; line i describes image i of
    ``task2/image_splits/{split}_images.txt``. Same sources and checks as :func:`fetch_multi30k`."""
    if split not in COMPARABLE_SIZES:
        raise DataError(None, f"unknown Multi30k task 2 split {split!r}", f"use one of {sorted(COMPARABLE_SIZES)}")
    if lang not in ("en", "de") or not 1 <= int(k) <= COMPARABLE_PER_IMAGE:
        raise DataError(None, f"Multi30k task 2 has en/de descriptions 1-5, not {lang!r} {k!r}", "use lang en or de, k 1-5")
    return _fetch(f"raw/{split}.{int(k)}.{lang}.gz", split, out, mirror, base_url, task="task2")


def fetch_multi30k_comparable_image_list(
    out: Path, split: str = "train", mirror: str | Path | None = None, base_url: str = OFFICIAL_URL
) -> Path:
    """The image names of Multi30k task 2 ``split`` (``task2/image_splits/{split}_images.txt``)."""
    if split not in COMPARABLE_SIZES:
        raise DataError(None, f"unknown Multi30k task 2 split {split!r}", f"use one of {sorted(COMPARABLE_SIZES)}")
    return _fetch(f"image_splits/{split}_images.txt", split, out, mirror, base_url, task="task2")


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

