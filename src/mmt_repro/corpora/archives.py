"""Reading official archives (``.zip``, ``.tgz``/``.tar[.gz]``): one member copied out, or the
lines of several text members read in one pass.

A member is named by its path inside the archive or by a base name that matches exactly one
file member (``dataset_coco.json`` finds ``caption_datasets/dataset_coco.json`` wherever it is).
Every problem is a :class:`~mmt_repro.io.DataError` naming the archive (and the member) and the fix.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from ..io import DataError, atomic_path


def _pick(archive: Path, names: list[str], member: str, fix: str) -> str:
    exact = [n for n in names if n.rstrip("/") == member]
    hits = exact or [n for n in names if PurePosixPath(n).name == member]
    if not hits:
        shown = ", ".join(sorted(PurePosixPath(n).name for n in names)[:40]) or "none"
        raise DataError(archive, f"member {member!r} is missing: 0 members match {member!r} (members: {shown})", fix)
    if len(hits) > 1:
        raise DataError(archive, f"{len(hits)} members match {member!r} (matches: {', '.join(hits)})",
                        "name the member by its full path inside the archive, or fetch the archive again")
    return hits[0]


@contextmanager
def _open_members(archive: Path, fix: str) -> Iterator:
    """Yield ``open_member(name) -> binary file`` and the archive's file member names."""
    kind = "zip" if archive.suffix == ".zip" else "archive"
    if not archive.is_file():
        raise DataError(archive, f"{kind} does not exist", fix)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                yield zf.open, [n for n in zf.namelist() if not n.endswith("/")]
        else:
            with tarfile.open(archive, "r:*") as tar:
                files = {m.name: m for m in tar.getmembers() if m.isfile()}

                def open_member(name: str) -> IO[bytes]:
                    return tar.extractfile(files[name])

                yield open_member, list(files)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as err:
        raise DataError(archive, f"cannot read the {kind} ({err})", "delete it and fetch it again") from err


def read_text_members(archive: str | os.PathLike, members: Sequence[str], fix: str) -> dict[str, list[str]]:
    """The lines of each text member (strict UTF-8, ``\\r`` removed, no final empty line),
    read in one pass over the archive; ``fix`` is the advice for a missing member."""
    archive = Path(archive)
    out: dict[str, list[str]] = {}
    with _open_members(archive, fix) as (open_member, names):
        for member in members:
            name = _pick(archive, names, member, fix)
            with open_member(name) as fh:
                data = fh.read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(f"{archive}:{name}", f"not valid UTF-8 ({err.reason} at byte {err.start})",
                                "fetch the archive again") from err
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            out[member] = [line.replace("\r", "") for line in lines]
    return out


def extract_member(archive: str | os.PathLike, member: str, out: str | os.PathLike) -> Path:
    """Copy one file out of a ``.zip`` or ``.tar[.gz]``/``.tgz`` archive to ``out`` (atomic)."""
    archive = Path(archive)
    fix = "name the member by its full path inside the archive, or fetch the archive again"
    with _open_members(archive, "fetch it first (the download rule for this input)") as (open_member, names):
        name = _pick(archive, names, member, fix)
        with open_member(name) as src, atomic_path(out) as tmp, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return Path(out)
