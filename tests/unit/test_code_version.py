"""Re-runs follow what decides a job's output (mmt_repro.plan_tools.version): each rule's `code` param
hashes the modules its stage declares, comments and docstrings left out; a training's, a
decoding's and an analysis's hash their own model's module, not every paper's."""

from __future__ import annotations

import ast
import hashlib
import re
import shutil
from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import load_yaml
from mmt_repro.plan import Plan
from mmt_repro.plan.jobs import JOB_KINDS
from mmt_repro.plan_tools.version import (
    JOB_STAGE,
    NEUTRAL,
    STAGES,
    clear_caches,
    closure,
    code_param,
    code_version,
    model_modules,
    stage_modules,
    unclassified,
)

REPO = Path(__file__).resolve().parents[2]
PAPERS = ("bertgen", "deepfuse", "doubly_attentive", "emb_pred", "visual_agreement")


@pytest.fixture(scope="module")
def full():
    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


@pytest.fixture()
def copy(tmp_path):
    """A copy of the package to edit; the caches are cleared around each test."""
    root = tmp_path / "mmt_repro"
    shutil.copytree(REPO / "src" / "mmt_repro", root, ignore=shutil.ignore_patterns("__pycache__"))
    clear_caches()
    yield root
    clear_caches()


def every_version(root: Path) -> dict:
    """(stage, model, paper) -> code version, for every stage and, where the stage is per model,
    every model of the package (with the model's paper for the analyses)."""
    from mmt_repro.plan_tools import version

    version._hash.cache_clear()  # (a file's tokens are cached by its mtime and size)
    version.closure.cache_clear()
    out = {}
    for stage, spec in STAGES.items():
        if not spec.per_model:
            out[stage, None, None] = code_version(stage, root=root)
            continue
        for model in model_modules(root):
            paper = model.split(".")[0] if model.split(".")[0] in PAPERS else None
            out[stage, model, paper] = code_version(stage, model, paper, root=root)
    return out


def changed(before: dict, after: dict) -> set:
    return {key for key in before if before[key] != after[key]}


def edit_function(file: Path, name: str) -> None:
    """Change what function ``name`` does: one statement more at the top of its body."""
    text = file.read_text(encoding="utf-8")
    node = next((n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == name), None)
    assert node is not None, f"no function {name} in {file}"
    first = node.body[0]
    is_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    at = first.end_lineno if is_doc else first.lineno - 1  # insert after this many lines
    lines = text.splitlines(keepends=True)
    lines.insert(at, " " * first.col_offset + "_edited = 1\n")
    file.write_text("".join(lines), encoding="utf-8")


def test_an_edit_to_a_meteor_function_re_plans_the_scoring_jobs_only(copy):
    before = every_version(copy)
    edit_function(copy / "metrics" / "meteor.py", "meteor_score")
    assert {stage for stage, _, _ in changed(before, every_version(copy))} == {"score", "significance", "protocols",
                                                                            "cross_paper"}
    # the protocols' own code re-plans the grids and the cross-paper table (which scores through it) alone
    before = every_version(copy)
    edit_function(copy / "metrics" / "protocols.py", "grid_protocols")
    assert {stage for stage, _, _ in changed(before, every_version(copy))} == {"protocols", "cross_paper"}


def test_an_edit_to_moses_re_plans_the_tokenisation_not_the_trainings(copy):
    """text/moses.py decides the tokenised text (and IWSLT's prepared corpus): those jobs re-run,
    and everything downstream with them, because their outputs are new (Snakemake's mtime
    trigger: tests/workflow/test_workflow.py shows it on a finished smoke run). A training's own
    code version does not change."""
    before = every_version(copy)
    edit_function(copy / "text" / "moses.py", "preprocess_lines")
    stages = {stage for stage, _, _ in changed(before, every_version(copy))}
    assert {"text", "corpora"} <= stages
    assert not stages & {"train", "translate", "analyse", "features", "tables", "report"}


