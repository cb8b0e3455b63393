"""Fetch one declared input file: from a local copy when one is configured, else by URL;
verify its sha256 and line count; write it atomically.

Sources, in order (the first that is configured is the only one used, so that a compute node
without internet never falls back to the network behind the user's back):

1. ``local_dir``: a per-input folder (config ``inputs.local.<input>``) holding the files
   under their manifest names;
2. ``mirror_root``: a mirror of many inputs (config ``inputs.mirror``), each in its
   manifest ``mirror_dir`` (``../shared/datasets`` is laid out this way);
3. the manifest URLs, tried in order.

The file is copied or downloaded into a temporary file next to ``out`` while its sha256 is
computed; it replaces ``out`` only when the hash (where the manifest knows it: its sha256, or
the md5 a publisher lists where no sha256 is known) and the line count (where declared) match.
Downloads go through pooch (``Pooch.fetch``: the manifest's sha256, or md5, checked, ``RETRIES`` more tries after a network error or a damaged transfer) with
:class:`ResumingDownloader`: a progress bar (tqdm, on stderr: the job's log), and a partial
download kept as ``<out>.part`` that the next try (or the next run) continues with an HTTP
``Range`` request instead of starting over. ``file://`` URLs are copied. A mismatch, a missing local file, a failed download or a
request-only input is a :class:`~mmt_repro.io.DataError` naming the file and the fix; an
existing ``out`` is never removed by a failed fetch.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from ..io import DataError, atomic_path, read_lines
from .manifest import Input, InputFile, Manifest, load_manifest

log = logging.getLogger(__name__)

MIRROR_KEY = "inputs.mirror"
LOCAL_KEY = "inputs.local"
DOWNLOAD_TIMEOUT_S = 120.0
CHUNK = 1 << 20
#: More tries of a URL after a network error or a checksum mismatch (pooch waits 1 s, 2 s, ...).
RETRIES = 3
PART_SUFFIX = ".part"


def sha256_of(path: str | Path) -> str:
    """The sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def md5_of(path: str | Path) -> str:
    """The md5 of a file (publishers such as Zenodo list only that), read in 1 MiB chunks."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _copy_hashing(src, dst: Path) -> str:
    digest = hashlib.sha256()
    with open(dst, "wb") as out:
        for chunk in iter(lambda: src.read(CHUNK), b""):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def request_only_error(inp: Input) -> DataError:
    """The error for an input no script may fetch: where to get it and which key to set."""
    return DataError(
        None,
        f"{inp.title} ({inp.name}) is {inp.access}-only: it cannot be downloaded by the workflow",
        f"{inp.request}; then set `{inp.config_key}` to its local path (licence: {inp.licence})",
    )


def local_source(inp: Input, f: InputFile, mirror_root: str | Path | None, local_dir: str | Path | None) -> Path | None:
    """The local file to use for ``f``, or None when no local copy is configured. A configured
    folder that lacks the file is an error (naming it), not a reason to go online."""
    if local_dir:
        folder, key = Path(local_dir), f"{LOCAL_KEY}.{inp.name}"
    elif mirror_root:
        if not Path(mirror_root).is_dir():
            raise DataError(mirror_root, "the mirror folder does not exist",
                            f"set `{MIRROR_KEY}` to a folder holding local copies of the inputs, or unset it to download")
        if not inp.mirror_dir:
            raise DataError(None, f"input {inp.name!r} has no mirror_dir in the manifest, so `{MIRROR_KEY}` cannot hold it",
                            f"set `{LOCAL_KEY}.{inp.name}` to the folder holding its files")
        folder, key = Path(mirror_root) / inp.mirror_dir, MIRROR_KEY
    else:
        return None
    src = folder / f.name
    if not src.is_file():
        where = f" ({', '.join(f.urls)})" if f.urls else ""
        raise DataError(src, f"file {f.name!r} of input {inp.name!r} is missing from the local copy set by `{key}`",
                        f"put the file there (official source{where}), or unset `{key}` to download it")
    return src


class RefusedError(OSError):
    """The server refused the file (HTTP 4xx other than 408/429): another try would not help."""


class ResumingDownloader:
    """A pooch downloader (``downloader(url, output_file, pooch)``) that continues ``part``, the
    partial file a failed try left behind, with an HTTP ``Range`` request (a server that ignores
    it sends the whole file, which then replaces the part), shows a tqdm progress bar named
    ``name``, hashes the bytes as it writes them (:attr:`sha256`), and moves the finished part
    onto ``output_file``. Bytes are stored as sent (no ``Content-Encoding`` decoding), so a
    ``.gz`` keeps its checksum. ``progress``: None = a bar that redraws every 30 s off a
    terminal (a job log) and twice a second on one."""

    def __init__(self, part: Path, name: str, progress: bool | None = None, timeout: float = DOWNLOAD_TIMEOUT_S):
        self.part, self.name, self.progress, self.timeout = Path(part), name, progress, timeout
        self.sha256: str | None = None

    def __call__(self, url: str, output_file: str, pooch=None, check_only: bool = False):  # noqa: ARG002
        import requests
        import urllib3
        from tqdm import tqdm

        if check_only:
            return requests.head(url, timeout=self.timeout, allow_redirects=True).status_code == 200
        done = self.part.stat().st_size if self.part.exists() else 0
        headers = {"Range": f"bytes={done}-", "Accept-Encoding": "identity"} if done else {"Accept-Encoding": "identity"}
        with requests.get(url, headers=headers, stream=True, timeout=self.timeout) as resp:
            if resp.status_code == 416 and done:  # the part is no prefix of this file: start over
                self.part.unlink()
                return self(url, output_file, pooch)
            if 400 <= resp.status_code < 500 and resp.status_code not in (408, 429):
                raise RefusedError(f"HTTP {resp.status_code} {resp.reason}")
            resp.raise_for_status()
            resumed = done > 0 and resp.status_code == 206 and \
                resp.headers.get("Content-Range", "").startswith(f"bytes {done}-")
            digest = hashlib.sha256()
            if resumed:
                with open(self.part, "rb") as fh:
                    for chunk in iter(lambda: fh.read(CHUNK), b""):
                        digest.update(chunk)
                log.info("resuming %s at byte %d", url, done)
            else:
                done = 0
            length = int(resp.headers.get("Content-Length") or 0)
            tty = sys.stderr.isatty()
            bar = tqdm(total=done + length if length else None, initial=done, desc=self.name, unit="B", unit_scale=True,
                       unit_divisor=1024, disable=self.progress is False, mininterval=0.5 if tty else 30, ascii=not tty)
            try:
                with bar, open(self.part, "ab" if resumed else "wb") as out:
                    for chunk in resp.raw.stream(CHUNK, decode_content=False):
                        out.write(chunk)
                        digest.update(chunk)
                        bar.update(len(chunk))
            except urllib3.exceptions.HTTPError as err:  # cut off mid-way: pooch tries again, from the part
                raise requests.exceptions.ConnectionError(f"connection broken after {self.part.stat().st_size} bytes "
                                                          f"({err}); the part is kept") from err
        self.sha256 = digest.hexdigest()
        os.replace(self.part, output_file)
        return None


def _download_url(url: str, f: InputFile, tmp: Path, part: Path) -> str:
    """Download ``url`` into ``tmp`` through pooch; its sha256. A checksum mismatch after every
    try returns the wrong hash (the caller's check says so) and leaves no ``tmp``."""
    import pooch

    downloader = ResumingDownloader(part, f"{f.input}/{f.name}")
    tmp.unlink(missing_ok=True)  # pooch downloads only what is not there yet
    known = f"sha256:{f.sha256}" if f.sha256 else (f"md5:{f.md5}" if f.md5 else None)
    fetcher = pooch.create(path=tmp.parent, base_url="", registry={tmp.name: known},
                           urls={tmp.name: url}, retry_if_failed=RETRIES)
    try:
        fetcher.fetch(tmp.name, downloader=downloader)
    except ValueError as err:
        if f.sha256 and downloader.sha256 and downloader.sha256 != f.sha256:
            return downloader.sha256
        if f.md5 and not f.sha256:
            raise ValueError(f"md5 mismatch for {f.input}/{f.name} after {RETRIES + 1} tries, expected {f.md5} ({err})") from err
        raise
    return downloader.sha256 or sha256_of(tmp)


def _download(f: InputFile, tmp: Path, part: Path) -> tuple[str, str]:
    import requests

    errors = []
    for url in f.urls:
        try:
            log.info("downloading %s", url)
            if url.startswith("file:"):
                with open(urllib.request.url2pathname(urllib.parse.urlparse(url).path), "rb") as fh:
                    return url, _copy_hashing(fh, tmp)
            return url, _download_url(url, f, tmp, part)
        except (requests.exceptions.RequestException, OSError, ValueError) as err:
            errors.append(f"{url}: {err}")
    raise DataError(
        f.urls[0] if f.urls else f.name,
        "download failed from every declared URL:\n    " + "\n    ".join(errors),
        f"check the network; on a machine without internet download it elsewhere and set `{MIRROR_KEY}` "
        f"or `{LOCAL_KEY}.{f.input}` to the folder holding it",
    )


def _check_lines(tmp: Path, f: InputFile, source: str) -> int:
    try:
        n = len(read_lines(tmp))
    except DataError as err:
        raise DataError(source, err.problem, f"{err.fix}; the copy at {source} is damaged") from err
    if n != f.lines:
        raise DataError(source, f"{f.name} has {n} lines, the manifest expects {f.lines}",
                        "the copy is incomplete or another version; fetch it again from the official source")
    return n


def fetch_input_file(
    input_name: str,
    file_name: str,
    out: str | Path,
    mirror_root: str | Path | None = None,
    local_dir: str | Path | None = None,
    manifest: Manifest | None = None,
    manifest_extra: list[str | Path] | tuple = (),
) -> dict:
    """Fetch ``file_name`` of ``input_name`` into ``out``; return what was done (source, sha256,
    whether it was verified, lines). See the module docstring for sources and checks.
    ``manifest_extra``: extra manifest files merged on top of config/manifest.yaml (the
    config's ``inputs.manifest_extra``), when no ``manifest`` is given."""
    manifest = manifest or load_manifest(extra=manifest_extra)
    inp = manifest.input(input_name)
    if inp.access != "download" and not (local_dir or (mirror_root and inp.mirror_dir)):
        raise request_only_error(inp)  # a request-only file comes only from a copy the user has put in place
    f = inp.file(file_name)
    out = Path(out)
    with atomic_path(out) as tmp:
        src = local_source(inp, f, mirror_root, local_dir)
        if src is not None:
            with open(src, "rb") as fh:
                digest = _copy_hashing(fh, tmp)
            source = str(src)
        else:
            source, digest = _download(f, tmp, out.with_name(out.name + PART_SUFFIX))
        if f.sha256 and digest != f.sha256:
            raise DataError(source, f"sha256 mismatch for {input_name}/{file_name}: expected {f.sha256}, got {digest}",
                            "the copy is damaged or another version; delete it and fetch it again from the official "
                            "source (config/manifest.yaml lists the URLs); the previous output was kept")
        md5 = md5_of(tmp) if f.md5 and not f.sha256 else None
        if md5 is not None and md5 != f.md5:
            raise DataError(source, f"md5 mismatch for {input_name}/{file_name}: expected {f.md5}, got {md5}",
                            "the copy is damaged or another version; delete it and fetch it again from the official "
                            "source (config/manifest.yaml lists the URLs); the previous output was kept")
        if not f.sha256 and md5 is None:
            log.warning("%s/%s has no sha256 in the manifest: fetched unchecked (sha256 %s)", input_name, file_name, digest)
        lines = _check_lines(tmp, f, source) if f.lines is not None else None
    checked = "verified" if f.sha256 else ("verified by its md5" if md5 is not None else "not verifiable")
    log.info("%s/%s <- %s (sha256 %s, %s)", input_name, file_name, source, digest, checked)
    return {"input": input_name, "file": file_name, "source": source, "sha256": digest,
            "verified": bool(f.sha256) or md5 is not None, "lines": lines}


def copy_repo_file(source: str | Path, out: str | Path, sha256: str) -> dict:
    """Copy a file of the repository (``source``: config/published_results.tsv, a paper's word
    list) into the run folder (``out``, results/repo/...), checked against the ``sha256`` the
    plan read: the copy is what the plan compared, or the job stops."""
    source, out = Path(source), Path(out)
    if not source.is_file():
        raise DataError(source, "the repository file a job reads is missing", "restore it (git checkout -- <file>)")
    with atomic_path(out) as tmp, open(source, "rb") as src:
        digest = _copy_hashing(src, tmp)
        if digest != sha256:
            raise DataError(source, f"changed while the workflow ran (sha256 {digest}, planned {sha256})",
                            "run snakemake again: the copy and what reads it are redone")
    log.info("%s <- %s (sha256 %s)", out, source, digest)
    return {"source": str(source), "sha256": digest}


def request_only_path(input_name: str, configured: str | Path | None, manifest: Manifest | None = None) -> Path:
    """The configured local path of a request-only input (images, videos, checkpoints), or the
    error saying where to request it and which key to set."""
    inp = (manifest or load_manifest()).input(input_name)
    if not configured:
        raise request_only_error(inp)
    path = Path(configured)
    if not path.exists():
        raise DataError(path, f"the path set as `{inp.config_key}` does not exist",
                        f"point `{inp.config_key}` at your copy of {inp.title} ({inp.request})")
    return path

