"""The plan's look-ups: the validated config, every paper's settings and the manifest, and every
question more than one job builder asks of them (datasets, tables, recipes, the text, feature,
vocabulary and checkpoint files of a paper's runs). The job builders (:mod:`mmt_repro.plan.build`)
and the stage inputs (``data``, ``features``, ``text``, ``vectors``, ``targets``) each take a
:class:`Lookup` and call nothing else of the plan, unless their constructor names it.
Torch-free and Snakemake-free: wildcards are any object with attributes."""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path

from ..config import validate_config
from ..corpora.layout import dataset_layout
from ..corpora.manifest import load_manifest
from ..corpora.prepare import SOURCES as CORPUS_SOURCES
from ..corpora.prepare import corpus_plan, text_outputs
from ..io import unknown_name
from ..settings import IMAGE_SOURCE, load_paper
from .paths import path, reversed_pair


def pattern(names) -> str:
    """A wildcard pattern matching exactly ``names`` (never matching when there are none)."""
    names = sorted(set(names))
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def is_captioning(pair: str) -> bool:
    """A pair ``im-<lang>``: images in, captions out (no source text)."""
    return pair.split("-")[0] == IMAGE_SOURCE


class PaperSettingsByName(dict):
    """Every paper's settings by name; an unknown paper names the valid ones (a user error,
    :func:`mmt_repro.io.unknown_name`), not a bare KeyError."""

    def __missing__(self, paper):
        raise unknown_name("paper", paper, self, "the config (papers)")


# Where a run folder holds its copies of the repository's files (rule repo_file).
REPO_COPY = "results/repo/"


