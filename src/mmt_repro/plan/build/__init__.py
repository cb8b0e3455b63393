"""One job builder per kind of run-level job, one-to-one with :mod:`mmt_repro.execute`'s modules:
``build/train.py`` builds the :class:`~mmt_repro.plan.jobs.TrainJob` that ``execute/train.py``
runs, and so on. Each builder takes the plan's look-ups (:class:`mmt_repro.plan.lookup.Lookup`)
and, where it reads another builder's files, that builder, named in its constructor; where a
job's inputs come from is in its builder's one file. A rule calls ``<builder>.inputs`` and
``<builder>.params`` (both from the same cached job object)."""

from __future__ import annotations

from ..lookup import Lookup

RUN_KEYS = ("paper", "system", "dataset", "split", "pair", "seed", "condition", "analysis", "table")


class JobBuilder:
    """``job(wildcards)`` built once per wildcards; ``inputs`` and ``params`` are the rule's."""

    def __init__(self, look: Lookup):
        self.look = look
        self._cache: dict = {}

    def build(self, wildcards):
        raise NotImplementedError

    def job(self, wildcards):
        key = tuple(str(getattr(wildcards, k, "")) for k in RUN_KEYS)
        if key not in self._cache:
            self._cache[key] = self.build(wildcards)
        return self._cache[key]

    def inputs(self, wildcards) -> dict:
        return self.job(wildcards).files()

    def params(self, wildcards) -> dict:
        return self.job(wildcards).to_dict()
