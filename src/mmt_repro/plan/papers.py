"""Mechanisms that only some papers have, each a named part of the plan with its own tests
(tests/unit/test_plan.py): multi-task training (BertGen), word alignment (Yang et al.),
pretrained word vectors (Hirasawa et al.) and back-translation (Calixto et al.)."""

from __future__ import annotations

from ..settings import as_plain
from .base import is_captioning
from .jobs import AlignJob, AlignmentModelJob, BacktranslationJob
from .paths import path

# Tables built in the workflow from pretrained word vectors (the word_vectors block of a paper).
EMBEDDING_TABLES = "results/embeddings/"


class MultitaskPlan:
    """Extra training tasks of a multi-task system (``systems.<s>.tasks``; BertGen's 13 tasks)."""

    def task_files(self, paper, system, name, task) -> dict:
        """Training files of one extra task: its source text (none for captioning), target text
        (every caption file for captioning sets) and, when it takes images, the features of its
        training split; with ``val``, its validation split too (a curve per task)."""
        ds, pair = task.dataset, task.pair
        split = task.split or self.dataset_config(ds)["train"]
        src, tgt = pair.split("-")
        files = {}
        if not is_captioning(pair):
            files["src"] = self.model_text(paper, ds, pair, split, src)
        if is_captioning(pair) and self.dataset_config(ds).get("captions_per_image"):
            files["tgt"] = self.caption_files(paper, ds, split, tgt)
        else:
            files["tgt"] = [self.model_text(paper, ds, pair, split, tgt)]
        fs = None
        if task.images is not False and self.multimodal(paper, system):
            fs = self.paper_features(paper, ds, required=False)
            if fs is None and (task.images or is_captioning(pair)):
                raise ValueError(f"{paper}.{system} task {name!r}: no table of {paper} on {ds} names its features")
        if fs is not None:
            files.update(self.feature_files(ds, fs, split))
        elif is_captioning(pair):
            raise ValueError(f"{paper}.{system} task {name!r} captions images: it needs images")
        if task.val:
            val = self.dataset_config(ds).get("val") or "valid"
            if not is_captioning(pair):
                files["val_src"] = self.model_text(paper, ds, pair, val, src)
            files["val_ref"] = self.reference_files(paper, ds, val, tgt)
            if "npy" in files:
                for kind, file in self.feature_files(ds, self.paper_features(paper, ds), val).items():
                    files[f"val_{kind}"] = file
        return files

    def tasks(self, paper, system) -> list:
        """The extra tasks as the trainer takes them, with their files."""
        out = []
        for name, task in self.system_settings(paper, system).task_settings().items():
            f = self.task_files(paper, system, name, task)
            out.append({
                "name": name,
                "pair": task.pair,
                "src": f.get("src"),
                "tgt": list(f["tgt"]),
                "features": [f["npy"], f["index"]] if "npy" in f else None,
                "val": None if "val_ref" not in f else {
                    "src": f.get("val_src"),
                    "refs": list(f["val_ref"]),
                    "features": [f["val_npy"], f["val_index"]] if "val_npy" in f else None,
                },
            })
        return out

    def task_inputs(self, paper, system) -> dict:
        """``task_<name>_<src|tgt|npy|index|boxes|val_...>`` -> file(s) of every extra task."""
        inputs = {}
        for name, task in self.system_settings(paper, system).task_settings().items():
            for kind, file in self.task_files(paper, system, name, task).items():
                inputs[f"task_{name}_{kind}"] = file
        return inputs


