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
import json
from pathlib import Path
from typing import Any

import yaml

from .io import DataError, parse_yaml


class ConfigError(ValueError):
    """A configuration key or value is wrong; the message names it and the fix."""


def _key_path(error) -> str:  # a jsonschema.ValidationError
    return ".".join(str(p) for p in error.absolute_path) or "<top level>"


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` against the YAML JSON-schema; raise :class:`ConfigError` listing
    every problem with its key path. Returns the config unchanged."""
    import jsonschema  # here, not at the top: every job imports this module (50 ms), few validate

    schema_path = Path(schema_path)
    schema = parse_yaml(schema_path.read_text(encoding="utf-8"))
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
        data = parse_yaml(path.read_text(encoding="utf-8")) or {}
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


# --- the configuration reference (config/README.md), generated from the schema -------------------

_DEF_NAMES = {"feature_set": "set"}  # a $defs key -> its placeholder in key paths (default: the key)


def _type_of(node: dict) -> str:
    """A schema node's type in words: enum values, list item types, alternatives."""
    if "$ref" in node:
        return f"see `{node['$ref'].rsplit('/', 1)[-1]}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "oneOf" in node:
        return " or ".join(_type_of(alt) for alt in node["oneOf"])
    kinds = node.get("type", "any")
    kinds = " or ".join(kinds) if isinstance(kinds, list) else kinds
    if kinds == "array":
        return f"list of {_type_of(node.get('items', {}))}"
    if kinds == "object" and isinstance(node.get("additionalProperties"), dict) and "properties" not in node:
        return f"map of name -> {_type_of(node['additionalProperties'])}"
    bounds = [f"{word} {node[key]}" for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="))
              if key in node]
    bounds += [f"matching `{node['pattern']}`"] if "pattern" in node else []
    return kinds + (f" ({', '.join(bounds)})" if bounds else "")


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped, and ``<`` escaped outside code spans (where
    Markdown renderers would take ``<split>`` for an HTML tag and drop it)."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _rows(node: dict, prefix: str, sections: dict, defs: dict) -> list[str]:
    """Table rows of ``node``'s properties (nested objects flattened into ``a.b`` keys); a map of
    ``$defs`` entries gets its own section (recorded in ``sections``)."""
    rows = []
    required = set(node.get("required", []))
    for key, prop in (node.get("properties") or {}).items():
        name = f"{prefix}{key}"
        extra = prop.get("additionalProperties")
        ref = extra["$ref"].rsplit("/", 1)[-1] if isinstance(extra, dict) and "$ref" in extra else None
        if ref is not None and not defs[ref].get("properties"):
            kind = f"map of name -> {_type_of(defs[ref])}"
        elif ref is not None:
            sections.setdefault(ref, f"{name}.<{_DEF_NAMES.get(ref, ref)}>")
            kind = f"map of name -> {ref} (section `{sections[ref]}`)"
        else:
            kind = _type_of(prop)
        text = prop.get("description", "")
        if "default" in prop:
            text += f" (default `{json.dumps(prop['default'])}`)"
        rows.append(f"| `{name}` | {_cell(kind)} | {'yes' if key in required else ''} | {_cell(text)} |")
        if prop.get("properties"):
            rows.extend(_rows(prop, f"{name}.", sections, defs))
    return rows


def schema_reference(schema_path: str | Path) -> str:
    """``config/README.md``: every key of the configuration schema (``config/schema.yaml``) with
    its type, whether it is required and its description, one section per kind of block.
    ``python -m mmt_repro config-docs`` writes it; a test keeps the committed file equal."""
    schema_path = Path(schema_path)
    schema = parse_yaml(schema_path.read_text(encoding="utf-8"))
    defs = schema.get("$defs", {})
    header = "| key | type | required | description |\n|---|---|---|---|"
    sections: dict = {}
    top = _rows(schema, "", sections, defs)
    out = [
        "# Configuration reference",
        "",
        f"<!-- generated from {schema_path.name} by `python -m mmt_repro config-docs`; do not edit by hand -->",
        "",
        "Every run's configuration (`config/config.yaml` with the files given by `--configfile` merged",
        "on top) is checked against `config/schema.yaml` before anything is",
        "planned; an unknown key or a value of the wrong type stops the run naming the key. Check a",
        "configuration by hand with `python -m mmt_repro check --configfile <overlay.yaml>` (the planning preflight).",
        "Each paper's own settings (recipe, systems, decoding, scoring) are in `config/papers/<paper>.yaml`",
        "and are described in `docs/adding_a_paper.md`.",
        "",
        "## Top level",
        "",
        header,
        *top,
    ]
    done = set()
    while len(done) < len(sections):  # sections found while writing others come after them
        for ref, where in list(sections.items()):
            if ref in done:
                continue
            done.add(ref)
            node = defs[ref]
            out += ["", f"## `{where}` ({ref})", ""]
            if node.get("description"):
                out += [_cell(node["description"]), ""]
            out += [header, *_rows(node, f"{where}.", sections, defs)]
    return "\n".join(out) + "\n"
