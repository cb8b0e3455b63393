"""Synthetic training batches of a model's input: random token ids and random features of the
shapes the data would have, for the tests (every model under autocast) and the GPU
calibration (``benchmarks/gpu_calibration.py``). torch and numpy only; no data files.

The batches follow the contract of :mod:`mmt_repro.datasets.batching` (``src``, ``src_len``,
``tgt_in`` = ``<bos> y``, ``tgt_out`` = ``y <eos>``, ``img``/``img_mask`` (+ ``img_geometry``
for region stores), ``ids``, ``src_lang``/``tgt_lang``, extras such as ``align``), and BertGen's
unrolled examples laid out by :func:`mmt_repro.models.bertgen.layout` as its data view does.
"""

from __future__ import annotations

import numpy as np
import torch

from ..datasets.alignments import alignment_tensors
from ..models.base import Specials

__all__ = ["bertgen_batch", "bertgen_vocabs", "model_batch", "text_batch"]

#: BertGen's 13 training tasks (config/papers/bertgen.yaml): (source?, image?, (min, max) source
#: WordPieces, (min, max) target WordPieces; Multi30k ~12-18 pieces a side, IWSLT and SETIMES
#: longer), the reference task first.
BERTGEN_TASKS = (
    ("mmt_en_de", True, True, (10, 24), (10, 26)),
    ("ic_tr", False, True, None, (8, 20)),
    ("mmt_de_en", True, True, (10, 26), (10, 24)),
    ("mmt_fr_en", True, True, (10, 26), (10, 24)),
    ("mmt_en_fr", True, True, (10, 24), (10, 28)),
    ("ic_en", False, True, None, (10, 24)),
    ("ic_de", False, True, None, (10, 26)),
    ("mt_de_en", True, False, (12, 48), (12, 44)),
    ("mt_en_de", True, False, (12, 44), (12, 48)),
    ("mt_fr_en", True, False, (12, 48), (12, 44)),
    ("mt_en_fr", True, False, (12, 44), (12, 48)),
    ("mt_tr_en", True, False, (14, 56), (14, 50)),
    ("mt_en_tr", True, False, (14, 50), (14, 56)),
)


def _lengths(n: int, span: tuple[int, int], gen: torch.Generator) -> torch.Tensor:
    return torch.randint(span[0], span[1] + 1, (n,), generator=gen)


def _ids(lengths: torch.Tensor, vocab: int, pad: int, gen: torch.Generator, width: int | None = None) -> torch.Tensor:
    out = torch.full((len(lengths), int(width or lengths.max())), pad, dtype=torch.long)
    for i, n in enumerate(lengths.tolist()):
        out[i, :n] = torch.randint(4, vocab, (n,), generator=gen)
    return out


def text_batch(bsz: int, src_vocab: int | None, tgt_vocab: int, *, src_len=(8, 19), tgt_len=(8, 21),
               img: tuple[int, int] | None = None, min_regions: int | None = None, geometry: bool = False,
               align: bool = False, langs: tuple[str | None, str] | None = None, specials: Specials = Specials(),
               seed: int = 0) -> dict:
    """A batch of ``bsz`` random sentence pairs (lengths uniform in ``src_len``/``tgt_len``,
    counted without ``<eos>``), with ``img (bsz, L, D)`` features when ``img = (L, D)``:
    ``min_regions`` < L real slots or more per example (the rest masked), all L otherwise.
    ``align``: random word alignments ``"i-j ..."`` (Yang et al.'s hard agreement)."""
    gen = torch.Generator().manual_seed(seed)
    batch: dict = {"ids": torch.arange(bsz), "img": None, "img_mask": None}
    s_len = None
    if src_vocab is not None:
        s_len = _lengths(bsz, src_len, gen)
        batch["src"], batch["src_len"] = _ids(s_len, src_vocab, specials.pad, gen), s_len
    t_len = _lengths(bsz, tgt_len, gen)
    y = _ids(t_len, tgt_vocab, specials.pad, gen, width=int(t_len.max()) + 1)
    tgt_out, tgt_in = y.clone(), torch.full_like(y, specials.pad)
    tgt_out[torch.arange(bsz), t_len] = specials.eos
    tgt_in[:, 0] = specials.bos
    tgt_in[:, 1:] = y[:, :-1]
    batch["tgt_in"], batch["tgt_out"] = tgt_in, tgt_out
    if img is not None:
        n_slots, dim = img
        feats = torch.randn(bsz, n_slots, dim, generator=gen)
        if min_regions is not None and min_regions < n_slots:
            real = torch.randint(min_regions, n_slots + 1, (bsz,), generator=gen)
        else:
            real = torch.full((bsz,), n_slots)
        mask = torch.arange(n_slots)[None] < real[:, None]
        batch["img"], batch["img_mask"] = feats * mask.unsqueeze(-1), mask
        if geometry:
            xy = torch.rand(bsz, n_slots, 2, generator=gen) * 0.5
            wh = torch.rand(bsz, n_slots, 2, generator=gen) * 0.5 + 0.05
            geo = torch.cat([xy, xy + wh, wh], -1) * mask.unsqueeze(-1)
            batch["img_geometry"] = geo
    if align and s_len is not None:
        lines = []
        for n, m in zip(s_len.tolist(), t_len.tolist()):
            pairs = sorted({(int(i), min(m - 1, int(i * m / n))) for i in range(n)})
            lines.append(" ".join(f"{i}-{j}" for i, j in pairs))
        batch.update(alignment_tensors(lines, s_len.tolist(), t_len.tolist()))
    if langs is not None:
        batch["src_lang"] = [langs[0]] * bsz if src_vocab is not None else None
        batch["tgt_lang"] = [langs[1]] * bsz
    return batch