class AlignmentPlan:
    """The word-alignment stage of papers with an ``align`` block (Yang et al. 2020)."""

    def align_file(self, paper, dataset, pair, split) -> str:
        """The symmetrised word alignment of one split."""
        if self.settings[paper].align is None:
            raise ValueError(f"{paper} has no `align` block in {self.settings[paper].path}: no alignment stage")
        return path("align", paper=paper, dataset=dataset, pair=pair, split=split)

    def align_settings(self, wildcards) -> dict:
        settings = self.settings[wildcards.paper].align
        if settings is None:
            raise ValueError(f"{wildcards.paper} has no `align` block in {self.settings[wildcards.paper].path}")
        return as_plain(settings)

    def alignment_text(self, side: str, split=None):
        """The text the align stage reads: the model's text of one side of the pair, of `split`
        (default: the wildcard's split; "train": the dataset's training split)."""

        def get(wildcards):
            ds, pair = wildcards.dataset, wildcards.pair
            lang = pair.split("-")[0 if side == "src" else 1]
            name = wildcards.split if split is None else self.dataset_config(ds)[split]
            return self.model_text(wildcards.paper, ds, pair, name, lang)

        return get

    def alignment_model_job(self, wildcards) -> AlignmentModelJob:
        w = wildcards
        stem = path("align_model", paper=w.paper, dataset=w.dataset, pair=w.pair)
        return AlignmentModelJob(
            paper=w.paper, dataset=w.dataset, pair=w.pair, settings=self.align_settings(w),
            inputs={"src": self.alignment_text("src", "train")(w), "tgt": self.alignment_text("tgt", "train")(w)},
            fwd=f"{stem}.fwd", bwd=f"{stem}.bwd",
        )

    def alignment_model_inputs(self, wildcards) -> dict:
        return self.alignment_model_job(wildcards).files()

    def alignment_model_params(self, wildcards) -> dict:
        return self.alignment_model_job(wildcards).to_dict()

    def align_job(self, wildcards) -> AlignJob:
        w = wildcards
        stem = path("align_model", paper=w.paper, dataset=w.dataset, pair=w.pair)
        return AlignJob(
            paper=w.paper, dataset=w.dataset, pair=w.pair, split=w.split,
            inputs={"fwd": f"{stem}.fwd", "bwd": f"{stem}.bwd", "src": self.alignment_text("src")(w),
                    "tgt": self.alignment_text("tgt")(w)},
            out=self.align_file(w.paper, w.dataset, w.pair, w.split),
        )

    def align_inputs(self, wildcards) -> dict:
        return self.align_job(wildcards).files()

    def align_params(self, wildcards) -> dict:
        return self.align_job(wildcards).to_dict()

    def train_extra_files(self, paper, system, dataset, pair) -> dict:
        """name -> file of every per-example extra the system reads in training (settings.EXTRAS)."""
        train = self.dataset_config(dataset)["train"]
        return {name: self.align_file(paper, dataset, pair, train)
                for name in self.system_settings(paper, system).extras if name == "align"}

    def layer_selection_inputs(self, wildcards) -> dict:
        """The system's checkpoint with the validation split (both sides in the model's form, its
        features and its word alignment): Yang et al.'s choice of the Transformer block."""
        paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
        src, tgt = pair.split("-")
        val = self.dataset_config(ds)["val"]
        model = path("model", paper=paper, system=wildcards.system, dataset=ds, pair=pair, seed=wildcards.seed)
        inputs = {
            "checkpoint": f"{model}.best.pt",
            "src": self.model_text(paper, ds, pair, val, src),
            "tgt": self.model_text(paper, ds, pair, val, tgt),
            "src_vocab": self.vocab_file(paper, ds, pair, src),
            "tgt_vocab": self.vocab_file(paper, ds, pair, tgt),
            "align": self.align_file(paper, ds, pair, val),
        }
        if self.multimodal(paper, wildcards.system):
            for kind, file in self.feature_files(ds, self.paper_features(paper, ds), val).items():
                inputs[f"features_{kind}"] = file
        return inputs


