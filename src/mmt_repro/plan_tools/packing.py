"""Packed trainings: several small trainings side by side on one GPU allocation (config
``packing``, off by default). Torch-free.

Most trainings of these papers are launch-bound (0.04-5.7 % of an H100's tensor peak,
docs/performance.md): one training leaves the GPU idle most of the time, and several processes
sharing it each step about as fast as alone. A *pack* is one job (a rule ``train_packed_<name>``,
workflow/rules/train.smk) that starts one process per member, each running exactly what a
separate ``train_model`` job runs (:func:`mmt_repro.execute.packed.run_packed`), with its own
log at the path ``train_model`` would write it, and produces the members' outputs (best
checkpoint, curve, job record; ``.last.pt`` beside them) at the same paths: what reads a
checkpoint cannot tell a packed one from a separate one.

A pack is its own rule, not a Snakemake group of ``train_model`` jobs: a group sums its jobs'
``gpu`` resources (three trainings would ask SLURM for three GPUs). Its outputs are named one by
one, so each pack is a rule of its own, made when the workflow is parsed from the config alone
(a SLURM job step re-parses the workflow and must find the same rule): :func:`packs` groups the
trainings of every enabled table (:func:`mmt_repro.plan_tools.walk.training_runs`), whatever
targets a run names, so a pack trains all its members even when a target needs one of them.

Which trainings qualify: those of the papers or systems ``packing.systems`` names (``<paper>``
or ``<paper>.<system>``), never a multi-task run (BertGen's 13-task run: hundreds of GPU-hours
in several attempts, and not launch-bound); ``packing.group``: ``seeds`` packs the seeds of one
system on one dataset and pair, ``paper`` any qualifying trainings of one paper. Trainings that
start from another's checkpoint (``init_from``, back-translation, the alignment-layer choice)
are packed only with trainings at the same depth of that chain, so no pack waits for itself.
Up to ``packing.per_gpu`` members a pack; a training left alone stays a ``train_model`` job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace

from ..config import ConfigError
from ..plan.paths import path
from .walk import ALL_TABLES, training_runs

__all__ = ["Pack", "packing_settings", "packs", "pack_of", "pack_inputs", "pack_members", "pack_priority"]

GROUPS = ("seeds", "paper")
KEY = ("paper", "system", "dataset", "pair", "seed")


@dataclass(frozen=True)
class Pack:
    """Trainings that run side by side in one job: ``members`` are (paper, system, dataset,
    pair, seed) keys in the order their processes start."""

    name: str
    members: tuple[tuple, ...]
    level: int = 0

    @property
    def rule(self) -> str:
        """The rule's name: ``train_packed_`` + the pack's name with every other character as ``_``."""
        return "train_packed_" + re.sub(r"\W", "_", self.name)

    @property
    def log(self) -> str:
        return f"results/logs/train_packed/{self.name}.log"

    @property
    def benchmark(self) -> str:
        return f"results/benchmarks/train_packed/{self.name}.tsv"

    def wildcards(self) -> list[SimpleNamespace]:
        """One namespace per member, as Snakemake's wildcards of its ``train_model`` job."""
        return [SimpleNamespace(**dict(zip(KEY, (*key[:4], str(key[4]))))) for key in self.members]

    def stems(self) -> list[str]:
        return [path("model", **vars(w)) for w in self.wildcards()]

    def outputs(self) -> dict:
        """The members' outputs by name (``m<i>_best``, ``m<i>_curve``, ``m<i>_record``): the
        paths ``train_model`` writes."""
        out = {}
        for i, stem in enumerate(self.stems(), 1):
            out.update({f"m{i}_best": f"{stem}.best.pt", f"m{i}_curve": f"{stem}.curve.tsv",
                        f"m{i}_record": f"{stem}.job.json"})
        return out

    def member_logs(self) -> dict:
        """``m<i>`` -> the member's log, where a separate ``train_model`` job writes it."""
        return {f"m{i}": member_log(w) for i, w in enumerate(self.wildcards(), 1)}


def member_log(w) -> str:
    return f"results/logs/train_model/{w.paper}/{w.system}/{w.dataset}.{w.pair}.seed{w.seed}.log"


