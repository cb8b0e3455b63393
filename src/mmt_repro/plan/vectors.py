"""The inputs of the word-vector stage (embeddings.smk): pretrained word vectors made into fixed
embedding tables (Hirasawa et al. 2019), official or trained here."""

from __future__ import annotations

from ..settings import as_plain
from .lookup import Lookup
from .paths import path

# Tables built in the workflow from pretrained word vectors (the word_vectors block of a paper).
EMBEDDING_TABLES = "results/embeddings/"


class WordVectorInputs:
    def __init__(self, look: Lookup):
        self.look = look

    def settings(self, paper):
        wv = self.look.settings[paper].word_vectors
        if wv is None:
            raise ValueError(f"{paper} has no `word_vectors` block in {self.look.settings[paper].path}")
        return wv

    def used_by(self, paper, system) -> bool:
        """Does the system read a table built from the paper's pretrained word vectors?"""
        return any(str(v).startswith(EMBEDDING_TABLES)
                   for v in self.look.system_settings(paper, system).resources.values())

    def vectors_file(self, wildcards) -> str:
        """The official vectors of the language (a manifest input) or those trained here."""
        wv = self.settings(wildcards.paper)
        if wv.source == "official":
            return f"resources/{wv.input}/{wv.file.format(lang=wildcards.lang)}"
        return path("word_vectors", paper=wildcards.paper, dataset=wildcards.dataset, lang=wildcards.lang)

    def training_text(self, wildcards) -> str:
        """Training text of vectors trained here: the dataset's training split in the paper's chain."""
        ds = wildcards.dataset
        return path("text", dataset=ds, split=self.look.dataset_config(ds)["train"],
                    chain=self.look.recipe(wildcards.paper).chain_for(wildcards.lang), lang=wildcards.lang)

    def training(self, wildcards) -> dict:
        wv = self.settings(wildcards.paper)
        return dict(as_plain(wv.train), dim=wv.dim)

    def table_settings(self, wildcards) -> dict:
        wv = self.settings(wildcards.paper)
        return {"n_components": wv.n_components, "center": wv.center, "normalize": wv.normalize, "dim": wv.dim}

    def table_vocab(self, wildcards) -> str:
        return self.look.vocab_file(wildcards.paper, wildcards.dataset, wildcards.pair, wildcards.lang)

    def reason(self, paper, systems) -> dict:
        """system -> how its rows differ from the paper, for systems reading vectors trained here."""
        wv = self.look.settings[paper].word_vectors
        if wv is None or wv.source != "trained":
            return {}
        reason = (f"word vectors: fastText {wv.train.model} {wv.dim}-d trained here on the training text, "
                  f"not the official {wv.input} vectors")
        return {s: reason for s in systems if self.used_by(paper, s)}
