"""The scoring job (``execute/score.py``): a run's translation and decoding statistics against
its reference(s) in the scoring form, with every metric of the paper's scoring block; a blank-image
condition (a probe's alone, docs/probes.md) with its BLEU only."""

from __future__ import annotations

from ...settings import as_plain
from ..jobs import ScoreJob
from ..paths import path
from . import JobBuilder


class ScoreJobs(JobBuilder):
    def build(self, w) -> ScoreJob:
        look = self.look
        values = dict(paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=w.seed,
                      condition=w.condition)
        scoring = as_plain(look.settings[w.paper].scoring)
        if w.condition.startswith("blank_") and "bleu" in scoring["metrics"]:
            scoring["metrics"] = ["bleu"]  # the probe's figure: no METEOR JVM for a probe condition
        return ScoreJob(
            meta=look.run_meta(w, w.condition), scoring=scoring,
            ref_subword="wordpiece" if look.target_subword(w) == "wordpiece" else "none",
            meteor_jar=look.config_path("tools", "meteor_jar"),
            inputs={"hyp": path("translation", **values), "decode_stats": path("decode_stats", **values),
                    "ref": look.reference_text(w)},
            out=path("score", **values),
        )
