"""The significance job (``execute/significance.py``): every translation of a table's runs and
the references of its test sets, tested pairwise against the table's baseline(s)."""

from __future__ import annotations

from ...settings import as_plain
from ..jobs import SignificanceJob
from ..paths import path
from . import JobBuilder


class SignificanceJobs(JobBuilder):
    def translation_map(self, wildcards) -> dict:
        """``"system|test_set|condition|seed"`` -> translation file, for every run of the table."""
        look = self.look
        return {
            f"{system}|{test_set}|{condition}|{seed}": look.run_file(
                "translation", wildcards.paper, wildcards.table, system, test_set, seed, condition)
            for system, test_set, seed, condition in look.table_runs(wildcards.paper, wildcards.table)
        }

    def reference_map(self, wildcards) -> dict:
        """test set -> its reference file in the scoring form."""
        t = self.look.table_config(wildcards)
        tgt = t["pair"].split("-")[1]
        return {ts: self.look.reference_file(wildcards.paper, t["dataset"], ts, tgt) for ts in t["test_sets"]}

    def baseline(self, wildcards):
        """One baseline system, or a map system -> baseline (as a plain dict for the script)."""
        t = self.look.table_config(wildcards)
        baseline = t.get("baseline", t["systems"][0])
        return dict(baseline) if isinstance(baseline, dict) else baseline

    def build(self, w) -> SignificanceJob:
        look = self.look
        paper, table = w.paper, w.table
        t = look.table_config(w)
        tgt = t["pair"].split("-")[1]
        translations = self.translation_map(w)
        references = self.reference_map(w)
        scoring = look.settings[paper].scoring
        return SignificanceJob(
            paper=paper, table=table, translations=translations, references=references,
            baseline=self.baseline(w), pair=t["pair"], metrics=look.significance_metrics(paper),
            scoring=as_plain(scoring),
            lang=scoring.meteor_lang or tgt,  # METEOR's language: the scoring block's, else the target
            meteor_jar=look.meteor_jar(),
            ref_subword="wordpiece" if look.recipe(paper).subword_for(tgt) == "wordpiece" else "none",
            inputs={"translations": sorted(translations.values()), "references": sorted(references.values()),
                    **look.meteor_inputs("meteor" in look.significance_metrics(paper))},
            out=path("significance", paper=paper, table=table),
        )
