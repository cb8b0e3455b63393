"""The protocol-grid job (``execute/protocols.py``): every translation of a translation table's
runs, the references of its test sets (every caption file of a captioning set) and the runs'
score files, with the protocols that make sense for the table's target language
(:func:`mmt_repro.metrics.protocols.grid_protocols`) and the one of each table metric."""

from __future__ import annotations

from ...metrics.protocols import grid_protocols, table_protocols
from ...settings import as_plain
from ..jobs import ProtocolGridJob
from ..paths import path
from . import JobBuilder


class ProtocolGridJobs(JobBuilder):
    def settings(self) -> dict:
        """The config's ``protocol_grids`` block with its defaults: ``all`` (part of rule all),
        ``meteor`` (METEOR's variants, a JVM start each)."""
        return {"all": True, "meteor": True, **(self.look.config.get("protocol_grids") or {})}

    def build(self, w) -> ProtocolGridJob:
        look = self.look
        paper, table = w.paper, w.table
        if look.table_kind(paper, table) != "translation":
            raise ValueError(f"{paper}/{table} is a table of kind {look.table_kind(paper, table)}: only translation "
                             "tables have a protocol grid")
        t = look.table(paper, table)
        tgt = t["pair"].split("-")[1]
        scoring = as_plain(look.settings[paper].scoring)
        references = {ts: look.reference_files(paper, t["dataset"], ts, tgt) for ts in t["test_sets"]}
        n_refs = max(len(files) for files in references.values())
        meteor = bool(self.settings()["meteor"])
        lowercased = "lc" in look.recipe(paper).chain_for(tgt).split(".")
        protocols = grid_protocols(scoring, tgt, lowercased=lowercased, n_refs=n_refs, meteor=meteor)
        table_metrics = table_protocols(scoring, tgt, n_refs=n_refs, meteor=meteor)
        uses_meteor = any(p.startswith("meteor") for p in [*protocols, *table_metrics.values()])
        translations, scores = {}, {}
        for system, test_set, seed, condition in look.table_runs(paper, table):
            key = f"{system}|{test_set}|{condition}|{seed}"
            translations[key] = look.run_file("translation", paper, table, system, test_set, seed, condition)
            scores[key] = look.run_file("score", paper, table, system, test_set, seed, condition)
        return ProtocolGridJob(
            paper=paper, table=table, pair=t["pair"], lang=tgt,
            protocols=protocols, table_metrics=table_metrics,
            translations=translations, references=references, scores=scores,
            ref_subword="wordpiece" if look.recipe(paper).subword_for(tgt) == "wordpiece" else "none",
            meteor_jar=look.meteor_jar(),
            inputs={"translations": list(translations.values()),
                    "references": sorted({f for files in references.values() for f in files}),
                    "scores": list(scores.values()), **look.meteor_inputs(uses_meteor)},
            out=path("protocols", paper=paper, table=table),
            legend=path("protocols_legend", paper=paper, table=table),
        )
