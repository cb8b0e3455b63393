"""Requested targets checked by name before Snakemake builds its DAG.

A target such as ``results/tables/doubly_attentive/table9.tsv`` matches the output template of a
rule, so Snakemake would call the rule's input function, which fails on the unknown table inside
an ``InputFunctionException`` with a traceback. :meth:`Targets.check_targets` reads the names
(paper, table, system, dataset, feature set) out of every requested path that matches a template
of :data:`~mmt_repro.plan.paths.PATHS` and raises :func:`mmt_repro.io.unknown_name`'s error for
the first unknown one, which ``workflow/rules/common.smk`` prints without a traceback. A target
matching no template is left to Snakemake (its "no rule to produce" message is clear already).
Torch-free and Snakemake-free.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..io import UnknownNameError
from .lookup import Lookup, pattern
from .paths import PATHS, WILDCARDS, path
from .text import TextInputs

# Templates that name a stem: the rule's files add a suffix or a folder below it.
_STEMS = {"data_dir", "features", "model", "embedding_table", "align_model", "backtranslation"}
_ANY = r"[^/]+?"
# results/data/ also holds the data reports (stats.tsv, stats/, vocab/ and their .html pages):
# not datasets
DATA_REPORTS = {"stats", "vocab"}  # shortest: a table before ".{figure}", a feature set with its ".std"


@lru_cache(maxsize=None)
def _template_regex(name: str) -> re.Pattern:
    parts = re.split(r"\{(\w+)\}", PATHS[name])
    out, seen = [], set()
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(re.escape(part))
        elif part in seen:
            out.append(f"(?P={part})")
        else:
            seen.add(part)
            out.append(f"(?P<{part}>(?:{WILDCARDS.get(part, _ANY)}))")
    if name in _STEMS:
        out.append(r"(?:[./].*)?")
    return re.compile("".join(out))


def template_matches(target: str) -> list[tuple[str, dict]]:
    """Every (template name, wildcard values) of PATHS that ``target`` matches."""
    target = target[2:] if target.startswith("./") else target
    found = []
    for name in PATHS:
        m = _template_regex(name).fullmatch(target)
        if m and not (name == "data_dir" and m.group("dataset") in DATA_REPORTS):
            found.append((name, m.groupdict()))
    return found


class Targets:
    """What ``all`` builds, and the requested targets' names checked against the config and the
    papers' settings."""

    def __init__(self, look: Lookup, text: TextInputs, cross_paper=None):
        self.look = look
        self.text = text  # the text stage's own targets (recipe texts, vocabulary reports)
        self.cross_paper = cross_paper  # the cross-paper table's builder (plan.build.cross_paper)

    # ------------------------------------------------------------------ what `all` builds
    def all_tables(self) -> list:
        return [path("table", paper=p, table=t) for p, t, _ in self.look.enabled]

    def all_protocol_grids(self) -> list:
        """The protocol grid of every enabled translation table (rule protocol_grid)."""
        return [path("protocols", paper=p, table=t) for p, t, table in self.look.enabled
                if table.get("kind", "translation") == "translation"]

    def all_probes(self) -> list:
        """The image-use probe of every enabled translation table with a ``probe`` block (rule
        make_probe_table, docs/probes.md)."""
        return [path("probe", paper=p, table=t) for p, t, table in self.look.enabled
                if table.get("kind", "translation") == "translation" and table.get("probe")]

    def all_cross_paper(self) -> list:
        """The cross-paper table (rule make_cross_paper_table, docs/scoring.md) where the config's
        ``cross_paper`` block plans one (its ``all``, and some row)."""
        return [path("cross_paper")] if self.cross_paper is not None and self.cross_paper.planned() else []

    def default_targets(self) -> list:
        """What ``rule all`` builds: the config's ``targets`` when it names some (an overlay config
        such as config/cpu_multi30k.yaml plans only its own tables), else every table, figure,
        statistic and report of the enabled tables, the image-use probes, the cross-paper table
        and (``protocol_grids.all``, the default) the protocol grid of each translation table."""
        if self.look.config.get("targets"):
            return list(self.look.config["targets"])
        grids = (self.look.config.get("protocol_grids") or {}).get("all", True)
        return ["results/tables/all.tsv", path("stats"), *self.text.vocab_report_targets(),
                *self.text.recipe_targets(), *self.all_figures(), *self.report_pages(), *self.all_probes(),
                *self.all_cross_paper(), *(self.all_protocol_grids() if grids else [])]

    def report_pages(self) -> list:
        """The HTML pages of the Snakemake report (workflow/rules/report.smk): every enabled
        table, all.tsv, the data statistics and each paper's vocabulary report."""
        enabled = self.look.enabled
        pages = [path("table", paper=p, table=n).removesuffix(".tsv") + ".html" for p, n, _ in enabled]
        pages += ["results/tables/all.html", path("stats").removesuffix(".tsv") + ".html"]
        return pages + [t.removesuffix(".tsv") + ".html" for t in self.text.vocab_report_targets()]

    def all_figures(self) -> list:
        """A scores figure per table, the attention figure of tables with a `figure` block, the
        table's own plot, and the learning curves of tables of kind curves."""
        enabled = self.look.enabled
        figs = [path("figure", paper=p, table=n, figure="scores.png") for p, n, _ in enabled]
        figs += [path("figure", paper=p, table=n, figure="attention.png") for p, n, t in enabled if t.get("figure")]
        figs += [path("figure", paper=p, table=n, figure=f"{t['plot']}.png") for p, n, t in enabled if t.get("plot")]
        figs += [path("figure", paper=p, table=n, figure="curves.png") for p, n, t in enabled
                 if t.get("kind") == "curves"]
        return figs

    def tables_of_kind(self, kind) -> str:
        """A wildcard pattern matching the enabled tables of one kind (e.g. curves)."""
        return pattern(table for _, table, t in self.look.enabled if t.get("kind", "translation") == kind)

    # ------------------------------------------------------------------ requested targets' names

    def check_target_names(self, values: dict) -> None:
        """Raise the unknown-name error of the first unknown paper, table, system, dataset or
        feature set among one template match's wildcard ``values``."""
        if "paper" in values:
            self.look.paper_config(values["paper"])
            if "table" in values:
                self.look.table(values["paper"], values["table"])
            if "system" in values:
                self.look.settings[values["paper"]].system(values["system"])
        if "dataset" in values:
            self.look.dataset_config(values["dataset"])
        if "feature_set" in values and "dataset" in values:
            base = re.sub(r"\.(std|ctr)$", "", values["feature_set"])
            self.look.feature_set_config(values["dataset"], base)

    def target_problems(self, targets) -> list[UnknownNameError]:
        """The error of every requested target (paths relative to the working directory; rule
        names and paths outside the templates pass) whose every matching template names an
        unknown name (:class:`~mmt_repro.io.UnknownNameError`), each message once."""
        problems: dict[str, UnknownNameError] = {}
        for target in targets:
            errors = []
            for _, values in template_matches(str(target)):
                try:
                    self.check_target_names(values)
                except UnknownNameError as err:
                    errors.append(err)
                else:
                    errors = []
                    break
            if errors:
                problems.setdefault(str(errors[0]), errors[0])
        return list(problems.values())

    def check_targets(self, targets) -> None:
        """Raise the first of :meth:`target_problems`."""
        problems = self.target_problems(targets)
        if problems:
            raise problems[0]
