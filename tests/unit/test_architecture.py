"""The package's layers (docs/architecture.md): the import-linter contracts of pyproject.toml hold,
they fail when an import breaks a rule, the written table and the contracts agree, no import
cycle exists (imports inside functions count) and no module is over 600 lines."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "mmt_repro"
LINT = Path(sys.executable).with_name("lint-imports")
MAX_LINES = 600


def lint(cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``lint-imports`` on the contracts of ``cwd/pyproject.toml`` (no cache: nothing written)."""
    assert LINT.is_file(), f"{LINT} missing: install the test extra (pip install -e '.[test]', import-linter)"
    return subprocess.run([str(LINT), "--no-cache", "--no-logo", "pyproject.toml"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def layer_modules() -> list[str]:
    """The layers contract's modules, top to bottom, as full names."""
    (layers,) = [c for c in contracts() if c["type"] == "layers"]
    (container,) = layers["containers"]
    return [f"{container}.{tail.strip().strip('()')}" for line in layers["layers"] for tail in re.split(r"[|:]", line)]


# ---------------------------------------------------------------------------- import-linter contracts


def test_the_import_contracts_hold():
    res = lint(REPO)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout
    for contract in contracts():
        assert f"{contract['name']} KEPT" in res.stdout


BREAKS = {
    # a model reading the data layer, lazily: the models contract (and the layers one)
    "models": ("models/base.py", "\n\ndef _broken():\n    from ..datasets.batching import ParallelData\n\n    return ParallelData\n",
               "Models import only ground and text", "mmt_repro.models.base -> mmt_repro.datasets.batching"),
    # the settings importing the models again (the old circle): the layers contract
    "settings": ("settings.py", "\n\ndef _broken():\n    import mmt_repro.models  # noqa: F401\n",
                 "Layers", "mmt_repro.settings -> mmt_repro.models"),
    # decoding importing training
    "decode": ("decode/loop.py", "\n\ndef _broken():\n    from ..train import trainer  # noqa: F401\n",
               "Layers", "mmt_repro.decode.loop -> mmt_repro.train"),
    # tables and analyses are independent
    "reports": ("tables/build.py", "\n\ndef _broken():\n    from ..analyses.registry import INPUT_KINDS  # noqa: F401\n",
                "Layers", "mmt_repro.tables.build -> mmt_repro.analyses.registry"),
    # planning loading torch
    "torch": ("settings.py", "\n\ndef _broken():\n    import torch  # noqa: F401\n",
              "Planning and corpus preparation import no torch", "mmt_repro.settings -> torch"),
    # corpus preparation loading torch
    "corpora-torch": ("corpora/checks.py", "\n\ndef _broken():\n    import torch  # noqa: F401\n",
                      "Planning and corpus preparation import no torch", "mmt_repro.corpora.checks -> torch"),
    # the planner reaching for training-time batches
    "plan-datasets": ("plan/data.py", "\n\ndef _broken():\n    from ..datasets import batching  # noqa: F401\n",
                      "Layers", "mmt_repro.plan.data -> mmt_repro.datasets.batching"),
    # the planner reaching for a tool that reads a plan (the tools sit above it)
    "plan-tools": ("plan/build/train.py", "\n\ndef _broken():\n    from ...plan_tools import walk  # noqa: F401\n",
                   "Layers", "mmt_repro.plan.build.train -> mmt_repro.plan_tools.walk"),
    # a generator reading prepared corpora (the inputs layer's generators sit below corpora)
    "grounded-corpora": ("grounded/video.py", "\n\ndef _broken():\n    from ..corpora import checks  # noqa: F401\n",
                         "Layers", "mmt_repro.grounded.video -> mmt_repro.corpora.checks"),
}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_the_contracts_fail_when_an_import_breaks_a_rule(case, tmp_path):
    """A copy of the package with one forbidden import added (inside a function) breaks the
    contract that forbids it, and the report names the import."""
    module, code, contract, chain = BREAKS[case]
    shutil.copytree(PACKAGE, tmp_path / "mmt_repro", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "mmt_repro" / module
    target.write_text(target.read_text(encoding="utf-8") + code, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))  # the copy, not the installed package
    res = lint(tmp_path, env)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert re.search(rf"^{re.escape(contract)}.* BROKEN$", out, re.M), out
    assert chain in out, out  # the copy was linted: the real package has no such import


def test_the_written_table_and_the_contracts_agree():
    """docs/architecture.md lists the layers contract's modules in the same order, and the
    models contract forbids every layer but ground, text and the models themselves."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = doc.split("## The table", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[2] for line in table.splitlines() if line.startswith("| ") and not line.startswith("| layer")]
    written = [name for cell in rows for name in re.findall(r"`(mmt_repro\.[\w.]+)`", cell)]
    assert written == layer_modules()
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == [
        "faces", "reports", "training", "decoding", "training data", "checkpoint", "models", "planning tools",
        "planning", "inputs", "settings", "text and scores", "ground"]
    (models,) = [c for c in contracts() if c.get("id") == "models"]
    allowed = {"mmt_repro.models", "mmt_repro.text", "mmt_repro.config", "mmt_repro.device", "mmt_repro.io"}
    assert models["source_modules"] == ["mmt_repro.models"]
    assert sorted(models["forbidden_modules"]) == sorted(set(layer_modules()) - allowed)


# ---------------------------------------------------------------------------- no cycle, no long module


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """``{module: package modules it imports}`` of the package at ``root``, read with ``ast``:
    every ``import``/``from ... import`` anywhere in a module (inside functions and
    ``TYPE_CHECKING`` blocks too); ``from pkg import name`` is the submodule ``pkg.name`` when
    there is one, else ``pkg``."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    top = root.name

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(known(a.name) for a in node.names if a.name.split(".")[0] == top)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                if mod.split(".")[0] != top:
                    continue
                found.update(f"{mod}.{a.name}" if f"{mod}.{a.name}" in files else known(mod) for a in node.names)
        graph[name] = {m for m in found if m is not None and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert "mmt_repro.models.visual_agreement" in graph["mmt_repro.models"]  # `from . import x` is x
    assert cycles(graph) == [], "import cycles (imports inside functions count):\n" + "\n".join(
        " <-> ".join(c) for c in cycles(graph))


def test_the_cycle_check_finds_a_cycle_through_a_lazy_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("def g():\n    import pkg.a\n")
    (pkg / "d.py").write_text("from pkg.sub.b import f\n")
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == {"pkg.c"} and graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def test_no_module_is_over_600_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in sorted(PACKAGE.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these along a real seam (docs/architecture.md): {long}"


# ---------------------------------------------------------------------------- the trainer's data seam


def test_the_trainer_calls_one_typed_protocol_and_probes_no_data_view():
    """train/ reaches its training data through datasets.view.TrainingData: no hasattr or
    getattr on a data view (the training-time stand-ins of train/synthetic.py read a model's
    config, not data), and both views the package has implement every method of the protocol."""
    from mmt_repro.datasets.batching import ParallelData
    from mmt_repro.datasets.unroll import MultiTaskData
    from mmt_repro.datasets.view import TrainingData

    for path in sorted((PACKAGE / "train").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        probes = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")
                  and not (path.name == "synthetic.py" and "config" in ast.unparse(node.args[0]))]
        assert not probes, f"{path.name}: hasattr/getattr at lines {probes}"
    methods = {name for name in vars(TrainingData) if not name.startswith("_")} | {"__len__"}
    assert methods >= {"train_batches", "collate", "n_target_tokens", "curve_columns", "describe", "hold_features_on"}
    for view in (ParallelData, MultiTaskData):
        missing = sorted(m for m in methods if not callable(getattr(view, m, None)))
        assert not missing, f"{view.__name__} lacks {missing}"


# ---------------------------------------------------------------------------- the plan's parts

PLAN_PARTS = ["build/train.py", "build/translate.py", "build/score.py", "build/analyse.py", "build/significance.py",
              "build/table.py", "build/curves.py", "build/alignment.py", "build/backtranslation.py", "data.py",
              "features.py", "text.py", "vectors.py", "figures.py", "targets.py"]


def _undeclared_calls(source: str, lookup_names: set) -> list:
    """Every ``self.look.<x>`` that the look-ups lack and every ``self.<x>`` that the part's own
    class (with its base JobBuilder) neither defines nor assigns in its constructor."""
    tree = ast.parse(source)
    bad = []
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        own = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        own |= {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        own |= {t.attr for n in ast.walk(cls) if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
        if any(isinstance(b, ast.Name) and b.id == "JobBuilder" for b in cls.bases):
            own |= {"look", "job", "inputs", "params", "build", "_cache"}
        for node in ast.walk(cls):
            if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name) or node.value.id != "self":
                continue
            parent = [p for p in ast.walk(cls) if isinstance(p, ast.Attribute) and p.value is node]
            if node.attr == "look":
                bad += [f"self.look.{p.attr}" for p in parent if p.attr not in lookup_names]
            elif node.attr not in own:
                bad.append(f"self.{node.attr}")
    return bad


def test_each_part_of_the_plan_calls_only_the_lookups_and_the_parts_it_names():
    """Plan is the look-ups (plan/lookup.py) with one job builder per kind of job, one-to-one
    with execute/<kind>.py, and the inputs of the stages without a job object. A part reaches
    the look-ups through ``self.look`` and another part only through a name its constructor
    sets: no call across parts through ``self`` that no one declared."""
    from mmt_repro.plan.lookup import Lookup
    from mmt_repro.plan.whole import Plan

    plan_dir = PACKAGE / "plan"
    # the look-ups' methods and properties, and the attributes their constructor sets
    lookup_names = set(dir(Lookup)) | set(re.findall(r"self\.(\w+) = ", (plan_dir / "lookup.py").read_text()))
    for part in PLAN_PARTS:
        bad = _undeclared_calls((plan_dir / part).read_text(encoding="utf-8"), lookup_names)
        assert not bad, f"plan/{part} calls {sorted(set(bad))} without declaring them"
    # Plan itself adds no method: only its parts, made in __init__
    assert [n for n, v in vars(Plan).items() if callable(v) and not n.startswith("__")] == []
    # one builder per kind of job, one-to-one with execute/<kind>.py
    builders = {p.stem for p in (plan_dir / "build").glob("*.py") if p.stem != "__init__"}
    executors = {p.stem for p in (PACKAGE / "execute").glob("*.py") if p.stem not in ("__init__", "record")}
    assert builders == executors


def test_the_part_check_finds_a_call_across_parts():
    source = ("class TableJobs(JobBuilder):\n"
              "    def build(self, w):\n"
              "        return self.look.word_vector_reason(w) or self.train_job(w)\n")
    assert sorted(_undeclared_calls(source, {"table", "enabled"})) == ["self.look.word_vector_reason", "self.train_job"]
