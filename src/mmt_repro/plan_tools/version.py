"""Which code decides a job's output, as a short version string that Snakemake compares (every
rule's ``code`` param): a hash of the source of the modules the rule's *stage* declares
(:data:`STAGES`), with comments, docstrings and layout left out, so that only a change to what
the code does re-runs a job.

A stage declares the modules that decide its outputs, not what its code happens to import: a
training's validation BLEU is part of training, METEOR is not; a training hashes its own
model's module (and the shared layers), not the other papers' models. The tests hold each
stage's declaration against the import closure of its entry modules: every module the closure
reaches is either declared as deciding the output, or named as not deciding it, with the reason
(:data:`NEUTRAL`, ``Stage.not_deciding``), so a new import must be placed before it lands.

Read statically with ``ast`` and ``tokenize``: nothing is imported, torch never."""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import sys
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from mmt_repro.io import atomic_write

PACKAGE = "mmt_repro"
ROOT = Path(__file__).resolve().parents[1]  # src/mmt_repro, the package jobs import
MODELS = f"{PACKAGE}.models"
_REGISTER = re.compile(r"""@register\(\s*["']([^"']+)["']""")


def _m(*names: str) -> tuple[str, ...]:
    return tuple(f"{PACKAGE}.{n}" if n else PACKAGE for n in names)


# Modules that never decide what a job writes: how a job runs (logging, atomic writes, the
# device, the step runner, the job record), the plan that hands it its params (the params are
# compared on their own), and package ``__init__`` files that only re-export or register.
NEUTRAL = frozenset(_m(
    "", "io", "device", "runtime", "config",
    "execute", "execute.record",
    "plan", "plan.jobs", "plan_tools", "plan_tools.version",
    "corpora", "grounded", "datasets", "features", "text", "metrics", "models", "train", "decode", "tables",
    "analyses",
))


@dataclass(frozen=True)
class Stage:
    """One stage of the workflow: the modules its rules call (``entries``), those whose code
    decides its outputs (``decides``, hashed), and those its entries import that do not decide
    them (``not_deciding``: module -> why). ``per_model``: the job's own model module (and the
    model and text modules it imports) decides its output too, with the paper's own data
    modules (:data:`MODEL_CODE`)."""

    entries: tuple[str, ...]
    decides: tuple[str, ...]
    not_deciding: dict[str, str] = field(default_factory=dict)
    per_model: bool = False
    per_paper_analyses: bool = False


_UNROLL = "BertGen's multi-task unrolling: decides BertGen's jobs only (MODEL_CODE)"
_OTHER_METRICS = "lazily imported by metrics.mt for the test-set scores; training validates with BLEU only"
_SEGMENTATION = "text preparation (the text stage); a job here reads its output files"
_BERTGEN_VIEW = ("BertGen's training view (datasets.view imports it for models with unrolled examples) and the "
                 "BertGen model it lays batches out for: BertGen's jobs only (MODEL_CODE)")
_ALIGNMENTS = "word alignments of training pairs (hard agreement): a training input only"
_RESIDENT = "holds a training set's store on the device; decoding and analyses read stores from the host"
_MODEL_SHARED = _m("models.base", "models.registry", "checkpoint")

