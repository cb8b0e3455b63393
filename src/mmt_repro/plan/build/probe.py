"""The probe job (``execute/probe.py``): a translation table's image-use probe (its ``probe``
block; docs/probes.md), from the score files of each probed multimodal system under every image
condition and of its text-only counterpart.

A probed system's runs are its table's congruent runs, the shuffled runs (the same derangement
for every system: :meth:`~mmt_repro.plan.build.translate.TranslateJobs.shuffle_seed`), its
no_image runs where it is its own counterpart (a model whose images are optional, in a table
that sets ``no_image``), and one run per blank-image condition of ``probe.blank_images``
(``blank_zero``, ``blank_mean``). Runs the table has already are the same files; the rest exist
for the probe alone. The counterpart's congruent runs are the table's."""

from __future__ import annotations

from ...io import unknown_name
from ..jobs import ProbeJob
from ..paths import path
from . import JobBuilder

#: the figure a probe compares (each paper's scoring block has it)
PROBE_METRIC = "bleu"


class ProbeJobs(JobBuilder):
    def pairs(self, paper: str, table: str) -> dict:
        """Multimodal system -> its text-only counterpart of a table's ``probe.pairs``, checked:
        each key a multimodal system of the table, each value a text-only one, or the key itself
        where the table sets ``no_image`` (its own runs without images)."""
        look = self.look
        t = look.table(paper, table)
        block = t.get("probe")
        where = f"papers.{paper}.tables.{table}.probe.pairs"
        if not block:
            raise ValueError(f"{paper}/{table} has no probe block: no probe table (docs/probes.md)")
        if look.table_kind(paper, table) != "translation":
            raise ValueError(f"{where}: only a translation table has a probe")
        pairs = dict(block["pairs"])
        for system, counterpart in pairs.items():
            for name in (system, counterpart):
                if name not in t["systems"]:
                    raise unknown_name("system", name, t["systems"], f"{where} (the table's systems)")
            if not look.multimodal(paper, system):
                raise ValueError(f"{where}: {system} reads no images: only a multimodal system is probed")
            if counterpart == system and not t.get("no_image"):
                raise ValueError(f"{where}: {system} is its own counterpart, which needs the table's no_image: true")
            if counterpart != system and look.multimodal(paper, counterpart):
                raise ValueError(f"{where}: {system}'s counterpart {counterpart} reads images: name a text-only system")
        return pairs

    def conditions(self, paper: str, table: str) -> list:
        """The probed systems' image conditions, in the probe table's column order."""
        t = self.look.table(paper, table)
        own = any(s == c for s, c in self.pairs(paper, table).items())
        blanks = [f"blank_{mode}" for mode in t["probe"].get("blank_images") or []]
        return ["congruent", "shuffled", *(["no_image"] if own else []), *blanks]

    def runs(self, paper: str, table: str) -> list:
        """(system, test_set, seed, condition) of every run the probe reads."""
        t = self.look.table(paper, table)
        conditions = self.conditions(paper, table)
        runs = []
        for system, counterpart in self.pairs(paper, table).items():
            for test_set in t["test_sets"]:
                for seed in t["seeds"]:
                    own = [c for c in conditions if c != "no_image" or counterpart == system]
                    runs += [(system, test_set, seed, c) for c in own]
                    if counterpart != system:
                        runs.append((counterpart, test_set, seed, "congruent"))
        return list(dict.fromkeys(runs))  # a counterpart shared by several systems once

    def build(self, w) -> ProbeJob:
        look = self.look
        paper, table = w.paper, w.table
        t = look.table(paper, table)
        if PROBE_METRIC not in look.settings[paper].scoring.metrics:
            raise ValueError(f"{paper}/{table}: the probe compares {PROBE_METRIC}, which the paper's scoring block "
                             "does not compute")
        scores = {f"{s}|{ts}|{c}|{seed}": look.run_file("score", paper, table, s, ts, seed, c)
                  for s, ts, seed, c in self.runs(paper, table)}
        return ProbeJob(
            paper=paper, table=table, pair=t["pair"], metric=PROBE_METRIC, pairs=self.pairs(paper, table),
            conditions=self.conditions(paper, table), scores=scores, note=t.get("note", ""),
            inputs={"scores": list(scores.values())}, out=path("probe", paper=paper, table=table),
        )
