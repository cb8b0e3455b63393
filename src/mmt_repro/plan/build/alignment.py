"""The word-alignment jobs (``execute/alignment.py``) of papers with an ``align`` block (Yang
et al. 2020): fast_align's two models on the training text (:meth:`AlignmentJobs.model_job`),
each split aligned with them (:meth:`AlignmentJobs.job`), and what the choice of the
Transformer's alignment block reads (:meth:`AlignmentJobs.layer_selection_inputs`)."""

from __future__ import annotations

from ...settings import as_plain
from ..jobs import AlignJob, AlignmentModelJob
from ..paths import path
from . import JobBuilder


class AlignmentJobs(JobBuilder):
    def settings(self, paper) -> dict:
        settings = self.look.settings[paper].align
        if settings is None:
            raise ValueError(f"{paper} has no `align` block in {self.look.settings[paper].path}")
        return as_plain(settings)

    def text(self, wildcards, side: str, split=None) -> str:
        """The text the align stage reads: the model's text of one side of the pair, of `split`
        (default: the wildcard's split; "train": the dataset's training split)."""
        ds, pair = wildcards.dataset, wildcards.pair
        lang = pair.split("-")[0 if side == "src" else 1]
        name = wildcards.split if split is None else self.look.dataset_config(ds)[split]
        return self.look.model_text(wildcards.paper, ds, pair, name, lang)

    # ------------------------------------------------------------------ fast_align's models
    def model_job(self, w) -> AlignmentModelJob:
        stem = path("align_model", paper=w.paper, dataset=w.dataset, pair=w.pair)
        return AlignmentModelJob(
            paper=w.paper, dataset=w.dataset, pair=w.pair, settings=self.settings(w.paper),
            inputs={"src": self.text(w, "src", "train"), "tgt": self.text(w, "tgt", "train")},
            fwd=f"{stem}.fwd", bwd=f"{stem}.bwd",
        )

    def model_inputs(self, wildcards) -> dict:
        return self.model_job(wildcards).files()

    def model_params(self, wildcards) -> dict:
        return self.model_job(wildcards).to_dict()

    # ------------------------------------------------------------------ one split aligned
    def build(self, w) -> AlignJob:
        stem = path("align_model", paper=w.paper, dataset=w.dataset, pair=w.pair)
        return AlignJob(
            paper=w.paper, dataset=w.dataset, pair=w.pair, split=w.split,
            inputs={"fwd": f"{stem}.fwd", "bwd": f"{stem}.bwd", "src": self.text(w, "src"),
                    "tgt": self.text(w, "tgt")},
            out=self.look.align_file(w.paper, w.dataset, w.pair, w.split),
        )

    # ------------------------------------------------------------------ the alignment block's choice
    def layer_selection_inputs(self, wildcards) -> dict:
        """The system's checkpoint with the validation split (both sides in the model's form, its
        features and its word alignment): Yang et al.'s choice of the Transformer block
        (rule select_alignment_layer, a step of the training stage)."""
        look = self.look
        paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
        src, tgt = pair.split("-")
        val = look.dataset_config(ds)["val"]
        model = path("model", paper=paper, system=wildcards.system, dataset=ds, pair=pair, seed=wildcards.seed)
        inputs = {
            "checkpoint": f"{model}.best.pt",
            "src": look.model_text(paper, ds, pair, val, src),
            "tgt": look.model_text(paper, ds, pair, val, tgt),
            "src_vocab": look.vocab_file(paper, ds, pair, src),
            "tgt_vocab": look.vocab_file(paper, ds, pair, tgt),
            "align": look.align_file(paper, ds, pair, val),
        }
        if look.multimodal(paper, wildcards.system):
            for kind, file in look.feature_files(ds, look.paper_features(paper, ds), val).items():
                inputs[f"features_{kind}"] = file
        return inputs
