"""The run-level jobs of the plan: training, decoding, scoring and analyses, each built once per
wildcards as a job object (mmt_repro.plan.jobs) whose ``files()`` are the rule's inputs and
whose ``to_dict()`` is the rule's single ``job`` param."""

from __future__ import annotations

from pathlib import Path

from ..settings import as_plain
from .base import is_captioning
from .jobs import AnalyseJob, ScoreJob, TrainJob, TranslateJob
from .paths import path, reversed_pair

RUN_KEYS = ("paper", "system", "dataset", "split", "pair", "seed", "condition", "analysis")


def _key(kind, wildcards):
    return (kind, *(str(getattr(wildcards, k, "")) for k in RUN_KEYS))


class RunPlan:
    def _cached(self, kind, wildcards, build):
        cache = self.__dict__.setdefault("_job_cache", {})
        key = _key(kind, wildcards)
        if key not in cache:
            cache[key] = build(wildcards)
        return cache[key]

    # ------------------------------------------------------------------ which checkpoint
    def model_location(self, paper, system, dataset, pair):
        """(dataset, pair) of the training run whose checkpoint decodes ``system`` on ``dataset``
        and ``pair``: the system's ``train_on`` (one model for every table: multi-task and
        zero-shot systems, which need a joint vocabulary), else the table's own."""
        on = self.system_settings(paper, system).train_on
        if not on:
            return dataset, pair
        if not self.recipe(paper).joint_vocab:
            raise ValueError(
                f"{paper}.{system} decodes every table with the model trained on {on}: its recipe needs "
                "joint_vocab: true (one vocabulary for every language)"
            )
        return on["dataset"], on["pair"]

    def decoded_model(self, wildcards):
        """(system, pair, direction) of the checkpoint a run decodes: the system's own, or for a
        `reverse_of` system its forward system's checkpoint of the reversed pair, backward."""
        settings = self.system_settings(wildcards.paper, wildcards.system)
        if settings.reverse_of:
            return settings.reverse_of, reversed_pair(wildcards.pair), "backward"
        if settings.decode_of:
            return settings.decode_of, wildcards.pair, "forward"
        return wildcards.system, wildcards.pair, "forward"

    def model_of(self, paper: str, system: str) -> str:
        """The registry key of the model that ``system``'s runs train or decode (a `reverse_of`
        or `decode_of` system decodes another system's model)."""
        settings = self.system_settings(paper, system)
        own = settings.reverse_of or settings.decode_of
        return self.system_settings(paper, own).model if own else settings.model

    def checkpoint_of(self, paper, system, dataset, pair, seed) -> str:
        """The best checkpoint that a run of ``system`` on (dataset, pair) decodes."""
        settings = self.system_settings(paper, system)
        if settings.reverse_of:
            system, pair = settings.reverse_of, reversed_pair(pair)
        elif settings.decode_of:
            system = settings.decode_of
        m_ds, m_pair = self.model_location(paper, system, dataset, pair)
        model = path("model", paper=paper, system=system, dataset=m_ds, pair=m_pair, seed=seed)
        task = self.best_task(paper, system, dataset, pair) if (m_ds, m_pair) != (dataset, pair) else None
        return f"{model}.best.{task}.pt" if task else f"{model}.best.pt"

    def best_task(self, paper, system, dataset, pair) -> str | None:
        """The extra task on (dataset, pair) whose own best checkpoint decodes it: a system trained
        elsewhere (train_on) with `best_per_task: true` and one task there with `val: true`
        (BertGen's Table 5, mmt_repro.train.task_best); None: the run's best checkpoint."""
        settings = self.system_settings(paper, system)
        if not settings.train.get("best_per_task"):
            return None
        tasks = [name for name, task in settings.task_settings().items()
                 if task.dataset == dataset and task.pair == pair and task.val]
        if len(tasks) > 1:
            raise ValueError(f"{paper}.{system}: tasks {tasks} all validate on {dataset} {pair}; best_per_task "
                             "needs one task with `val: true` per dataset and pair")
        return tasks[0] if tasks else None

    def run_features(self, paper, system, dataset, split, condition="congruent") -> dict:
        """Feature files (npy, index, boxes) a run gives the model: none for text-only systems
        and the no-image condition; a system trained elsewhere (``train_on``) runs text-only on a
        dataset where no table of the paper names features (e.g. BertGen on IWSLT)."""
        if not self.multimodal(paper, system) or condition == "no_image":
            return {}
        fs = self.paper_features(paper, dataset, required=not self.system_settings(paper, system).train_on)
        options = self.system_feature_options(paper, system)
        return {} if fs is None else self.feature_files(dataset, fs, split, options)

    def resource_paths(self, wildcards) -> dict:
        """name -> file of every resource the system declares, the run's placeholders filled in."""
        settings = self.system_settings(wildcards.paper, wildcards.system)
        return {name: self.run_path(value, wildcards) for name, value in settings.resources.items()}

    # ------------------------------------------------------------------ training
    def train_job(self, wildcards) -> TrainJob:
        return self._cached("train", wildcards, self._train_job)

    def _train_job(self, w) -> TrainJob:
        paper, system, ds, pair = w.paper, w.system, w.dataset, w.pair
        src, tgt = pair.split("-")
        cfg = self.dataset_config(ds)
        train, val = cfg["train"], cfg["val"]
        settings = self.system_settings(paper, system)
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
            train_src, train_tgt = (self.model_text(paper, ds, pair, train, src),
                                    self.model_text(paper, ds, pair, train, tgt))
        elif corpus == "backtranslated":
            stem = path("backtranslation", paper=paper, dataset=ds, pair=pair)
            train_src, train_tgt = f"{stem}/synthetic.src", f"{stem}/synthetic.tgt"
        else:
            train_src, train_tgt = (self.corpus_text(paper, ds, pair, corpus, src),
                                    self.corpus_text(paper, ds, pair, corpus, tgt))
        resources = self.resource_paths(w)
        extras = self.train_extra_files(paper, system, ds, pair)
        inputs = {
            "train_src": train_src,
            "train_tgt": train_tgt,
            "val_src": self.model_text(paper, ds, pair, val, src),
            "val_tgt": self.model_text(paper, ds, pair, val, tgt),
            "val_ref": self.reference_file(paper, ds, val, tgt),
            "src_vocab": self.vocab_file(paper, ds, pair, src),
            "tgt_vocab": self.vocab_file(paper, ds, pair, tgt),
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
        if self.multimodal(paper, system):
            feats = self.paper_features(paper, ds, required=not settings.train_on)
        if feats is not None:
            if corpus not in ("train", "backtranslated"):
                raise ValueError(f"{paper}.{system}: corpus {corpus!r} has no images for a multimodal model")
            options = self.system_feature_options(paper, system)
            for split, key in ((train, "train"), (val, "val")):
                for kind, file in self.feature_files(ds, feats, split, options).items():
                    inputs[f"{key}_{kind}"] = file  # train_npy, train_index (+ train_boxes), ...
            if corpus == "backtranslated":
                inputs["train_image_list"] = f"{path('backtranslation', paper=paper, dataset=ds, pair=pair)}/images.txt"
        model_config, train_config = settings.for_pair(pair)
        if model_config.get("backward") == "auto":  # Yang et al.'s joint models
            model_config = {**model_config, "backward": self.backward_read(paper, system, ds, pair, model_config)}
        stem = path("model", paper=paper, system=system, dataset=ds, pair=pair, seed=w.seed)
        return TrainJob(
            paper=paper, system=system, dataset=ds, pair=pair, seed=int(w.seed),
            model=settings.model, model_config=dict(model_config),
            train_config=dict(train_config, seed=int(w.seed)),
            subword=self.target_subword(w), resources=resources, extras=extras,
            imports=list(self.settings[paper].imports), tasks=self.tasks(paper, system), inputs=inputs,
            best=f"{stem}.best.pt", curve=f"{stem}.curve.tsv", last=f"{stem}.last.pt", record=f"{stem}.job.json",
            device=self.device,
        )

    def backward_read(self, paper, system, dataset, pair, model_config) -> bool:
        """Does a planned job read the backward (target -> source) model of ``system``'s run on
        (dataset, pair)? Yes for visual agreement (both directions train against each other), a
        `reverse_of` system in an enabled table of the reversed pair, an analysis table of the run
        (VAD force-decodes both directions) and the alignment-block choice on its checkpoint
        (a `layer.<system>` file that a planned run or table reads). ``backward: auto`` becomes
        this answer; adding such a table later changes the training job, which then re-runs."""
        if model_config.get("agreement", "none") != "none":
            return True
        rev, marker = reversed_pair(pair), f"/layer.{system}.seed"
        tables = [t for p, _, t in self.enabled if p == paper and t["dataset"] == dataset]
        for t in tables:
            if t["pair"] == rev and any(self.system_settings(paper, s).reverse_of == system for s in t["systems"]):
                return True
            if t["pair"] == pair and t.get("kind") == "analysis" and system in t["systems"]:
                return True
            if t["pair"] == pair and any(marker in str(v) for v in (t.get("files") or {}).values()):
                return True
        # a run on (dataset, pair) whose resource is this run's block choice (Transformer agreement)
        here = {s for t in tables if t["pair"] == pair for s in t["systems"]}
        here |= {self.system_settings(paper, s).reverse_of for t in tables if t["pair"] == rev for s in t["systems"]}
        return any(marker in str(v) for s in here if s for v in self.system_settings(paper, s).resources.values())

    def train_inputs(self, wildcards) -> dict:
        return self.train_job(wildcards).files()

    def train_params(self, wildcards) -> dict:
        return self.train_job(wildcards).to_dict()

    def train_priority(self, wildcards) -> int:
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

    # ------------------------------------------------------------------ decoding
    def decode_settings(self, wildcards) -> dict:
        """The paper's decode block with the system's own keys applied (e.g. the back-translation beam)."""
        return as_plain(self.settings[wildcards.paper].decode_for(wildcards.system))

    def translate_files(self, wildcards) -> dict:
        """Checkpoint, source text in the model's form, vocabularies and features of a run; a
        `reverse_of` system reads its forward system's checkpoint, text and vocabularies of the
        reversed pair; a `train_on` system the checkpoint and vocabularies of its one training
        run; a captioning pair (im-<lang>) no source text."""
        paper, ds = wildcards.paper, wildcards.dataset
        src, tgt = wildcards.pair.split("-")
        condition = getattr(wildcards, "condition", "congruent")
        system, pair, _ = self.decoded_model(wildcards)
        m_ds, m_pair = self.model_location(paper, system, ds, pair)
        checkpoint = self.checkpoint_of(paper, wildcards.system, ds, wildcards.pair, wildcards.seed)
        inputs = {"checkpoint": checkpoint, "tgt_vocab": self.vocab_file(paper, m_ds, m_pair, tgt)}
        if not is_captioning(pair):
            inputs["src"] = self.model_text(paper, ds, pair, wildcards.split, src)
            inputs["src_vocab"] = self.vocab_file(paper, m_ds, m_pair, src)
        feats = self.run_features(paper, wildcards.system, ds, wildcards.split, condition)
        for kind, file in feats.items():  # features_npy, features_index (+ features_boxes)
            inputs[f"features_{kind}"] = file
        if not self.multimodal(paper, wildcards.system) and condition in ("shuffled", "no_image"):
            raise ValueError(f"{paper}.{wildcards.system} reads no images: no {condition} condition")
        if is_captioning(pair) and not feats:
            raise ValueError(f"{paper}.{system} captions {ds} ({pair}) but has no features there: name them in the table")
        return inputs

    def translate_job(self, wildcards, attention=False) -> TranslateJob:
        return self._cached("attention" if attention else "translate", wildcards,
                            lambda w: self._translate_job(w, attention))

    def _translate_job(self, w, attention) -> TranslateJob:
        inputs = self.translate_files(w)
        condition = getattr(w, "condition", "congruent")
        values = dict(paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=w.seed)
        if attention:
            out, stats = path("attention", **values), None
        else:
            out = path("translation", condition=condition, **values)
            stats = path("decode_stats", condition=condition, **values)
        shuffle = self.settings[w.paper].scoring.shuffle_seed if condition == "shuffled" else None
        return TranslateJob(
            paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=int(w.seed),
            condition=condition, checkpoint=inputs["checkpoint"], direction=self.decoded_model(w)[2],
            decode=self.decode_settings(w), subword=self.target_subword(w), shuffle_seed=shuffle,
            inputs=inputs, out=out, stats=stats, device=self.device,
        )

    def translate_inputs(self, wildcards) -> dict:
        return self.translate_job(wildcards).files()

    def translate_params(self, wildcards) -> dict:
        return self.translate_job(wildcards).to_dict()

    def attention_inputs(self, wildcards) -> dict:
        return self.translate_job(wildcards, attention=True).files()

    def attention_params(self, wildcards) -> dict:
        return self.translate_job(wildcards, attention=True).to_dict()

    # ------------------------------------------------------------------ scoring
    def reference_text(self, wildcards) -> list:
        """The reference(s) of a run in the scoring form: one file, or every caption file."""
        return self.reference_files(wildcards.paper, wildcards.dataset, wildcards.split, wildcards.pair.split("-")[1])

    def run_meta(self, wildcards, condition) -> dict:
        """Scores and analyses belong to a run, not to a table: several tables may share one
        (table ""); ``checkpoint`` names the model actually decoded."""
        return {
            "paper": wildcards.paper, "table": "", "system": wildcards.system, "dataset": wildcards.dataset,
            "pair": wildcards.pair, "test_set": wildcards.split, "seed": int(wildcards.seed),
            "condition": condition,
            "checkpoint": self.checkpoint_of(wildcards.paper, wildcards.system, wildcards.dataset,
                                             wildcards.pair, wildcards.seed),
        }

    def score_job(self, wildcards) -> ScoreJob:
        return self._cached("score", wildcards, self._score_job)

    def _score_job(self, w) -> ScoreJob:
        values = dict(paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=w.seed,
                      condition=w.condition)
        return ScoreJob(
            meta=self.run_meta(w, w.condition), scoring=as_plain(self.settings[w.paper].scoring),
            ref_subword="wordpiece" if self.target_subword(w) == "wordpiece" else "none",
            meteor_jar=self.config_path("tools", "meteor_jar"),
            inputs={"hyp": path("translation", **values), "decode_stats": path("decode_stats", **values),
                    "ref": self.reference_text(w)},
            out=path("score", **values),
        )

    def score_inputs(self, wildcards) -> dict:
        return self.score_job(wildcards).files()

    def score_params(self, wildcards) -> dict:
        return self.score_job(wildcards).to_dict()

    # ------------------------------------------------------------------ analyses
    def analysis_table(self, wildcards) -> dict:
        """The (first) enabled analysis table of this paper that names this analysis, preferring
        one on the run's dataset and pair that lists its system (tables may give their own `files`)."""
        tables = [t for paper, _, t in self.enabled
                  if paper == wildcards.paper and t.get("kind") == "analysis" and t["analysis"] == wildcards.analysis]
        for t in tables:
            if t["dataset"] == wildcards.dataset and t["pair"] == wildcards.pair and wildcards.system in t["systems"]:
                return t
        for t in tables:
            return t
        raise ValueError(f"no enabled analysis table of {wildcards.paper} names analysis {wildcards.analysis!r}")

    def analysis_files(self, wildcards) -> dict:
        """What a registered analysis reads: the attention dump, translation and reference, or the
        model (checkpoint, the split's text on both sides, vocabularies, features, and the split's
        word alignment where the paper has an align stage); plus the table's `files`."""
        t = self.analysis_table(wildcards)
        values = dict(paper=wildcards.paper, system=wildcards.system, dataset=wildcards.dataset,
                      split=wildcards.split, pair=wildcards.pair, seed=wildcards.seed)
        extra = {k: self.run_path(v, wildcards) for k, v in (t.get("files") or {}).items()}
        kind = t.get("inputs", "attention")
        if kind == "attention":
            return {"attention": path("attention", **values), **extra}
        if kind == "model":
            inputs = self.translate_files(wildcards)
            system, pair, _ = self.decoded_model(wildcards)
            paper, ds = wildcards.paper, wildcards.dataset
            inputs["tgt"] = self.model_text(paper, ds, pair, wildcards.split, wildcards.pair.split("-")[1])
            if self.settings[paper].align is not None:
                inputs["align"] = self.align_file(paper, ds, pair, wildcards.split)
            return {**inputs, **extra}
        files = {"hyp": path("translation", condition="congruent", **values), "ref": self.reference_text(wildcards),
                 **extra}
        if kind == "translation_train":  # + the target side of the training corpus
            ds, tgt = wildcards.dataset, wildcards.pair.split("-")[1]
            files["train"] = self.reference_file(wildcards.paper, ds, self.dataset_config(ds)["train"], tgt)
        return files

    def analyse_job(self, wildcards) -> AnalyseJob:
        return self._cached("analyse", wildcards, self._analyse_job)

    def _analyse_job(self, w) -> AnalyseJob:
        values = dict(paper=w.paper, system=w.system, dataset=w.dataset, split=w.split, pair=w.pair, seed=w.seed)
        return AnalyseJob(
            name=f"{w.paper}.{w.analysis}", input_kind=self.analysis_table(w).get("inputs", "attention"),
            meta=self.run_meta(w, "congruent"), imports=list(self.settings[w.paper].imports),
            inputs=self.analysis_files(w), out=path("analysis", analysis=w.analysis, **values),
        )

    def analyse_inputs(self, wildcards) -> dict:
        return self.analyse_job(wildcards).files()

    def analyse_params(self, wildcards) -> dict:
        return self.analyse_job(wildcards).to_dict()
