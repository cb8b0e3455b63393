"""The decoding job (``execute/translate.py``): the checkpoint a run decodes (a `reverse_of`
system: its forward system's, backward; a `train_on` system: its one training run's), the
source text and vocabularies in the model's form, the features of the image condition, and
the paper's decode block. ``attention=True`` builds the same job for ``dump_attention``.

The image conditions (docs/probes.md): ``congruent``; ``shuffled``, every image deranged across
the test set with the one seed of every paper (:meth:`TranslateJobs.shuffle_seed`), so that every
system decoding a test set sees the same permutation; ``no_image``; ``blank_zero`` and
``blank_mean`` (the average image of the training split's store of the same feature set, an input
of the job: ``mean_npy``, ``mean_index``, ``mean_boxes``)."""

from __future__ import annotations

from ...config import ConfigError
from ...settings import as_plain
from ..jobs import TranslateJob
from ..lookup import Lookup, is_captioning
from ..paths import path
from ..masking import MASKED, masked_source
from . import JobBuilder

#: the shuffled condition's seed where the config sets no ``shuffle_seed``
SHUFFLE_SEED = 1234


class TranslateJobs(JobBuilder):
    def __init__(self, look: Lookup, attention: bool = False):
        super().__init__(look)
        self.attention = attention
        for paper in sorted({p for p, _, t in look.enabled if t.get("shuffled_images") or t.get("probe")}):
            self.shuffle_seed(paper)  # a paper at odds with the one seed stops planning at once

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
        if not look.multimodal(paper, wildcards.system) and condition not in ("congruent", "masked"):
            raise ValueError(f"{paper}.{wildcards.system} reads no images: no {condition} condition")
        if condition == "blank_mean":  # the average image of the training split (datasets.blank)
            train = look.dataset_config(ds).get("train", "train")
            for kind, file in look.run_features(paper, wildcards.system, ds, train).items():
                inputs[f"mean_{kind}"] = file
        if is_captioning(pair) and not feats:
            raise ValueError(f"{paper}.{system} captions {ds} ({pair}) but has no features there: name them in the table")
        return inputs

    def decode_settings(self, wildcards) -> dict:
        """The paper's decode block with the system's own keys applied (e.g. the back-translation beam)."""
        return as_plain(self.look.settings[wildcards.paper].decode_for(wildcards.system))

    def shuffle_seed(self, paper: str) -> int:
        """The seed of the shuffled condition: the config's ``shuffle_seed`` (default
        :data:`SHUFFLE_SEED`) for every paper, so that every system of every paper decoding the
        same test set sees the same derangement (``datasets.batching.derangement(n, seed)``); a
        paper's ``scoring.shuffle_seed`` that says otherwise is an error."""
        seed = int(self.look.config.get("shuffle_seed", SHUFFLE_SEED))
        own = self.look.settings[paper].scoring.shuffle_seed
        if own != seed:
            raise ConfigError(f"{paper}: scoring.shuffle_seed is {own} ({self.look.settings[paper].path} and its "
                              f"overrides), but every paper's shuffled images use the config's shuffle_seed {seed}, "
                              f"one derangement for every system: set papers.{paper}.overrides.scoring.shuffle_seed "
                              f"to {seed}, or the config's shuffle_seed to {own} (then every paper's)")
        return seed

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
        shuffle = self.shuffle_seed(w.paper) if condition in ("shuffled", "masked_shuffled") else None
        return TranslateJob(
            paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=int(w.seed),
            condition=condition, checkpoint=inputs["checkpoint"], direction=look.decoded_model(w)[2],
            decode=self.decode_settings(w), subword=look.target_subword(w), shuffle_seed=shuffle,
            inputs=inputs, out=out, stats=stats, device=look.device,
        )
