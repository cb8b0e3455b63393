"""The table job (``execute/table.py``): the score files of every run of a table (or its
analysis results), the published values and the significance tests, with the table's note,
its unavailable rows and how its runs differ from the paper's setting."""

from __future__ import annotations

from ..commute import is_commute_table, pending, pending_rows
from ..jobs import TableJob
from ..lookup import Lookup
from ..paths import path
from ..masking import masked_runs
from ..text import TextInputs
from ..vectors import WordVectorInputs
from . import JobBuilder


class TableJobs(JobBuilder):
    def __init__(self, look: Lookup, vectors: WordVectorInputs, text: TextInputs):
        super().__init__(look)
        self.vectors = vectors  # a row that reads word vectors trained here says so
        self.text = text  # and a row whose vocabulary misses a corpus of the paper's

    def scores(self, paper, table) -> list:
        """Score files of a table: translation scores, or the analysis's per-run results."""
        look = self.look
        t = look.table(paper, table)
        if look.table_kind(paper, table) == "analysis":
            skip = pending(look, paper, t) if is_commute_table(t) else {}  # rows that say what they need
            return [
                path("analysis", paper=paper, system=s, dataset=t["dataset"], split=ts, pair=t["pair"], seed=seed,
                     analysis=t["analysis"])
                for s in t["systems"] if s not in skip for ts in t["test_sets"] for seed in t["seeds"]
            ]
        runs = look.table_runs(paper, table) + masked_runs(look, paper, table)  # + masked_words' runs
        return [look.run_file("score", paper, table, *run) for run in runs]

    def not_comparable(self, paper, table) -> dict:
        """system -> why its rows get no delta: a table marked `comparable: false` (its runs differ
        from the paper's set-up; the table's note says how)."""
        t = self.look.table(paper, table)
        if t.get("comparable", True) is False:
            return {system: "no delta: not the paper's set-up" for system in t["systems"]}
        return {}

    def differences(self, paper, table) -> dict:
        """system -> how its runs differ from the paper's setting, every declared way joined:
        the table's own ``differences`` (system -> reason, or one reason for every system),
        word vectors trained here, and, on real data, a vocabulary learnt without a corpus of
        the paper's (:meth:`TextInputs.vocabulary_scope`). In a comparable table such
        a row gets a delta and a verdict that says so (``within (differs)``), never
        "reproduced"; in a table marked `comparable: false` the note still says it."""
        look = self.look
        t = look.table(paper, table)
        out: dict[str, str] = {}

        def add(system, reason):
            if reason:
                out[system] = "; ".join(x for x in (out.get(system), reason) if x)

        declared = t.get("differences") or {}
        if isinstance(declared, str):
            declared = {system: declared for system in t["systems"]}
        for system in t["systems"]:
            add(system, declared.get(system, ""))
        for system, reason in self.vectors.reason(paper, t["systems"]).items():
            add(system, reason)
        # the vocabulary's scope matters on the paper's data (the grounded sets are our own checks)
        if look.dataset_config(t["dataset"])["source"] not in ("grounded", "grounded_video"):
            for system in t["systems"]:
                m_ds, m_pair = look.model_location(paper, system, t["dataset"], t["pair"])
                add(system, self.text.vocabulary_scope(paper, m_ds, m_pair))
        return out

    def build(self, w) -> TableJob:
        look = self.look
        paper, table = w.paper, w.table
        t = look.table(paper, table)
        inputs = {"scores": self.scores(paper, table), "published": look.published}
        # a paper without significance tests (empty significance_metrics) needs none
        if look.table_kind(paper, table) == "translation" and look.significance_metrics(paper):
            inputs["significance"] = path("significance", paper=paper, table=table)
        return TableJob(paper=paper, table=table, note=t.get("note", ""), unavailable=dict(t.get("unavailable", {})),
                        not_comparable=self.not_comparable(paper, table), inputs=inputs,
                        out=path("table", paper=paper, table=table),
                        differences=self.differences(paper, table),
                        unavailable_rows=pending_rows(look, paper, t) if is_commute_table(t) else [])
