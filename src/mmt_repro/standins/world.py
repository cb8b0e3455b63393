"""The names every stand-in shares, drawn once per seed: the Multi30k images of each split, the
COCO and Flickr8k images, the VATEX videos, the sizes of each cut. Inputs that name the same
image or video (an image list, a caption JSON, a feature file, an image folder) take the name
from here, so the stand-in mirror is consistent across inputs as the real one is.

Where a local copy of the real file is at hand (``shared``: a folder laid out like
``../shared/datasets``), names and sentences are its first lines.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np

from ..io import read_lines
from .common import WORDS, Texts

#: Lines (= images) per Multi30k split, and the other cuts, at the default size.
SIZES = {"train": 40, "val": 8, "test_2016_flickr": 6, "test_2017_flickr": 6, "test_2017_mscoco": 6,
         "task2_test_2017": 6, "coco_train": 4, "coco_restval": 2, "coco_val": 3, "coco_test": 4,
         "f8k_train": 16, "f8k_dev": 6, "f8k_test": 6, "vatex_train": 8, "vatex_val": 4, "vatex_test": 3,
         "wmt15": 24, "iwslt_talk": 12, "iwslt_set": 6, "newstest": 6, "setimes": 30}
#: M-BERT cased's WordPiece count (vocab.txt lines): the size of the vocabulary at real shapes.
MBERT_WORDPIECES = 119_547
_TOKEN = re.compile(r"[^\W\d_]+", re.UNICODE)


class World:
    """Names and sizes of one stand-in mirror (see the module docstring)."""

    def __init__(self, seed: int = 1, shared: Path | None = None, real_shapes: bool = False, scale: int = 1,
                 video_seconds: float = 10.0, video_fps: int = 10):
        self.seed, self.real_shapes = int(seed), bool(real_shapes)
        self.video_seconds, self.video_fps = float(video_seconds), int(video_fps)
        self.rng = np.random.default_rng(self.seed)
        self.texts = Texts(self.seed + 1, shared)
        self.n = {k: v * int(scale) for k, v in SIZES.items()}
        self.wordpieces = MBERT_WORDPIECES
        t = self.texts
        self.m30k_images = {}
        for split in ("train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"):
            n = self.n[split]
            names = t.real(f"multi30k/task1/image_splits/{split}.txt", n)
            if names is None and split == "test_2017_mscoco":
                names = [self._coco_name("train2014" if i % 2 else "val2014") + f"#{100000 + i}" for i in range(n)]
            elif names is None:
                names = [f"{int(self.rng.integers(10**9, 10**10))}.jpg" for _ in range(n)]
            self.m30k_images[split] = names
        test_2017 = t.real("multi30k/task2/image_splits/test_2017_images.txt", self.n["task2_test_2017"]) or \
            [f"{int(self.rng.integers(10**10, 10**11))}_{t.hex_id(10)}.jpg" for _ in range(self.n["task2_test_2017"])]
        self.m30k2_images = {"train": self.m30k_images["train"], "val": self.m30k_images["val"],
                             "test_2016": self.m30k_images["test_2016_flickr"], "test_2017": test_2017}
        self.coco_karpathy = [(self._coco_name("train2014" if s == "train" else "val2014"), s)
                              for s in ("train", "restval", "val", "test") for _ in range(self.n[f"coco_{s}"])]
        self.f30k_karpathy = [(n, s) for split, s in (("train", "train"), ("val", "val"), ("test_2016_flickr", "test"))
                              for n in self.m30k_images[split]]
        self.f8k = {}
        for split in ("train", "dev", "test"):
            n = self.n[f"f8k_{split}"]
            self.f8k[split] = t.real(f"flickr8k-text/Flickr_8k.{split}Images.txt", n) or \
                [f"{int(self.rng.integers(10**9, 10**10))}_{t.hex_id(10)}.jpg" for _ in range(n)]
        self.f8k_all = [n for s in ("train", "dev", "test") for n in self.f8k[s]]
        self.f8k_captions = self._f8k_captions(shared)
        self.f8k_karpathy = [(n, {"dev": "val"}.get(s, s)) for s in ("train", "dev", "test") for n in self.f8k[s]]
        val_ids = self._vatex_val_ids(shared)
        self.vatex = {"train": [self._video_id() for _ in range(self.n["vatex_train"])], "val": val_ids}
        self.vatex_test = [self._video_id() for _ in range(self.n["vatex_test"])]

    def reseed(self, input_name: str) -> None:
        """Random state of its own for ``input_name``: an input's stand-in is the same whichever
        other inputs are written with it."""
        key = [self.seed, zlib.crc32(input_name.encode("utf-8"))]
        self.rng = np.random.default_rng(key)
        self.texts.rng = np.random.default_rng(key + [1])

    def shared_lines(self, key: str, lang: str, n: int, rel: str | None = None) -> list[str]:
        """Lines that several inputs hold alike (a news test set as plain text and as SGML): the
        first lines of ``rel`` when there is a copy, else seeded by ``key`` alone, so every input
        that asks gets the same sentences whatever was drawn before."""
        texts = Texts(self.seed, self.texts.shared)
        texts.rng = np.random.default_rng([self.seed, zlib.crc32(key.encode("utf-8"))])
        return texts.lines(lang, n, rel)

    # ------------------------------------------------------------------ names
    def _coco_name(self, folder: str) -> str:
        return f"COCO_{folder}_{int(self.rng.integers(1, 581930)):012d}.jpg"

    def _video_id(self) -> str:
        yt = self.texts.hex_id(11, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        start = int(self.rng.integers(0, 300))
        return f"{yt}_{start:06d}_{start + 10:06d}"

    def _vatex_val_ids(self, shared: Path | None) -> list[str]:
        n = self.n["vatex_val"]
        ids = self.texts.real("vatex-val-parallel/val.id", 5 * n)
        if ids is None:
            return [self._video_id() for _ in range(n)]
        return list(dict.fromkeys(x.split("&")[0] for x in ids))

    def _f8k_captions(self, shared: Path | None) -> dict[str, list[str]]:
        path = Path(shared) / "flickr8k-text" / "Flickr8k.token.txt" if shared else None
        if path is None or not path.is_file():
            return {}
        wanted, out = set(self.f8k_all), {}
        for line in read_lines(path):
            key, _, cap = line.partition("\t")
            name, _, k = key.rpartition("#")
            if name in wanted:
                out.setdefault(name, []).append(cap)
        return {n: caps for n, caps in out.items() if len(caps) == 5}

    # ------------------------------------------------------------------ Multi30k
    def m30k_langs(self, split: str) -> list[str]:
        return ["en", "de", "fr"] + (["cs"] if split in ("train", "val", "test_2016_flickr") else [])

    def m30k_list(self, split: str) -> list[str]:
        return self.m30k_images[split]

    def flickr30k_names(self) -> list[str]:
        """Every Flickr30k image a stand-in list names (Multi30k task 1 and 2, Karpathy)."""
        names = [n for s, ns in self.m30k_images.items() if s != "test_2017_mscoco" for n in ns]
        return list(dict.fromkeys(names + self.m30k2_images["test_2017"]))

    def coco_names(self) -> list[str]:
        """Every COCO file name the stand-ins name (Karpathy's JSON, Multi30k's COCO test list)."""
        names = [n for n, _ in self.coco_karpathy] + [n.split("#")[0] for n in self.m30k_images["test_2017_mscoco"]]
        return list(dict.fromkeys(names))

    def words(self, lang: str) -> list[str]:
        """The words of the stand-in text of ``lang`` (lower case), for word vectors and vocabularies."""
        found = list(WORDS.get(lang, []))
        if lang in ("en", "de", "fr"):
            for split in self.m30k_images:
                lines = self.texts.real(f"multi30k/task1/raw/{split}.{lang}.gz", len(self.m30k_images[split])) or []
                found += [m.group(0).lower() for line in lines for m in _TOKEN.finditer(line)]
        return list(dict.fromkeys(found + [".", ",", "a", "the"] if lang == "en" else found + [".", ","]))
