"""Requested targets checked by name before Snakemake builds its DAG.

A target such as ``results/tables/doubly_attentive/table9.tsv`` matches the output template of a
rule, so Snakemake would call the rule's input function, which fails on the unknown table inside
an ``InputFunctionException`` with a traceback. :meth:`TargetPlan.check_targets` reads the names
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
from .paths import PATHS, WILDCARDS

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


class TargetPlan:
    """The requested targets' names, checked against the config and the papers' settings."""

    def check_target_names(self, values: dict) -> None:
        """Raise the unknown-name error of the first unknown paper, table, system, dataset or
        feature set among one template match's wildcard ``values``."""
        if "paper" in values:
            self.paper_config(values["paper"])
            if "table" in values:
                self.table(values["paper"], values["table"])
            if "system" in values:
                self.settings[values["paper"]].system(values["system"])
        if "dataset" in values:
            self.dataset_config(values["dataset"])
        if "feature_set" in values and "dataset" in values:
            base = re.sub(r"\.(std|ctr)$", "", values["feature_set"])
            self.feature_set_config(values["dataset"], base)

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
