"""The preflight: every mistake of a configuration and its requested targets, found in one run
at planning, each with its fix, and no traceback.

``workflow/rules/common.smk`` runs it before Snakemake builds its DAG (dry runs included), and
``python -m mmt_repro check`` runs the same code. It collects, instead of stopping at the first:

- the configuration schema's problems (unknown keys, wrong types: ``config/schema.yaml``);
- every wrong type or unknown key in a paper's ``model_config``, ``train`` and ``decode``
  blocks (:mod:`mmt_repro.plan_tools.typecheck`, torch-free), blamed on the override's key path
  (``papers.<paper>.overrides.systems.<s>.model_config.<key>``) or on the settings file,
  whichever gives it; and each paper's other settings problems (:func:`mmt_repro.settings.load_paper`);
- every unknown paper, table, system, dataset, feature set, baseline or test set, in the tables
  and in the requested targets (:func:`mmt_repro.io.unknown_name`: "did you mean" and the valid
  names);
- every input the requested targets need that its configured source lacks, every request-only
  input not configured (once, with where to ask), and an absent or empty mirror
  (:mod:`mmt_repro.plan_tools.needs`).

A wrong-typed override is left out (and a broken paper or table skipped) so that the rest is
still checked. Torch-free and Snakemake-free.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..config import ConfigError, load_yaml, validate_config
from ..io import DataError, unknown_name
from ..settings import DecodeSettings, TrainConfig, load_paper
from .typecheck import block_problems, dataclass_types, model_config_types

_TRAIN = dataclass_types(TrainConfig, "training config (TrainConfig)")
_DECODE = dataclass_types(DecodeSettings, "decoding settings (DecodeSettings)")
USER_ERRORS = (ConfigError, DataError, ValueError, KeyError, TypeError)


@dataclass
class Preflight:
    """The problems found (messages, each with its fix) and the plan (None when none could be made)."""

    problems: list[str] = field(default_factory=list)
    plan: object = None
    targets: list = field(default_factory=list)
    #: the problems that are missing inputs (a subset of ``problems``): a dry run only warns of them
    missing_inputs: list[str] = field(default_factory=list)

    def add(self, problem, missing_input: bool = False) -> None:
        text = str(problem).strip()
        if isinstance(problem, KeyError):
            text = f"unknown key {text}"
        if text and text not in self.problems:
            self.problems.append(text)
            if missing_input:
                self.missing_inputs.append(text)

    def report(self, prefix: str = "mmt-repro: ") -> str:
        """One problem as before (``mmt-repro: <message>``); several as a numbered list."""
        if len(self.problems) == 1:
            return prefix + self.problems[0]
        lines = [f"{prefix}{len(self.problems)} problems found at planning (nothing has run); fix them and run again:"]
        for i, text in enumerate(self.problems, start=1):
            lines.append(f"  {i}. " + text.replace("\n", "\n     "))
        return "\n".join(lines)


def _schema_problems(config: dict, schema: Path) -> list[str]:
    try:
        validate_config(config, schema)
    except ConfigError as err:
        lines = str(err).splitlines()
        fix = next((ln.strip() for ln in lines if ln.strip().startswith("fix:")), "")
        return [f"{ln.strip()[2:]} ({schema.name})\n  {fix}" for ln in lines if ln.strip().startswith("- ")]
    return []


def _drop(block: dict, keys: list) -> None:
    """Remove the key path ``keys`` from the nested dict ``block``."""
    for key in keys[:-1]:
        block = block.get(key) or {}
    if isinstance(block, dict):
        block.pop(keys[-1], None)


def override_problems(paper: str, raw: dict, overrides: dict, source: str) -> tuple[list[str], list[list]]:
    """(messages, key paths to drop from the overrides) for the wrong types and unknown keys of
    the ``decode``, ``train`` and ``model_config`` blocks of a paper's settings file ``raw`` and
    its ``overrides``; a problem is blamed on the one that gives the key."""
    models = model_config_types()
    messages, drops = [], []
    raw_systems = raw.get("systems") or {}

    def check(values, types, where, keys):
        for msg in block_problems(values, types, where):
            messages.append(msg)
            if keys is not None:
                drops.append([*keys, msg[len(where) + 1:].split(":", 1)[0]])

    for origin, data, where in ((source, raw, f"{source}: "), ("overrides", overrides, f"papers.{paper}.overrides.")):
        keys = [] if origin == "overrides" else None
        check(data.get("decode"), _DECODE, f"{where}decode", None if keys is None else ["decode"])
        systems = data.get("systems") or {}
        if not isinstance(systems, dict):
            continue
        for name, block in systems.items():
            if origin == "overrides" and isinstance(block, dict) and block.get("variant_of") is not None:
                if block["variant_of"] not in raw_systems:
                    messages.append(str(unknown_name("system", block["variant_of"], raw_systems,
                                                     f"papers.{paper}.overrides.systems.{name}.variant_of")))
                    drops.append(["systems", name])
                    continue
                block = {k: v for k, v in block.items() if k != "variant_of"}
                base = raw_systems[systems[name]["variant_of"]]
            elif origin == "overrides" and name not in raw_systems:
                messages.append(str(unknown_name("system", name, raw_systems,
                                                 f"papers.{paper}.overrides.systems (systems in {source})")))
                drops.append(["systems", name])
                continue
            else:
                base = raw_systems.get(name) or {}
            if not isinstance(block, dict):
                continue
            model = block.get("model") or base.get("model")
            at = f"{where}systems.{name}"
            sk = None if keys is None else ["systems", name]
            check(block.get("train"), _TRAIN, f"{at}.train", None if sk is None else [*sk, "train"])
            check(block.get("decode"), _DECODE, f"{at}.decode", None if sk is None else [*sk, "decode"])
            if model in models:
                check(block.get("model_config"), models[model], f"{at}.model_config",
                      None if sk is None else [*sk, "model_config"])
            for pair, over in (block.get("by_pair") or {}).items() if isinstance(block.get("by_pair"), dict) else []:
                over = over or {}
                pk = None if sk is None else [*sk, "by_pair", pair]
                check(over.get("train"), _TRAIN, f"{at}.by_pair.{pair}.train", None if pk is None else [*pk, "train"])
                if model in models:
                    check(over.get("model_config"), models[model], f"{at}.by_pair.{pair}.model_config",
                          None if pk is None else [*pk, "model_config"])
    return messages, drops


def _check_papers(result: Preflight, config: dict, repo: Path) -> set:
    """Type-check and load every paper's settings; returns the papers that cannot be loaded
    (left out of the rest of the check). Wrong-typed overrides are dropped from ``config``."""
    broken = set()
    for paper, block in (config.get("papers") or {}).items():
        settings = Path(block["settings"])
        settings = settings if settings.is_absolute() else repo / settings
        try:
            raw = load_yaml(settings)
        except DataError as err:
            result.add(err)
            broken.add(paper)
            continue
        overrides = block.get("overrides") or {}
        messages, drops = override_problems(paper, raw, overrides, str(block["settings"]))
        for msg in messages:
            result.add(msg)
        for keys in drops:
            _drop(overrides, keys)
        try:
            load_paper(paper, settings, overrides)
        except USER_ERRORS as err:
            if not messages:  # a type error already named is often the cause of this one
                result.add(err)
            broken.add(paper)
    return broken


def preflight(config: dict, repo: str | Path, targets=(), workdir: str | Path | None = None,
              inputs: bool = True) -> Preflight:
    """Check ``config`` (the merged configuration) and the requested ``targets`` (none: what
    ``rule all`` builds) of the workflow in ``repo``; ``workdir``: Snakemake's working
    directory (files already there are not needed again; default: ``repo``); ``inputs``:
    also check the inputs the targets need. Never raises for a user's mistake."""
    from ..plan import Plan

    repo = Path(repo)
    workdir = Path(workdir) if workdir is not None else repo
    config = copy.deepcopy(config)
    result = Preflight()
    for msg in _schema_problems(config, repo / "config" / "schema.yaml"):
        result.add(msg)
    if result.problems:
        return result  # the rest reads keys the schema guarantees
    broken = _check_papers(result, config, repo)
    for paper in broken:
        config["papers"].pop(paper)
    try:
        plan = Plan(config, repo, check_names=False)
    except USER_ERRORS as err:
        result.add(err)
        return result
    broken_tables = set()
    for paper, table, problems in plan.table_name_problems():
        for err in problems:
            result.add(err)
        if problems:
            broken_tables.add((paper, table))
            plan.config["papers"][paper]["tables"][table]["enabled"] = False
    plan.__dict__.pop("enabled", None)
    result.plan = plan
    wanted = [t for t in targets if t != "all"] or (plan.targets.default_targets() if not targets or "all" in targets else [])
    skip = [f"/{p}/" for p in broken] + [f"/{p}/{t}." for p, t in broken_tables]
    wanted = [t for t in wanted if not any(s in f"/{t}" for s in skip)]
    named = {str(t): err for t in wanted for err in plan.targets.target_problems([t])}
    for err in named.values():
        result.add(err)
    result.targets = [t for t in wanted if str(t) not in named]
    if inputs:
        from .needs import NeedsWalk, input_problems, media_problems

        try:
            needs = NeedsWalk(plan, workdir).walk(result.targets)
            for err in needs.problems:
                result.add(err)
            for err in [*input_problems(plan, needs), *media_problems(plan, needs)]:
                result.add(err, missing_input=True)
        except USER_ERRORS as err:
            result.add(err)
    return result


def check_configs(repo: str | Path, configfiles=(), targets=(), workdir=None) -> Preflight:
    """``config/config.yaml`` of ``repo`` with ``configfiles`` merged on top in order (as
    Snakemake's ``--configfile`` does), then :func:`preflight`."""
    from ..config import deep_update

    repo = Path(repo)
    try:
        config = load_yaml(repo / "config" / "config.yaml")
        for f in configfiles:
            config = deep_update(config, load_yaml(f))
    except DataError as err:
        result = Preflight()
        result.add(err)
        return result
    return preflight(config, repo, targets, workdir)


def config_file_of(text: str) -> bool:
    """Whether a command-line word names a config file (not a target)."""
    return bool(re.search(r"\.ya?ml$", text))
