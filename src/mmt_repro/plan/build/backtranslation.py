"""The back-translation job (``execute/backtranslation.py``, Calixto et al. 2017's M30k_C): the
reverse model's translations of the comparable descriptions, the real target side in the
paper's form, the images each line describes and the pair's BPE codes."""

from __future__ import annotations

from ..jobs import BacktranslationJob
from ..paths import path
from . import JobBuilder


class BacktranslationJobs(JobBuilder):
    def settings(self, paper):
        bt = self.look.settings[paper].backtranslation
        if bt is None:
            raise ValueError(f"{paper} has no `backtranslation` block in {self.look.settings[paper].path}")
        return bt

    def files(self, wildcards) -> dict:
        """The reverse model's translations of the k comparable target files, the real target side
        in the paper's form, the images each line describes, and the BPE codes of the pair."""
        look = self.look
        paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
        src, tgt = pair.split("-")
        bt = self.settings(paper)
        ks = range(1, bt.descriptions + 1)
        return {
            "synthetic": [
                path("translation", paper=paper, system=bt.reverse_system, dataset=ds, split=f"train_c{k}",
                     pair=f"{tgt}-{src}", seed=bt.seed, condition="congruent")
                for k in ks
            ],
            "targets": [look.model_text(paper, ds, pair, f"train_c{k}", tgt) for k in ks],
            "image_lists": [path("image_list", dataset=ds, split=f"train_c{k}") for k in ks],
            "codes": path("bpe_codes", paper=paper, dataset=ds, pair=look.canonical_pair(paper, ds, pair),
                          side=look.bpe_side(paper, src)),
        }

    def build(self, w) -> BacktranslationJob:
        stem = path("backtranslation", paper=w.paper, dataset=w.dataset, pair=w.pair)
        return BacktranslationJob(
            paper=w.paper, dataset=w.dataset, pair=w.pair, inputs=self.files(w), out_src=f"{stem}/synthetic.src",
            out_tgt=f"{stem}/synthetic.tgt", out_images=f"{stem}/images.txt",
        )
