"""The plan of the data stage: corpora (fetched, prepared, generated), their statistics, the
media lists and the feature stores, as the rules of data.smk and features.smk ask for them."""

from __future__ import annotations

from pathlib import Path

from ..config import ConfigError
from ..corpora.fetch import request_only_error
from ..corpora.prepare import SOURCES as CORPUS_SOURCES
from ..corpora.prepare import corpus_plan, text_outputs
from ..corpora.wmt import WMT15_ARCHIVES
from .base import pattern
from .paths import path


class DataPlan:
    # ------------------------------------------------------------------ corpora
    @property
    def manifest_inputs(self) -> str:
        """A wildcard pattern of every manifest input (longest first)."""
        return "|".join(sorted(self.manifest, key=len, reverse=True))

    wmt15_archives = list(WMT15_ARCHIVES)

    @property
    def prepared_corpora(self) -> list:
        """Datasets made by mmt_repro.corpora.prepare (one generated rule each, see data.smk)."""
        return [n for n, ds in self.config["datasets"].items() if ds["source"] in CORPUS_SOURCES]

    def corpus_plan_of(self, dataset: str):
        """(inputs by role, outputs under results/data/<dataset>/) of a prepared corpus."""
        return corpus_plan(dataset, self.dataset_config(dataset), self.manifest)

    @property
    def comparable_per_image(self) -> int:
        """Comparable descriptions generated per grounded training image: as many as any paper
        back-translates (Multi30k task 2 has 5 per image)."""
        return max([s.backtranslation.descriptions for s in self.settings.values() if s.backtranslation] or [1])

    def grounded_layouts(self, source: str) -> dict:
        """(splits, langs) -> dataset names, of the generated datasets of a source (grounded:
        one rule per layout, since a rule's outputs cannot depend on its wildcards)."""
        layouts = {}
        for name, layout in self.layout.items():
            if self.dataset_config(name)["source"] == source:
                layouts.setdefault((tuple(layout["splits"]), tuple(layout["langs"])), []).append(name)
        return layouts

    @staticmethod
    def grounded_gold_pairs(langs) -> list:
        """The language pairs the grounded generator writes gold alignments for (langs order)."""
        from ..grounded.images import gold_pairs

        return gold_pairs(langs)

    def local_input_dir(self, wildcards):
        """The per-input local folder (`inputs.local.<input>`), resolved; None when unset."""
        return self.config_path("inputs", "local", wildcards.input)

    def multi30k_file(self, kind: str):
        """The fetched task 1 file (resources/<input>/...) of the wildcards' split (and language)."""
        from ..corpora import multi30k

        def get(wildcards):
            ds, split = wildcards.dataset, wildcards.split
            key = f"datasets.{ds}"
            if split not in self.dataset_splits(ds):
                raise ConfigError(
                    f"{key}.splits: split {split!r} is not configured; valid values: "
                    f"{', '.join(self.dataset_splits(ds))} (add it there, and its files to the manifest)"
                )
            inp = self.dataset_config(ds).get("input") or multi30k.TASK1_INPUT
            if kind == "image_list":
                return f"resources/{inp}/{multi30k.image_list_file(split)}"
            if wildcards.lang not in self.dataset_langs(ds):
                raise ConfigError(
                    f"{key}.langs: language {wildcards.lang!r} is not configured; valid values: "
                    f"{', '.join(self.dataset_langs(ds))}"
                )
            return f"resources/{inp}/{multi30k.text_file(split, wildcards.lang)}"

        return get

    # ------------------------------------------------------------------ statistics
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
            for out in self.corpus_plan_of(ds)[1]:
                files[f"{Path(out).stem}|images"] = f"{path('data_dir', dataset=ds)}/{out}"
        return files

    def stats_files(self, wildcards) -> dict:
        return self.corpus_text_files(wildcards.dataset)

    def stats_image_lists(self, wildcards) -> dict:
        """split -> image list, for the corpora that have one per split (Multi30k, grounded)."""
        if self.dataset_config(wildcards.dataset)["source"] not in ("multi30k", "grounded"):
            return {}
        splits = {key.split("|")[0] for key in self.corpus_text_files(wildcards.dataset)}
        return {s: path("image_list", dataset=wildcards.dataset, split=s) for s in sorted(splits)}

    def stats_inputs(self, wildcards) -> list:
        return [*self.stats_files(wildcards).values(), *self.stats_image_lists(wildcards).values()]

    def stats_train_split(self, wildcards) -> str:
        return self.dataset_config(wildcards.dataset).get("train", "train")

    def stats_targets(self) -> list:
        return [path("corpus_stats", dataset=ds) for ds in self.config["data"]["corpora"]]

    # ------------------------------------------------------------------ images and videos
    def image_inputs(self, wildcards) -> dict:
        """The split's image list, plus the image folder when the workflow makes it."""
        inputs = {"image_list": path("image_list", dataset=wildcards.dataset, split=wildcards.split)}
        if self.dataset_config(wildcards.dataset)["source"] == "grounded":
            inputs["images"] = path("images", dataset=wildcards.dataset)
        return inputs

    def region_inputs(self, wildcards) -> dict:
        """The split's images (as image_inputs), plus the given boxes when the set has `boxes: given`."""
        inputs = self.image_inputs(wildcards)
        fs = self.feature_set_config(wildcards.dataset, wildcards.feature_set)
        if fs.get("boxes", "detected") == "given":
            inputs["given_boxes"] = path("given_boxes", dataset=wildcards.dataset, split=wildcards.split)
        return inputs

    @staticmethod
    def given_boxes_file(wildcards, input):
        return input.get("given_boxes")

    def image_dir(self, wildcards) -> str:
        """Where the images are: the generated folder, or the configured (request-only) one."""
        if self.dataset_config(wildcards.dataset)["source"] == "grounded":
            return path("images", dataset=wildcards.dataset)
        return self.config_path("datasets", wildcards.dataset, "images") or ""

    def missing_images_fix(self, wildcards) -> str:
        """Where to get the images of a dataset (the manifest's request-only entry, when declared)."""
        name = self.dataset_config(wildcards.dataset).get("images_input")
        if name:
            err = request_only_error(self.manifest.input(name))
            return f"{err.problem}; {err.fix}"
        return f"set datasets.{wildcards.dataset}.images to the folder holding the images"

    def media_folder(self, wildcards):
        return self.config_path("datasets", wildcards.dataset, "images")

    def video_dir(self, wildcards) -> str:
        """Where the videos are: the generated folder of a grounded video set, or the configured one."""
        if self.dataset_config(wildcards.dataset)["source"] == "grounded_video":
            return path("videos", dataset=wildcards.dataset)
        return self.config_path("datasets", wildcards.dataset, "videos") or ""

    def video_inputs(self, wildcards) -> dict:
        """The split's video list, plus the video folder when the workflow makes it."""
        inputs = {"video_list": path("video_list", dataset=wildcards.dataset, split=wildcards.split)}
        if self.dataset_config(wildcards.dataset)["source"] == "grounded_video":
            inputs["videos"] = path("videos", dataset=wildcards.dataset)
        return inputs

    # ------------------------------------------------------------------ feature stores
    def feature_sets_of(self, kinds: str, imports=None) -> str:
        """A wildcard pattern matching the configured feature sets of some kinds ("grid",
        "grid|video"), across datasets; for ``pretrained`` sets, only those importing one of
        ``imports`` ("butd") or, with ``imports="!butd"``, all but those."""
        wanted = kinds.split("|")

        def picked(fs):
            if imports is None or fs.get("kind", "grid") != "pretrained":
                return True
            if imports.startswith("!"):
                return fs.get("import") not in imports[1:].split("|")
            return fs.get("import") in imports.split("|")

        return pattern(
            name
            for ds in self.config["datasets"].values()
            for name, fs in (ds.get("features") or {}).items()
            if fs.get("kind", "grid") in wanted and picked(fs)
        )

    def pretrained_sets(self, regions: bool) -> str:
        """A wildcard pattern matching the configured pretrained feature sets that are
        (regions=True) or are not region stores: BUTD `obj36` imports write boxes beside them."""
        return pattern(
            name
            for ds in self.config["datasets"].values()
            for name, fs in (ds.get("features") or {}).items()
            if fs.get("kind", "grid") == "pretrained" and (fs.get("import") == "butd") == regions
        )

    def feature_param(self, key: str, default=KeyError):
        """A feature-set setting; grid sets default extractor/layer to their name `extractor-layer`."""

        def get(wildcards):
            fs = self.feature_set_config(wildcards.dataset, wildcards.feature_set)
            if key in fs:
                return fs[key]
            if key in ("extractor", "layer") and fs.get("kind", "grid") == "grid":
                return wildcards.feature_set.split("-")[0 if key == "extractor" else 1]
            if default is KeyError:
                raise ValueError(f"feature set {wildcards.feature_set} of {wildcards.dataset} needs the key {key!r}")
            return default

        return get

    def pretrained_source(self, wildcards) -> str:
        src = self.feature_set_config(wildcards.dataset, wildcards.feature_set).get("src")
        return str(self.repo_path(src)) if src else ""

    def train_feature_store(self, kind: str):
        """The training split's store (npy or index) that standardising/centring fits on."""

        def get(wildcards):
            train = self.dataset_config(wildcards.dataset)["train"]
            ext = "npy" if kind == "npy" else "index.parquet"
            stem = path("features", dataset=wildcards.dataset, feature_set=wildcards.feature_set, split=train)
            return f"{stem}.{ext}"

        return get
