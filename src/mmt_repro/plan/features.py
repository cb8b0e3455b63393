"""The inputs of the feature stage (features.smk): the images and videos of a split and the
feature stores made from them (extracted, imported, standardised or centred)."""

from __future__ import annotations

from pathlib import Path

from ..corpora.fetch import request_only_error
from .lookup import Lookup, pattern
from .paths import path

#: Width of each ResNet-50 layer's vectors (features/extractors.py, ResNet50Extractor.LAYERS).
RESNET50_DIMS = {"res4f": 1024, "res5c": 2048, "pool5": 2048}


def feature_shape(name: str, fs: dict) -> tuple[int, int]:
    """(slots, dim) of feature set ``name`` from its config, without extracting it: ``dim`` is
    exact (the extractor's or the published release's width), ``slots`` an estimate for grids.
    Grid sets name their layer ``<extractor>-<layer>`` unless they set ``layer``."""
    kind = fs.get("kind", "grid")
    if kind == "constant":  # the same block for every image (features/constant.py)
        return int(fs.get("max_boxes", 36)), int(fs.get("dim", 2048))
    if fs.get("import") == "vatex_i3d":  # the official VATEX I3D (Inception-v1) segments
        return int(fs.get("n_segments", 32)), 1024
    if kind == "video":  # pytorchvideo i3d_r50
        return int(fs.get("n_segments", 32)), 2048
    if fs.get("import") == "resnet50":  # a published ResNet-50 release: its layer (pysimt's res5c: 8 x 8 at 256 px)
        layer = fs.get("layer") or "pool5"
        return {"pool5": (1, 2048), "res5c": (64, 2048)}.get(layer, (196, 1024))
    if fs.get("import") == "butd" or kind == "pretrained":  # bottom-up-attention regions (+ the image mean)
        return int(fs.get("max_boxes", 36)) + 1, 2048
    if kind == "regions":  # torchvision's box head 1024, detectron2's bottom-up-attention C4 2048
        dim = 2048 if fs.get("backend") == "detectron2" else 1024
        return int(fs.get("max_boxes", 36)) + int(bool(fs.get("full_image"))), dim
    layer = fs.get("layer") or (name.split("-")[1] if "-" in name else "res4f")
    if layer == "pool5":
        return 1, 2048
    side = max(1, int(fs.get("image_size", 224)) // (16 if layer == "res4f" else 32))
    return side * side, RESNET50_DIMS.get(layer, 1024)


class FeatureInputs:
    def __init__(self, look: Lookup):
        self.look = look

    # ------------------------------------------------------------------ images and videos
    def image_inputs(self, wildcards) -> dict:
        """The split's image list, plus the image folder when the workflow makes it."""
        inputs = {"image_list": path("image_list", dataset=wildcards.dataset, split=wildcards.split)}
        if self.look.dataset_config(wildcards.dataset)["source"] == "grounded":
            inputs["images"] = path("images", dataset=wildcards.dataset)
        elif self.look.unpacked_folder(self.look.dataset_config(wildcards.dataset).get("images")):
            inputs["images"] = self.look.unpacked_folder(self.look.dataset_config(wildcards.dataset)["images"])
        return inputs

    def region_inputs(self, wildcards) -> dict:
        """The split's images (as image_inputs), plus the given boxes when the set has `boxes: given`."""
        inputs = self.image_inputs(wildcards)
        fs = self.look.feature_set_config(wildcards.dataset, wildcards.feature_set)
        if fs.get("boxes", "detected") == "given":
            inputs["given_boxes"] = path("given_boxes", dataset=wildcards.dataset, split=wildcards.split)
        return inputs

    @staticmethod
    def given_boxes_file(wildcards, input):
        return input.get("given_boxes")

    def image_dir(self, wildcards) -> str:
        """Where the images are: the generated folder, a folder the workflow unpacks (e.g.
        resources/mscoco_images/val2014), or the configured (request-only) one."""
        if self.look.dataset_config(wildcards.dataset)["source"] == "grounded":
            return path("images", dataset=wildcards.dataset)
        images = self.look.dataset_config(wildcards.dataset).get("images")
        if self.look.unpacked_folder(images):  # unpacked in the run folder (rule unpack_input)
            return Path(str(images)).as_posix()
        return self.look.config_path("datasets", wildcards.dataset, "images") or ""

    def missing_images_fix(self, wildcards) -> str:
        """Where to get the images of a dataset (the manifest's request-only entry, when declared)."""
        name = self.look.dataset_config(wildcards.dataset).get("images_input")
        if name:
            err = request_only_error(self.look.manifest.input(name))
            return f"{err.problem}; {err.fix}"
        return f"set datasets.{wildcards.dataset}.images to the folder holding the images"

    def media_folder(self, wildcards):
        return self.look.config_path("datasets", wildcards.dataset, "images")

    def video_dir(self, wildcards) -> str:
        """Where the videos are: the generated folder of a grounded video set, or the configured one."""
        if self.look.dataset_config(wildcards.dataset)["source"] == "grounded_video":
            return path("videos", dataset=wildcards.dataset)
        return self.look.config_path("datasets", wildcards.dataset, "videos") or ""

    def video_inputs(self, wildcards) -> dict:
        """The split's video list, plus the video folder when the workflow makes it."""
        inputs = {"video_list": path("video_list", dataset=wildcards.dataset, split=wildcards.split)}
        if self.look.dataset_config(wildcards.dataset)["source"] == "grounded_video":
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
            for ds in self.look.config["datasets"].values()
            for name, fs in (ds.get("features") or {}).items()
            if fs.get("kind", "grid") in wanted and picked(fs)
        )

    def pretrained_sets(self, regions: bool) -> str:
        """A wildcard pattern matching the configured pretrained feature sets that are
        (regions=True) or are not region stores: BUTD `obj36` imports write boxes beside them."""
        return pattern(
            name
            for ds in self.look.config["datasets"].values()
            for name, fs in (ds.get("features") or {}).items()
            if fs.get("kind", "grid") == "pretrained" and (fs.get("import") == "butd") == regions
        )

    def feature_param(self, key: str, default=KeyError):
        """A feature-set setting; grid sets default extractor/layer to their name `extractor-layer`."""

        def get(wildcards):
            fs = self.look.feature_set_config(wildcards.dataset, wildcards.feature_set)
            if key in fs:
                return fs[key]
            if key in ("extractor", "layer") and fs.get("kind", "grid") == "grid":
                return wildcards.feature_set.split("-")[0 if key == "extractor" else 1]
            if default is KeyError:
                raise ValueError(f"feature set {wildcards.feature_set} of {wildcards.dataset} needs the key {key!r}")
            return default

        return get

    def pretrained_inputs(self, wildcards) -> dict:
        """The split's image (or video) list, plus the folder of official files when the workflow
        unpacks it (a `src` under ``resources/<input>/<into>``, rule unpack_input): the unpack
        job is then upstream of the import. A `src` elsewhere is read as it is."""
        inputs = {"image_list": path("image_list", dataset=wildcards.dataset, split=wildcards.split)}
        folder = self.look.unpacked_folder(self._src(wildcards))
        if folder:
            inputs["src"] = folder
        return inputs

    def _src(self, wildcards):
        return self.look.feature_set_config(wildcards.dataset, wildcards.feature_set).get("src")

    def pretrained_source(self, wildcards) -> str:
        """Where the import reads the official files: a path in the run folder when the workflow
        unpacks them there, else the configured one (relative to the repository)."""
        src = self._src(wildcards)
        if self.look.unpacked_folder(src):
            return Path(str(src)).as_posix()
        return str(self.look.repo_path(src)) if src else ""

    def train_feature_store(self, kind: str):
        """The training split's store (npy or index) that standardising/centring fits on."""

        def get(wildcards):
            train = self.look.dataset_config(wildcards.dataset)["train"]
            ext = "npy" if kind == "npy" else "index.parquet"
            stem = path("features", dataset=wildcards.dataset, feature_set=wildcards.feature_set, split=train)
            return f"{stem}.{ext}"

        return get