def packing_settings(plan) -> dict:
    """The config's ``packing`` block, checked against the plan: ``per_gpu`` (0 or 1: off),
    ``systems`` (papers or ``paper.system`` names), ``group`` (``seeds`` | ``paper``)."""
    block = dict(plan.config.get("packing") or {})
    per_gpu = int(block.get("per_gpu") or 0)
    systems = list(block.get("systems") or [])
    group = block.get("group") or "seeds"
    if group not in GROUPS:
        raise ConfigError(f"packing.group: {group!r} is not one of {', '.join(GROUPS)}")
    for name in systems:
        paper, _, system = str(name).partition(".")
        if paper not in plan.settings:
            raise ConfigError(f"packing.systems: no paper {paper!r} in the config; papers: {', '.join(plan.settings)}")
        if system:
            known = plan.settings[paper].systems
            if system not in known:
                raise ConfigError(f"packing.systems: paper {paper} has no system {system!r}; "
                                  f"its systems: {', '.join(known)}")
            if known[system].tasks:
                raise ConfigError(f"packing.systems: {name} is a multi-task run ({len(known[system].tasks)} extra "
                                  "tasks): it is not small enough to share a GPU; remove it from packing.systems")
    return {"per_gpu": per_gpu, "systems": systems, "group": group}


def _qualifies(plan, systems: list, paper: str, system: str) -> bool:
    if f"{paper}.{system}" not in systems and paper not in systems:
        return False
    return not plan.settings[paper].systems[system].tasks  # a multi-task run never packs


def _levels(deps: dict) -> dict:
    """Key -> its depth in the chain of trainings that start from another's checkpoint (0: from
    none)."""
    done: dict = {}

    def level(key, seen=()):
        if key not in done:
            ups = [d for d in deps.get(key, ()) if d in deps and d not in seen]
            done[key] = 1 + max(level(d, (*seen, key)) for d in ups) if ups else 0
        return done[key]

    for key in deps:
        level(key)
    return done


def packs(plan) -> list[Pack]:
    """The packs of the config (empty when packing is off), made once per plan: the trainings
    every enabled table needs, those that qualify grouped (one system's seeds, or one paper's
    trainings) by depth, and cut in order into packs of ``per_gpu``; a group's last training
    left alone stays a ``train_model`` job."""
    if "_packs" in plan.__dict__:
        return plan.__dict__["_packs"]
    settings = packing_settings(plan)
    out: list[Pack] = []
    if settings["per_gpu"] >= 2 and settings["systems"]:
        runs, deps = training_runs(plan, [ALL_TABLES, *plan.targets.default_targets()])
        keys = [(w.paper, w.system, w.dataset, w.pair, int(w.seed)) for w in runs]
        levels = _levels({k: deps.get(k, set()) for k in keys})
        groups: dict = {}
        for key in sorted(keys):
            if not _qualifies(plan, settings["systems"], key[0], key[1]):
                continue
            head = key[:4] if settings["group"] == "seeds" else key[:1]
            groups.setdefault((head, levels[key]), []).append(key)
        k = settings["per_gpu"]
        counts: dict = {}
        for (head, level), members in sorted(groups.items()):
            for start in range(0, len(members), k):
                chunk = tuple(members[start:start + k])
                if len(chunk) < 2:
                    continue
                if settings["group"] == "seeds":
                    name = f"{'.'.join(head)}.seed{'-'.join(str(m[4]) for m in chunk)}"
                else:
                    counts[head] = counts.get(head, 0) + 1
                    name = f"{head[0]}.pack{counts[head]}"
                out.append(Pack(name=name, members=chunk, level=level))
    plan.__dict__["_packs"] = out
    return out


def pack_of(plan, key: tuple) -> Pack | None:
    """The pack a training (paper, system, dataset, pair, seed) is a member of, or None."""
    key = (*key[:4], int(key[4]))
    return next((p for p in packs(plan) if key in p.members), None)


def pack_inputs(plan, pack: Pack) -> dict:
    """The pack's inputs: each member's (``train_model``'s) by role, as ``m<i>_<role>``, but for
    the files an earlier member names already: a pack of one system's seeds has the inputs of
    each of its members' ``train_model`` jobs, no more."""
    out, seen = {}, set()
    for i, w in enumerate(pack.wildcards(), 1):
        mine = set()
        for role, files in plan.train_jobs.inputs(w).items():
            many = isinstance(files, (list, tuple))
            new = [f for f in (files if many else [files]) if f not in seen]
            mine.update(new)
            if new:
                out[f"m{i}_{role}"] = new if many else new[0]
        seen |= mine
    return out


def pack_members(plan, pack: Pack, train_code) -> list[dict]:
    """The rule's ``members`` param: per member the ``train_model`` job it runs (``job``, the
    job's ``to_dict()``), its code version (``code``: ``train_code``, train_model's `code` param
    as a function of the wildcards) and its log."""
    return [{"job": plan.train_jobs.params(w), "code": train_code(w) if callable(train_code) else train_code,
             "log": member_log(w)} for w in pack.wildcards()]


def pack_priority(plan, pack: Pack) -> int:
    """As ``train_model``'s (:meth:`mmt_repro.plan.build.train.TrainJobs.priority`): -1 when a
    member has begun (left a ``.last.pt``), else -2."""
    return max(plan.train_jobs.priority(w) for w in pack.wildcards())
