"""Run configuration: schema validation with clear messages, and per-paper system settings.

``config/config.yaml`` (full run) and ``config/smoke.yaml`` (merged on top of it by Snakemake's
``--configfile``) are checked against ``config/schema.yaml`` on every run; an unknown key or a
value of the wrong type stops the run with a message naming the key. The hyperparameters of each
system live in ``config/papers/<paper>.yaml``; :func:`paper_systems` merges a config's
``overrides`` into them and validates every model and training key against the dataclasses.
"""

from __future__ import annotations

import copy
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


def paper_settings(paper_file: str | Path, overrides: dict | None = None) -> dict[str, Any]:
    """Load ``config/papers/<paper>.yaml``, apply ``overrides`` and validate every system's
    ``model_config`` and ``train`` blocks against the model's and the trainer's dataclasses.

    The file has ``recipe`` (text preprocessing) and ``systems`` (``<name>: {model,
    model_config, train}``) blocks; ``overrides`` has the same shape."""
    from .models import make_config  # local: keeps `import mmt_repro.config` light
    from .train.trainer import make_train_config

    paper_file = Path(paper_file)
    settings = deep_update(load_yaml(paper_file), overrides or {})
    unknown = sorted(set(settings) - {"recipe", "systems", "description"})
    if unknown:
        raise ConfigError(f"{paper_file}: unknown top-level key(s) {unknown}; valid: description, recipe, systems")
    systems = settings.get("systems") or {}
    for name in (overrides or {}).get("systems", {}):
        if name not in load_yaml(paper_file).get("systems", {}):
            raise ConfigError(f"override for unknown system '{name}'; systems in {paper_file}: {', '.join(sorted(load_yaml(paper_file).get('systems', {})))}")
    for name, block in systems.items():
        valid = {"model", "model_config", "train", "description", "corpus", "init_from"}
        bad = sorted(set(block) - valid)
        if bad:
            raise ConfigError(f"{paper_file}: system '{name}' has unknown key(s) {bad}; valid: {', '.join(sorted(valid))}")
        if block.get("init_from") and block["init_from"] not in systems:
            raise ConfigError(f"{paper_file}: system '{name}' is initialised from unknown system '{block['init_from']}'")
        try:
            make_config(block["model"], block.get("model_config"))
            make_train_config(block.get("train"))
        except (KeyError, ValueError) as err:
            raise ConfigError(f"{paper_file}: system '{name}': {err}") from err
    return settings