STAGES: dict[str, Stage] = {
    "fetch": Stage(entries=_m("corpora.fetch"), decides=_m("corpora.fetch", "corpora.manifest")),
    "unpack": Stage(entries=_m("corpora.unpack"), decides=_m("corpora.unpack")),
    "corpora": Stage(
        entries=_m("corpora.multi30k", "corpora.wmt", "corpora.prepare", "corpora.media"),
        decides=_m("corpora.prepare", "corpora.preparers", "corpora.checks", "corpora.captions", "corpora.multi30k", "corpora.iwslt",
                   "corpora.vatex", "corpora.newstest", "corpora.wmt", "corpora.stats", "corpora.archives", "corpora.manifest",
                   "corpora.media", "text.moses"),
    ),
    "grounded": Stage(
        entries=_m("grounded.images", "grounded.agreement", "grounded.video"),
        decides=_m("grounded.images", "grounded.agreement", "grounded.captions", "grounded.video"),
    ),
    "text": Stage(
        entries=_m("text.recipes", "text.bpe", "text.wordpiece", "text.vocab"),
        decides=_m("text.moses", "text.recipes", "text.bpe", "text.wordpiece", "text.zh_segment", "text.vocab"),
    ),
    "embeddings": Stage(entries=_m("text.word_vectors"), decides=_m("text.word_vectors", "text.vocab")),
    "features": Stage(
        entries=_m("features.grid", "features.regions", "features.video", "features.pretrained",
                   "features.constant", "features.standardize"),
        decides=_m("features.store", "features.images", "features.extractors", "features.detectors", "features.grid",
                   "features.regions", "features.video", "features.pretrained", "features.butd",
                   "features.release_files", "features.constant", "features.standardize"),
    ),
    "alignment": Stage(entries=_m("execute.alignment"), decides=_m("execute.alignment", "text.align")),
    "backtranslation": Stage(
        entries=_m("execute.backtranslation"),
        decides=_m("execute.backtranslation", "corpora.backtranslation", "text.bpe"),
    ),
    "train": Stage(
        entries=_m("execute.train"),
        decides=_m("execute.train", "train.trainer", "train.run", "train.schedules", "train.step", "train.graphs", "train.prefetch",
                   "train.resume", "train.task_best", "datasets.view", "datasets.batching", "datasets.alignments",
                   "datasets.resident", "datasets.feature_reads", "features.store",
                   "decode.loop", "decode.search", "metrics.mt", "text.recipes", "text.vocab", "text.bpe",
                   "settings") + _MODEL_SHARED,
        not_deciding={
            f"{PACKAGE}.datasets.bertgen": _BERTGEN_VIEW,
            f"{PACKAGE}.models.bertgen": _BERTGEN_VIEW,
            f"{PACKAGE}.models.bert": _BERTGEN_VIEW,
            f"{PACKAGE}.models.bertgen_convert": _BERTGEN_VIEW,
            f"{PACKAGE}.text.positions": _BERTGEN_VIEW,
            f"{PACKAGE}.datasets.unroll": _UNROLL,
            f"{PACKAGE}.metrics.meteor": _OTHER_METRICS,
            f"{PACKAGE}.metrics.cider": _OTHER_METRICS,
            f"{PACKAGE}.text.moses": _SEGMENTATION,
            f"{PACKAGE}.text.zh_segment": _SEGMENTATION,
            f"{PACKAGE}.text.wordpiece": "merges WordPiece validation output: BertGen's jobs only (MODEL_CODE)",
        },
        per_model=True,
    ),
    # a pack of trainings on one GPU allocation (config `packing`): each member runs its train_model
    # job as it is, and the members' own code versions are the rule's `members` param
    "train_packed": Stage(
        entries=_m("execute.packed"), decides=(),
        not_deciding={f"{PACKAGE}.execute.packed": "starts each member's train_model job, unchanged, in its own "
                                                   "process: the members' code versions decide their outputs"},
    ),
    # a multi-task run's best checkpoint of one task, copied out of the training's folder
    "task_checkpoint": Stage(entries=_m("train.task_best"), decides=_m("train.task_best")),
    "translate": Stage(
        entries=_m("execute.translate"),
        decides=_m("execute.translate", "decode.translate", "decode.loop", "decode.search", "datasets.batching",
                   "datasets.blank", "datasets.feature_reads", "features.store", "text.vocab", "text.recipes", "text.bpe",
                   "settings") + _MODEL_SHARED,
        not_deciding={
            f"{PACKAGE}.datasets.unroll": _UNROLL,
            f"{PACKAGE}.datasets.resident": _RESIDENT,
            f"{PACKAGE}.datasets.alignments": _ALIGNMENTS,
            f"{PACKAGE}.text.moses": _SEGMENTATION,
            f"{PACKAGE}.text.zh_segment": _SEGMENTATION,
            f"{PACKAGE}.text.wordpiece": "merges WordPiece output: BertGen's jobs only (MODEL_CODE)",
        },
        per_model=True,
    ),
    # Yang et al.'s Transformer decoder block that aligns best: an input of the agreement trainings
    "layer_choice": Stage(
        entries=_m("train.alignment_layer"),
        decides=_m("train.alignment_layer", "datasets.batching", "datasets.alignments", "datasets.feature_reads", "features.store",
                   "text.vocab", "models.visual_agreement", "models.visual_agreement_transformer",
                   "models.transformer", "models.layers") + _MODEL_SHARED,
        not_deciding={
            f"{PACKAGE}.datasets.unroll": _UNROLL,
            f"{PACKAGE}.datasets.resident": _RESIDENT,
            f"{PACKAGE}.settings": "imports a paper's extra modules; the choice's settings are its params",
            f"{PACKAGE}.text.bpe": _SEGMENTATION,
            f"{PACKAGE}.text.recipes": _SEGMENTATION,
            f"{PACKAGE}.text.moses": _SEGMENTATION,
            f"{PACKAGE}.text.zh_segment": _SEGMENTATION,
            f"{PACKAGE}.text.wordpiece": _SEGMENTATION,
        },
    ),
    "score": Stage(
        entries=_m("execute.score"),
        decides=_m("execute.score", "metrics.score_files", "metrics.mt", "metrics.meteor", "metrics.cider",
                   "metrics.masked_words", "text.recipes", "text.wordpiece", "text.bpe", "text.moses",
                   "text.zh_segment"),
    ),
    # the source-degradation probe's word lists and masked sources (masking.smk; its scores are the
    # score stage's)
    "masking": Stage(
        entries=_m("corpora.masked_words", "metrics.masked_words"),
        decides=_m("corpora.masked_words", "metrics.masked_words", "grounded.captions"),
        not_deciding={f"{PACKAGE}.text.wordpiece": "merges WordPiece references for the score stage's colour "
                                                   "accuracy; the lists and the masking read whole pieces"},
    ),
    "analyse": Stage(
        entries=_m("execute.analyse", "analyses.run"),
        decides=_m("execute.analyse", "analyses.run", "analyses.registry", "datasets.batching", "datasets.feature_reads",
                   "features.store", "metrics.vad", "metrics.rare_words", "text.vocab", "text.recipes",
                   "text.bpe") + _MODEL_SHARED,
        not_deciding={
            f"{PACKAGE}.datasets.unroll": _UNROLL,
            f"{PACKAGE}.datasets.resident": _RESIDENT,
            f"{PACKAGE}.datasets.alignments": _ALIGNMENTS,
            f"{PACKAGE}.settings": "imports a paper's extra modules; the analysis's settings are its params",
            f"{PACKAGE}.metrics.figures": "figures (the report stage); analyses write numbers",
            f"{PACKAGE}.grounded.video": "the grounded generator's layout, read by DeepFuse's analysis: "
                                              "DeepFuse's analyses only (MODEL_CODE)",
            f"{PACKAGE}.text.moses": _SEGMENTATION,
            f"{PACKAGE}.text.zh_segment": _SEGMENTATION,
            f"{PACKAGE}.text.wordpiece": _SEGMENTATION,
        },
        per_model=True,
        per_paper_analyses=True,
    ),
    "significance": Stage(
        entries=_m("execute.significance"),
        decides=_m("execute.significance", "tables.significance", "metrics.multeval", "metrics.mt",
                   "metrics.meteor", "metrics.cider", "text.recipes", "text.wordpiece", "text.bpe", "text.moses",
                   "text.zh_segment"),
    ),
    # a translation table's protocol grid: the scoring code of every protocol (BLEU, METEOR, the
    # jieba words), the detokeniser and the subword merging it runs
    "protocols": Stage(
        entries=_m("execute.protocols"),
        decides=_m("execute.protocols", "tables.protocols", "metrics.protocols", "metrics.mt", "metrics.meteor",
                   "metrics.zh_words", "text.moses", "text.zh_segment", "text.recipes", "text.wordpiece", "text.bpe"),
        not_deciding={f"{PACKAGE}.metrics.cider": "lazily imported by metrics.mt for CIDEr; no protocol scores CIDEr"},
    ),
    "tables": Stage(entries=_m("execute.table", "tables.build"),
                    decides=_m("execute.table", "tables.build", "tables.masked")),
    # a table's image-use probe (docs/probes.md)
    "probe": Stage(entries=_m("execute.probe", "tables.probe"), decides=_m("execute.probe", "tables.probe")),
    # the cross-paper table: the protocol grid's scoring code, and the probe tables it reads
    "cross_paper": Stage(
        entries=_m("execute.cross_paper", "tables.cross_paper"),
        decides=_m("execute.cross_paper", "tables.cross_paper", "tables.probe", "metrics.protocols", "metrics.mt",
                   "metrics.meteor", "metrics.zh_words", "text.moses", "text.zh_segment", "text.recipes",
                   "text.wordpiece", "text.bpe"),
        not_deciding={f"{PACKAGE}.metrics.cider": "lazily imported by metrics.mt for CIDEr; the table scores no CIDEr"},
    ),
    "curves": Stage(entries=_m("execute.curves"),
                    decides=_m("execute.curves", "tables.curves", "tables.build", "tables.masked")),
    "report": Stage(
        entries=_m("tables.html", "metrics.figures", "metrics.attention_figure"),
        decides=_m("tables.html", "tables.paper_view", "tables.build", "tables.masked", "metrics.figures",
                   "metrics.attention_figure"),
    ),
}