def test_an_edit_to_one_papers_model_re_plans_only_that_papers_jobs(copy):
    before = every_version(copy)
    edit_function(copy / "models" / "deepfuse.py", "forward")
    hit = changed(before, every_version(copy))
    assert hit and {model.split(".")[0] for _, model, _ in hit} == {"deepfuse"}
    assert {stage for stage, _, _ in hit} == {"train", "translate", "analyse"}
    # the shared layers: every model that imports them (emb_pred does, BertGen does not)
    before = every_version(copy)
    edit_function(copy / "models" / "layers.py", "forward")
    hit = {model for _, model, _ in changed(before, every_version(copy))}
    assert "emb_pred.nmt" in hit and "bertgen.bertgen" not in hit
    # the trainer: every training, and nothing else
    before = every_version(copy)
    edit_function(copy / "train" / "trainer.py", "validate")
    hit = changed(before, every_version(copy))
    assert {stage for stage, _, _ in hit} == {"train"} and len(hit) == len(model_modules(copy))


def test_comments_docstrings_and_layout_change_no_version(copy):
    before = every_version(copy)
    for rel in ("metrics/meteor.py", "models/bertgen.py", "train/trainer.py", "text/moses.py"):
        file = copy / rel
        text = file.read_text(encoding="utf-8")
        text = text.replace('"""', '"""Edited. ', 1)  # the module's docstring
        text = re.sub(r"(\n    def \w+\(.*?\):\n        \"\"\")", r"\1Edited. ", text, count=3, flags=re.S)
        text = text.replace("\n\n\n", "\n\n\n# a comment\n\n", 2) + "\n# the end\n"
        file.write_text(text, encoding="utf-8")
    assert every_version(copy) == before
    text = (copy / "metrics" / "meteor.py").read_text(encoding="utf-8")
    (copy / "metrics" / "meteor.py").write_text(text.replace("\n\n\n", "\n\n\nEDITED = 1\n\n", 1), encoding="utf-8")
    assert changed(before, every_version(copy))


