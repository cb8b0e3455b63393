"""Run configuration: schema validation with clear messages, and per-paper system settings.

``config/config.yaml`` (full run) and ``config/smoke.yaml`` (merged on top of it by Snakemake's
``--configfile``) are checked against ``config/schema.yaml`` on every run; an unknown key or a
value of the wrong type stops the run with a message naming the key. Each paper's settings live
in ``config/papers/<paper>.yaml`` and are read and checked by :mod:`mmt_repro.settings`;
:func:`make_dataclass_config` builds their dataclasses (and the models' configs,
:mod:`mmt_repro.models.registry`) from plain dicts, naming unknown keys.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .io import DataError


class ConfigError(ValueError):
    """A configuration key or value is wrong; the message names it and the fix."""


def _key_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "<top level>"


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` against the YAML JSON-schema; raise :class:`ConfigError` listing
    every problem with its key path. Returns the config unchanged."""
    schema_path = Path(schema_path)
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for err in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        where = _key_path(err)
        if err.validator == "additionalProperties":
            allowed = sorted(err.schema.get("properties", {}))
            extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
            for key in extra:
                full = f"{where}.{key}" if where != "<top level>" else key
                problems.append(f"unknown config key '{full}'; valid keys here: {', '.join(allowed)}")
        else:
            problems.append(f"config key '{where}': {err.message}")
    if problems:
        raise ConfigError(
            f"invalid configuration (checked against {schema_path}):\n  - "
            + "\n  - ".join(problems)
            + "\n  fix: correct the key(s) in config/config.yaml or the file given with --configfile"
        )
    return config


def deep_update(base: dict, override: dict) -> dict:
    """A copy of ``base`` with ``override`` merged in recursively (dicts merge, rest replaces)."""
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_update(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise DataError(path, "configuration file does not exist", "check the path given in config/config.yaml")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise DataError(path, f"not valid YAML: {err}", "fix the syntax") from err
    if not isinstance(data, dict):
        raise DataError(path, "must hold a mapping at the top level", "see config/papers/doubly_attentive.yaml")
    return data


def make_dataclass_config(cls, values: dict | None, what: str):
    """``cls(**values)`` after rejecting unknown keys with the list of valid ones."""
    values = dict(values or {})
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"unknown {what} key(s) {unknown}; valid keys: {', '.join(sorted(fields))}")
    return cls(**values)