# The job kinds of the plan (plan.jobs) and the stage each belongs to.
JOB_STAGE = {
    "train": "train", "translate": "translate", "attention": "translate", "score": "score",
    "analyse": "analyse", "table": "tables", "significance": "significance", "protocols": "protocols",
    "probe": "probe", "cross_paper": "cross_paper", "curves": "curves",
    "alignment_model": "alignment", "align": "alignment", "backtranslation": "backtranslation",
}

# A paper's own modules outside its model that decide its trainings, decodings and analyses
# (keyed by the model module: a paper whose models live in several modules lists each).
MODEL_CODE = {
    f"{MODELS}.bertgen": _m("datasets.unroll", "datasets.bertgen", "text.positions", "text.wordpiece"),
    f"{MODELS}.deepfuse": (),
}
# analyses that read a data module of their own
ANALYSIS_CODE = {"deepfuse": _m("grounded.video")}


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


def _imports(name: str, file: Path, root: Path) -> set[str]:
    """Package modules that ``name`` imports anywhere in its source (functions included), with
    the parent packages that run first. The models package's ``__init__`` and the analyses'
    runner import every paper's module to register it: those registrations are not followed
    (a job's own model and analyses are added by name)."""
    found = set(_source_imports(name, file))
    parts = name.split(".")
    found.update(".".join(parts[:i]) for i in range(1, len(parts)))
    if name == MODELS:
        found -= set(model_modules(root).values())
    if name in (f"{PACKAGE}.analyses.run",):
        found = {m for m in found if not _is_paper_analysis(m, root)}
    return {m for m in found if _module_file(m, root) is not None}


