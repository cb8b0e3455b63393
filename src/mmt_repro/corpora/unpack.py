"""Unpack a fetched archive (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``)
into a folder that jobs read (rule ``unpack_input``): the official feature releases that hold one
file per image, split or video (VATEX's ``trainval.zip``, the pysimt BUTD and ResNet-50 tarballs).

The manifest says, per archive file, what to unpack (``unpack: {into, strip, expect}``):
the members under the folder ``strip`` (all members when empty) are written, with that prefix
removed, under ``resources/<input>/<into>/``; at least one of them must match the glob
``expect`` (e.g. ``*.npy``), or the archive is not the release the manifest describes.

- **Atomic and idempotent.** Members are written into ``<out>.part/`` and the folder is moved
  onto ``out`` only when every member is there; an existing ``out`` stays until then. A folder
  already unpacked from the same archive (same size and modification time, recorded in
  ``<out>/.unpacked``) is left as it is.
- **Resumable.** An interrupted unpack leaves ``<out>.part/``; the next run of the same archive
  keeps the members already written in full (same size) and writes the rest.
- **Checked.** A corrupt or truncated archive, a member outside the folder (``..`` or an absolute
  path), no member under ``strip`` or none matching ``expect`` is a
  :class:`~mmt_repro.io.DataError` naming the archive and the fix.

Torch-free; tarballs are read as a stream (one pass over a ``.tar.bz2``, no index built first).
"""

from __future__ import annotations

import fnmatch
import logging
import os
import shutil
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from ..io import DataError

log = logging.getLogger(__name__)

#: The listing written inside an unpacked folder: the archive's stamp, then one member per line.
LISTING = ".unpacked"
PART_SUFFIX = ".part"
CHUNK = 1 << 20


def _stamp(archive: Path) -> str:
    st = archive.stat()
    return f"{archive.name}\t{st.st_size}\t{st.st_mtime_ns}"


def _refetch(archive: Path, out: Path) -> str:
    return (f"delete {archive} and run the workflow again: rule fetch_input fetches it again and rule unpack_input "
            f"unpacks it into {out} (anything already in {out} is kept until the new copy is complete)")


def _members(archive: Path) -> Iterator[tuple[str, int, object]]:
    """(name, size, open()) of every regular file member, in archive order (tarballs streamed)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    yield info.filename, info.file_size, (lambda info=info: zf.open(info))
        return
    with tarfile.open(archive, "r|*") as tar:
        for m in tar:
            if m.isfile():
                yield m.name, m.size, (lambda m=m: tar.extractfile(m))


def _relative(archive: Path, name: str, strip: str) -> str | None:
    """The member's path below ``strip`` (None when it lies elsewhere); a path leaving the folder is refused."""
    while name.startswith("./"):
        name = name[2:]
    if strip:
        if not name.startswith(strip):
            return None
        name = name[len(strip):]
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or ".." in rel.parts:
        raise DataError(archive, f"member {name!r} would be written outside the unpacked folder",
                        "this is not the official release: fetch it again from the manifest's URL")
    return rel.as_posix()


def _write(src: IO[bytes], dest: Path) -> None:
    tmp = dest.with_name(dest.name + PART_SUFFIX)
    with open(tmp, "wb") as fh:
        shutil.copyfileobj(src, fh, CHUNK)
    os.replace(tmp, dest)


def unpack_archive(archive: str | os.PathLike, out: str | os.PathLike, strip: str = "", expect: str = "*") -> dict:
    """Unpack the members of ``archive`` under ``strip`` into the folder ``out`` (see the module
    docstring); returns what was done: members, how many were written and how many kept from an
    interrupted run, and whether the folder was already complete."""
    archive, out = Path(archive), Path(out)
    strip = strip.strip("/") + "/" if strip.strip("/") else ""
    if not archive.is_file():
        raise DataError(archive, "the archive to unpack does not exist",
                        "run the workflow (rule fetch_input fetches it), or put the file there")
    stamp = _stamp(archive)
    listing = out / LISTING
    if listing.is_file() and listing.read_text(encoding="utf-8").split("\n", 1)[0] == stamp:
        members = listing.read_text(encoding="utf-8").split("\n")[1:]
        log.info("%s is already unpacked from %s (%d members): nothing to do", out, archive, len(members))
        return {"archive": str(archive), "out": str(out), "members": len(members), "written": 0, "kept": 0,
                "already": True}
    part = out.with_name(out.name + PART_SUFFIX)
    part_stamp = part / LISTING
    if part.is_dir() and not (part_stamp.is_file() and part_stamp.read_text(encoding="utf-8") == stamp):
        log.info("removing %s: left by an unpack of another copy of the archive", part)
        shutil.rmtree(part)
    part.mkdir(parents=True, exist_ok=True)
    part_stamp.write_text(stamp, encoding="utf-8")
    names, written, kept, seen_tops = [], 0, 0, {}
    try:
        for name, size, opener in _members(archive):
            seen_tops.setdefault(name.split("/", 1)[0], None)
            rel = _relative(archive, name, strip)
            if rel is None:
                continue
            dest = part / rel
            names.append(rel)
            if dest.is_file() and dest.stat().st_size == size:
                kept += 1
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            with opener() as src:
                _write(src, dest)
            written += 1
            if written % 5000 == 0:
                log.info("%d members written (%s)", written, rel)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        raise DataError(archive, f"cannot unpack: the archive is corrupt or truncated ({type(err).__name__}: {err}); "
                        f"{written + kept} members were unpacked into {part} before the error",
                        _refetch(archive, out)) from err
    if not names:
        tops = ", ".join(list(seen_tops)[:20]) or "none"
        raise DataError(archive, f"no member under {strip!r}, the folder the manifest says holds the release "
                        f"(top-level entries: {tops})",
                        "fetch the official release again; if the publisher changed its layout, fix `unpack.strip` "
                        "of this file in config/manifest.yaml")
    if not any(fnmatch.fnmatch(PurePosixPath(n).name, expect) for n in names):
        shown = ", ".join(names[:10])
        raise DataError(archive, f"missing expected members: none of its {len(names)} members under {strip or 'the top'!r} "
                        f"matches {expect!r} (members: {shown})",
                        "fetch the official release again; if the publisher changed its layout, fix `unpack.expect` "
                        "of this file in config/manifest.yaml")
    part_stamp.write_text(stamp + "\n" + "\n".join(names), encoding="utf-8")
    old = out.with_name(out.name + ".old")
    if out.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
    os.replace(part, out)
    shutil.rmtree(old, ignore_errors=True)
    log.info("%s <- %s: %d members (%d written, %d kept from an interrupted unpack)", out, archive, len(names),
             written, kept)
    return {"archive": str(archive), "out": str(out), "members": len(names), "written": written, "kept": kept,
            "already": False}