class Lookup:
    """Config, settings and manifest, read and checked once (ConfigError/DataError otherwise),
    and the look-ups over them."""

    def __init__(self, config: dict, repo: Path, check_names: bool = True):
        self.config = config
        self.repo = Path(repo)
        validate_config(config, self.repo / "config" / "schema.yaml")
        # Per-paper settings (config/papers/<paper>.yaml + the config's overrides), checked
        # without torch; model configs are checked against their dataclasses at the run's start.
        self.settings = PaperSettingsByName({
            paper: load_paper(paper, self.repo_path(block["settings"]), block.get("overrides"))
            for paper, block in config["papers"].items()
        })
        # config/manifest.yaml plus the extra manifests the config lists (`inputs.manifest_extra`).
        self.manifest = load_manifest(self.repo / "config" / "manifest.yaml", config=config)
        # Splits and languages of the Multi30k and grounded datasets, checked against the config
        # and the manifest (an unknown one stops planning naming the key and the valid values).
        self.layout = dataset_layout(config, self.manifest)
        self.published = self.repo_copy("config/published_results.tsv")
        if check_names:  # the preflight (mmt_repro.plan_tools.preflight) collects them instead
            self.check_table_names()

    # ------------------------------------------------------------------ config look-ups
    def repo_path(self, value) -> Path:
        """Paths in the config are relative to the repository unless absolute."""
        value = Path(value)
        return value if value.is_absolute() else self.repo / value

    def repo_copy(self, rel: str) -> str:
        """The run folder's copy of a file of the repository (rule repo_file): jobs name it by a
        path that does not depend on where the checkout is, so a fresh checkout elsewhere
        re-runs none of them."""
        return f"{REPO_COPY}{Path(rel).as_posix()}"

    def repo_source(self, path) -> Path:
        """The repository file a run folder's copy (:meth:`repo_copy`) is made from; any other
        path as it is (tools that read a job's inputs outside a run folder)."""
        text = str(path)
        return self.repo / text[len(REPO_COPY):] if text.startswith(REPO_COPY) else Path(text)

    def config_value(self, *keys):
        """A nested value of the config (None when a key on the way is unset)."""
        value = self.config
        for key in keys:
            value = (value or {}).get(key)
        return value

    def config_path(self, *keys):
        """A path from the config (None when unset), resolved against the repository."""
        value = self.config_value(*keys)
        return str(self.repo_path(value)) if value else None

    @property
    def device(self) -> str:
        return self.config["device"]

    def threads(self, kind: str) -> int:
        """Torch threads of a kind of job (`threads.<kind>`: train, decode, features)."""
        return int((self.config.get("threads") or {}).get(kind, {"train": 4, "decode": 2, "features": 4}[kind]))

    def gpu_count(self, wildcards=None) -> int:
        """One GPU for heavy jobs unless the run is pinned to the CPU."""
        return 0 if self.config["device"] == "cpu" else 1

    def dataset_config(self, dataset: str) -> dict:
        if dataset not in self.config["datasets"]:
            raise unknown_name("dataset", dataset, self.config["datasets"], "the config (datasets)")
        return self.config["datasets"][dataset]

    def dataset_value(self, key, default=None):
        """A rule's params function: ``datasets.<dataset>.<key>``; with ``default``, an optional key."""
        if default is None:
            return lambda wildcards: self.dataset_config(wildcards.dataset)[key]
        return lambda wildcards: self.dataset_config(wildcards.dataset).get(key, default)

    def datasets_of(self, source: str) -> str:
        """A wildcard pattern matching the configured datasets of one source."""
        return pattern(n for n, cfg in self.config["datasets"].items() if cfg["source"] == source)

    def dataset_splits(self, dataset: str) -> list:
        """The configured splits of a dataset (Multi30k and grounded: checked at planning)."""
        if dataset in self.layout:
            return list(self.layout[dataset]["splits"])
        cfg = self.dataset_config(dataset)
        return list(cfg.get("splits") or cfg.get("sets") or [])

    def dataset_langs(self, dataset: str) -> list:
        """The configured languages of a Multi30k or grounded dataset (checked at planning)."""
        if dataset not in self.layout:
            raise ValueError(f"dataset {dataset!r} has no planned languages; planned: {', '.join(self.layout)}")
        return list(self.layout[dataset]["langs"])

    @cached_property
    def enabled(self) -> list:
        """(paper, table, table config) for every table the config switches on (a CoMMuTE table
        cut to the runs the others plan: :func:`mmt_repro.plan.commute.restrict`)."""
        from .commute import restrict

        return restrict([
            (paper, name, table)
            for paper, block in self.config["papers"].items()
            for name, table in block["tables"].items()
            if table.get("enabled", True)
        ])

    def check_table_names(self) -> None:
        """Raise the first of :meth:`table_name_problems`, so that a typo stops planning at once
        instead of surfacing later as another problem."""
        for _, _, problems in self.table_name_problems(everything=False):
            if problems:
                raise problems[0]

    def table_name_problems(self, everything: bool = True) -> list:
        """(paper, table, errors) of every enabled table: each name it gives that the config or
        the paper does not define (:func:`mmt_repro.io.unknown_name`, naming the key): its
        dataset, the feature set of that dataset that its multimodal systems read, its systems,
        and (``everything``: the preflight, :mod:`mmt_repro.plan_tools.preflight`) its baselines and
        test sets (splits of the dataset)."""
        out = []
        for paper, name, table in self.enabled:
            key = f"papers.{paper}.tables.{name}"
            problems = []
            if table["dataset"] not in self.config["datasets"]:
                out.append((paper, name, [unknown_name("dataset", table["dataset"], self.config["datasets"],
                                                       f"{key}.dataset (datasets of the config)")]))
                continue
            systems = self.settings[paper].systems
            where = f"systems in {self.settings[paper].path}"
            for system in table.get("systems") or []:
                if system not in systems:
                    problems.append(unknown_name("system", system, systems, f"{key}.systems ({where})"))
            declared = table.get("differences") or {}
            for system in declared if isinstance(declared, dict) else []:
                if system not in (table.get("systems") or []):
                    problems.append(unknown_name("system", system, table.get("systems") or [],
                                                 f"{key}.differences (the table's systems)"))
            # the feature set is read only by a table's multimodal systems (a text-only table of a
            # dataset, e.g. config/cpu_vatex.yaml, may keep the full config's name unconfigured)
            sets = self.config["datasets"][table["dataset"]].get("features") or {}
            reads = any(systems[s].visual != "none" for s in table.get("systems") or [] if s in systems)
            if reads and table.get("features") is not None and table["features"] not in sets:
                problems.append(unknown_name("feature set", table["features"], sets,
                                             f"{key}.features (datasets.{table['dataset']}.features of the config)"))
            if not everything:
                out.append((paper, name, problems))
                continue
            baseline = table.get("baseline") or {}
            for value in [baseline] if isinstance(baseline, str) else [v for kv in baseline.items() for v in kv]:
                if value not in systems:
                    problems.append(unknown_name("system", value, systems, f"{key}.baseline ({where})"))
            splits = {*self.dataset_splits(table["dataset"]),
                      *(k.split("|")[0].split(".")[0] for k in self.corpus_text_files(table["dataset"]))}
            for test_set in table.get("test_sets") or []:
                if splits and test_set not in splits:
                    problems.append(unknown_name("test set", test_set, splits,
                                                 f"{key}.test_sets (splits of datasets.{table['dataset']})"))
            out.append((paper, name, problems))
        return out

    def paper_config(self, paper: str) -> dict:
        """The config block of a paper (``papers.<paper>``); an unknown paper names the valid ones."""
        if paper not in self.config["papers"]:
            raise unknown_name("paper", paper, self.config["papers"], "the config (papers)")
        return self.config["papers"][paper]

    def table(self, paper: str, table: str) -> dict:
        tables = self.paper_config(paper)["tables"]
        if table not in tables:
            raise unknown_name("table", table, tables, f"paper {paper} (papers.{paper}.tables of the config)")
        return next((t for p, name, t in self.enabled if p == paper and name == table), tables[table])

    def table_config(self, wildcards) -> dict:
        return self.table(wildcards.paper, wildcards.table)

    # ------------------------------------------------------------------ papers and systems
    def recipe(self, paper: str):
        return self.settings[paper].recipe

    def system_settings(self, paper: str, system: str):
        from ..config import ConfigError

        try:
            return self.settings[paper].system(system)
        except ConfigError as err:
            raise ValueError(str(err)) from None

    def multimodal(self, paper: str, system: str) -> bool:
        return self.system_settings(paper, system).visual != "none"

    def paper_features(self, paper: str, dataset: str, required: bool = True):
        """The feature set a paper uses on a dataset (one per paper and dataset); None when no
        table of the paper on that dataset names one and it is not ``required`` (a text-only
        test set, e.g. IWSLT, for a multimodal multi-task model)."""
        names = {t.get("features") for p, _, t in self.enabled if p == paper and t["dataset"] == dataset}
        names.discard(None)
        if len(names) > 1:
            raise ValueError(f"{paper} uses several feature sets on {dataset}: {sorted(names)}; use one")
        if not names:
            if not required:
                return None
            raise ValueError(f"no table of {paper} on {dataset} names its 'features'")
        return names.pop()

    def feature_set_config(self, dataset: str, feature_set: str) -> dict:
        sets = self.dataset_config(dataset).get("features", {})
        if feature_set not in sets:
            raise unknown_name("feature set", feature_set, sets, f"dataset {dataset} (datasets.{dataset}.features)")
        return sets[feature_set]

    def feature_files(self, dataset: str, feature_set: str, split: str, options=None) -> dict:
        """npy and index of a split's features, standardised (`.std`) or centred on the training
        split's centroid (`.ctr`) when the feature set asks for it; `options` (a system's
        `feature_options`) change those keys for one system."""
        fs = dict(self.feature_set_config(dataset, feature_set), **(options or {}))
        suffix = ".std" if fs.get("standardize") else ".ctr" if fs.get("center") else ""
        stem = path("features", dataset=dataset, feature_set=f"{feature_set}{suffix}", split=split)
        files = {"npy": f"{stem}.npy", "index": f"{stem}.index.parquet"}
        if fs.get("kind", "grid") == "regions" or fs.get("import") == "butd":
            files["boxes"] = f"{stem}.boxes.npy"  # region stores: detected, given or imported (BUTD)
        return files

    def system_feature_options(self, paper: str, system: str) -> dict:
        """The system's changes to its table's feature set (e.g. {center: false})."""
        return dict(self.system_settings(paper, system).feature_options)

    # ------------------------------------------------------------------ a paper's text
    def canonical_pair(self, paper: str, dataset: str, pair: str) -> str:
        """The orientation that names a language pair's codes, vocabularies and subword text: the
        pair as the paper's tables on `dataset` write it (en-de also for the de-en
        back-translation model), so that both directions share one set of files."""
        rev = "-".join(reversed(pair.split("-")))
        pairs = {t["pair"] for p, _, t in self.enabled if p == paper and t["dataset"] == dataset}
        return rev if rev in pairs and pair not in pairs else pair

    def model_text(self, paper, dataset, pair, split, lang) -> str:
        """The text a paper's model reads: the recipe's chain, then its BPE where the recipe has
        BPE for this language (per-paper codes); word-, WordPiece- and character-level text is
        the shared tokenised file itself."""
        rec = self.recipe(paper)
        chain = rec.chain_for(lang)
        if rec.subword_for(lang) == "bpe":
            return path("bpe_text", paper=paper, dataset=dataset, pair=self.canonical_pair(paper, dataset, pair),
                        split=split, chain=chain, lang=lang)
        return path("text", dataset=dataset, split=split, chain=chain, lang=lang)

    def corpus_text(self, paper, dataset, pair, corpus, lang) -> str:
        """A text-only pre-training corpus (another dataset's training split) in the paper's form."""
        rec = self.recipe(paper)
        chain = rec.chain_for(lang)
        if rec.subword_for(lang) == "bpe":
            return path("bpe_corpus", paper=paper, dataset=dataset, pair=self.canonical_pair(paper, dataset, pair),
                        corpus=corpus, chain=chain, lang=lang)
        return path("text", dataset=corpus, split="train", chain=chain, lang=lang)

    def reference_file(self, paper, dataset, split, lang) -> str:
        """The reference in the scoring form: the recipe's chain without subwords."""
        return path("text", dataset=dataset, split=split, chain=self.recipe(paper).chain_for(lang), lang=lang)

    def reference_files(self, paper, dataset, split, lang) -> list:
        """One reference file, or every caption file of a captioning set (``captions_per_image``)."""
        if not self.dataset_config(dataset).get("captions_per_image"):
            return [self.reference_file(paper, dataset, split, lang)]
        return self.caption_files(paper, dataset, split, lang)

    def caption_files(self, paper, dataset, split, lang) -> list:
        """The k caption files of a split (line i of each: a caption of image i) in the recipe's
        chain (captions are word- or WordPiece-level text, never BPE)."""
        rec = self.recipe(paper)
        if rec.subword_for(lang) == "bpe":
            raise ValueError(f"{paper}: captions are not BPE-segmented per paper; use a word or wp chain")
        k = self.dataset_config(dataset).get("captions_per_image") or 0
        return [path("caption_text", dataset=dataset, split=split, k=j, chain=rec.chain_for(lang), lang=lang)
                for j in range(1, k + 1)]

    def vocab_side(self, paper, lang) -> str:
        return "joint" if self.recipe(paper).joint_vocab else lang

    def bpe_side(self, paper, lang) -> str:
        return "joint" if self.recipe(paper).joint_bpe else lang

    def vocab_file(self, paper, dataset, pair, lang) -> str:
        return path("vocab", paper=paper, dataset=dataset, pair=self.canonical_pair(paper, dataset, pair),
                    side=self.vocab_side(paper, lang))

    def target_subword(self, wildcards) -> str:
        """The recipe's subword kind on the target side, merged back before scoring."""
        return self.recipe(wildcards.paper).subword_for(wildcards.pair.split("-")[1])

    @cached_property
    def unpacked(self) -> dict:
        """``resources/<input>/<into>`` -> the fetched archive (``resources/<input>/<file>``) and
        its ``unpack`` spec, for every manifest file that declares one (rule unpack_input)."""
        return {f"resources/{inp.name}/{f.unpack['into']}": (f"resources/{inp.name}/{f.name}", f.unpack)
                for inp in self.manifest.values() for f in inp.files.values() if f.unpack}

    def unpacked_folder(self, value) -> str | None:
        """The unpacked folder (a key of :attr:`unpacked`) that a configured path lies in, or
        None: a path the workflow does not make (e.g. a folder unpacked by the user elsewhere)."""
        if not value or Path(str(value)).is_absolute():
            return None
        text = Path(str(value)).as_posix()
        return next((f for f in self.unpacked if text == f or text.startswith(f + "/")), None)

    def meteor_jar(self) -> str | None:
        """``tools.meteor_jar`` as jobs read it: a jar the workflow unpacks (under ``resources/``,
        rule unpack_input) by its run-folder path, any other against the repository; None: the
        jar bundled with pycocoevalcap (:mod:`mmt_repro.metrics.meteor`)."""
        value = self.config_value("tools", "meteor_jar")
        if not value:
            return None
        return Path(str(value)).as_posix() if self.unpacked_folder(value) else str(self.repo_path(value))

    def meteor_inputs(self, uses_meteor: bool) -> dict:
        """``{"meteor": <unpacked release folder>}`` for a job that scores METEOR when the config's
        jar is one the workflow fetches and unpacks, so that the DAG makes it first; else ``{}``."""
        folder = self.unpacked_folder(self.config_value("tools", "meteor_jar"))
        return {"meteor": folder} if uses_meteor and folder else {}

    def run_path(self, value, wildcards) -> str:
        """A configured input path that may name the run's {paper}, {system}, {dataset}, {pair},
        {src}, {tgt} and {seed}: results/ and resources/ paths are the workflow's own; any other
        relative path is a file of the repository (e.g. config/visual_agreement/visual_words.tsv),
        read through the run folder's copy of it (:meth:`repo_copy`); an absolute path, or one
        that leaves the repository, as it is."""
        values = {k: str(getattr(wildcards, k)) for k in ("paper", "system", "dataset", "pair", "seed")
                  if hasattr(wildcards, k)}
        if "pair" in values:
            values["src"], values["tgt"] = values["pair"].split("-")
        value = str(value).format_map(values)
        if value.startswith(("results/", "resources/")):
            return value
        if not Path(value).is_absolute() and ".." not in Path(value).parts:
            return self.repo_copy(value)
        return str(self.repo_path(value))

    # ------------------------------------------------------------------ a corpus's files
    def corpus_text_files(self, ds: str) -> dict:
        """"split|lang" -> text file of every split of a corpus."""
        cfg = self.dataset_config(ds)
        if cfg["source"] in CORPUS_SOURCES:
            names = text_outputs(ds, cfg, self.manifest)
        elif ds in self.layout:  # Multi30k and grounded: the configured splits x languages
            names = [f"{s}.{lang}" for s in self.dataset_splits(ds) for lang in self.dataset_langs(ds)]
        elif cfg["source"] == "wmt15":
            names = ["train.en", "train.de"]
        else:
            names = [f"{s}.{lang}" for s in cfg.get("splits", []) for lang in cfg.get("langs", [])]
        files = {}
        for name in names:
            split, lang = name.rsplit(".", 1)
            files[f"{split}|{lang}"] = path("corpus", dataset=ds, split=split, lang=lang)
        if not files and cfg["source"] in CORPUS_SOURCES:  # an image split without captions: count images
            for out in corpus_plan(ds, cfg, self.manifest)[1]:
                files[f"{Path(out).stem}|images"] = f"{path('data_dir', dataset=ds)}/{out}"
        return files

    def align_file(self, paper, dataset, pair, split) -> str:
        """The symmetrised word alignment of one split (papers with an ``align`` block)."""
        if self.settings[paper].align is None:
            raise ValueError(f"{paper} has no `align` block in {self.settings[paper].path}: no alignment stage")
        return path("align", paper=paper, dataset=dataset, pair=pair, split=split)

    # ------------------------------------------------------------------ a table's runs
    def table_kind(self, paper, table) -> str:
        """translation (scores of translations), analysis (a registered analysis per run) or curves."""
        return self.table(paper, table).get("kind", "translation")

    def table_runs(self, paper, table) -> list:
        """(system, test_set, seed, condition) of every run a table needs; the shuffled-image and
        no-image conditions exist only for multimodal systems."""
        t = self.table(paper, table)
        runs = []
        for system in t["systems"]:
            conditions = ["congruent"]
            if t.get("shuffled_images") and self.multimodal(paper, system):
                conditions.append("shuffled")
            if t.get("no_image") and self.multimodal(paper, system):
                conditions.append("no_image")
            for test_set in t["test_sets"]:
                for seed in t["seeds"]:
                    for condition in conditions:
                        runs.append((system, test_set, seed, condition))
        return runs

    def run_file(self, kind, paper, table, system, test_set, seed, condition) -> str:
        """The translation or score file of one run of a table."""
        t = self.table(paper, table)
        return path(kind, paper=paper, system=system, dataset=t["dataset"], split=test_set, pair=t["pair"],
                    seed=seed, condition=condition)

    def significance_metrics(self, paper) -> list:
        """The metrics of the paper's scoring block that its tables test for significance."""
        scoring = self.settings[paper].scoring
        return [m for m in scoring.significance_metrics if m in scoring.metrics]

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
