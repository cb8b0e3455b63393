"""Yang, Chen, Zhang and Sun (2020), section 4: the Transformer decoder block "which performs
the best in word alignment", a step of the training stage. The Transformer agreement systems
train with their visual agreement on that block (the resource ``alignment_layer``, a JSON this
module writes from a checkpoint trained without agreement); :mod:`mmt_repro.analyses` reads the
same choice for VAD.
"""

from __future__ import annotations

import json
import logging

import torch

from ..datasets.alignments import reverse_alignment_lines
from ..models.visual_agreement import _reverse_batch, _word_rows
from ..models.visual_agreement_transformer import _TransformerJoint

log = logging.getLogger(__name__)


def _links_of(att: torch.Tensor, rows: torch.Tensor) -> list[set]:
    """Argmax links ``(i, j)`` of attention ``(batch, T, n)`` for the word rows ``j``."""
    best = att.argmax(-1)
    return [{(int(best[b, j]), j) for j in range(att.size(1)) if rows[b, j]} for b in range(att.size(0))]


def select_alignment_layer(checkpoint, src, tgt, src_vocab, tgt_vocab, align, out_json, features_npy=None,
                           features_index=None, device="auto", batch_size: int = 32) -> dict:
    """Section 4: the decoder block "which performs the best in word alignment". For each block
    and direction, the argmax of its head-averaged attention over the source words gives one
    link per target word (teacher forcing on the split); its AER against the align stage's
    links (``1 - 2 |A & G| / (|A| + |G|)``) is written for every block, and the best one."""
    from ..checkpoint import load_model
    from ..datasets.batching import ParallelData, move
    from ..device import pick_device
    from ..features.store import open_features
    from ..io import atomic_write, read_lines
    from ..text.vocab import Vocab

    dev = pick_device(device)
    model, _ = load_model(checkpoint, device=dev)
    if not isinstance(model, _TransformerJoint):
        raise ValueError(f"{checkpoint} holds {model.registry_name}: only the Transformer versions have blocks to choose")
    model.need_backward("the choice of the backward model's alignment block")
    data = ParallelData(src, Vocab.load(src_vocab), tgt, Vocab.load(tgt_vocab),
                        features=open_features(features_npy, features_index) if model.uses_visual else None)
    gold = read_lines(align)
    n_layers = model.config.dec_layers
    hits = {d: [0] * n_layers for d in model.directions}
    sizes = {d: [0] * n_layers for d in model.directions}
    n_gold = {d: 0 for d in model.directions}
    model.eval()
    with torch.no_grad():
        for batch in data.eval_batches(batch_size):
            batch = move(batch, dev)
            rev = _reverse_batch(batch, model.vocabs.src.specials, model.vocabs.tgt.specials)
            lines = [gold[i] for i in batch["ids"].tolist()]
            for which, dirm, bt, sp, ln in (("forward", model.fwd, batch, model.vocabs.tgt.specials, lines),
                                            ("backward", model.bwd, rev, model.vocabs.src.specials,
                                             reverse_alignment_lines(lines))):
                out = dirm.teacher_forced(bt["src"], bt["src_len"], bt["tgt_in"], bt["tgt_out"], bt.get("img"),
                                          bt.get("img_mask"), layers=set(range(n_layers)))
                rows = _word_rows(bt["tgt_out"], sp)
                ref = [{(int(i), int(j)) for i, _, j in (x.partition("-") for x in line.split())} for line in ln]
                n_gold[which] += sum(len(r) for r in ref)
                for layer, info in enumerate(out["infos"]):
                    links = _links_of(info["text_att"].mean(1), rows)
                    hits[which][layer] += sum(len(a & r) for a, r in zip(links, ref))
                    sizes[which][layer] += sum(len(a) for a in links)
    result = {}
    for which in model.directions:
        aer = [1.0 - 2.0 * hits[which][k] / max(sizes[which][k] + n_gold[which], 1) for k in range(n_layers)]
        result[which] = {"layer": int(min(range(n_layers), key=lambda k: (aer[k], k))), "aer": [round(a, 4) for a in aer]}
    result["checkpoint"] = str(checkpoint)
    with atomic_write(out_json) as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    log.info("alignment layer of %s: %s", checkpoint, result)
    return result
