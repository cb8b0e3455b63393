"""Which code a job runs, as a short version string that Snakemake compares (a rule param):
the package version plus a hash of the source of every package module the job's entry modules
import, directly or not (read statically with ``ast``: nothing is imported, torch never).

Snakemake re-runs a job when a param changes, so a fix in ``src/mmt_repro/metrics/`` re-runs
the score jobs, and only the jobs whose code imports it."""

from __future__ import annotations

import ast
import hashlib
import re
from functools import lru_cache
from pathlib import Path

PACKAGE = "mmt_repro"

# The package modules each kind of job runs: what its code version hashes. A subpackage named
# here brings all its modules (the model registry imports models by name, which no import shows).
JOB_CODE = {
    "train": ("mmt_repro.execute.train", "mmt_repro.models"),
    "translate": ("mmt_repro.execute.translate", "mmt_repro.models"),
    "score": ("mmt_repro.execute.score",),
    "analyse": ("mmt_repro.execute.analyse", "mmt_repro.analyses", "mmt_repro.models"),
    "table": ("mmt_repro.execute.table",),
    "significance": ("mmt_repro.execute.significance",),
    "curves": ("mmt_repro.execute.curves",),
    "alignment_model": ("mmt_repro.execute.alignment",),
    "align": ("mmt_repro.execute.alignment",),
    "backtranslation": ("mmt_repro.execute.backtranslation",),
}
ROOT = Path(__file__).resolve().parents[1]  # src/mmt_repro, the package jobs import
MODELS = f"{PACKAGE}.models"
_REGISTER = re.compile(r"""@register\(\s*["']([^"']+)["']""")


def package_version() -> str:
    try:
        from importlib.metadata import version

        return version("mmt-repro")
    except Exception:  # not installed (PYTHONPATH=src)
        return "0+unknown"


def _module_file(name: str, root: Path) -> Path | None:
    parts = name.split(".")[1:]
    base = root.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


@lru_cache(maxsize=None)
def model_modules(root: Path = ROOT) -> dict[str, str]:
    """Registry key -> the module of ``mmt_repro.models`` that registers it (``@register("key",
    ...)``), read from the source: torch-free, like the rest of the plan."""
    found = {}
    for file in sorted((root / "models").glob("*.py")):
        for key in _REGISTER.findall(file.read_text(encoding="utf-8")):
            found[key] = f"{MODELS}.{file.stem}"
    return found


def _imports(name: str, file: Path, root: Path, cut_models: bool = False) -> set[str]:
    """Package modules that ``name`` imports anywhere in its source (functions included).
    ``cut_models``: the models package's ``__init__`` does not bring the model modules it
    imports to register them (a training's code is its own model's module, added by name)."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    is_pkg = file.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != PACKAGE:
                continue
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import submodule`
    # a module's parent packages run first (their __init__)
    parts = name.split(".")
    found.update(".".join(parts[:i]) for i in range(1, len(parts)))
    if cut_models and name == MODELS:
        found -= set(model_modules(root).values())
    return {m for m in found if _module_file(m, root) is not None}


@lru_cache(maxsize=None)
def closure(entries: tuple[str, ...], root: Path = ROOT, cut_models: bool = False) -> tuple[str, ...]:
    """Every package module that the entry modules import, transitively (sorted), the entries
    included; a subpackage named as an entry brings all its modules (e.g. the model registry's).
    ``cut_models``: see :func:`_imports`."""
    todo, seen = [], set()
    for entry in entries:
        file = _module_file(entry, root)
        if file is None:
            raise ValueError(f"no module {entry!r} under {root}")
        todo.append(entry)
        if file.name == "__init__.py":
            todo += [f"{entry}.{p.stem}" for p in sorted(file.parent.glob("*.py")) if p.stem != "__init__"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_imports(name, _module_file(name, root), root, cut_models) - seen)
    return tuple(sorted(seen))


@lru_cache(maxsize=None)
def code_version(*entries: str, root: Path = ROOT, cut_models: bool = False) -> str:
    """``<package version>+<12 hex digits>``: the hash of the source of ``closure(entries)``."""
    digest = hashlib.sha256()
    for name in closure(tuple(entries), root, cut_models):
        digest.update(name.encode())
        digest.update(_module_file(name, root).read_bytes())
    return f"{package_version()}+{digest.hexdigest()[:12]}"


def train_code_version(model: str, root: Path = ROOT) -> str:
    """The code version of one training: the trainer's code and its own model's module (what that
    imports included), not the other papers' models. An edit to BertGen re-runs BertGen's
    trainings, not Hirasawa et al.'s; an edit to the trainer, the shared layers or the registry
    re-runs them all (and the models package's ``__init__``, which lists the models, is hashed).
    A model registered outside the package (a paper's ``imports``) gets the whole package's
    training version, as every training did before."""
    module = model_modules(root).get(model)
    if module is None:
        return code_version(*JOB_CODE["train"], root=root)
    entries = tuple(e for e in JOB_CODE["train"] if e != MODELS) + (module,)
    return code_version(*entries, root=root, cut_models=True)