def _source_imports(name: str, file: Path) -> tuple[str, ...]:
    """The package modules named by the import statements of ``name`` (at ``file``), sorted:
    parsed once per process and file state (:func:`_parsed_imports`), and cached on disk by the
    file's exact bytes like the versions (``<cache>/imports``), since parsing every module of a
    closure costs about a second a workflow parse."""
    st = file.stat()
    return _parsed_imports(name, file, (st.st_mtime_ns, st.st_size))


@lru_cache(maxsize=None)
def _parsed_imports(name: str, file: Path, stamp: tuple[int, int]) -> tuple[str, ...]:  # noqa: ARG001
    source = file.read_bytes()
    key = hashlib.sha256(_normaliser_digest() + b"imports\0" + name.encode() + b"\0" + source).hexdigest()
    known = _cached(key, "imports")
    if known is not None:
        return tuple(known.split()) if known != "-" else ()
    found = tuple(sorted(_parse_imports(name, file.name == "__init__.py", source.decode("utf-8"))))
    _remember(key, " ".join(found) or "-", "imports")
    return found


def _parse_imports(name: str, is_pkg: bool, source: str) -> set[str]:
    tree = ast.parse(source)
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
    return found


def _is_paper_analysis(module: str, root: Path) -> bool:
    return module.startswith(f"{PACKAGE}.analyses.") and module.rsplit(".", 1)[1] not in ("registry", "run")


@lru_cache(maxsize=None)
def closure(entries: tuple[str, ...], root: Path = ROOT) -> tuple[str, ...]:
    """Every package module that the entry modules import, transitively (sorted), the entries
    included (registrations of every paper's model or analysis not followed: :func:`_imports`)."""
    todo, seen = list(entries), set()
    for entry in entries:
        if _module_file(entry, root) is None:
            raise ValueError(f"no module {entry!r} under {root}")
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_imports(name, _module_file(name, root), root) - seen)
    return tuple(sorted(seen))


