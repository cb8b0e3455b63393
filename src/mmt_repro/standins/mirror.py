"""Write the stand-in mirror: every input's stand-in files under ``<root>/<mirror_dir>/``
(request-only folders under :data:`REQUEST_FOLDERS`), ``standin_manifest.yaml`` (an extra
manifest giving each written file its stand-in sha256 and, where the real manifest declares
one, its line count) and ``standin_config.yaml`` (the overlay that points a run at them).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import yaml

from ..corpora.fetch import sha256_of
from ..corpora.manifest import MANIFEST, Input, load_manifest
from ..io import DataError, atomic_write, read_lines
from . import CHECKED_AGAINST, NOT_WRITTEN
from . import media_inputs as media
from . import text_inputs as text
from .world import World

log = logging.getLogger(__name__)

MANIFEST_NAME = "standin_manifest.yaml"
CONFIG_NAME = "standin_config.yaml"
#: The default local copies of real files whose first lines the stand-ins take.
SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "datasets"
#: Where the inputs without a ``mirror_dir`` go under the mirror root, and the config keys
#: that name them (request-only folders), or the ``mirror_dir`` the stand-in manifest gives
#: them (a manual-only file, fetched from the mirror like any other).
REQUEST_FOLDERS = {
    "flickr30k_images": ("flickr30k/flickr30k-images",
                         ["datasets.multi30k.images", "datasets.flickr30k_captions.images"]),
    "flickr8k_images": ("flickr8k/Flicker8k_Dataset", ["datasets.tasviret.images"]),
    "vatex_videos": ("vatex-videos", ["datasets.vatex.videos"]),
    "vl_bert_base": ("vl-bert", []),
    "commute_images": ("commute-images", ["datasets.commute.images"]),
}


#: Stand-ins that are no manifest input, written with every mirror: folder under the root, the
#: writer, and the config keys of config/config.yaml the overlay points at the folder.
EXTRAS = {
    "butd_regions": ("butd-regions", media.write_butd_regions,
                     [f"datasets.{d}.features.butd-regions.src"
                      for d in ("multi30k", "tasviret", "flickr30k_captions", "coco_karpathy")]),
}


def writers() -> dict:
    """input -> its writer ``(World, folder) -> dict``."""
    found = {}
    for module in (text, media):
        for name in dir(module):
            if name.startswith("write_") and name[6:] in CHECKED_AGAINST:
                found[name[6:]] = getattr(module, name)
    return found


def folder_of(inp: Input) -> str:
    if inp.name in REQUEST_FOLDERS:
        return REQUEST_FOLDERS[inp.name][0]
    if not inp.mirror_dir:
        raise DataError(None, f"input {inp.name!r} has neither a mirror_dir nor a stand-in folder",
                        "add it to mmt_repro.standins.mirror.REQUEST_FOLDERS")
    return inp.mirror_dir


def _count(path: Path) -> int:
    return len(read_lines(path))


#: Corpus sources whose preparation holds each split to its published size (``check_sizes``).
SIZED_SOURCES = ("iwslt14", "newstest", "vatex", "coco_captions", "karpathy")


def _unsized(world: World) -> dict:
    """``datasets`` entries of the overlay for config/config.yaml: no published-size check on
    its prepared corpora, and TasvirEt's split at the stand-in's Flickr8k list sizes."""
    from ..config import load_yaml

    out: dict = {}
    for name, ds in (load_yaml(MANIFEST.parent / "config.yaml").get("datasets") or {}).items():
        if ds.get("source") in SIZED_SOURCES:
            out[name] = {"check_sizes": False}
        elif ds.get("source") == "tasviret":
            out[name] = {"split_sizes": [len(world.f8k[s]) for s in ("train", "dev", "test")]}
    return out


def write_mirror(root: str | Path, seed: int = 1, inputs: Iterable[str] | None = None,
                 shared: str | Path | None = SHARED, real_shapes: bool = False, scale: int = 1,
                 video_seconds: float = 10.0, video_fps: int = 10) -> dict:
    """Write the stand-ins of ``inputs`` (default: every input of the manifest but
    :data:`~mmt_repro.standins.NOT_WRITTEN`, and the :data:`EXTRAS`) under ``root``; returns ``{"manifest", "config",
    "inputs": {input: [files]}}``. ``shared``: a folder laid out like ../shared/datasets whose
    files' first lines the stand-ins take (None: seeded text only); ``real_shapes``: checkpoints
    and vocabularies at their real sizes; ``scale``: lines per split times this."""
    root = Path(root).resolve()
    manifest = load_manifest()
    raw = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))["inputs"]
    table = writers()
    extras = [n for n in (inputs or []) if n in EXTRAS]
    wanted = [n for n in inputs if n not in EXTRAS] if inputs is not None else \
        [n for n in manifest if n not in NOT_WRITTEN]
    unknown = [n for n in wanted if n not in table]
    if unknown:
        raise DataError(None, f"no stand-in writer for {', '.join(unknown)}",
                        f"inputs with writers: {', '.join(sorted([*table, *EXTRAS]))}")
    shared = Path(shared) if shared and Path(shared).is_dir() else None
    world = World(seed, shared, real_shapes, scale, video_seconds, video_fps)
    extra: dict[str, dict] = {}
    written: dict[str, list[str]] = {}
    for name in wanted:
        inp = manifest.input(name)
        folder = root / folder_of(inp)
        world.reseed(name)
        table[name](world, folder)
        if not inp.files and name not in REQUEST_FOLDERS:
            continue
        files = {}
        for fname, f in inp.files.items():
            path = folder / fname
            if not path.is_file():
                raise DataError(path, f"the stand-in writer of {name} did not write {fname}",
                                "write every file the manifest declares (mmt_repro.standins)")
            # the real entry with the stand-in's checksum and line count (URLs and unpack kept;
            # a publisher's md5 dropped: it is the real file's)
            spec = {k: v for k, v in (raw[name].get("files") or {})[fname].items() if k != "md5"}
            spec["sha256"] = sha256_of(path)
            if f.lines is not None:
                spec["lines"] = _count(path)
            files[fname] = spec
        entry: dict = {"files": files} if files else {}
        if name in REQUEST_FOLDERS and inp.files:
            entry["mirror_dir"] = REQUEST_FOLDERS[name][0]
        if entry:
            extra[name] = entry
        written[name] = sorted(inp.files) or sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                                                    if p.is_file())
        log.info("stand-in %s: %d files under %s", name, len(written[name]), folder)
    manifest_path = root / MANIFEST_NAME
    with atomic_write(manifest_path) as fh:
        fh.write(f"# Stand-in checksums (mmt_repro.standins, seed {seed}); read through inputs.manifest_extra.\n")
        yaml.safe_dump({"inputs": extra}, fh, sort_keys=False, allow_unicode=True, width=120)
    overlay: dict = {"inputs": {"mirror": str(root), "manifest_extra": [str(manifest_path)]}, "datasets": {}}
    for name, (rel, keys) in REQUEST_FOLDERS.items():
        if name in written:
            for key in keys:
                _, dataset, field = key.split(".")
                overlay["datasets"].setdefault(dataset, {})[field] = str(root / rel)
    for name, (rel, writer, keys) in EXTRAS.items():
        if inputs is None or name in extras:
            world.reseed(name)
            writer(world, root / rel)
            written[name] = sorted(p.name for p in (root / rel).iterdir())
            for key in keys:
                _, dataset, _, fs, field = key.split(".")
                overlay["datasets"].setdefault(dataset, {}).setdefault("features", {}).setdefault(fs, {})[field] = \
                    str(root / rel)
    for dataset, keys in _unsized(world).items():
        overlay["datasets"].setdefault(dataset, {}).update(keys)
    config_path = root / CONFIG_NAME
    with atomic_write(config_path) as fh:
        fh.write("# Points a run at the stand-in mirror (merge on top of a config with --configfile).\n")
        yaml.safe_dump(overlay, fh, sort_keys=False, width=120)
    return {"manifest": str(manifest_path), "config": str(config_path), "inputs": written}
