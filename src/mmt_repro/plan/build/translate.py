"""The decoding job (``execute/translate.py``): the checkpoint a run decodes (a `reverse_of`
system: its forward system's, backward; a `train_on` system: its one training run's), the
source text and vocabularies in the model's form, the features of the image condition, and
the paper's decode block. ``attention=True`` builds the same job for ``dump_attention``."""

from __future__ import annotations

from ...settings import as_plain
from ..jobs import TranslateJob
from ..lookup import Lookup, is_captioning
from ..paths import path
from ..masking import MASKED, masked_source
from . import JobBuilder


class TranslateJobs(JobBuilder):
    def __init__(self, look: Lookup, attention: bool = False):
        super().__init__(look)
        self.attention = attention

    def files(self, wildcards) -> dict:
        """Checkpoint, source text in the model's form, vocabularies and features of a run; a
        `reverse_of` system reads its forward system's checkpoint, text and vocabularies of the
        reversed pair; a `train_on` system the checkpoint and vocabularies of its one training
        run; a captioning pair (im-<lang>) no source text."""
        look = self.look
        paper, ds = wildcards.paper, wildcards.dataset
        src, tgt = wildcards.pair.split("-")
        condition = getattr(wildcards, "condition", "congruent")
        system, pair, _ = look.decoded_model(wildcards)
        m_ds, m_pair = look.model_location(paper, system, ds, pair)
        checkpoint = look.checkpoint_of(paper, wildcards.system, ds, wildcards.pair, wildcards.seed)
        inputs = {"checkpoint": checkpoint, "tgt_vocab": look.vocab_file(paper, m_ds, m_pair, tgt)}
        if not is_captioning(pair):
            inputs["src"] = look.model_text(paper, ds, pair, wildcards.split, src)
            inputs["src_vocab"] = look.vocab_file(paper, m_ds, m_pair, src)
        if condition in MASKED:  # the source-degradation probe (plan/masking.py): colour words masked
            inputs["src"] = masked_source(look, paper, ds, wildcards.pair, wildcards.split)
        feats = look.run_features(paper, wildcards.system, ds, wildcards.split, condition)
        for kind, file in feats.items():  # features_npy, features_index (+ features_boxes)
            inputs[f"features_{kind}"] = file
        if not look.multimodal(paper, wildcards.system) and condition in ("shuffled", "no_image", "masked_shuffled"):
            raise ValueError(f"{paper}.{wildcards.system} reads no images: no {condition} condition")
        if is_captioning(pair) and not feats:
            raise ValueError(f"{paper}.{system} captions {ds} ({pair}) but has no features there: name them in the table")
        return inputs

    def decode_settings(self, wildcards) -> dict:
        """The paper's decode block with the system's own keys applied (e.g. the back-translation beam)."""
        return as_plain(self.look.settings[wildcards.paper].decode_for(wildcards.system))

    def build(self, w) -> TranslateJob:
        look = self.look
        inputs = self.files(w)
        condition = getattr(w, "condition", "congruent")
        values = dict(paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=w.seed)
        if self.attention:
            out, stats = path("attention", **values), None
        else:
            out = path("translation", condition=condition, **values)
            stats = path("decode_stats", condition=condition, **values)
        shuffle = look.settings[w.paper].scoring.shuffle_seed if condition in ("shuffled", "masked_shuffled") else None
        return TranslateJob(
            paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=int(w.seed),
            condition=condition, checkpoint=inputs["checkpoint"], direction=look.decoded_model(w)[2],
            decode=self.decode_settings(w), subword=look.target_subword(w), shuffle_seed=shuffle,
            inputs=inputs, out=out, stats=stats, device=look.device,
        )
