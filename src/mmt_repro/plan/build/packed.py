"""The packed training job (``execute/packed.py``; config ``packing``): several trainings side by
side on one GPU allocation. A :class:`Pack` names its members (which trainings share a job is
decided by :mod:`mmt_repro.plan_tools.packing`, from the trainings the tables need); the job's
inputs are its members' ``train_model`` inputs, its one param the members' ``train_model`` jobs
with their code versions and logs, and its outputs theirs, at ``train_model``'s paths."""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace

from ..paths import path

KEY = ("paper", "system", "dataset", "pair", "seed")


def member_log(w) -> str:
    """The log of a training, where its ``train_model`` job writes it."""
    return f"results/logs/train_model/{w.paper}/{w.system}/{w.dataset}.{w.pair}.seed{w.seed}.log"


@dataclass(frozen=True)
class Pack:
    """Trainings that run side by side in one job: ``members`` are (paper, system, dataset,
    pair, seed) keys in the order their processes start; ``level``: their depth in the chain of
    trainings that start from another's checkpoint."""

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

    def outputs(self) -> dict:
        """The members' outputs by name (``m<i>_best``, ``m<i>_curve``, ``m<i>_record``): the
        paths ``train_model`` writes."""
        out = {}
        for i, w in enumerate(self.wildcards(), 1):
            stem = path("model", **vars(w))
            out.update({f"m{i}_best": f"{stem}.best.pt", f"m{i}_curve": f"{stem}.curve.tsv",
                        f"m{i}_record": f"{stem}.job.json"})
        return out

    def member_logs(self) -> dict:
        """``m<i>`` -> the member's log, where a separate ``train_model`` job writes it."""
        return {f"m{i}": member_log(w) for i, w in enumerate(self.wildcards(), 1)}


class PackedJobs:
    """The rule ``train_packed_<pack>``'s inputs, param and priority, from its members'
    ``train_model`` jobs (``train_jobs``: :class:`~mmt_repro.plan.build.train.TrainJobs`)."""

    def __init__(self, look, train_jobs):
        self.look = look
        self.train_jobs = train_jobs

    def inputs(self, pack: Pack) -> dict:
        """Each member's inputs by role, as ``m<i>_<role>``, but for the files an earlier member
        names already: a pack of one system's seeds has the inputs of each of its members'
        ``train_model`` jobs, no more."""
        out, seen = {}, set()
        for i, w in enumerate(pack.wildcards(), 1):
            mine = set()
            for role, files in self.train_jobs.inputs(w).items():
                many = isinstance(files, (list, tuple))
                new = [f for f in (files if many else [files]) if f not in seen]
                mine.update(new)
                if new:
                    out[f"m{i}_{role}"] = new if many else new[0]
            seen |= mine
        return out

    def params(self, pack: Pack, train_code) -> list[dict]:
        """The rule's ``members`` param: per member the ``train_model`` job it runs (``job``: the
        job's ``to_dict()``), its code version (``code``: ``train_code``, train_model's `code`
        param, a function of the wildcards or a string) and its log."""
        return [{"job": self.train_jobs.params(w), "code": train_code(w) if callable(train_code) else train_code,
                 "log": member_log(w)} for w in pack.wildcards()]

    def priority(self, pack: Pack) -> int:
        """As ``train_model``'s (:meth:`~mmt_repro.plan.build.train.TrainJobs.priority`): -1 when a
        member has begun (left a ``.last.pt``), else -2."""
        return max(self.train_jobs.priority(w) for w in pack.wildcards())