def _model_part(model: str | None, root: Path) -> tuple[str, ...]:
    """A model's own module, the model and text modules it imports, and its paper's own data
    modules (:data:`MODEL_CODE`); empty for no model or one registered outside the package."""
    module = model_modules(root).get(model) if model else None
    if module is None:
        return ()
    own = {m for m in closure((module,), root) if m.startswith((f"{MODELS}.", f"{PACKAGE}.text."))}
    own.add(module)
    own.update(MODEL_CODE.get(module, ()))
    return tuple(sorted(own))


def stage_modules(stage: str, model: str | None = None, paper: str | None = None,
                  root: Path = ROOT) -> tuple[str, ...]:
    """The modules whose code decides the outputs of ``stage`` (for ``model``'s and
    ``paper``'s jobs where the stage is per model), sorted."""
    spec = STAGES[stage]
    found = set(spec.decides)
    if spec.per_model:
        found.update(_model_part(model, root))
    if spec.per_paper_analyses and paper:
        own = f"{PACKAGE}.analyses.{paper}"
        if _module_file(own, root) is not None:  # the paper's analyses and the models they load
            found.update(m for m in closure((own,), root) if m.startswith(f"{MODELS}."))
            found.add(own)
            found.update(ANALYSIS_CODE.get(paper, ()))
    return tuple(sorted(found))


def unclassified(stage: str, model: str | None = None, paper: str | None = None, root: Path = ROOT) -> set[str]:
    """Modules the stage's entries (and its model and analyses) import that the stage neither
    declares as deciding its output nor names as not deciding it: the tests require none."""
    spec = STAGES[stage]
    entries = spec.entries + _model_part(model, root) if spec.per_model else spec.entries
    own = f"{PACKAGE}.analyses.{paper}"
    if spec.per_paper_analyses and paper and _module_file(own, root) is not None:
        entries = entries + (own,)
    reached = set(closure(tuple(entries), root))
    declared = set(stage_modules(stage, model, paper, root))
    return reached - declared - NEUTRAL - set(spec.not_deciding)


_NO_OUTPUT = {"COMMENT", "NL", "ENCODING", "ENDMARKER"}


@lru_cache(maxsize=None)
def _normalised(file: Path, stamp: tuple[int, int]) -> bytes:  # noqa: ARG001 (stamp: the cache key)
    """The tokens of ``file`` that decide what it does: no comments, no docstrings, no blank
    lines or layout (the indentation's depth is kept, its width is not). f-strings count as one
    string token, as Python 3.11 reads them (3.12 splits them; the hash stays the same)."""
    source = file.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docstrings.add((first.lineno, first.col_offset))
    lines = source.splitlines(keepends=True)
    out, skipping, fstring = [], False, None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        kind = tokenize.tok_name[tok.type]
        if kind == "FSTRING_START":
            fstring = fstring or [tok.start, 0]
            fstring[1] += 1
            continue
        if fstring is not None:
            if kind == "FSTRING_END":
                fstring[1] -= 1
                if fstring[1] == 0:
                    (l0, c0), (l1, c1) = fstring[0], tok.end
                    text = "".join(lines[l0 - 1:l1])[c0: len("".join(lines[l0 - 1:l1 - 1])) + c1]
                    out.append(f"STRING {text}")
                    fstring = None
            continue
        if kind in _NO_OUTPUT:
            continue
        if kind == "STRING" and (tok.start in docstrings or skipping):
            skipping = True
            continue
        if kind == "NEWLINE" and skipping:
            skipping = False
            continue
        skipping = False
        out.append(kind if kind in ("NEWLINE", "INDENT", "DEDENT") else f"{kind} {tok.string}")
    return "\n".join(out).encode()


def source_digest(file: Path) -> bytes:
    """The hash input of one module: its normalised tokens (:func:`_normalised`)."""
    st = file.stat()
    return _normalised(file, (st.st_mtime_ns, st.st_size))


