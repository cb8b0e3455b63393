"""Byte-pair encoding with subword-nmt (Sennrich et al. 2016), through its Python API.

Codes are learnt jointly over all given files (source and target together, as in the
Multi30k baselines) and written atomically. Learning is deterministic: subword-nmt breaks
frequency ties by comparing the symbol pairs, and the input is read in the order given.
Segmented words carry the ``@@`` continuation marker; :func:`merge_bpe` undoes it.
"""

from __future__ import annotations

import functools
import io
import os
import re
from pathlib import Path

from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe as _subword_learn_bpe

from mmt_repro.io import DataError, atomic_write, read_lines, write_lines

SEPARATOR = "@@"
_MERGE_RE = re.compile(r"@@ |@@ ?$")


def learn_bpe(inputs: list[Path], codes_out: Path, num_symbols: int, min_frequency: int = 2) -> Path:
    """Learn ``num_symbols`` joint merge operations over all ``inputs``; write them to ``codes_out``.

    Fewer merges are written when no pair reaches ``min_frequency`` any more. Raises
    :class:`DataError` when the inputs hold no words or allow no merge at all.
    """
    if num_symbols < 1:
        raise ValueError(f"num_symbols must be positive, got {num_symbols}")
    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise ValueError("learn_bpe needs at least one input file")
    text = io.StringIO()
    for path in inputs:
        for line in read_lines(path):
            text.write(line)
            text.write("\n")
    if not text.getvalue().split():
        raise DataError(inputs[0], "the BPE training files contain no words", "check that the tokenised training files are not empty")
    text.seek(0)
    codes = io.StringIO()
    _subword_learn_bpe(text, codes, num_symbols, min_frequency=min_frequency)
    merges = codes.getvalue().splitlines()[1:]
    if not merges:
        raise DataError(
            inputs[0],
            f"no symbol pair occurs at least min_frequency={min_frequency} times, so no BPE merge was learnt",
            "use more training text or a lower min_frequency",
        )
    with atomic_write(codes_out) as fh:
        fh.write(codes.getvalue())
    return Path(codes_out)


def _read_codes(path: Path) -> str:
    lines = read_lines(path)
    start = 1 if lines and lines[0].startswith("#version:") else 0
    if start == len(lines):
        raise DataError(path, "BPE codes file has no merge operations", "re-run learn_bpe to make the codes file")
    for i, line in enumerate(lines[start:], start=start + 1):
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise DataError(
                path,
                f"line {i} is not a merge operation (two symbols separated by one space): {line!r}",
                "re-run learn_bpe to make the codes file",
            )
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=8)
def _load_bpe(path: str, mtime_ns: int, size: int) -> BPE:
    # mtime and size in the key: a rewritten codes file is read again
    return BPE(io.StringIO(_read_codes(Path(path))), separator=SEPARATOR)


def _bpe(codes: str | os.PathLike) -> BPE:
    path = Path(codes)
    if not path.is_file():
        raise DataError(path, "BPE codes file does not exist", "run learn_bpe first or fix the path in the config")
    st = path.stat()
    return _load_bpe(str(path.resolve()), st.st_mtime_ns, st.st_size)


def apply_bpe_lines(codes: str | os.PathLike, lines: list[str]) -> list[str]:
    """Segment whitespace-tokenised lines with the merges in ``codes``."""
    bpe = _bpe(codes)
    return [bpe.segment(line) for line in lines]


def apply_bpe(codes: str | os.PathLike, in_path: str | os.PathLike, out_path: str | os.PathLike) -> Path:
    """Segment every line of ``in_path`` with ``codes``; atomic write of ``out_path``."""
    return write_lines(out_path, apply_bpe_lines(codes, read_lines(in_path)))


def merge_bpe(line: str) -> str:
    """Undo BPE segmentation: ``"new@@ est"`` -> ``"newest"``, also a dangling final ``@@``."""
    return _MERGE_RE.sub("", line)
