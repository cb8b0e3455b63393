"""A stand-in second paper for the tests: a word-level GRU encoder-decoder with dot-product
attention trained with a label-smoothed loss (no ``nll_sum``), plus an analysis of its own.

It lives outside the package, as a researcher's own model would: its settings file
(``standin.yaml``) lists this module under ``imports`` and the workflow imports it before
building the model. Nothing in the trainer, the decoder or ``common.smk`` knows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from mmt_repro.io import read_lines
from mmt_repro.models import MMTModel, Vocabs, register
from mmt_repro.analyses.registry import register_analysis


@dataclass
class WordGRUConfig:
    emb_dim: int = 32  # word embedding size (source and target)
    hid_dim: int = 64  # encoder and decoder GRU size
    smoothing: float = 0.1  # label smoothing epsilon of the loss
    dropout: float = 0.1  # dropout on embeddings and the output layer input


@register("standin.word_gru", WordGRUConfig)
class WordGRU(MMTModel):
    """Encoder GRU over words; decoder GRU whose output attends (dot product) over the encoder."""

    visual = "none"
    decoding = "step"

    def __init__(self, config: WordGRUConfig, vocabs: Vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        c = config
        self.src_pad = vocabs.src.specials.pad
        self.src_emb = nn.Embedding(vocabs.src.size, c.emb_dim, padding_idx=self.src_pad)
        self.tgt_emb = nn.Embedding(vocabs.tgt.size, c.emb_dim, padding_idx=self.specials.pad)
        self.encoder = nn.GRU(c.emb_dim, c.hid_dim, batch_first=True)
        self.decoder = nn.GRUCell(c.emb_dim, c.hid_dim)
        self.out = nn.Linear(2 * c.hid_dim, vocabs.tgt.size)

    def encode(self, batch):
        emb = F.dropout(self.src_emb(batch["src"]), self.config.dropout, self.training)
        ctx, last = self.encoder(emb)
        return {"ctx": ctx, "mask": batch["src"] != self.src_pad}

    def init_state(self, enc):
        return (enc["ctx"] * enc["mask"].unsqueeze(-1)).sum(1) / enc["mask"].sum(1, keepdim=True)

    def step(self, enc, state, prev):
        emb = F.dropout(self.tgt_emb(prev), self.config.dropout, self.training)
        h = self.decoder(emb, state)
        scores = torch.bmm(enc["ctx"], h.unsqueeze(-1)).squeeze(-1).masked_fill(~enc["mask"], float("-inf"))
        alpha = torch.softmax(scores, -1)
        ctx = torch.bmm(alpha.unsqueeze(1), enc["ctx"]).squeeze(1)
        logits = self.out(F.dropout(torch.cat([h, ctx], -1), self.config.dropout, self.training))
        return F.log_softmax(logits, -1), h, {"alpha_src": alpha}

    def forward(self, batch):
        enc = self.encode(batch)
        state = self.init_state(enc)
        steps = []
        for t in range(batch["tgt_in"].size(1)):
            lp, state, _ = self.step(enc, state, batch["tgt_in"][:, t])
            steps.append(lp)
        lp = torch.stack(steps, 1)
        gold = batch["tgt_out"]
        keep = gold != self.specials.pad
        n = keep.sum()
        nll = -lp.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
        smooth = -lp.mean(-1)
        eps = self.config.smoothing
        loss = (((1 - eps) * nll + eps * smooth) * keep).sum() / n.clamp_min(1)
        return {"loss": loss, "n_tokens": n, "nll": (nll * keep).sum().detach() / n.clamp_min(1)}


@register_analysis("standin.length_ratio", inputs="translation")
def length_ratio(files: dict) -> dict:
    """Hypothesis tokens over reference tokens (in %), over the whole test set."""
    hyp = sum(len(line.split()) for line in read_lines(files["hyp"]))
    ref = sum(len(line.split()) for line in read_lines(files["ref"]))
    return {"length_ratio": {"value": round(100.0 * hyp / max(ref, 1), 4), "signature": "tokens hyp/ref|whitespace"}}
