"""The training job (``execute/train.py``): the corpus, validation text and vocabularies of one
run, the features it reads, its declared resources and per-example extras (word alignments),
the checkpoint it starts from, the extra tasks of a multi-task system (BertGen's 13) and
whether Yang et al.'s joint model trains its backward direction."""

from __future__ import annotations

from pathlib import Path

from ..commute import is_commute_table
from ..features import feature_shape
from ..jobs import TrainJob
from ..lookup import is_captioning
from ..paths import path, reversed_pair
from . import JobBuilder


class TrainJobs(JobBuilder):
    def build(self, w) -> TrainJob:
        look = self.look
        paper, system, ds, pair = w.paper, w.system, w.dataset, w.pair
        src, tgt = pair.split("-")
        cfg = look.dataset_config(ds)
        train, val = cfg["train"], cfg["val"]
        settings = look.system_settings(paper, system)
        if settings.reverse_of:
            raise ValueError(
                f"{paper}.{system} is the backward direction of {settings.reverse_of} "
                f"(reverse_of): it has no training of its own; train {settings.reverse_of} on {tgt}-{src}"
            )
        if settings.decode_of:
            raise ValueError(f"{paper}.{system} decodes {settings.decode_of}'s checkpoint (decode_of): it has no "
                             f"training of its own; train {settings.decode_of}")
        corpus = settings.corpus
        if corpus == "train":
            train_src, train_tgt = (look.model_text(paper, ds, pair, train, src),
                                    look.model_text(paper, ds, pair, train, tgt))
        elif corpus == "backtranslated":
            stem = path("backtranslation", paper=paper, dataset=ds, pair=pair)
            train_src, train_tgt = f"{stem}/synthetic.src", f"{stem}/synthetic.tgt"
        else:
            train_src, train_tgt = (look.corpus_text(paper, ds, pair, corpus, src),
                                    look.corpus_text(paper, ds, pair, corpus, tgt))
        resources = look.resource_paths(w)
        extras = self.extra_files(paper, system, ds, pair)
        inputs = {
            "train_src": train_src,
            "train_tgt": train_tgt,
            "val_src": look.model_text(paper, ds, pair, val, src),
            "val_tgt": look.model_text(paper, ds, pair, val, tgt),
            "val_ref": look.reference_file(paper, ds, val, tgt),
            "src_vocab": look.vocab_file(paper, ds, pair, src),
            "tgt_vocab": look.vocab_file(paper, ds, pair, tgt),
            **{f"resource_{k}": v for k, v in resources.items()},
            **{f"extra_{k}": v for k, v in extras.items()},
            **self.task_inputs(paper, system),
        }
        if settings.init_from:
            model = path("model", paper=paper, system=settings.init_from, dataset=ds, pair=pair, seed=w.seed)
            inputs["init"] = f"{model}.best.pt"
        # a multimodal system trained once for many tables (train_on) trains on text alone where
        # no table of the paper names features for its dataset (a visual-optional model's MT run)
        feats = None
        if look.multimodal(paper, system):
            feats = look.paper_features(paper, ds, required=not settings.train_on)
        if feats is not None:
            if corpus not in ("train", "backtranslated"):
                raise ValueError(f"{paper}.{system}: corpus {corpus!r} has no images for a multimodal model")
            options = look.system_feature_options(paper, system)
            for split, key in ((train, "train"), (val, "val")):
                for kind, file in look.feature_files(ds, feats, split, options).items():
                    inputs[f"{key}_{kind}"] = file  # train_npy, train_index (+ train_boxes), ...
            if corpus == "backtranslated":
                inputs["train_image_list"] = f"{path('backtranslation', paper=paper, dataset=ds, pair=pair)}/images.txt"
        model_config, train_config = settings.for_pair(pair)
        if feats is not None and "img_dim" in model_config:
            # img_dim is the width of the vectors read, a property of the features, not a choice:
            # a system configured for the paper's features (VATEX I3D 1024, bottom-up regions 2048)
            # reads the grounded checks' own (I3D-R50 2048, torchvision regions 1024) at their width
            dim = feature_shape(feats, look.feature_set_config(ds, feats))[1]
            model_config = {**model_config, "img_dim": dim}
        if model_config.get("backward") == "auto":  # Yang et al.'s joint models
            model_config = {**model_config, "backward": self.backward_read(paper, system, ds, pair, model_config)}
        stem = path("model", paper=paper, system=system, dataset=ds, pair=pair, seed=w.seed)
        return TrainJob(
            paper=paper, system=system, dataset=ds, pair=pair, seed=int(w.seed),
            model=settings.model, model_config=dict(model_config),
            train_config=dict(train_config, seed=int(w.seed)),
            subword=look.target_subword(w), resources=resources, extras=extras,
            imports=list(look.settings[paper].imports), tasks=self.tasks(paper, system), inputs=inputs,
            best=f"{stem}.best.pt", curve=f"{stem}.curve.tsv", last=f"{stem}.last.pt", record=f"{stem}.job.json",
            device=look.device,
        )

    def priority(self, wildcards) -> int:
        """train_model's priority, below every other rule's (Snakemake's default 0): -1 for a
        training that left a ``.last.pt`` (stopped by a signal, a time cap or a session's end), -2
        for one not yet started. Snakemake runs the ready job of highest priority first, so on a
        machine with fewer cores than jobs the short ones (data, text, decoding and scoring of a
        trained model, tables) are not held up behind trainings of hours, and a re-run resumes what
        it had begun before it starts a new training. (Not ranked further by progress: Snakemake
        deletes a failed job's curve, and the .last.pt needs torch to read.) Paths are relative to
        the run folder (Snakemake's working directory)."""
        stem = path("model", paper=wildcards.paper, system=wildcards.system, dataset=wildcards.dataset,
                    pair=wildcards.pair, seed=wildcards.seed)
        return -1 if Path(f"{stem}.last.pt").exists() else -2

    # ------------------------------------------------------------------ Yang et al.'s joint models
    def backward_read(self, paper, system, dataset, pair, model_config) -> bool:
        """Does a planned job read the backward (target -> source) model of ``system``'s run on
        (dataset, pair)? Yes for visual agreement (both directions train against each other), a
        `reverse_of` system in an enabled table of the reversed pair, an analysis table of the run
        (VAD force-decodes both directions; not a CoMMuTE table) and the alignment-block choice on its checkpoint
        (a `layer.<system>` file that a planned run or table reads). ``backward: auto`` becomes
        this answer; adding such a table later changes the training job, which then re-runs."""
        look = self.look
        if model_config.get("agreement", "none") != "none":
            return True
        rev, marker = reversed_pair(pair), f"/layer.{system}.seed"
        tables = [t for p, _, t in look.enabled if p == paper and t["dataset"] == dataset]
        for t in tables:
            if t["pair"] == rev and any(look.system_settings(paper, s).reverse_of == system for s in t["systems"]):
                return True
            if t["pair"] == pair and t.get("kind") == "analysis" and system in t["systems"] and not is_commute_table(t):
                return True  # (CoMMuTE force-decodes the forward direction alone)
            if t["pair"] == pair and any(marker in str(v) for v in (t.get("files") or {}).values()):
                return True
        # a run on (dataset, pair) whose resource is this run's block choice (Transformer agreement)
        here = {s for t in tables if t["pair"] == pair for s in t["systems"]}
        here |= {look.system_settings(paper, s).reverse_of for t in tables if t["pair"] == rev for s in t["systems"]}
        return any(marker in str(v) for s in here if s for v in look.system_settings(paper, s).resources.values())

    # ------------------------------------------------------------------ per-example extras
    def extra_files(self, paper, system, dataset, pair) -> dict:
        """name -> file of every per-example extra the system reads in training (settings.EXTRAS):
        the training split's word alignment (Yang et al.'s hard agreement)."""
        train = self.look.dataset_config(dataset)["train"]
        return {name: self.look.align_file(paper, dataset, pair, train)
                for name in self.look.system_settings(paper, system).extras if name == "align"}

    # ------------------------------------------------------------------ multi-task systems
    def task_files(self, paper, system, name, task) -> dict:
        """Training files of one extra task (``systems.<s>.tasks``; BertGen's 13 tasks): its
        source text (none for captioning), target text (every caption file for captioning sets)
        and, when it takes images, the features of its training split; with ``val``, its
        validation split too (a curve per task)."""
        look = self.look
        ds, pair = task.dataset, task.pair
        split = task.split or look.dataset_config(ds)["train"]
        src, tgt = pair.split("-")
        files = {}
        if not is_captioning(pair):
            files["src"] = look.model_text(paper, ds, pair, split, src)
        if is_captioning(pair) and look.dataset_config(ds).get("captions_per_image"):
            files["tgt"] = look.caption_files(paper, ds, split, tgt)
        else:
            files["tgt"] = [look.model_text(paper, ds, pair, split, tgt)]
        fs = None
        if task.images is not False and look.multimodal(paper, system):
            fs = look.paper_features(paper, ds, required=False)
            if fs is None and (task.images or is_captioning(pair)):
                raise ValueError(f"{paper}.{system} task {name!r}: no table of {paper} on {ds} names its features")
        if fs is not None:
            files.update(look.feature_files(ds, fs, split))
        elif is_captioning(pair):
            raise ValueError(f"{paper}.{system} task {name!r} captions images: it needs images")
        if task.val:
            val = look.dataset_config(ds).get("val") or "valid"
            if not is_captioning(pair):
                files["val_src"] = look.model_text(paper, ds, pair, val, src)
            files["val_ref"] = look.reference_files(paper, ds, val, tgt)
            if "npy" in files:
                for kind, file in look.feature_files(ds, look.paper_features(paper, ds), val).items():
                    files[f"val_{kind}"] = file
        return files

    def tasks(self, paper, system) -> list:
        """The extra tasks as the trainer takes them, with their files."""
        out = []
        for name, task in self.look.system_settings(paper, system).task_settings().items():
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
        for name, task in self.look.system_settings(paper, system).task_settings().items():
            for kind, file in self.task_files(paper, system, name, task).items():
                inputs[f"task_{name}_{kind}"] = file
        return inputs