@lru_cache(maxsize=None)
def _hash(modules: tuple[str, ...], root: Path, script: Path | None = None) -> str:
    files = []
    for name in modules:
        file = _module_file(name, root)
        if file is None:
            raise ValueError(f"no module {name!r} under {root}")
        files.append((name, file))
    if script is not None:  # the rule's own script, by its name (where the checkout is decides nothing)
        if not script.is_file():
            raise ValueError(f"no workflow script {script}")
        files.append((f"script {script.name}", script))
    key = _cache_key(files)
    known = _cached(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    for name, file in files:
        digest.update(name.encode() + b"\0")
        digest.update(source_digest(file) + b"\0")
    version = digest.hexdigest()[:12]
    _remember(key, version)
    return version


# --- a cache of versions by the modules' exact bytes --------------------------------------------
# Normalising the sources (tokenize + ast) costs ~2 s a workflow parse, and Snakemake parses the
# workflow once per job on a cluster (twice: the job step and its srun). A version depends only
# on the modules' names and exact bytes and on this normaliser, so it is cached under the hash of
# those, one small file per entry in ``$XDG_CACHE_HOME/mmt-repro/code-versions`` (default
# ``~/.cache``). A changed byte, module or normaliser is a new key: an entry is never stale. An
# unreadable or unwritable cache is skipped; ``MMT_REPRO_CODE_CACHE=off`` turns it off. The
# import lists that the closures are built from are cached the same way, under ``imports/``.

_MODULE_NAME = rf"{PACKAGE}(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_CACHE_FORMAT = {
    "versions": re.compile(r"[0-9a-f]{12}"),
    "imports": re.compile(rf"-|{_MODULE_NAME}(?: {_MODULE_NAME})*"),  # "-": no package import
}


def _cache_dir() -> Path | None:
    setting = os.environ.get("MMT_REPRO_CODE_CACHE", "")
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mmt-repro" / "code-versions"


@lru_cache(maxsize=1)
def _normaliser_digest() -> bytes:
    return hashlib.sha256(Path(__file__).read_bytes() + repr(sys.version_info[:2]).encode()).digest()


def _cache_key(files: list[tuple[str, Path]]) -> str:
    key = hashlib.sha256(_normaliser_digest())
    for name, file in files:
        key.update(name.encode() + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return key.hexdigest()


def _entry(key: str, kind: str) -> Path | None:
    folder = _cache_dir()
    if folder is None:
        return None
    return (folder if kind == "versions" else folder / kind) / key[:2] / key


def _cached(key: str, kind: str = "versions") -> str | None:
    entry = _entry(key, kind)
    if entry is None:
        return None
    try:
        text = entry.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if _CACHE_FORMAT[kind].fullmatch(text) else None


def _remember(key: str, version: str, kind: str = "versions") -> None:
    entry = _entry(key, kind)
    if entry is None:
        return
    try:
        with atomic_write(entry, encoding="ascii") as fh:  # concurrent jobs write the same text
            fh.write(version + "\n")
    except OSError:
        return


def code_version(stage: str, model: str | None = None, paper: str | None = None, root: Path = ROOT,
                 script: Path | None = None) -> str:
    """``<stage>:<12 hex digits>``: the hash of the modules that decide the stage's outputs
    (:func:`stage_modules`) and of the rule's ``script`` (workflow/scripts/<name>.py, the thin
    adapter that calls them) where one is given. A model registered outside the package (a
    paper's ``imports``) adds nothing: its module is the paper's to version."""
    return f"{stage}:{_hash(stage_modules(stage, model, paper, root), root, script)}"


def code_param(plan, stage: str, script: Path | None = None):
    """The ``code`` param of a rule of ``stage`` that runs ``script`` in ``plan`` (a
    ``mmt_repro.plan.Plan``): a string, or for a stage whose output its model decides (training,
    decoding, analyses) a function of the job's wildcards. Snakemake's own code trigger is off
    (the workflow profile): it re-runs a script's jobs whenever the file is newer than their
    outputs, so a fresh checkout re-ran every job."""
    if not STAGES[stage].per_model:
        return code_version(stage, script=script)
    return lambda wildcards: job_code_version(plan, stage, wildcards.paper, wildcards.system, script)


def job_code_version(plan, stage: str, paper: str, system: str, script: Path | None = None) -> str:
    """The code version of a job of ``paper``'s ``system`` in ``stage`` (its model from the plan)."""
    return code_version(stage, plan.model_of(paper, system), paper, script=script)


def clear_caches() -> None:
    """Forget every hash (tests that edit a copy of the source)."""
    for fn in (_hash, _normalised, _parsed_imports, closure, model_modules):
        fn.cache_clear()