class WordVectorPlan:
    """Pretrained word vectors made into fixed embedding tables (Hirasawa et al. 2019)."""

    def word_vectors(self, paper):
        wv = self.settings[paper].word_vectors
        if wv is None:
            raise ValueError(f"{paper} has no `word_vectors` block in {self.settings[paper].path}")
        return wv

    def uses_word_vectors(self, paper, system) -> bool:
        """Does the system read a table built from the paper's pretrained word vectors?"""
        return any(str(v).startswith(EMBEDDING_TABLES) for v in self.system_settings(paper, system).resources.values())

    def word_vector_file(self, wildcards) -> str:
        """The official vectors of the language (a manifest input) or those trained here."""
        wv = self.word_vectors(wildcards.paper)
        if wv.source == "official":
            return f"resources/{wv.input}/{wv.file.format(lang=wildcards.lang)}"
        return path("word_vectors", paper=wildcards.paper, dataset=wildcards.dataset, lang=wildcards.lang)

    def word_vector_text(self, wildcards) -> str:
        """Training text of vectors trained here: the dataset's training split in the paper's chain."""
        ds = wildcards.dataset
        return path("text", dataset=ds, split=self.dataset_config(ds)["train"],
                    chain=self.recipe(wildcards.paper).chain_for(wildcards.lang), lang=wildcards.lang)

    def word_vector_training(self, wildcards) -> dict:
        wv = self.word_vectors(wildcards.paper)
        return dict(as_plain(wv.train), dim=wv.dim)

    def embedding_table_settings(self, wildcards) -> dict:
        wv = self.word_vectors(wildcards.paper)
        return {"n_components": wv.n_components, "center": wv.center, "normalize": wv.normalize, "dim": wv.dim}

    def embedding_vocab(self, wildcards) -> str:
        return self.vocab_file(wildcards.paper, wildcards.dataset, wildcards.pair, wildcards.lang)

    def word_vector_reason(self, paper, systems) -> dict:
        """system -> why its rows get no delta, for systems reading vectors trained here."""
        wv = self.settings[paper].word_vectors
        if wv is None or wv.source != "trained":
            return {}
        reason = (f"word vectors: fastText {wv.train.model} {wv.dim}-d trained here on the training text, "
                  f"not the official {wv.input} vectors")
        return {s: reason for s in systems if self.uses_word_vectors(paper, s)}


class BacktranslationPlan:
    """Back-translated comparable descriptions (Calixto et al. 2017, M30k_C)."""

    def backtranslation(self, paper):
        bt = self.settings[paper].backtranslation
        if bt is None:
            raise ValueError(f"{paper} has no `backtranslation` block in {self.settings[paper].path}")
        return bt

    def backtranslation_inputs(self, wildcards) -> dict:
        """The reverse model's translations of the k comparable target files, the real target side
        in the paper's form, the images each line describes, and the BPE codes of the pair."""
        paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
        src, tgt = pair.split("-")
        bt = self.backtranslation(paper)
        ks = range(1, bt.descriptions + 1)
        return {
            "synthetic": [
                path("translation", paper=paper, system=bt.reverse_system, dataset=ds, split=f"train_c{k}",
                     pair=f"{tgt}-{src}", seed=bt.seed, condition="congruent")
                for k in ks
            ],
            "targets": [self.model_text(paper, ds, pair, f"train_c{k}", tgt) for k in ks],
            "image_lists": [path("image_list", dataset=ds, split=f"train_c{k}") for k in ks],
            "codes": path("bpe_codes", paper=paper, dataset=ds, pair=self.canonical_pair(paper, ds, pair),
                          side=self.bpe_side(paper, src)),
        }

    def backtranslation_job(self, wildcards) -> BacktranslationJob:
        stem = path("backtranslation", paper=wildcards.paper, dataset=wildcards.dataset, pair=wildcards.pair)
        return BacktranslationJob(
            paper=wildcards.paper, dataset=wildcards.dataset, pair=wildcards.pair,
            inputs=self.backtranslation_inputs(wildcards), out_src=f"{stem}/synthetic.src",
            out_tgt=f"{stem}/synthetic.tgt", out_images=f"{stem}/images.txt",
        )

    def backtranslation_params(self, wildcards) -> dict:
        return self.backtranslation_job(wildcards).to_dict()
