"""File helpers shared by every stage: atomic writes, text reading with clear errors.

Every writer in the package goes through :func:`atomic_write` (or :func:`atomic_path`) so
that an interrupted job never leaves a file that looks complete, and every text reader goes
through :func:`read_lines` so that bad bytes or a truncated gzip name the file and the fix.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path


class DataError(RuntimeError):
    """Bad input: the message names the file (or config key) and what to do about it."""

    def __init__(self, path: str | os.PathLike | None, problem: str, fix: str = ""):
        self.path = str(path) if path is not None else None
        self.problem = problem
        self.fix = fix
        where = f"{self.path}: " if self.path else ""
        msg = f"{where}{problem}"
        if fix:
            msg += f"\n  fix: {fix}"
        super().__init__(msg)


class UnknownNameError(DataError, ValueError):
    """A name (paper, table, system, dataset, feature set, ...) that the configuration does not
    define; a :class:`DataError` (the user-error type) and, for older callers, a ``ValueError``."""


def unknown_name(kind: str, name: str, valid, where: str | None = None, fix: str = "") -> UnknownNameError:
    """The error for an unknown ``name`` of a ``kind`` (e.g. ``table``): one paragraph naming it,
    the closest valid names (``difflib``) and every valid one. ``where``: what defines the valid
    names (e.g. ``paper doubly_attentive (papers.doubly_attentive.tables of the config)``)."""
    import difflib

    valid = sorted({str(v) for v in valid})
    close = difflib.get_close_matches(str(name), valid, n=3, cutoff=0.6)
    problem = f"unknown {kind} {name!r}" + (f" in {where}" if where else "") + "."
    if close:
        problem += " Did you mean " + " or ".join(repr(c) for c in close) + "?"
    problem += f" Valid: {', '.join(valid)}." if valid else " None is configured."
    return UnknownNameError(None, problem, fix)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only on success.

    The temporary file keeps the final suffix so that libraries choosing a format by suffix
    (``.npy``, ``.parquet``, ``.png``) behave the same.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temporary file for writing; it replaces ``path`` only when the block succeeds."""
    with atomic_path(path) as tmp:
        if "b" in mode:
            encoding = None
        with open(tmp, mode, encoding=encoding) as fh:
            yield fh


def open_text(path: str | os.PathLike):
    """Open a UTF-8 text file, transparently gunzipping ``*.gz``; strict decoding."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "file does not exist", "check the path in the config or re-run the rule that makes it")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="strict", newline="\n")
    return open(path, encoding="utf-8", errors="strict", newline="\n")


def read_lines(path: str | os.PathLike, allow_empty_lines: bool = True) -> list[str]:
    """All lines of a UTF-8 (optionally gzipped) text file, without their newlines.

    Raises :class:`DataError` naming the file and line for non-UTF-8 bytes, a truncated or
    corrupt gzip stream, or (when ``allow_empty_lines`` is false) an empty line.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(path, "file does not exist", "check the path in the config or re-run the rule that makes it")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        else:
            raw = path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise DataError(path, f"gzip stream is truncated or corrupt ({err})", "delete the file and fetch it again") from err
    lines: list[str] = []
    if not raw:
        return lines
    for i, chunk in enumerate(raw.split(b"\n"), start=1):
        try:
            line = chunk.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as err:
            raise DataError(
                path,
                f"line {i} is not valid UTF-8 (byte {err.start} of the line: {err.reason})",
                "re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8) or fetch it again",
            ) from err
        if not allow_empty_lines and not line.strip() and i <= raw.count(b"\n"):
            raise DataError(path, f"line {i} is empty", "remove the empty line from every parallel file, or fix the source")
        lines.append(line)
    if lines and lines[-1] == "" and raw.endswith(b"\n"):
        lines.pop()  # the final newline ends the last line; it does not start a new one
    return lines


def write_lines(path: str | os.PathLike, lines) -> Path:
    """Write lines (adding newlines) atomically; returns the path."""
    with atomic_write(path) as fh:
        for line in lines:
            fh.write(line)
            fh.write("\n")
    return Path(path)


def read_json(path: str | os.PathLike, missing_fix: str):
    """A UTF-8 JSON file; a missing, truncated or non-UTF-8 file is a :class:`DataError`."""
    import json

    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file does not exist", missing_fix)
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(path, f"not valid UTF-8 JSON ({err})", "the download is truncated; fetch it again") from err


def parse_yaml(text: str):
    """``yaml.safe_load(text)`` through libyaml's C parser where PyYAML was built with it (the
    same safe subset and results, about ten times faster: Snakemake parses the workflow, and so
    reads the configuration and the paper settings, once per job on a cluster), else the pure
    Python one. Raises ``yaml.YAMLError`` like ``safe_load``."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 (a safe loader)
