"""BertGen's training data (Mitzalis et al. 2021, eq. 1 and section 3): the data view that lays
out batches of unrolled examples for the model.

:class:`~mmt_repro.datasets.unroll.MultiTaskData` unrolls every task's targets and mixes one
batch of every task per step; :class:`UnrolledBatches` is the builder it calls, which turns
``(data, sentence, t)`` triples into BertGen's input (:func:`collate_unrolled`): the text ids
with the target-language specifier and [MASK] (:func:`~mmt_repro.models.bertgen.text_ids`), the
regions of the examples' images read from their tasks' feature stores
(:func:`~mmt_repro.datasets.feature_reads.read_task_images`), BertGen's ``image_seq_len`` cap
and the packed layout (:func:`~mmt_repro.models.bertgen.layout`). The model sees the tensors.

Shape buckets (the training config's ``shape_buckets``, opt-in): :func:`pad_to_shape` pads a
laid-out batch to a fixed shape, so that a step has one of a few shapes (the trainer replays each
as a CUDA graph on a GPU, :mod:`mmt_repro.train.graphs`): the row width (text + regions +
[END]) up to the next bucket (:func:`bucket_width`), the rows up to the step's examples (a short
last batch of a pass gets one-position rows whose label is :data:`IGNORE`) and the images up to
the step's image examples (images without a valid region). Padded positions are masked out of
attention, padded labels ignored by the loss; the stores' region slots are the same in every
step already. The loss and its gradients are the unpadded batch's, to float rounding.
"""

from __future__ import annotations

import torch

from ..models.bertgen import IGNORE, PAD, TEXT, Stream, layout, prepare_images, text_ids
from ..text.positions import seq_len_cap
from .feature_reads import read_task_images
from .unroll import MultiTaskData


def collate_unrolled(stream: Stream, items: list, read_images=read_task_images) -> dict:
    """A training batch of unrolled examples ``(data, sentence, t)`` (``data`` a
    :class:`~mmt_repro.datasets.batching.ParallelData` with its language pair): example
    ``(i, t)`` gives the first ``t`` target tokens and predicts token ``t``, or ``[STOP]``
    (``<eos>``) at ``t = n_i``. Examples of tasks without images get none (MT).
    ``read_images(items)`` reads the examples' images from their tasks' feature stores (the
    data layer's :func:`~mmt_repro.datasets.feature_reads.read_task_images`).

    With ``image_seq_len`` an example with an image keeps the text and regions that
    :func:`~mmt_repro.text.positions.seq_len_cap` gives; one whose text is cut keeps its first
    positions and the final [SEP], without its [MASK], and its label becomes :data:`IGNORE`
    (it is laid out, as the authors' code runs it, and adds nothing to the loss)."""
    texts, labels = [], []
    for data, i, t in items:
        if data.langs is None:
            raise ValueError("BertGen's training data needs its language pair (ParallelData(langs=...))")
        lang = stream.lang_ids.get(data.langs[1])
        if lang is None:
            raise ValueError(f"no language specifier for {data.langs[1]!r} (have {sorted(stream.lang_ids)})")
        y = data.tgt[i]
        src = data.src[i] if data.src is not None else None
        texts.append(text_ids(lang, stream.cls_id, stream.sep_id, stream.mask_id, src, y[:t]))
        labels.append(y[t] if t < len(y) else stream.eos_id)
    img_of, images = read_images(items)
    batch = {"ids": torch.arange(len(items)), "img": None, "img_mask": None}
    n_regions, slots = [], 1
    if images is not None:
        img, mask, geom = (torch.from_numpy(a) for a in images)
        batch.update(img=img, img_mask=mask, img_geometry=geom)
        prepared = prepare_images(img, mask, geom, stream.full_image, stream.max_regions)[1]
        n_regions, slots = prepared.sum(1).tolist(), prepared.size(1)
    regions_of = None
    if stream.image_seq_len > 0 and images is not None:
        # an example without an image (MT) has no regions and is never cut
        t_keep, r_keep = seq_len_cap([len(x) for x in texts], [n_regions[i] if i >= 0 else 0 for i in img_of],
                                     stream.image_seq_len)
        regions_of = r_keep.tolist()
        for e, (x, k) in enumerate(zip(texts, t_keep.tolist())):
            if k < len(x):  # the text's tail is cut, its [MASK] and label with it
                texts[e] = x[: k - 1] + x[-1:]
                labels[e] = IGNORE
    batch["labels"] = torch.tensor(labels, dtype=torch.long)
    lay = layout(texts, [len(x) - 2 for x in texts], img_of, n_regions, slots, stream.pad_id, stream.pack_len,
                 regions_of)
    batch.update(lay.to_batch())
    return batch


