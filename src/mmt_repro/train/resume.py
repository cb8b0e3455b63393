"""Whether a resume checkpoint was written by the configuration a run has now (torch-free)."""

from __future__ import annotations

import dataclasses

__all__ = ["field_defaults", "same_configuration"]


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
