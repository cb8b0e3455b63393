"""Finding the files of a published feature release: one file per image or video
(:func:`find_items`), or one file per split under the split's name or a release's spelling of it
(:func:`split_file`: pysimt's ``valid_obj36.npz``, nmtpytorch's ``<split>-resnet50-<layer>...npy``,
LIUM's ``flickr30k_ResNet50_pool5_test2016.npy``). Missing files are one
:class:`~mmt_repro.io.DataError` naming what the folder holds and the fix."""

from __future__ import annotations

import re
from pathlib import Path

from mmt_repro.features.store import list_problems
from mmt_repro.io import DataError

COCO = re.compile(r"^COCO_[A-Za-z0-9]+_0*(\d+)$")


def find_item(src: Path, name: str, suffix: str) -> Path | None:
    """The file of one image or video in ``src``: ``<name><suffix>``, ``<stem><suffix>`` or, for a
    COCO name (``COCO_<split>_<12 digits>``), ``<integer id><suffix>``; None when absent."""
    stem = Path(name).stem
    cands = [src / f"{name}{suffix}", src / f"{stem}{suffix}"]
    m = COCO.match(stem)
    if m:
        cands.append(src / f"{int(m.group(1))}{suffix}")
    return next((c for c in cands if c.is_file()), None)


def find_items(src: Path, names: list[str], suffix: str, what: str) -> list[Path]:
    """:func:`find_item` of every name; every missing one listed in one DataError."""
    found = [find_item(src, n, suffix) for n in names]
    missing = [f"{n} (no {n}{suffix} or {Path(n).stem}{suffix})" for n, p in zip(names, found) if p is None]
    if missing:
        raise DataError(src, list_problems("missing pre-extracted", missing, src, what=what),
                        "download the complete official feature release, or remove those items from the list")
    return found  # type: ignore[return-value]


#: A Multi30k split's spellings in the releases: the split's own name first, then pysimt's BUTD
#: files (``valid_obj36.npz``) and LIUM's WMT17 files (``..._test2016.npy``, ``testcoco``).
SPLIT_ALIASES = {
    "val": ("valid",),
    "test_2016_flickr": ("test2016",),
    "test_2017_flickr": ("test2017",),
    "test_2017_mscoco": ("testcoco",),
}
#: The words a file name uses for a ResNet-50 layer (nmtpytorch names torchvision's layer3/layer4
#: ``res4f_relu``/``res5c_relu`` and its pool ``avgpool``).
LAYER_WORDS = {"pool5": ("pool5", "avgpool", "avgp"), "res4f": ("res4f",), "res5c": ("res5c",)}


def split_names(split: str) -> tuple[str, ...]:
    """A split's name and the releases' spellings of it (:data:`SPLIT_ALIASES`)."""
    return (split, *SPLIT_ALIASES.get(split, ()))


def _names_split(file: str, names: tuple[str, ...], suffix: str) -> bool:
    if not file.endswith(suffix):
        return False
    stem = file[: -len(suffix)]
    return any(stem == n or stem.startswith(f"{n}-") or stem.endswith(f"_{n}") or stem == f"{n}_obj36"
               for n in names)


def _folders(src: Path) -> list[Path]:
    """``src`` and its sub-folders (an archive unpacked with its top folder)."""
    return [src, *sorted(p for p in src.iterdir() if p.is_dir() and not p.name.startswith("."))]


def split_file(src: Path, split: str, suffix: str, layer: str | None = None) -> Path | None:
    """The file of ``split`` in the folder ``src`` (or one of its sub-folders): the split's name
    or a release's spelling of it, told apart by the ``layer`` word in the name where several
    match; None when no file names the split. Several left is a DataError listing them."""
    names = split_names(split)
    for folder in _folders(src):
        found = sorted(f for f in folder.iterdir() if f.is_file() and _names_split(f.name, names, suffix))
        if len(found) > 1 and layer:
            for words in (LAYER_WORDS.get(layer, (layer,)), LAYER_WORDS["res5c"] if layer == "pool5" else ()):
                picked = [f for f in found if any(w in f.name.lower() for w in words)]
                if picked:
                    found = picked
                    break
        if len(found) > 1:
            raise DataError(folder, f"several files hold split {split!r}: {', '.join(f.name for f in found)}",
                            "set the feature set's `layer` (res4f, res5c or pool5) to pick one, or point `src` at "
                            "the file itself")
        if found:
            return found[0]
    return None


def no_split_file(src: Path, split: str, suffix: str) -> DataError:
    held = sorted(str(f.relative_to(src)) for d in _folders(src) for f in d.glob(f"*{suffix}"))
    shown = ", ".join(held[:20]) + (f" and {len(held) - 20} more" if len(held) > 20 else "") if held else "none"
    return DataError(src, f"no {suffix} file of split {split!r} (looked for {' / '.join(split_names(split))}, as "
                     f"<split>{suffix}, <split>-*{suffix} or *_<split>{suffix}, here and in its sub-folders; "
                     f"{suffix} files here: {shown})",
                     f"point `src` at the folder of the release that holds the split's {suffix} file (or at the "
                     "file itself); the release must cover every split the tables read")
