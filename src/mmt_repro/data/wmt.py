"""WMT'15 English-German training corpora (Europarl v7, Common Crawl, News Commentary v10), the
general-domain pre-training data of Calixto et al. 2017 (about 4.3M sentence pairs).

:func:`fetch_wmt15` downloads the three official archives (or reads them from a local mirror
folder holding the same ``.tgz`` files), extracts the German-English files, checks that each
pair of files lines up, drops pairs with an empty side, and writes ``train.en``/``train.de``.
"""

from __future__ import annotations

import logging
import shutil
import tarfile
import urllib.request
from pathlib import Path

from ..io import DataError, atomic_path, write_lines

log = logging.getLogger(__name__)

# archive name -> (official URL, member basename prefix of the de-en files)
WMT15_ARCHIVES = {
    "europarl-v7-de-en.tgz": ("https://www.statmt.org/europarl/v7/de-en.tgz", "europarl-v7.de-en"),
    "training-parallel-commoncrawl.tgz": (
        "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        "commoncrawl.de-en",
    ),
    "training-parallel-nc-v10.tgz": ("https://www.statmt.org/wmt15/training-parallel-nc-v10.tgz", "news-commentary-v10.de-en"),
}
MIRROR_KEY = "datasets.wmt15.mirror"


def _archive(name: str, url: str, cache_dir: Path, mirror: Path | None) -> Path:
    if mirror:
        path = Path(mirror) / name
        if not path.exists():
            raise DataError(path, "archive missing from the WMT'15 mirror", f"download {url} into it, or unset {MIRROR_KEY}")
        return path
    path = Path(cache_dir) / name
    if path.exists():
        return path
    log.info("downloading %s", url)
    try:
        with atomic_path(path) as tmp, urllib.request.urlopen(url, timeout=120) as resp, open(tmp, "wb") as fh:
            shutil.copyfileobj(resp, fh)
    except OSError as err:
        raise DataError(url, f"download failed ({err})", f"download it by hand and set {MIRROR_KEY} to its folder") from err
    return path


def _read_member(tar: tarfile.TarFile, archive: Path, suffix: str) -> list[str]:
    members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(suffix)]
    if len(members) != 1:
        raise DataError(archive, f"expected one member ending in {suffix!r}, found {len(members)}", "fetch the archive again")
    data = tar.extractfile(members[0]).read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{archive}:{members[0].name}", f"not UTF-8 ({err.reason})", "fetch the archive again") from err
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def fetch_wmt15(out_en: Path, out_de: Path, cache_dir: Path, mirror: str | Path | None = None) -> dict:
    """Concatenate the three corpora's de-en files into ``out_en`` and ``out_de``."""
    en_all, de_all, counts = [], [], {}
    for name, (url, prefix) in WMT15_ARCHIVES.items():
        archive = _archive(name, url, Path(cache_dir), Path(mirror) if mirror else None)
        try:
            with tarfile.open(archive, "r:gz") as tar:
                en, de = _read_member(tar, archive, f"{prefix}.en"), _read_member(tar, archive, f"{prefix}.de")
        except (tarfile.TarError, EOFError, OSError) as err:
            raise DataError(archive, f"truncated or corrupt archive ({err})", "delete it and fetch it again") from err
        if len(en) != len(de):
            raise DataError(archive, f"{prefix}: {len(en)} English vs {len(de)} German lines", "fetch the archive again")
        kept = [(e.strip(), d.strip()) for e, d in zip(en, de) if e.strip() and d.strip()]
        counts[prefix] = {"pairs": len(en), "kept": len(kept)}
        en_all.extend(e for e, _ in kept)
        de_all.extend(d for _, d in kept)
    write_lines(out_en, en_all)
    write_lines(out_de, de_all)
    log.info("WMT'15 en-de: %s, %d pairs in total", counts, len(en_all))
    return counts
