"""The analysis job (``execute/analyse.py``): one registered analysis of one run, reading the
attention dump, the translation and reference, or the model itself (the decoding job's inputs,
the split's target text and word alignment), plus the table's own ``files``."""

from __future__ import annotations

from ..commute import analysis_files, is_commute_table
from ..jobs import AnalyseJob
from ..lookup import Lookup
from ..paths import path
from . import JobBuilder
from .translate import TranslateJobs


class AnalyseJobs(JobBuilder):
    def __init__(self, look: Lookup, translate: TranslateJobs):
        super().__init__(look)
        self.translate = translate  # an analysis of the model reads what its decoding reads

    def analysis_table(self, wildcards) -> dict:
        """The (first) enabled analysis table of this paper that names this analysis, preferring
        one on the run's dataset and pair that lists its system (tables may give their own `files`)."""
        tables = [t for paper, _, t in self.look.enabled
                  if paper == wildcards.paper and t.get("kind") == "analysis" and t["analysis"] == wildcards.analysis]
        for t in tables:
            if t["dataset"] == wildcards.dataset and t["pair"] == wildcards.pair and wildcards.system in t["systems"]:
                return t
        for t in tables:
            return t
        raise ValueError(f"no enabled analysis table of {wildcards.paper} names analysis {wildcards.analysis!r}")

    def files(self, wildcards) -> dict:
        """What a registered analysis reads: the attention dump, translation and reference, or the
        model (checkpoint, the split's text on both sides, vocabularies, features, and the split's
        word alignment where the paper has an align stage); plus the table's `files`."""
        look = self.look
        t = self.analysis_table(wildcards)
        values = dict(paper=wildcards.paper, system=wildcards.system, dataset=wildcards.dataset,
                      split=wildcards.split, pair=wildcards.pair, seed=wildcards.seed)
        extra = {k: look.run_path(v, wildcards) for k, v in (t.get("files") or {}).items()}
        kind = t.get("inputs", "attention")
        if is_commute_table(t):  # what decoding reads, CoMMuTE's text and a multimodal system's images
            return {**self.translate.files(wildcards), **extra,
                    **analysis_files(look, wildcards.paper, wildcards.system)}
        if kind == "attention":
            return {"attention": path("attention", **values), **extra}
        if kind == "model":
            inputs = self.translate.files(wildcards)
            system, pair, _ = look.decoded_model(wildcards)
            paper, ds = wildcards.paper, wildcards.dataset
            inputs["tgt"] = look.model_text(paper, ds, pair, wildcards.split, wildcards.pair.split("-")[1])
            if look.settings[paper].align is not None:
                inputs["align"] = look.align_file(paper, ds, pair, wildcards.split)
            return {**inputs, **extra}
        files = {"hyp": path("translation", condition="congruent", **values), "ref": look.reference_text(wildcards),
                 **extra}
        if kind == "translation_train":  # + the target side of the training corpus
            ds, tgt = wildcards.dataset, wildcards.pair.split("-")[1]
            files["train"] = look.reference_file(wildcards.paper, ds, look.dataset_config(ds)["train"], tgt)
        return files

    def build(self, w) -> AnalyseJob:
        values = dict(paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=w.seed)
        return AnalyseJob(
            name=f"{w.paper}.{w.analysis}", input_kind=self.analysis_table(w).get("inputs", "attention"),
            meta=self.look.run_meta(w, "congruent"), imports=list(self.look.settings[w.paper].imports),
            inputs=self.files(w), out=path("analysis", analysis=w.analysis, **values),
            options=dict(self.analysis_table(w).get("options") or {}),
        )
