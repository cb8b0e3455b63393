"""Tiny BertGen inputs shared by the model's tests and its forced-scoring tests: a region store
in memory and a WordPiece vocabulary of made-up words."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mmt_repro.text.vocab import Vocab
from mmt_repro.text.wordpiece import LEARNED_SPECIALS

WORDS = [f"w{i}" for i in range(40)]


class Regions:
    """A region store in memory: ``n`` images of up to ``k`` regions (garbage in padded slots)."""

    def __init__(self, n: int, k: int = 4, d: int = 6, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.lengths = rng.integers(1, k + 1, size=n)
        self.arr = rng.normal(size=(n, k, d)).astype(np.float32)
        self.geo = np.zeros((n, k, 6), dtype=np.float32)
        for r in range(n):
            x1, y1 = rng.uniform(0, 0.5, size=(2, k))
            x2, y2 = x1 + rng.uniform(0.1, 0.5, size=k), y1 + rng.uniform(0.1, 0.5, size=k)
            self.geo[r] = np.stack([x1, y1, x2, y2, x2 - x1, y2 - y1], 1)
            self.arr[r, self.lengths[r]:] = 1e3
            self.geo[r, self.lengths[r]:] = 0
        self.shape = self.arr.shape

    def __len__(self):
        return len(self.arr)

    def batch(self, rows):
        mask = np.arange(self.arr.shape[1])[None] < self.lengths[rows][:, None]
        return self.arr[rows], mask

    def geometry(self, row):
        return self.geo[row]


def wordpiece_vocab(folder: Path) -> Vocab:
    """The learned specials and :data:`WORDS` as a WordPiece vocabulary written in ``folder``."""
    path = Path(folder) / "vocab.txt"
    path.write_text("\n".join([*LEARNED_SPECIALS, *WORDS]) + "\n", encoding="utf-8")
    return Vocab.from_wordpiece(path)
