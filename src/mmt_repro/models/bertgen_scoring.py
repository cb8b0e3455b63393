"""BertGen's forced scoring: the probability it gives a given translation (CoMMuTE's
contrastive accuracy, :mod:`mmt_repro.decode.forced`).

Eq. 1 of Mitzalis et al. (2021) on given targets, summed per sentence: one unrolled row per
target position, as training unrolls a pair and :meth:`~mmt_repro.models.bertgen.BertGen.search`
reads it. A module of its own beside the model: the model's module decides its trainings and
decodings (their code version hashes it), which scoring a given translation does not change.
"""

from __future__ import annotations

import torch

from .bertgen import BertGen, layout, text_ids


def target_nll(model: BertGen, batch: dict, max_rows: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """Forced scoring (eq. 1 on given targets): per sentence of an eval batch (``tgt_out``
    ``(batch, tgt_len)`` = ``y <eos>``, padded), ``-sum_t log P(y_t | x, v, y_<t)`` over
    ``t = 0..n`` (``[STOP]``, our ``<eos>``, last) and ``n + 1``, both ``(batch,)``. Every
    ``(sentence, t)`` is one row as training unrolls it and :meth:`BertGen.search` reads it
    (``[lang] [CLS] x [SEP] y_<t [MASK] [SEP]`` + regions + [END], one example a row, at
    most ``max_rows`` rows a pass); the log-probability is the full softmax of the [MASK]
    slot, as the training loss (:meth:`BertGen.never_emitted` only keeps ids out of the argmax).
    The input is the decoder's: every region (no ``image_seq_len`` cap, a training cut)
    and the source cut as :meth:`BertGen.search` cuts it, here for the target's own length. A row
    sees only its own sentence, so a sentence gets the same value in any batch."""
    n = batch["tgt_out"].size(0)
    dev = batch["tgt_out"].device
    src = batch.get("src")
    srcs = [None] * n if src is None else [s[: int(k)].tolist() for s, k in zip(src, batch["src_len"])]
    langs = batch.get("tgt_lang") or [None] * n
    lang = [model.lang_id(x) for x in langs]
    ys = [[int(v) for v in row if v != model.specials.pad][:-1] for row in batch["tgt_out"].tolist()]
    imgs = model.images(batch)
    obj = n_reg = None
    if imgs is not None:
        obj = model.regions(imgs[0], imgs[2])
        n_reg = imgs[1].sum(1).tolist()
    room = model.config.max_positions - 2
    for b, s in enumerate(srcs):
        if s is not None and len(s) + 5 + len(ys[b]) > room:
            srcs[b] = s[: max(0, room - 5 - len(ys[b]))]
    rows = [(b, t) for b in range(n) for t in range(len(ys[b]) + 1)]
    nll = torch.zeros(n, dtype=torch.float64, device=dev)
    for start in range(0, len(rows), max_rows):
        part = rows[start : start + max_rows]
        texts = [text_ids(lang[b], model.cls_id, model.sep_id, model.mask_id, srcs[b], ys[b][:t]) for b, t in part]
        labels = torch.tensor([ys[b][t] if t < len(ys[b]) else model.specials.eos for b, t in part], device=dev)
        sents = sorted({b for b, _ in part})
        slot = {b: i for i, b in enumerate(sents)}
        sub, img_of, regs, slots = None, [-1] * len(part), [0] * len(sents), 1
        if obj is not None:
            sub = obj[torch.tensor(sents, device=obj.device)]
            img_of, regs, slots = [slot[b] for b, _ in part], [n_reg[b] for b in sents], sub.size(1)
        lay = layout(texts, [len(x) - 2 for x in texts], img_of, regs, slots, model.specials.pad).to(dev)
        logp = model.predict(model.hidden(lay, sub)).float().log_softmax(-1)
        gold = logp.gather(1, labels[:, None]).squeeze(1).double()
        nll.index_add_(0, torch.tensor([b for b, _ in part], device=dev), -gold)
    return nll, torch.tensor([len(y) + 1 for y in ys], device=dev)


__all__ = ["target_nll"]