def test_versions_are_cached_by_the_modules_exact_bytes(copy, tmp_path, monkeypatch):
    """Snakemake parses the workflow once per cluster job; the versions it computed are read
    back from the cache, keyed by the modules' bytes, so an edit is never served a stale one."""
    monkeypatch.setenv("MMT_REPRO_CODE_CACHE", "off")
    uncached = code_version("score", root=copy)
    cache = tmp_path / "cache"
    monkeypatch.setenv("MMT_REPRO_CODE_CACHE", str(cache))
    clear_caches()
    assert code_version("score", root=copy) == uncached
    entries = [p for p in cache.rglob("*") if p.is_file() and "imports" not in p.relative_to(cache).parts]
    assert len(entries) == 1 and entries[0].read_text(encoding="ascii") == uncached.split(":")[1] + "\n"
    # a later parse reads the entry instead of normalising the sources: a planted value comes back
    entries[0].write_text("0123456789ab\n", encoding="ascii")
    clear_caches()
    assert code_version("score", root=copy) == "score:0123456789ab"
    # a changed byte, even a comment, is a new key: normalised again, the same version as before
    meteor = copy / "metrics" / "meteor.py"
    meteor.write_text(meteor.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
    clear_caches()
    assert code_version("score", root=copy) == uncached
    # a changed statement: a new key and a new version
    edit_function(meteor, "meteor_score")
    clear_caches()
    edited = code_version("score", root=copy)
    assert edited != uncached
    monkeypatch.setenv("MMT_REPRO_CODE_CACHE", "off")
    clear_caches()
    assert code_version("score", root=copy) == edited


def test_import_lists_are_cached_by_the_module_bytes(copy, tmp_path, monkeypatch):
    """The closures read each module's import list from the cache (one entry per module's exact
    bytes) instead of parsing it again; an edit is a new key, so a new import is always seen."""
    from mmt_repro.plan_tools import version

    cache = tmp_path / "cache"
    monkeypatch.setenv("MMT_REPRO_CODE_CACHE", str(cache))
    entry_module = "mmt_repro.execute.score"
    reached = version.closure((entry_module,), copy)
    assert "mmt_repro.metrics.mt" in reached
    source = copy / "execute" / "score.py"
    key = hashlib.sha256(version._normaliser_digest() + b"imports\0" + entry_module.encode() + b"\0"
                         + source.read_bytes()).hexdigest()
    entry = cache / "imports" / key[:2] / key
    assert entry.read_text(encoding="ascii").split() == list(version._source_imports(entry_module, source))
    # a later parse reads the entry: a planted list (no imports at all) comes back
    entry.write_text("-\n", encoding="ascii")
    clear_caches()
    planted = version.closure((entry_module,), copy)  # what the parent packages import, no more
    assert set(planted) < set(reached) and "mmt_repro.metrics.mt" not in planted
    # a garbled entry is parsed again
    entry.write_text("not a module list\n", encoding="ascii")
    clear_caches()
    assert version.closure((entry_module,), copy) == reached
    # an added import changes the bytes: a new key, and the new module is in the closure
    source.write_text(source.read_text(encoding="utf-8") + "\nimport mmt_repro.text.zh_segment\n", encoding="utf-8")
    clear_caches()
    assert "mmt_repro.text.zh_segment" in version.closure((entry_module,), copy)


def test_a_garbled_or_unwritable_code_cache_is_skipped(copy, tmp_path, monkeypatch):
    monkeypatch.setenv("MMT_REPRO_CODE_CACHE", "off")
    uncached = code_version("score", root=copy)
    blocker = tmp_path / "a-file"  # the cache folder is a file: nothing can be written
    blocker.write_text("x", encoding="ascii")
    monkeypatch.setenv("MMT_REPRO_CODE_CACHE", str(blocker))
    clear_caches()
    assert code_version("score", root=copy) == uncached
    cache = tmp_path / "cache"
    monkeypatch.setenv("MMT_REPRO_CODE_CACHE", str(cache))
    clear_caches()
    code_version("score", root=copy)
    (entry,) = [p for p in cache.rglob("*") if p.is_file()]
    entry.write_text("not a version\n", encoding="ascii")
    clear_caches()
    assert code_version("score", root=copy) == uncached


@pytest.mark.slow  # over 10 s idle: `make test` runs it, `make test-fast` leaves it out
def test_every_module_a_stage_reaches_is_declared_deciding_or_not():
    """A new import must be placed: in the stage's declaration (it decides the outputs, a change
    re-runs the stage's jobs) or among the modules that do not (with the reason)."""
    for stage, spec in STAGES.items():
        models = model_modules() if spec.per_model else [None]
        for model in models:
            for paper in (PAPERS if spec.per_paper_analyses else (None,)):
                assert not unclassified(stage, model, paper), (stage, model, paper)
        for name in (*spec.decides, *spec.not_deciding):
            assert name not in NEUTRAL, (stage, name)
    # a doubly-attentive training hashes neither METEOR nor BertGen's unrolling nor other papers' models
    mods = stage_modules("train", "doubly_attentive.nmt_src_img")
    assert "mmt_repro.models.doubly_attentive" in mods and "mmt_repro.metrics.mt" in mods
    assert not {m for m in mods if m.endswith(("meteor", "cider", "unroll", "wordpiece", "bertgen", "emb_pred"))}
    assert {"mmt_repro.datasets.unroll", "mmt_repro.text.wordpiece"} <= set(stage_modules("train", "bertgen.bertgen"))
    assert "mmt_repro.models.doubly_attentive" in closure(("mmt_repro.models.doubly_attentive",))


def test_every_rule_names_its_stage_and_the_one_environment():
    rules = 0
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        blocks = re.split(r"\n(?=[ \t]*rule(?:\s+\w+)?\s*:)", smk.read_text(encoding="utf-8"))
        for block in blocks[1:]:
            rules += 1
            stage = re.search(r'code=code\("(\w+)", "(\w+\.py)"\)', block)
            assert stage and stage.group(1) in STAGES, block[:200]
            # the script the code version hashes is the one the rule runs
            script = re.search(r'script:\n\s+"\.\./scripts/(\w+\.py)"\n', block)
            assert script and script.group(1) == stage.group(2), block[:200]
            assert re.search(r"conda:\n\s+ENV\n", block) and re.search(r"container:\n\s+CONTAINER\n", block), block[:200]
    assert rules >= 49
    common = (REPO / "workflow" / "rules" / "common.smk").read_text(encoding="utf-8")
    assert 'ENV = str(Path(workflow.basedir) / "envs" / "mmt-repro.yaml")' in common


def test_an_edit_to_a_rules_script_re_plans_that_scripts_rules_only(tmp_path):
    """A rule's code version hashes its own script (workflow/scripts/), not where the checkout
    is: a copy elsewhere gives the same version; a comment changes nothing; a changed call
    changes the version of the rules that run that script, not of the stage's other rules."""
    scripts = tmp_path / "scripts"
    shutil.copytree(REPO / "workflow" / "scripts", scripts)
    clear_caches()
    tokenize, bpe = scripts / "tokenize.py", scripts / "apply_bpe.py"
    before = code_version("text", script=tokenize), code_version("text", script=bpe)
    assert before[0] != before[1] != code_version("text")
    assert before[0] == code_version("text", script=REPO / "workflow" / "scripts" / "tokenize.py")
    tokenize.write_text(tokenize.read_text(encoding="utf-8") + "# a comment\n", encoding="utf-8")
    clear_caches()
    assert code_version("text", script=tokenize) == before[0]
    tokenize.write_text(tokenize.read_text(encoding="utf-8") + "_edited = 1\n", encoding="utf-8")
    clear_caches()
    assert code_version("text", script=tokenize) != before[0]
    assert code_version("text", script=bpe) == before[1]
    with pytest.raises(ValueError, match="no workflow script"):
        code_version("text", script=scripts / "missing.py")
    clear_caches()


def test_the_workflow_profile_leaves_snakemakes_script_trigger_out():
    """Snakemake's own `code` trigger re-runs every job of a script newer than its outputs (all
    of them in a fresh checkout); the `code` params decide instead. Snakemake finds the profile
    at profiles/default beside the Snakefile."""
    from mmt_repro.io import parse_yaml

    profile = parse_yaml((REPO / "profiles" / "default" / "config.yaml").read_text(encoding="utf-8"))
    assert sorted(profile["rerun-triggers"]) == ["input", "mtime", "params", "software-env"]
    assert (REPO / "profiles").resolve() == (REPO / "workflow" / "profiles").resolve()


def test_every_job_kind_has_a_stage_and_a_runner():
    from mmt_repro.execute import RUNNERS

    assert set(JOB_KINDS) <= set(JOB_STAGE) and set(JOB_KINDS) <= set(RUNNERS)
    assert set(JOB_STAGE.values()) <= set(STAGES)


def test_the_plans_param_is_the_jobs_own_models_version(full):
    w = W(paper="emb_pred", system="nmt", dataset="multi30k", pair="fr-en", seed="1")
    param = code_param(full, "train")
    assert callable(param) and param(w) == code_version("train", "emb_pred.nmt", "emb_pred")
    assert code_param(full, "score") == code_version("score")
    # a reverse_of system decodes its forward system's model
    va = full.settings["visual_agreement"]
    bwd = next(name for name, s in va.systems.items() if s.reverse_of)
    assert full.model_of("visual_agreement", bwd) == va.system(va.system(bwd).reverse_of).model
    # a model registered outside the package: the stage's own modules
    assert code_version("train", "my_paper.model") == code_version("train")