def bucket_width(width: int, buckets) -> int:
    """The smallest of ``buckets`` (increasing) that holds ``width``; ``width`` itself when it
    is wider than all of them."""
    for b in buckets:
        if width <= b:
            return int(b)
    return int(width)


_LAYOUT_FILL = {"tokens": None, "kind": PAD, "pos": 0, "seg": 0, "region": 0, "text_image": -1}


def pad_to_shape(batch: dict, width: int, rows: int, images: int, pad_id: int) -> dict:
    """``batch`` (:func:`collate_unrolled`'s, one example per row) padded to ``rows`` rows of
    ``width`` positions and ``images`` images (none of these below the batch's own). Padded
    positions are padding (kind 0: masked out of attention, never read). A padded row is one
    text position (``pad_id``, so that its softmax has a key) whose [MASK] is that position and
    whose label is :data:`IGNORE`; a padded image has no valid region (``img_mask`` False) and
    no example refers to it. ``padded`` tells the model to count the labels left
    (``n_tokens``) rather than the rows."""
    if batch["lay_packed"]:
        raise ValueError("shape_buckets pads rows of one example each: set pack_len 0")
    out = dict(batch)
    n_rows, n_cols = batch["lay_tokens"].shape
    if width < n_cols or rows < n_rows:
        raise ValueError(f"a batch of {n_rows} rows x {n_cols} positions does not fit {rows} x {width}")
    for key, fill in _LAYOUT_FILL.items():
        old = batch[f"lay_{key}"]
        new = torch.full((rows, width), pad_id if fill is None else fill, dtype=old.dtype)
        new[:n_rows, :n_cols] = old
        out[f"lay_{key}"] = new
    extra = rows - n_rows
    if extra:
        out["lay_kind"][n_rows:, 0] = TEXT  # one position, attending to itself
        out["lay_seg"][n_rows:, 0] = 1
        out["lay_mask_rows"] = torch.cat([batch["lay_mask_rows"], torch.arange(n_rows, rows)])
        out["lay_mask_cols"] = torch.cat([batch["lay_mask_cols"], torch.zeros(extra, dtype=torch.long)])
        out["labels"] = torch.cat([batch["labels"], torch.full((extra,), IGNORE, dtype=torch.long)])
        out["ids"] = torch.cat([batch["ids"], torch.arange(n_rows, rows)])
    img = batch.get("img")
    if img is not None:
        if images < img.size(0):
            raise ValueError(f"a batch of {img.size(0)} images does not fit {images}")
        more = images - img.size(0)
        if more:
            out["img"] = torch.cat([img, img.new_zeros((more, *img.shape[1:]))])
            out["img_mask"] = torch.cat([batch["img_mask"], batch["img_mask"].new_zeros((more, img.size(1)))])
            geom = batch["img_geometry"]
            out["img_geometry"] = torch.cat([geom, geom.new_zeros((more, *geom.shape[1:]))])
    out["padded"] = True
    return out


class UnrolledBatches:
    """The batch builder of BertGen's :class:`~mmt_repro.datasets.unroll.MultiTaskData`; with
    ``buckets`` every batch is padded (:func:`pad_to_shape`) to a bucket's width, ``rows``
    examples and ``images`` images (the step's examples, and those of its tasks with images)."""

    def __init__(self, stream: Stream, buckets=(), rows: int = 0, images: int = 0):
        self.stream = stream
        self.image_seq_len = stream.image_seq_len  # the length sort is off for capped image tasks
        self.buckets, self.rows, self.images = tuple(int(b) for b in buckets), int(rows), int(images)
        if self.buckets and stream.pack_len:
            raise ValueError(f"shape_buckets {list(self.buckets)} pad rows of one example each: set pack_len 0 "
                             f"(it is {stream.pack_len})")

    def collate(self, items: list) -> dict:
        batch = collate_unrolled(self.stream, items)
        if not self.buckets:
            return batch
        width = bucket_width(batch["lay_tokens"].size(1), self.buckets)
        return pad_to_shape(batch, width, max(self.rows, len(items)), self.images, self.stream.pad_id)


def unrolled_view(model, data, tasks: dict | None = None, shape_buckets=(), batch_size: int = 0) -> MultiTaskData:
    """BertGen's training data: ``data`` (the reference task) and the extra ``tasks``
    (``{name: ParallelData}``) unrolled and mixed per step; with ``shape_buckets`` (the training
    config's) each batch is padded to a bucket's shape for ``batch_size`` examples per task."""
    tasks = {"reference": data, **dict(tasks or {})}
    with_images = sum(d.features is not None for d in tasks.values())
    builder = UnrolledBatches(model.stream, shape_buckets, batch_size * len(tasks), batch_size * with_images)
    return MultiTaskData(tasks, builder, model.config.epoch_examples)
