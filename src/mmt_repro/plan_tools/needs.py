"""What the requested targets need from outside the workflow, found at planning.

The training walk (:mod:`mmt_repro.plan_tools.walk`) gives every file that the targets' tables,
scores, translations and checkpoints read; this module follows those files down the text,
data and feature rules (with the plan methods the rules call) to the files of the manifest's
inputs (``resources/<input>/<file>``) and to the media a feature extraction reads (an image or
video folder, a folder of pre-extracted features). A file that exists in the working directory
is not followed (Snakemake would not rebuild it either). Each need is then checked against
where the config says the input comes from (``inputs.local.<input>``, ``inputs.mirror``, a
download, or a request-only input and its config key), so that an empty mirror or unset images
stop planning, not a job hours later. Torch-free and Snakemake-free.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from ..config import ConfigError
from ..corpora.fetch import LOCAL_KEY, MIRROR_KEY, request_only_error
from ..corpora.prepare import SOURCES as CORPUS_SOURCES
from ..io import DataError
from ..plan.paths import path
from ..plan.targets import template_matches
from .walk import TrainingWalk

#: Templates followed to their inputs, most specific first (a prepared corpus's own layout,
#: ``data_dir``, last).
_ORDER = ("stats", "corpus_stats", "vocab_report", "caption_text", "text", "wordpiece", "bpe_codes", "bpe_corpus",
          "bpe_text", "vocab", "corpus", "image_list", "features", "embedding_table", "word_vectors", "align",
          "align_model", "data_dir")
_SHOWN = 5  # missing files named per input; the rest are counted


def _flat(value) -> list:
    if isinstance(value, dict):
        return [f for v in value.values() for f in _flat(v)]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _flat(v)]
    return [] if value in (None, "") else [str(value)]


class NeedsWalk:
    """``walk(targets)``: the manifest files (input -> files) and media the targets need, and the
    problems met on the way (a name or split the plan refuses)."""

    def __init__(self, plan, workdir: Path):
        self.plan = plan
        self.workdir = Path(workdir)
        self.files: dict[str, dict[str, None]] = {}  # input -> file names, in order
        self.media: dict[tuple, None] = {}  # (dataset, feature set) extracted or imported
        self.problems: list[Exception] = []
        self._seen: set[str] = set()

    def walk(self, targets) -> NeedsWalk:
        walk = TrainingWalk(self.plan)
        for target in targets:
            try:
                walk.walk([target])
            except (ValueError, KeyError, ConfigError, DataError) as err:
                self.problems.append(err)
        for file in walk.leaves:
            self._follow(file)
        return self

    def _follow(self, file: str) -> None:
        todo = [file]
        while todo:
            f = todo.pop()
            if f in self._seen:
                continue
            self._seen.add(f)
            if (self.workdir / f).exists():
                continue
            if f in self.plan.unpacked:  # made by rule unpack_input from a fetched archive
                todo.append(self.plan.unpacked[f][0])
                continue
            if f.startswith("resources/"):
                parts = f.split("/", 2)
                if len(parts) == 3:
                    self.files.setdefault(parts[1], {})[parts[2]] = None
                continue
            try:
                todo.extend(self._inputs(f))
            except (ValueError, KeyError, ConfigError, DataError) as err:
                self.problems.append(err)

    def _inputs(self, file: str) -> list:
        p = self.plan
        matches = dict(template_matches(file))
        for name in _ORDER:
            if name not in matches:
                continue
            w = SimpleNamespace(**matches[name])
            if name == "stats":
                return [path("corpus_stats", dataset=ds) for ds in p.config["data"]["corpora"]]
            if name == "corpus_stats":
                return _flat(p.data.stats_inputs(w))
            if name == "vocab_report":
                return _flat(p.text.vocab_report_inputs(w))
            if name in ("text", "caption_text"):
                return _flat(p.text.tokenize_inputs(w))
            if name == "wordpiece":
                return _flat(p.text.wordpiece_training_text(w))
            if name == "bpe_codes":
                return _flat(p.text.bpe_training_text(w))
            if name == "bpe_text":
                return [path("text", dataset=w.dataset, split=w.split, chain=w.chain, lang=w.lang), p.text.bpe_codes(w)]
            if name == "bpe_corpus":
                return [path("text", dataset=w.corpus, split="train", chain=w.chain, lang=w.lang), p.text.bpe_codes(w)]
            if name == "vocab":
                return _flat(p.text.train_text(w))
            if name in ("corpus", "image_list"):
                return self._corpus(name, w)
            if name == "features":
                return self._features(w)
            if name == "embedding_table":
                return [p.vectors.table_vocab(w), p.vectors.vectors_file(w)]
            if name == "word_vectors":
                return [p.vectors.training_text(w)]
            if name == "align":
                return _flat(p.alignment_jobs.inputs(w))
            if name == "align_model":
                return _flat(p.alignment_jobs.model_inputs(w))
            if name == "data_dir" and w.dataset in p.data.prepared_corpora:
                return list(p.data.corpus_plan_of(w.dataset)[0].values())
            return []
        return []

    def _corpus(self, kind: str, w) -> list:
        p = self.plan
        source = p.dataset_config(w.dataset)["source"]
        if source in CORPUS_SOURCES:
            return list(p.data.corpus_plan_of(w.dataset)[0].values())
        if source == "wmt15":
            return [f"resources/wmt15_en_de/{a}" for a in p.data.wmt15_archives]
        if source != "multi30k":
            return []  # generated (grounded) or made by a rule without external inputs
        m = re.fullmatch(r"train_c([0-9]+)", w.split)
        if m:
            return ["resources/multi30k_task2/image_splits/train_images.txt" if kind == "image_list"
                    else f"resources/multi30k_task2/raw/train.{m.group(1)}.{w.lang}.gz"]
        return [p.data.multi30k_file("image_list" if kind == "image_list" else "text")(w)]

    def _features(self, w) -> list:
        p = self.plan
        base = re.sub(r"\.(std|ctr)$", "", w.feature_set)
        ds, split = w.dataset, w.split
        files = []
        if base != w.feature_set:  # standardised or centred: the store and the training split's
            for s in {split, p.dataset_config(ds)["train"]}:
                files.append(f"{path('features', dataset=ds, feature_set=base, split=s)}.npy")
            return files
        cfg = p.feature_set_config(ds, base)
        kind = cfg.get("kind", "grid")
        self.media[(ds, base)] = None
        listed = "video_list" if kind == "video" else "image_list"
        media = {"pretrained": cfg.get("src"), "grid": p.dataset_config(ds).get("images"),
                 "regions": p.dataset_config(ds).get("images")}.get(kind)
        folder = p.unpacked_folder(media)  # made by rule unpack_input: followed to its archive
        return [path(listed, dataset=ds, split=split), *([folder] if folder else [])]


def _missing(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def input_problems(plan, needs: NeedsWalk) -> list[DataError]:
    """One problem per input that the needed files cannot come from (request-only and not
    configured, a local folder or mirror that lacks them), and one for an absent or empty mirror."""
    problems: list[DataError] = []
    mirror = plan.config_path("inputs", "mirror")
    local = (plan.config.get("inputs") or {}).get("local") or {}
    from_mirror = []
    for name, files in needs.files.items():
        try:
            inp = plan.manifest.input(name)
            for f in files:
                inp.file(f)
        except DataError as err:
            problems.append(err)
            continue
        folder = plan.config_path("inputs", "local", name) if local.get(name) else None
        if inp.access != "download" and not (folder or (mirror and inp.mirror_dir)):
            problems.append(request_only_error(inp))
            continue
        if folder:
            key = f"{LOCAL_KEY}.{name}"
        elif mirror:
            if not inp.mirror_dir:
                problems.append(DataError(None, f"input {name!r} has no mirror_dir in the manifest, so `{MIRROR_KEY}` "
                                          "cannot hold it", f"set `{LOCAL_KEY}.{name}` to the folder holding its files"))
                continue
            if not Path(mirror).is_dir() or not any(Path(mirror).iterdir()):
                from_mirror.append(f"{name} ({len(files)} file{'s' if len(files) > 1 else ''})")
                continue
            folder, key = str(Path(mirror) / inp.mirror_dir), MIRROR_KEY
        else:
            continue  # downloaded by URL when the job runs
        lacking = [f for f in files if not (Path(folder) / f).is_file()]
        if lacking:
            urls = inp.files[lacking[0]].urls
            problems.append(DataError(
                folder, f"{len(lacking)} of the {len(files)} file(s) of input {name!r} that the requested targets need "
                f"are missing from the local copy set by `{key}`: {_missing(lacking)}",
                f"put them there (official source: {urls[0] if urls else inp.homepage}), or unset `{key}` to download"))
    if from_mirror:
        state = "does not exist" if not Path(mirror).is_dir() else "is empty"
        problems.append(DataError(
            mirror, f"the mirror folder set by `{MIRROR_KEY}` {state}; the requested targets need from it: "
            f"{', '.join(from_mirror)}",
            f"set `{MIRROR_KEY}` to a folder holding local copies laid out by the manifest's mirror_dir "
            "(e.g. ../shared/datasets), or to null to download"))
    return problems


def media_problems(plan, needs: NeedsWalk) -> list[DataError]:
    """One problem per unset or absent image or video folder and per missing folder of
    pre-extracted features that a needed feature store is made from."""
    problems: list[DataError] = []
    asked: set = set()
    requests: dict[str, list] = {}  # request-only input -> (dataset, feature set, config key)
    for ds, fs in needs.media:
        cfg = plan.feature_set_config(ds, fs)
        kind, source = cfg.get("kind", "grid"), plan.dataset_config(ds)["source"]
        if kind in ("grid", "regions") and source != "grounded":
            media, key_name = "images", "images"
        elif kind == "video" and source != "grounded_video":
            media, key_name = "videos", "videos"
        elif kind == "pretrained":
            key = f"datasets.{ds}.features.{fs}.src"
            src = cfg.get("src")
            if not src:
                problems.append(DataError(None, f"feature set {fs!r} of {ds} is imported from pre-extracted files, "
                                          f"but `{key}` is not set", f"set `{key}` to the folder holding them"))
            elif plan.unpacked_folder(src):
                pass  # rule unpack_input makes it from the fetched archive (its input is checked above)
            elif not plan.repo_path(src).exists():
                m = re.match(r"resources/([a-z0-9_]+)/", str(src))
                fix = f"put the files there, or point `{key}` at them"
                if m and m.group(1) in plan.manifest:
                    inp = plan.manifest[m.group(1)]
                    folders = [f"resources/{inp.name}/{f.unpack['into']}" for f in inp.files.values() if f.unpack]
                    fix = (f"point `{key}` at a folder the workflow unpacks from input {inp.name!r} "
                           f"({', '.join(folders)}), or at files unpacked elsewhere" if folders else
                           f"input {inp.name!r} declares no archive to unpack (manifest `unpack`): point `{key}` "
                           "at its files unpacked elsewhere")
                problems.append(DataError(plan.repo_path(src), f"the folder of feature set {fs!r} of {ds} (`{key}`) "
                                          "does not exist", fix))
            continue
        else:
            continue
        key = f"datasets.{ds}.{key_name}"
        if key in asked:
            continue
        asked.add(key)
        folder = plan.config_path("datasets", ds, key_name)
        if folder and Path(folder).exists():
            continue
        if plan.unpacked_folder((plan.dataset_config(ds) or {}).get(key_name)):
            continue  # rule unpack_input makes it (its archive is a need of the walk)
        name = plan.dataset_config(ds).get(f"{key_name}_input")
        request = plan.manifest.get(name) if name else next(
            (i for i in plan.manifest.values() if i.config_key == key), None)
        if request is not None and request.access == "download":
            request = None
        if folder:
            problems.append(DataError(folder, f"the {media} folder set as `{key}` does not exist",
                                      f"point `{key}` at your copy" + (f" ({request.request})" if request else "")))
        elif request is not None:
            requests.setdefault(request.name, []).append((ds, fs, key))
        else:
            problems.append(DataError(None, f"the {fs!r} features of {ds} are extracted from its {media}, but `{key}` "
                                      "is not set", f"set `{key}` to the folder holding the {media}"))
    for name, uses in requests.items():  # each request-only input once, with where to ask
        inp = plan.manifest[name]
        keys = " and ".join(f"`{key}`" for _, _, key in uses)
        needed = ", ".join(f"{fs!r} features of {ds}" for ds, fs, _ in uses)
        problems.append(DataError(None, f"{inp.title} ({name}) is {inp.access}-only: the workflow cannot download it, "
                                  f"and {keys} {'is' if len(uses) == 1 else 'are'} not set; the requested targets "
                                  f"need it for the {needed}",
                                  f"{inp.request}; then set {keys} to its local path (licence: {inp.licence})"))
    return problems
