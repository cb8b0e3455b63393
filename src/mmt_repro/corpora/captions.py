"""Image-caption corpora: Karpathy split JSONs (COCO, Flickr30k, Flickr8k), TasvirEt, Flickr8k text.

Used by BertGen (Mitzalis et al. 2021, section 2.2.1): English Flickr30k captioning, COCO
Karpathy test (5000 images), and Turkish captioning on TasvirEt with its own split.

Input formats
    *Karpathy JSON* (``dataset_coco.json``, ``dataset_flickr30k.json``, ``dataset_flickr8k.json``
    from ``cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip``; TasvirEt's
    ``tasviret8k_captions.json`` has the same layout): ``{"dataset": ..., "images": [{"filename",
    "filepath" (COCO only), "split": train|val|test|restval, "sentences": [{"raw", "tokens"}]}]}``.

    *Flickr8k.token.txt*: ``<image>.jpg#<k>\\t<caption>``, k = 0..4 (:func:`read_flickr8k_tokens`).

Output layout (chosen to match Multi30k task 2, ``train.{k}.{lang}``)
    ``out_dir/image_splits/{split}.txt`` lists the images of ``split``, one per line, and
    ``out_dir/{split}.{k}.{lang}`` (k = 1..n) holds the k-th caption of each image, so line i of
    every file belongs to image i. Captions are the ``raw`` text with whitespace runs (COCO has
    some newlines inside captions) collapsed and both ends trimmed; ``text="tokens"`` takes
    Karpathy's lowercased, punctuation-free ``tokens`` joined by spaces instead.

Karpathy's ``restval`` (COCO only: 30,504 val2014 images outside his 5k val / 5k test) is by
default merged into ``train`` in JSON order, as Karpathy's own code and most captioning work
do (113,287 train images); ``restval="drop"`` leaves it out, ``restval="keep"`` writes it as
its own split.

TasvirEt split (:func:`split_tasviret`). BertGen says: "Since Flickr8k is a subset of
Flickr30k, we create a new split of TasvirEt to avoid data leakage between training and test
splits. The resulting training, validation and test splits contain 6914, 543, and 543
images." The rule that gives exactly these numbers (checked on the real lists in
``../shared/datasets``): of the 8,000 images of the official Flickr8k splits
(``Flickr_8k.{train,dev,test}Images.txt``), exactly 6,914 are Multi30k (Flickr30k) *training*
images; the other 1,086 = 2 x 543 (238 Multi30k val, 239 test_2016_flickr, 609 in no Multi30k
split) are shared between val and test. So TasvirEt train = the Flickr8k images that BertGen
also trains on through Multi30k/Flickr30k, and its val/test hold no image seen in training by
any task. Which of the 1,086 go to val and which to test is not published; we draw it from a
fixed seed (a hash of seed and image name, independent of Python/numpy versions).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from .checks import KARPATHY_SPLIT_IMAGES, KNOWN_SIZES, check_lines
from ..io import DataError, read_json, read_lines, write_lines

log = logging.getLogger(__name__)

KARPATHY_SPLITS = ("train", "restval", "val", "test")
TASVIRET_SIZES = (6914, 543, 543)
TASVIRET_CAPTIONS = 2
_WS = re.compile(r"\s+")
_F8K_TYPO = re.compile(r"(\.jpg)\.\d+$")


def _clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def read_karpathy(json_path: str | os.PathLike) -> dict:
    """Load and validate a Karpathy-style caption JSON (module docstring); returns the dict."""
    json_path = Path(json_path)
    data = read_json(json_path, "download caption_datasets.zip (Karpathy) and unzip it")
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list) or not images:
        raise DataError(json_path, "no top-level 'images' list", "pass a Karpathy-style caption JSON")
    seen: set[str] = set()
    for i, img in enumerate(images):
        missing = [k for k in ("filename", "split", "sentences") if k not in img]
        if missing:
            raise DataError(json_path, f"images[{i}] lacks {', '.join(missing)}", "pass a Karpathy-style caption JSON")
        if img["split"] not in KARPATHY_SPLITS:
            raise DataError(json_path, f"images[{i}] ({img['filename']}) has split {img['split']!r}",
                            f"splits must be one of {', '.join(KARPATHY_SPLITS)}")
        name = f"{img.get('filepath', '')}/{img['filename']}"
        if name in seen:
            raise DataError(json_path, f"image {img['filename']} is listed twice", "fetch the JSON again")
        seen.add(name)
    return data


def _captions(img: dict, json_path: Path, n: int, text: str) -> list[str]:
    sents = img["sentences"]
    if len(sents) < n:
        raise DataError(json_path, f"image {img['filename']} has {len(sents)} captions, fewer than {n}",
                        "lower captions_per_image, or fetch the JSON again")
    out = []
    for s in sents[:n]:
        if text == "raw":
            cap = _clean(s.get("raw", ""))
        else:
            cap = " ".join(t for t in s.get("tokens", []) if t.strip())
        if not cap:
            raise DataError(json_path, f"image {img['filename']} has an empty caption", "fetch the JSON again")
        out.append(cap)
    return out


def _write_caption_splits(out_dir: Path, lang: str, splits: dict[str, list[tuple[str, list[str]]]], n: int,
                          source: Path, corpus: str | None) -> dict[str, int]:
    prepared = {}
    for split, items in splits.items():
        names = [name for name, _ in items]
        files = {f"{split}.{k}.{lang}": [caps[k - 1] for _, caps in items] for k in range(1, n + 1)}
        want = KNOWN_SIZES.get(corpus, {}).get(split) if corpus else None
        check_lines(files, source=source, image_list=names, expected_lines=want)
        prepared[split] = (names, files)
    counts = {}
    out_dir = Path(out_dir)
    for split, (names, files) in prepared.items():
        write_lines(out_dir / "image_splits" / f"{split}.txt", names)
        for fname, lines in files.items():
            write_lines(out_dir / fname, lines)
        counts[split] = len(names)
    return counts


def prepare_karpathy(
    json_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    lang: str = "en",
    restval: str = "train",
    captions_per_image: int = 5,
    text: str = "raw",
    with_filepath: bool = False,
    check_sizes: bool = True,
) -> dict[str, int]:
    """Write a Karpathy caption JSON as per-split image lists and k-th-caption files.

    Output: ``out_dir/image_splits/{train,val,test}.txt`` and ``out_dir/{split}.{k}.{lang}``,
    k = 1..``captions_per_image`` (the first n captions of each image in JSON order; COCO has a
    few images with 6 or 7). ``restval``: ``"train"`` (merge, default), ``"drop"`` or
    ``"keep"``. Image names are ``filename`` (``filepath/filename`` with ``with_filepath``).
    With ``check_sizes`` and a JSON whose ``"dataset"`` is coco, flickr30k or flickr8k, every
    Karpathy split must have its published number of images
    (:data:`~mmt_repro.corpora.checks.KARPATHY_SPLIT_IMAGES`). Returns ``{split: images}``.
    """
    if restval not in ("train", "drop", "keep"):
        raise DataError(None, f"restval={restval!r}", "use 'train' (merge into train), 'drop' or 'keep'")
    if text not in ("raw", "tokens"):
        raise DataError(None, f"text={text!r}", "use 'raw' or 'tokens'")
    json_path = Path(json_path)
    data = read_karpathy(json_path)
    dataset = str(data.get("dataset", ""))
    by_label: dict[str, int] = {}
    for img in data["images"]:
        by_label[img["split"]] = by_label.get(img["split"], 0) + 1
    if check_sizes and dataset in KARPATHY_SPLIT_IMAGES:
        for label, want in KARPATHY_SPLIT_IMAGES[dataset].items():
            if by_label.get(label, 0) != want:
                raise DataError(json_path, f"Karpathy {dataset} split {label!r} has {by_label.get(label, 0)} images, "
                                f"the published size is {want}", "fetch caption_datasets.zip again "
                                "(or pass check_sizes=False for a deliberate subset)")
    order = ["train", "val", "test"] + (["restval"] if restval == "keep" else [])
    splits: dict[str, list[tuple[str, list[str]]]] = {s: [] for s in order}
    for img in data["images"]:
        label = img["split"]
        if label == "restval":
            if restval == "drop":
                continue
            label = "train" if restval == "train" else "restval"
        name = f"{img['filepath']}/{img['filename']}" if with_filepath and img.get("filepath") else img["filename"]
        splits[label].append((name, _captions(img, json_path, captions_per_image, text)))
    for split, items in splits.items():
        if not items:
            raise DataError(json_path, f"split {split!r} has no images", "pass a complete Karpathy-style JSON")
    return _write_caption_splits(Path(out_dir), lang, splits, captions_per_image, json_path, corpus=None)


def read_flickr8k_tokens(path: str | os.PathLike) -> dict[str, list[str]]:
    """Captions of ``Flickr8k.token.txt``: ``{image file name: [caption #0, ..., #4]}`` in file order.

    Lines are ``<name>#<k>\\t<caption>``. The official file labels caption #0 of
    ``2258277193_586949ec62.jpg`` as ``2258277193_586949ec62.jpg.1#0``; such a ``.jpg.N``
    suffix is read as ``.jpg``, which gives 8,092 images with 5 captions each. Every image
    must have captions 0..n-1 exactly once; captions are whitespace-trimmed.
    """
    path = Path(path)
    caps: dict[str, dict[int, str]] = {}
    for i, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        key, sep, caption = line.partition("\t")
        name, hash_, k = key.rpartition("#")
        if not sep or not hash_ or not k.isdigit():
            raise DataError(path, f"line {i} is not '<image>#<k><TAB><caption>': {line[:80]!r}",
                            "pass the official Flickr8k.token.txt")
        name = _F8K_TYPO.sub(r"\1", name)
        slot = caps.setdefault(name, {})
        if int(k) in slot:
            raise DataError(path, f"line {i}: caption #{k} of {name} appears twice", "fetch the file again")
        slot[int(k)] = _clean(caption)
    out = {}
    for name, slot in caps.items():
        if sorted(slot) != list(range(len(slot))):
            raise DataError(path, f"{name} has captions #{sorted(slot)}, not 0..{len(slot) - 1}", "fetch the file again")
        out[name] = [slot[k] for k in range(len(slot))]
    if not out:
        raise DataError(path, "no captions", "pass the official Flickr8k.token.txt")
    return out


def flickr30k_id(name: str) -> str:
    """The Flickr photo id of a Flickr8k/Flickr30k/Multi30k image name.

    ``1000268201_693b08cb0e.jpg`` (Flickr8k) and ``1000268201.jpg`` (Flickr30k, Multi30k) both
    give ``1000268201``: the part of the base name before the first ``_`` or ``.``.
    """
    base = name.strip().rsplit("/", 1)[-1]
    return re.split(r"[_.]", base, maxsplit=1)[0]


def _rank(seed: int, name: str) -> str:
    return hashlib.sha256(f"{int(seed)}\t{name}".encode()).hexdigest()


def split_tasviret(
    image_ids: Iterable[str],
    seed: int,
    sizes: Sequence[int] = TASVIRET_SIZES,
    exclude: Iterable[str] = (),
) -> dict[str, list[str]]:
    """BertGen's leakage-free TasvirEt image split, made reproducibly from ``seed``.

    ``exclude`` holds images that must not reach val or test because they are trained on
    elsewhere: pass the Multi30k (Flickr30k) *train* image list. Matching is by Flickr photo id
    (:func:`flickr30k_id`), so Flickr8k and Multi30k names compare equal. Every image gets a
    rank, the SHA-256 of ``"{seed}\\t{image}"``: test takes the ``sizes[2]`` lowest-ranked images
    not in ``exclude``, val the next ``sizes[1]``, and train the ``sizes[0]`` lowest-ranked of the
    rest (all of them when they are exactly enough, as for the 8,000 Flickr8k split images
    with the Multi30k train list). Images left over are dropped (logged). Returns
    ``{"train", "val", "test"}`` -> image names in input order; raises
    :class:`~mmt_repro.io.DataError` when there are too few eligible images or duplicates.
    """
    names = [str(x).strip() for x in image_ids]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise DataError(None, f"image {dup!r} is listed more than once", "pass each image once")
    if len(sizes) != 3 or any(int(s) < 0 for s in sizes):
        raise DataError(None, f"sizes={tuple(sizes)!r}", "pass (train, val, test) image counts")
    n_train, n_val, n_test = (int(s) for s in sizes)
    banned = {flickr30k_id(x) for x in exclude}
    ranked = sorted(names, key=lambda n: _rank(seed, n))
    eligible = [n for n in ranked if flickr30k_id(n) not in banned]
    if len(eligible) < n_val + n_test:
        raise DataError(None, f"only {len(eligible)} images are outside the excluded set, val+test need {n_val + n_test}",
                        "check the exclusion list (the Multi30k train images) and the image list (Flickr8k)")
    test = set(eligible[:n_test])
    val = set(eligible[n_test : n_test + n_val])
    rest = [n for n in ranked if n not in test and n not in val]
    if len(rest) < n_train:
        raise DataError(None, f"only {len(rest)} images are left for train, {n_train} needed",
                        "pass more images or smaller sizes")
    train = set(rest[:n_train])
    if len(rest) > n_train:
        log.warning("split_tasviret: %d images are left out of every split", len(rest) - n_train)
    return {
        "train": [n for n in names if n in train],
        "val": [n for n in names if n in val],
        "test": [n for n in names if n in test],
    }


def read_image_list(path: str | os.PathLike) -> list[str]:
    """Image names of an image list (one per line, blank lines refused)."""
    return [x.strip() for x in read_lines(path, allow_empty_lines=False)]


def prepare_tasviret(
    json_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    seed: int,
    exclude: Iterable[str],
    restrict_to: Iterable[str] | None = None,
    lang: str = "tr",
    captions_per_image: int = TASVIRET_CAPTIONS,
    sizes: Sequence[int] = TASVIRET_SIZES,
) -> dict[str, int]:
    """TasvirEt (``tasviret8k_captions.json``, Karpathy-style, 2 Turkish captions per Flickr8k
    image) split with :func:`split_tasviret` and written like :func:`prepare_karpathy`.

    The JSON's own ``split`` field is ignored. ``exclude``: the Multi30k train image names.
    ``restrict_to``: optional image names to draw from (e.g. the 8,000 images of
    ``Flickr_8k.{train,dev,test}Images.txt``); by default every image in the JSON. With the
    default sizes, the published TasvirEt sizes are checked. Returns ``{split: images}``.
    """
    json_path = Path(json_path)
    data = read_karpathy(json_path)
    by_name = {img["filename"]: img for img in data["images"]}
    pool = list(by_name)
    if restrict_to is not None:
        allowed = {str(x).strip().rsplit("/", 1)[-1] for x in restrict_to}
        missing = sorted(allowed - set(by_name))
        if missing:
            raise DataError(json_path, f"{len(missing)} images of restrict_to are not in the JSON (e.g. {missing[0]})",
                            "pass the Flickr8k image lists that match this TasvirEt JSON")
        pool = [n for n in pool if n in allowed]
    parts = split_tasviret(pool, seed, sizes=sizes, exclude=exclude)
    splits = {s: [(n, _captions(by_name[n], json_path, captions_per_image, "raw")) for n in parts[s]]
              for s in ("train", "val", "test")}
    corpus = "tasviret" if tuple(int(s) for s in sizes) == TASVIRET_SIZES else None
    return _write_caption_splits(Path(out_dir), lang, splits, captions_per_image, json_path, corpus=corpus)
