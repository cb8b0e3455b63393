"""Which training runs a set of targets needs, without Snakemake: a small walk over the part of
the workflow's graph that leads to checkpoints (tables, significance, protocol grids, scores,
translations, attention dumps, analyses, curves, figures, the cross-paper table, back-translated corpora, the
alignment-layer choice and the models themselves). Each path is matched against its template in
``PATHS`` (with the wildcards' patterns) and expanded with the same plan method its rule calls
for its inputs, so the walk finds the training jobs ``snakemake -n`` would schedule. Any other
file (text, vocabularies, features, statistics) is a leaf. Torch-free."""

from __future__ import annotations

import re
from types import SimpleNamespace

from ..plan.paths import PATHS, WILDCARDS

#: Files whose producing rule can (transitively) need a checkpoint: name -> path regex.
_MODEL_SUFFIXES = r"\.(?:best\.pt|curve\.tsv|last\.pt|job\.json)"


def _regex(template: str, tail: str = "") -> re.Pattern:
    out, pos = "", 0
    for m in re.finditer(r"\{(\w+)\}", template):
        out += re.escape(template[pos:m.start()]) + f"(?P<{m.group(1)}>{WILDCARDS.get(m.group(1), '[^/]+')})"
        pos = m.end()
    return re.compile(out + re.escape(template[pos:]) + tail + "$")


_PATTERNS = [
    ("model", _regex(PATHS["model"], _MODEL_SUFFIXES)),
    ("score", _regex(PATHS["score"])),
    ("translation", _regex(PATHS["translation"])),
    ("translation", _regex(PATHS["decode_stats"])),
    ("attention", _regex(PATHS["attention"])),
    ("analysis", _regex(PATHS["analysis"])),
    ("backtranslation", _regex(PATHS["backtranslation"], r"/(?:synthetic\.src|synthetic\.tgt|images\.txt)")),
    ("alignment_layer", _regex(PATHS["alignment_layer"])),
    ("significance", _regex(PATHS["significance"])),
    ("protocols", _regex(PATHS["protocols"])),
    ("protocols", _regex(PATHS["protocols_legend"])),
    ("table", _regex(PATHS["table"])),
    ("cross_paper", _regex(PATHS["cross_paper"])),
    ("cross_paper", _regex(PATHS["cross_paper_legend"])),
    ("figure", re.compile(r"results/figures/(?P<paper>[a-z_]+)/(?P<table>[^/.]+)\.(?P<figure>[a-z_]+)\.(?:png|pdf)$")),
]
ALL_TABLES = "results/tables/all.tsv"


def _flat(value) -> list:
    if isinstance(value, dict):
        return [f for v in value.values() for f in _flat(v)]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _flat(v)]
    return [] if value is None else [str(value)]


class TrainingWalk:
    """``walk(targets)``: the training jobs (wildcards) the targets need, in the order found,
    and for each the training runs it starts from (``deps``: init_from, back-translation)."""

    def __init__(self, plan):
        self.plan = plan
        self.jobs: dict[tuple, SimpleNamespace] = {}  # key -> wildcards of a training run
        self.deps: dict[tuple, set] = {}  # key -> keys of the training runs its inputs need
        self._seen: dict[str, frozenset] = {}
        self.leaves: dict[str, None] = {}  # every other file found (text, features, data, ...), in order

    def walk(self, targets) -> list[SimpleNamespace]:
        for target in targets:
            self._models(str(target))
        return list(self.jobs.values())

    def _inputs(self, kind, w, file) -> list:
        p = self.plan
        if kind == "score":
            return _flat(p.score_jobs.inputs(w))
        if kind == "translation":
            return _flat(p.translate_jobs.inputs(w))
        if kind == "attention":
            return _flat(p.attention_jobs.inputs(w))
        if kind == "analysis":
            return _flat(p.analyse_jobs.inputs(w))
        if kind == "backtranslation":
            return _flat(p.backtranslation_jobs.inputs(w))
        if kind == "alignment_layer":
            return _flat(p.alignment_jobs.layer_selection_inputs(w))
        if kind == "significance":
            return _flat(p.significance_jobs.inputs(w))
        if kind == "protocols":
            return _flat(p.protocol_jobs.inputs(w))
        if kind == "cross_paper":
            return _flat(p.cross_paper_jobs.inputs(w))
        if kind == "table":
            if (w.paper, w.table) not in {(a, b) for a, b, _ in p.enabled}:
                return []
            return _flat(p.curves_jobs.inputs(w) if p.table_kind(w.paper, w.table) == "curves" else p.table_jobs.inputs(w))
        if kind == "figure":
            if w.figure == "attention":
                return [p.figures.attention_dump(w)]
            return [PATHS["table"].format(paper=w.paper, table=w.table)]
        raise AssertionError(kind)

    def _models(self, file: str) -> frozenset:
        """Keys of the first training runs on every path from ``file`` (memoised)."""
        if file in self._seen:
            return self._seen[file]
        self._seen[file] = frozenset()  # a cycle (none expected) ends here
        if file == ALL_TABLES:
            found = frozenset().union(*[self._models(t) for t in self.plan.targets.all_tables()])
            self._seen[file] = found
            return found
        for kind, rx in _PATTERNS:
            m = rx.match(file)
            if m is None:
                continue
            w = SimpleNamespace(**m.groupdict())
            if kind == "model":
                key = (w.paper, w.system, w.dataset, w.pair, int(w.seed))
                if key not in self.jobs:
                    self.jobs[key] = w
                    upstream = [self._models(f) for f in _flat(self.plan.train_jobs.inputs(w))]
                    self.deps[key] = set().union(*upstream) if upstream else set()
                found = frozenset([key])
            else:
                found = frozenset().union(*[self._models(f) for f in self._inputs(kind, w, file)])
            self._seen[file] = found
            return found
        self.leaves[file] = None
        return frozenset()


def training_runs(plan, targets) -> tuple[list, dict]:
    """(wildcards of every training run the targets need, key -> keys of the runs it starts from)."""
    walk = TrainingWalk(plan)
    runs = walk.walk(targets)
    return runs, walk.deps
