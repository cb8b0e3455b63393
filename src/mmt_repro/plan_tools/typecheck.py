"""Types of the settings a config may override, checked without torch.

A value in ``papers.<paper>.overrides`` (or a paper's settings file) of the wrong type, e.g.
``emb_dim: "big"``, ``lr: "fast"`` or ``beam_size: "five"``, is caught at planning with the key
path and the expected type. The types are the dataclass annotations: those of
:class:`~mmt_repro.settings.TrainConfig` and :class:`~mmt_repro.settings.DecodeSettings`
(torch-free, imported), and those of each registered model's config, read from the model
modules' source with :mod:`ast` (the models import torch; planning does not): a
``@register("<key>", <Config>)`` decorator names the dataclass, whose fields (with those of its
bases, in the same module or imported from a sibling) give the keys and types. Models kept
outside the package (a paper's ``imports``) are not in the table; the start-of-run check
(:mod:`mmt_repro.model_configs`) covers them.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"


@dataclasses.dataclass(frozen=True)
class FieldTypes:
    """The fields (name -> annotation text) of one config dataclass."""

    name: str  # e.g. "model config of doubly_attentive.nmt (NMTConfig)"
    fields: dict


def _module_classes(path: Path) -> tuple[dict, dict, dict]:
    """(classes: name -> (bases, fields), imports: name -> (module, name), registered: key -> class)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    classes, imports, registered = {}, {}, {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                imports[alias.asname or alias.name] = (node.module, alias.name)
        if not isinstance(node, ast.ClassDef):
            continue
        fields = {}
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                text = ast.unparse(stmt.annotation)
                if not text.startswith("ClassVar"):
                    fields[stmt.target.id] = text
        classes[node.name] = ([ast.unparse(b) for b in node.bases], fields)
        for deco in node.decorator_list:
            if (isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "register" and len(deco.args) == 2
                    and isinstance(deco.args[0], ast.Constant) and isinstance(deco.args[1], ast.Name)):
                registered[deco.args[0].value] = deco.args[1].id
    return classes, imports, registered


@functools.lru_cache(maxsize=4)
def model_config_types(models_dir: str = str(MODELS_DIR)) -> dict[str, FieldTypes]:
    """Registry key -> the fields of its config dataclass, for every model of the package."""
    modules = {p.stem: _module_classes(p) for p in sorted(Path(models_dir).glob("*.py"))}

    def fields_of(module: str, name: str, depth: int = 0) -> dict:
        if module not in modules or depth > 20:
            return {}
        classes, imports, _ = modules[module]
        if name not in classes:
            return fields_of(*imports[name], depth + 1) if name in imports else {}
        bases, own = classes[name]
        out: dict = {}
        for base in reversed(bases):  # the first base's fields win, as in the MRO
            out.update(fields_of(module, base, depth + 1))
        out.update(own)
        return out

    table = {}
    for module, (_, _, registered) in modules.items():
        for key, cls in registered.items():
            table[key] = FieldTypes(f"model config of {key} ({cls})", fields_of(module, cls))
    return table


def dataclass_types(cls, name: str) -> FieldTypes:
    """The fields of an importable (torch-free) dataclass, e.g. TrainConfig."""
    return FieldTypes(name, {f.name: f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
                             for f in dataclasses.fields(cls)})


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += 1 if ch in "[(" else -1 if ch in "])" else 0
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*parts, cur.strip()]


def matches(annotation: str, value) -> bool:
    """Whether ``value`` (as YAML gives it) fits the annotation text; unknown types pass."""
    annotation = annotation.strip().strip("'\"")
    alternatives = _split_top(annotation, "|")
    if len(alternatives) > 1:
        return any(matches(alt, value) for alt in alternatives)
    m = re.fullmatch(r"(?:typing\.)?Optional\[(.*)\]", annotation)
    if m:
        return value is None or matches(m.group(1), value)
    m = re.fullmatch(r"(\w+)(?:\[(.*)\])?", annotation)
    if not m:
        return True
    head, args = m.group(1), m.group(2)
    if head == "None":
        return value is None
    if head == "bool":
        return isinstance(value, bool)
    if head == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if head == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if head == "str":
        return isinstance(value, str)
    if head in ("list", "tuple", "List", "Tuple", "Sequence"):
        if not isinstance(value, (list, tuple)):
            return False
        items = _split_top(args, ",") if args else []
        item = items[0] if len(items) == 1 or (len(items) == 2 and items[1] == "...") else None
        return item is None or all(matches(item, v) for v in value)
    if head in ("dict", "Dict", "Mapping"):
        return isinstance(value, dict)
    if head == "Literal":
        return value in [ast.literal_eval(a) for a in _split_top(args or "", ",") if a]
    return True  # a type this table does not know (a nested dataclass, Any): left to the run's check


def block_problems(values, types: FieldTypes, where: str) -> list[str]:
    """One message per unknown key or wrong-typed value of ``values`` (a mapping of settings)."""
    if values is None:
        return []
    if not isinstance(values, dict):
        return [f"{where}: must be a mapping of {types.name} keys, got {values!r}"]
    problems = []
    for key, value in values.items():
        if key not in types.fields:
            import difflib

            close = difflib.get_close_matches(str(key), list(types.fields), n=3, cutoff=0.6)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            problems.append(f"{where}.{key}: unknown key of the {types.name}.{hint} "
                            f"Valid: {', '.join(sorted(types.fields))}.\n  fix: correct the key's name there")
        elif not matches(types.fields[key], value):
            problems.append(f"{where}.{key}: {value!r} is not of type {types.fields[key]} ({types.name})\n"
                            f"  fix: give a value of type {types.fields[key]} there, or drop the key")
    return problems
