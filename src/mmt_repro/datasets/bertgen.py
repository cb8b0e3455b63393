"""BertGen's training data (Mitzalis et al. 2021, eq. 1 and section 3): the data view that lays
out batches of unrolled examples for the model.

:class:`~mmt_repro.datasets.unroll.MultiTaskData` unrolls every task's targets and mixes one
batch of every task per step; :class:`UnrolledBatches` is the builder it calls, which turns
``(data, sentence, t)`` triples into BertGen's input (:func:`collate_unrolled`): the text ids
with the target-language specifier and [MASK] (:func:`~mmt_repro.models.bertgen.text_ids`), the
regions of the examples' images read from their tasks' feature stores
(:func:`~mmt_repro.datasets.feature_reads.read_task_images`), BertGen's ``image_seq_len`` cap
and the packed layout (:func:`~mmt_repro.models.bertgen.layout`). The model sees the tensors.
"""

from __future__ import annotations

import torch

from ..models.bertgen import IGNORE, Stream, layout, prepare_images, text_ids
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


class UnrolledBatches:
    """The batch builder of BertGen's :class:`~mmt_repro.datasets.unroll.MultiTaskData`."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self.image_seq_len = stream.image_seq_len  # the length sort is off for capped image tasks

    def collate(self, items: list) -> dict:
        return collate_unrolled(self.stream, items)


def unrolled_view(model, data, tasks: dict | None = None) -> MultiTaskData:
    """BertGen's training data: ``data`` (the reference task) and the extra ``tasks``
    (``{name: ParallelData}``) unrolled and mixed per step."""
    return MultiTaskData({"reference": data, **dict(tasks or {})}, UnrolledBatches(model.stream),
                         model.config.epoch_examples)
