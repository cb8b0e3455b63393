"""Parallel text (+ visual features) as padded mini-batches for the shared trainer and decoder.

Sentence ``i`` of a split goes with row ``i`` of that split's feature store (the store's row
order is checked against the split's image list when it is built). Batches are dicts with
named fields:

- ``src (batch, src_len)`` long, ``src_len (batch,)``, padded with the source vocabulary's pad
  id (absent when the task has no source text, e.g. captioning);
- ``tgt_in`` = ``<bos> y`` and ``tgt_out`` = ``y <eos>``, both ``(batch, tgt_len + 1)`` (absent
  without targets), with the target vocabulary's special ids;
- ``img (batch, L, D)`` float32 and ``img_mask (batch, L)`` bool (True = a real region, segment
  or grid cell; detector regions and video segments are padded to the store's L), or None;
- ``img_geometry (batch, L, 6)`` float32, only when the store is a region store (it has boxes,
  :class:`~mmt_repro.features.store.RegionStore`): each region's box as ``x1, y1, x2, y2, w, h``
  divided by the image's width or height (zeros in padded slots);
- ``src_lang``, ``tgt_lang``: lists of language codes, one per example, when the data was
  given its language pair (``langs``; a multilingual model picks its output language from
  them, e.g. BertGen's target-language specifier); ``src_lang`` is None for captioning;
- ``ids (batch,)``: the sentences' line numbers in the split;
- one list per extra (``extras={"name": [...]}`` gives ``batch["name"]``), in batch order;
  except the word alignments (``extras={"align": [...]}``, one line of links per pair), laid
  out as tensors ``align_fwd``/``align_bwd`` (:mod:`mmt_repro.datasets.alignments`).

Captioning data (no source text) may give several target files (``tgt_path`` a list): line
``i`` of every file is a caption of image ``i`` (row ``i`` of the store), so the examples are
every caption of every image (Multi30k task 2 has 5 per image, TasvirEt 2).

Training order is a pure function of ``(seed, epoch)``: shuffled, bucketed by source length in
pools of 50 batches, then the batches shuffled; so a resumed run that skips the first ``n``
batches of an epoch sees exactly what an uninterrupted run sees.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from ..io import DataError, read_lines
from .alignments import alignment_tensors
from .feature_reads import read_feature_rows, read_geometry_rows


class ParallelData:
    """Token ids of one split, optionally with its feature store."""

    def __init__(
        self,
        src_path: Path,
        src_vocab: Vocab,
        tgt_path: Path | list[Path] | None = None,
        tgt_vocab: Vocab | None = None,
        features=None,
        max_len: int | None = None,
        shuffle_images_seed: int | None = None,
        image_list: Path | None = None,
        extras: dict[str, list] | None = None,
        langs: tuple[str | None, str] | None = None,
    ):
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.langs = None if langs is None else (langs[0], langs[1])
        self.src = None
        if src_path is not None:
            # An empty source line (refused earlier by the corpus checks) decodes as a lone <unk>.
            self.src = [src_vocab.encode(line.split()) or [src_vocab.unk_id] for line in read_lines(src_path)]
        self.tgt = None
        caption_rows = tgt_lines = None
        if isinstance(tgt_path, (list, tuple)):  # several captions per image
            tgt_lines, caption_rows = self._caption_files(list(tgt_path), src_path, features, image_list)
            tgt_path = tgt_path[0] if tgt_path else None  # named in messages
        elif tgt_path is not None:
            tgt_lines = read_lines(tgt_path)
        if tgt_lines is not None:
            if self.src is not None and len(tgt_lines) != len(self.src):
                raise DataError(
                    tgt_path,
                    f"has {len(tgt_lines)} lines but the source {src_path} has {len(self.src)}",
                    "parallel files must have one line per sentence: re-run the preprocessing rules",
                )
            self.tgt = [tgt_vocab.encode(line.split()) for line in tgt_lines]
        n = len(self.src) if self.src is not None else len(self.tgt) if self.tgt is not None else len(features or ())
        self.n_examples = n
        self.features = features
        self.resident = None  # a ResidentFeatures of ``features`` (mmt_repro.datasets.resident), set by the trainer
        self.extras = dict(extras or {})
        for name, values in self.extras.items():
            if len(values) != n:
                raise DataError(src_path or tgt_path, f"has {n} examples but extra {name!r} has {len(values)}",
                                "extras need one entry per example")
        # Sentence i reads store row i, unless an image list names each sentence's image
        # (several sentences per image, e.g. back-translated comparable descriptions).
        self.image_rows = np.arange(n)
        if caption_rows is not None:
            self.image_rows = caption_rows
        elif features is not None and image_list is not None:
            names = read_lines(image_list)
            if len(names) != n:
                raise DataError(
                    image_list, f"names {len(names)} images for {n} sentences of {src_path or tgt_path}",
                    "the image list needs one image name per sentence",
                )
            self.image_rows = np.asarray(features.rows_for(names))
        elif features is not None and len(features) != n:
            raise DataError(
                getattr(features, "npy", None),
                f"feature store has {len(features)} rows but {src_path or tgt_path} has {n} sentences",
                "rebuild the features for this split (its image list must have one image per sentence)",
            )
        # Optional adversarial condition: each sentence gets another sentence's image.
        if shuffle_images_seed is not None:
            self.image_rows = self.image_rows[derangement(n, shuffle_images_seed)]
        self.indices = list(range(n))
        if max_len is not None:  # drop training pairs over max_len tokens on either side
            self.indices = [
                i
                for i in self.indices
                if (self.src is None or len(self.src[i]) <= max_len) and (self.tgt is None or len(self.tgt[i]) <= max_len)
            ]

    @staticmethod
    def _caption_files(paths: list, src_path, features, image_list) -> tuple[list[str], np.ndarray]:
        """Lines of several caption files (line ``i`` of each describes image ``i``) and each
        line's store row."""
        if src_path is not None or image_list is not None:
            raise ValueError("several target files are captions of the store's images: no source text, no image list")
        lines, rows = [], []
        for path in paths:
            caps = read_lines(path)
            if features is not None and len(caps) != len(features):
                raise DataError(path, f"has {len(caps)} captions but the feature store has {len(features)} images",
                                "caption file k must hold one caption per image of the split's image list")
            lines += caps
            rows.append(np.arange(len(caps)))
        return lines, np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.indices)

    def n_target_tokens(self) -> int:
        return sum(len(self.tgt[i]) + 1 for i in self.indices) if self.tgt is not None else 0

    def curve_columns(self, batches: int, batch_size: int) -> dict[str, float]:  # noqa: ARG002
        """A plain split adds no curve column (:class:`~mmt_repro.datasets.view.TrainingData`)."""
        return {}

    def describe(self) -> str | None:
        return None

    def hold_features_on(self, device: torch.device) -> str | None:
        """Hold this split's feature store on ``device`` when it fits (resident stores, chosen
        by :func:`~mmt_repro.datasets.resident.resident_choice`); batches then carry row numbers."""
        if self.features is None:
            return None
        from .resident import ResidentFeatures, resident_choice

        keep, why = resident_choice(self.features, device)
        if not keep:
            return f"training features read from the host per batch ({why})"
        t0 = time.monotonic()
        self.resident = ResidentFeatures(self.features, device)
        return f"training features resident on {device} ({why}), loaded in {time.monotonic() - t0:.1f} s"

    def collate(self, ids: list[int]) -> dict:
        batch = {"ids": torch.tensor(ids, dtype=torch.long), "img": None, "img_mask": None}
        if self.src is not None:
            src_len = torch.tensor([len(self.src[i]) for i in ids], dtype=torch.long)
            src = torch.full((len(ids), int(src_len.max())), self.src_vocab.pad_id, dtype=torch.long)
            for row, i in enumerate(ids):
                src[row, : len(self.src[i])] = torch.tensor(self.src[i], dtype=torch.long)
            batch["src"], batch["src_len"] = src, src_len
        if self.tgt is not None:
            bos, eos, pad = self.tgt_vocab.bos_id, self.tgt_vocab.eos_id, self.tgt_vocab.pad_id
            t_len = max(len(self.tgt[i]) for i in ids) + 1
            tgt_in = torch.full((len(ids), t_len), pad, dtype=torch.long)
            tgt_out = torch.full((len(ids), t_len), pad, dtype=torch.long)
            for row, i in enumerate(ids):
                y = self.tgt[i]
                tgt_in[row, : len(y) + 1] = torch.tensor([bos] + y, dtype=torch.long)
                tgt_out[row, : len(y) + 1] = torch.tensor(y + [eos], dtype=torch.long)
            batch["tgt_in"], batch["tgt_out"] = tgt_in, tgt_out
        if self.features is not None and self.resident is not None:  # gathered on the device
            batch["img_rows"] = torch.tensor([int(self.image_rows[i]) for i in ids], dtype=torch.long)
            batch["img_source"] = self.resident
        elif self.features is not None:
            rows = [int(self.image_rows[i]) for i in ids]
            img, mask = read_feature_rows(self.features, rows)
            if not np.isfinite(img).all():
                bad = [r for r, x in zip(rows, img) if not np.isfinite(x).all()]
                raise DataError(getattr(self.features, "npy", None), f"feature row(s) {bad} hold NaN or Inf",
                                "delete the feature store and re-run feature extraction (check the images and weights)")
            batch["img"] = torch.from_numpy(img).float()
            batch["img_mask"] = torch.from_numpy(mask)
            if hasattr(self.features, "geometry"):
                batch["img_geometry"] = torch.from_numpy(read_geometry_rows(self.features, rows))
        if self.langs is not None:
            batch["src_lang"] = [self.langs[0]] * len(ids) if self.src is not None else None
            batch["tgt_lang"] = [self.langs[1]] * len(ids)
        for name, values in self.extras.items():
            if name == "align":  # word alignments: the tensors of Yang et al.'s eq. 14 (datasets.alignments)
                batch.update(alignment_tensors([values[i] for i in ids], [len(self.src[i]) for i in ids],
                                               [len(self.tgt[i]) for i in ids]))
            else:
                batch[name] = [values[i] for i in ids]
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
            chunk = sorted(order[start : start + pool], key=self._length)
            if not by_tokens:
                batches.extend(chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size))
                continue
            current: list[int] = []
            longest = 0
            for i in chunk:
                n = (len(self.tgt[i]) if self.tgt is not None else self._length(i)) + 1
                if current and max(longest, n) * (len(current) + 1) > batch_size:
                    batches.append(current)
                    current, longest = [], 0
                current.append(i)
                longest = max(longest, n)
            if current:
                batches.append(current)
        rng.shuffle(batches)
        return batches

    def _length(self, i: int) -> int:
        """Bucketing length: the source's, or the target's for tasks without source text."""
        return len(self.src[i]) if self.src is not None else len(self.tgt[i]) if self.tgt is not None else 0

    def eval_batches(self, batch_size: int, by_length: bool = False) -> Iterator[dict]:
        """Batches covering every sentence: in order, or (``by_length``) sorted by bucketing
        length so that a batch holds sentences of similar length (less padding, and a decode
        loop that runs as long as its longest sentence wastes fewer steps). ``batch["ids"]``
        says where each example goes back."""
        ids = list(range(self.n_examples))
        if by_length:
            ids.sort(key=self._length)
        for j in range(0, len(ids), batch_size):
            yield self.collate(ids[j : j + batch_size])


def check_feature_dim(model, *stores) -> None:
    """Refuse a feature store whose feature size (last axis) is not the model's ``img_dim``."""
    want = model.visual_dim
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