def bertgen_vocabs(size: int = 119_551):
    """BertGen's vocabularies: one WordPiece table (M-BERT cased: 119,547 pieces + our 4
    specials) with the reserved tokens the input stream needs."""
    from ..models.base import VocabSpec, Vocabs

    names = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[STOP]", "[UNK]", "[TO_EN]", "[TO_DE]", "[TO_FR]", "[TO_TU]", "[TO_CS]"]
    spec = VocabSpec(size, Specials(), {name: 4 + i for i, name in enumerate(names)})
    return Vocabs(src=spec, tgt=spec)


def bertgen_batch(model, *, tasks=BERTGEN_TASKS, per_task: int = 1, regions: tuple[int, int] = (10, 100),
                  img_dim: int | None = None, seed: int = 0) -> dict:
    """One multi-task step of BertGen's training (``per_task`` unrolled examples of each task,
    the paper's 13 a step): each example ``[lang] [CLS] x [SEP] y_<t [MASK] [SEP]`` at a random
    ``t``, plus its image's regions (``regions``: real RoIs per image, BUTD's 10-100) and
    ``[END]``, laid out with the model's ``pack_len``."""
    from ..models.bertgen import layout, prepare_images, text_ids

    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    V = model.vocabs.tgt.size
    c = model.config
    img_dim = img_dim or c.img_dim
    langs = sorted(model.lang_ids.values())
    texts, img_of, labels, n_images = [], [], [], 0
    for _, has_src, has_img, s_span, t_span in tasks:
        for _ in range(per_task):
            src = rng.integers(20, V, size=rng.integers(s_span[0], s_span[1] + 1)).tolist() if has_src else None
            y = rng.integers(20, V, size=rng.integers(t_span[0], t_span[1] + 1)).tolist()
            t = int(rng.integers(0, len(y) + 1))
            texts.append(text_ids(int(rng.choice(langs)), model.cls_id, model.sep_id, model.mask_id, src, y[:t]))
            labels.append(y[t] if t < len(y) else model.specials.eos)
            img_of.append(n_images if has_img else -1)
            n_images += int(has_img)
    batch = {"ids": torch.arange(len(texts)), "labels": torch.tensor(labels, dtype=torch.long),
             "img": None, "img_mask": None}
    n_regions, slots = [], 1
    if n_images:
        width = regions[1]
        real = torch.randint(regions[0], regions[1] + 1, (n_images,), generator=gen)
        mask = torch.arange(width)[None] < real[:, None]
        xy = torch.rand(n_images, width, 2, generator=gen) * 0.5
        wh = torch.rand(n_images, width, 2, generator=gen) * 0.5 + 0.05
        geom = torch.cat([xy, xy + wh, wh], -1) * mask.unsqueeze(-1)
        img = torch.randn(n_images, width, img_dim, generator=gen) * mask.unsqueeze(-1)
        batch.update(img=img, img_mask=mask, img_geometry=geom)
        prepared = prepare_images(img, mask, geom, c.full_image, c.max_regions)[1]
        n_regions, slots = prepared.sum(1).tolist(), prepared.size(1)
    lay = layout(texts, [len(x) - 2 for x in texts], img_of, n_regions, slots, model.specials.pad, c.pack_len)
    batch.update(lay.to_batch())
    return batch


def model_batch(model, bsz: int, *, src_len=(8, 19), tgt_len=(8, 21), img_slots: int | None = None,
                min_regions: int | None = None, langs=("en", "de"), seed: int = 0) -> dict:
    """A training batch for ``model`` (any registered model): BertGen's unrolled multi-task
    step (``bsz`` examples per task), else :func:`text_batch` with the features the model
    reads (``img_slots`` x its ``visual_dim``; grid 1 slot unless told) and the extras its
    configuration needs (word alignments for hard agreement)."""
    if model.registry_name.startswith("bertgen."):
        regions = (min_regions or 10, img_slots or 100)
        return bertgen_batch(model, per_task=bsz, regions=regions, seed=seed)
    vocabs = model.vocabs
    img = None
    if model.uses_visual:
        slots = img_slots or (36 if model.visual == "regions" else 1)
        img = (slots, model.visual_dim or 8)
    agreement = getattr(model.config, "agreement", "none")
    return text_batch(bsz, vocabs.src.size if vocabs.src is not None else None, vocabs.tgt.size, src_len=src_len,
                      tgt_len=tgt_len, img=img, min_regions=min_regions, geometry=model.visual == "regions",
                      align=agreement == "hard", langs=langs, specials=vocabs.tgt.specials, seed=seed)
