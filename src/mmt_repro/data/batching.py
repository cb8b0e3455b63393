"""Parallel text (+ image features) as padded mini-batches for the shared trainer and decoder.

Sentence ``i`` of a split goes with row ``i`` of that split's feature store (the store's row
order is checked against the split's image list when it is built). Batches are dicts:

- ``src (batch, src_len)`` long, ``src_len (batch,)``; 0 is padding;
- ``tgt_in`` = ``<bos> y`` and ``tgt_out`` = ``y <eos>``, both ``(batch, tgt_len + 1)`` (absent
  without targets);
- ``img (batch, L, D)`` float32 or None;
- ``ids (batch,)``: the sentences' line numbers in the split.

Training order is a pure function of ``(seed, epoch)``: shuffled, bucketed by source length in
pools of 50 batches, then the batches shuffled; so a resumed run that skips the first ``n``
batches of an epoch sees exactly what an uninterrupted run sees.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from ..io import DataError, read_lines
from ..text.vocab import Vocab


class ParallelData:
    """Token ids of one split, optionally with its feature store."""

    def __init__(
        self,
        src_path: Path,
        src_vocab: Vocab,
        tgt_path: Path | None = None,
        tgt_vocab: Vocab | None = None,
        features=None,
        max_len: int | None = None,
        shuffle_images_seed: int | None = None,
        image_list: Path | None = None,
    ):
        src_lines = read_lines(src_path)
        # An empty source line (refused earlier by the corpus checks) decodes as a lone <unk>.
        self.src = [src_vocab.encode(line.split()) or [Vocab.unk_id] for line in src_lines]
        self.tgt = None
        if tgt_path is not None:
            tgt_lines = read_lines(tgt_path)
            if len(tgt_lines) != len(src_lines):
                raise DataError(
                    tgt_path,
                    f"has {len(tgt_lines)} lines but the source {src_path} has {len(src_lines)}",
                    "parallel files must have one line per sentence: re-run the preprocessing rules",
                )
            self.tgt = [tgt_vocab.encode(line.split()) for line in tgt_lines]
        self.features = features
        # Sentence i reads store row i, unless an image list names each sentence's image
        # (several sentences per image, e.g. back-translated comparable descriptions).
        self.image_rows = np.arange(len(self.src))
        if features is not None and image_list is not None:
            names = read_lines(image_list)
            if len(names) != len(self.src):
                raise DataError(
                    image_list, f"names {len(names)} images for {len(self.src)} sentences of {src_path}",
                    "the image list needs one image name per sentence",
                )
            self.image_rows = np.asarray(features.rows_for(names))
        elif features is not None and len(features) != len(self.src):
            raise DataError(
                getattr(features, "npy", None),
                f"feature store has {len(features)} rows but {src_path} has {len(self.src)} sentences",
                "rebuild the features for this split (its image list must have one image per sentence)",
            )
        # Optional adversarial condition: each sentence gets another sentence's image.
        if shuffle_images_seed is not None:
            self.image_rows = self.image_rows[derangement(len(self.src), shuffle_images_seed)]
        self.indices = list(range(len(self.src)))
        if max_len is not None:  # drop training pairs over max_len tokens on either side
            self.indices = [
                i
                for i in self.indices
                if len(self.src[i]) <= max_len and (self.tgt is None or len(self.tgt[i]) <= max_len)
            ]

    def __len__(self) -> int:
        return len(self.indices)

    def n_target_tokens(self) -> int:
        return sum(len(self.tgt[i]) + 1 for i in self.indices) if self.tgt is not None else 0

    def collate(self, ids: list[int]) -> dict:
        bos, eos = Vocab.bos_id, Vocab.eos_id
        src_len = torch.tensor([len(self.src[i]) for i in ids], dtype=torch.long)
        src = torch.zeros((len(ids), int(src_len.max())), dtype=torch.long)
        for row, i in enumerate(ids):
            src[row, : len(self.src[i])] = torch.tensor(self.src[i], dtype=torch.long)
        batch = {"src": src, "src_len": src_len, "ids": torch.tensor(ids, dtype=torch.long), "img": None}
        if self.tgt is not None:
            t_len = max(len(self.tgt[i]) for i in ids) + 1
            tgt_in = torch.zeros((len(ids), t_len), dtype=torch.long)
            tgt_out = torch.zeros((len(ids), t_len), dtype=torch.long)
            for row, i in enumerate(ids):
                y = self.tgt[i]
                tgt_in[row, : len(y) + 1] = torch.tensor([bos] + y, dtype=torch.long)
                tgt_out[row, : len(y) + 1] = torch.tensor(y + [eos], dtype=torch.long)
            batch["tgt_in"], batch["tgt_out"] = tgt_in, tgt_out
        if self.features is not None:
            rows = [int(self.image_rows[i]) for i in ids]
            img = np.stack([self.features[r] for r in rows])
            if not np.isfinite(img).all():
                bad = [r for r, x in zip(rows, img) if not np.isfinite(x).all()]
                raise DataError(getattr(self.features, "npy", None), f"feature row(s) {bad} hold NaN or Inf",
                                "delete the feature store and re-run feature extraction (check the images and weights)")
            batch["img"] = torch.from_numpy(img).float()
        return batch

    def train_batches(self, batch_size: int, seed: int, epoch: int, by_tokens: bool = False) -> list[list[int]]:
        """The epoch's batches (lists of sentence ids), a pure function of seed and epoch.

        ``by_tokens``: ``batch_size`` bounds the padded target tokens of a batch
        (``n_sentences * longest target``) instead of the number of sentences."""
        rng = random.Random(seed * 100003 + epoch)
        order = list(self.indices)
        rng.shuffle(order)
        pool = batch_size * 50 if not by_tokens else max(batch_size, 1000)
        batches: list[list[int]] = []
        for start in range(0, len(order), pool):
            chunk = sorted(order[start : start + pool], key=lambda i: len(self.src[i]))
            if not by_tokens:
                batches.extend(chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size))
                continue
            current: list[int] = []
            longest = 0
            for i in chunk:
                n = (len(self.tgt[i]) if self.tgt is not None else len(self.src[i])) + 1
                if current and max(longest, n) * (len(current) + 1) > batch_size:
                    batches.append(current)
                    current, longest = [], 0
                current.append(i)
                longest = max(longest, n)
            if current:
                batches.append(current)
        rng.shuffle(batches)
        return batches

    def eval_batches(self, batch_size: int) -> Iterator[dict]:
        """In-order batches covering every sentence."""
        ids = list(range(len(self.src)))
        for j in range(0, len(ids), batch_size):
            yield self.collate(ids[j : j + batch_size])


def check_feature_dim(model, *stores) -> None:
    """Refuse a feature store whose feature size (last axis) is not the model's ``img_dim``."""
    want = getattr(model.config, "img_dim", None) if getattr(model, "use_image", False) else None
    for store in stores:
        have = getattr(store, "shape", None)
        if want is not None and have is not None and have[-1] != want:
            raise DataError(getattr(store, "npy", None), f"features have dimension {have[-1]}, model "
                            f"{model.registry_name} expects img_dim={want}",
                            "use the feature set the model was configured for, or set img_dim to match")


def derangement(n: int, seed: int) -> np.ndarray:
    """A permutation of ``range(n)`` with no fixed point (n >= 2), reproducible from ``seed``."""
    if n < 2:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            return perm


def move(batch: dict, device: torch.device) -> dict:
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in batch.items()}
