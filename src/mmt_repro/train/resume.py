"""Whether a resume checkpoint was written by the configuration a run has now, and on the
training inputs it has now (torch-free)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

__all__ = ["field_defaults", "inputs_fingerprint", "same_configuration"]

#: a file larger than this is fingerprinted by its size and SAMPLES evenly spaced chunks
WHOLE_BELOW = 64 << 20
SAMPLES, CHUNK = 64, 1 << 20


def field_defaults(cls) -> dict:
    """name -> default of every field of the dataclass ``cls`` that has one."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def same_configuration(saved: dict, now: dict, defaults: dict[str, dict]) -> bool:
    """Was ``saved`` (the configs in a resume checkpoint) written by the configuration ``now``?
    A key that a later version of the code added is absent from ``saved``: it matches when
    ``now`` holds that key's default (``defaults``: section -> field defaults), so a run that
    spans sessions (and code versions) resumes unless a setting that matters changed."""
    if set(saved) != set(now):
        return False
    for section, values in now.items():
        old = saved[section]
        if not (isinstance(values, dict) and isinstance(old, dict)):
            if old != values:
                return False
            continue
        if set(old) - set(values):
            return False  # a setting the code no longer has
        for key, value in values.items():
            if key in old:
                if old[key] != value:
                    return False
            elif key not in defaults.get(section, {}) or defaults[section][key] != value:
                return False
    return True


def _file_digest(path: Path) -> str:
    """sha256 of the file, or for a file of WHOLE_BELOW bytes or more, of its size and SAMPLES
    chunks spread over it (a feature store of many GB is read in well under a second; a
    re-extraction changes values everywhere, so any sample sees it)."""
    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    with open(path, "rb") as fh:
        if size < WHOLE_BELOW:
            for block in iter(lambda: fh.read(CHUNK), b""):
                h.update(block)
        else:
            for i in range(SAMPLES):
                fh.seek((size - CHUNK) * i // (SAMPLES - 1))
                h.update(fh.read(CHUNK))
    return h.hexdigest()[:16]


def _paths(value) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    if isinstance(value, dict):
        return [p for v in value.values() for p in _paths(v)]
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _paths(v)]
    return []


def inputs_fingerprint(*groups) -> dict[str, str]:
    """path -> digest of every existing file named in ``groups`` (a training job's inputs,
    extras, resources and tasks: strings, lists and dicts of paths). A finished or interrupted
    run whose inputs have changed since (a corpus fixed, features extracted again) is not
    resumed: its weights belong to the old inputs."""
    out = {}
    for path in sorted({p for g in groups for p in _paths(g)}):
        file = Path(path)
        if file.is_file():
            out[path] = _file_digest(file)
    return out
