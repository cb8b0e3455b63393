"""The scoring job (``execute/score.py``): a run's translation and decoding statistics against
its reference(s) in the scoring form, with every metric of the paper's scoring block; a blank-image
condition (a probe's alone, docs/probes.md) with its BLEU only."""

from __future__ import annotations

from ...settings import as_plain
from ..jobs import ScoreJob
from ..paths import path
from ..masking import MASKED, masked_words_of, unmasked_source, word_list_file
from . import JobBuilder


class ScoreJobs(JobBuilder):
    def build(self, w) -> ScoreJob:
        look = self.look
        values = dict(paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=w.seed,
                      condition=w.condition)
        scoring = as_plain(look.settings[w.paper].scoring)
        if w.condition.startswith("blank_") and "bleu" in scoring["metrics"]:
            scoring["metrics"] = ["bleu"]  # the probe's figure: no METEOR JVM for a probe condition
        inputs = {"hyp": path("translation", **values), "decode_stats": path("decode_stats", **values),
                  "ref": look.reference_text(w)}
        if w.condition in MASKED:  # the probe (plan/masking.py): BLEU and colour accuracy
            words = masked_words_of(look, w.paper, w.dataset, w.pair)
            scoring = dict(scoring, metrics=[m for m in scoring["metrics"] if m == "bleu"], masked_words=words,
                           masked_src_wordpiece=look.recipe(w.paper).subword_for(w.pair.split("-")[0]) == "wordpiece")
            inputs["masked_words"] = word_list_file(w.dataset, w.pair, w.split, words)
            inputs["masked_src"] = unmasked_source(look, w.paper, w.dataset, w.pair, w.split)
        inputs.update(look.meteor_inputs("meteor" in scoring["metrics"]))
        return ScoreJob(
            meta=look.run_meta(w, w.condition), scoring=scoring,
            ref_subword="wordpiece" if look.target_subword(w) == "wordpiece" else "none",
            meteor_jar=look.meteor_jar(), inputs=inputs, out=path("score", **values),
        )
