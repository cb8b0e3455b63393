"""BERT's Transformer encoder and MLM head transform (Devlin et al. 2019), laid out as Hugging
Face's ``transformers.models.bert.modeling_bert`` lays them out: the same module names, the same
order of modules and the same arithmetic (post-LayerNorm residual blocks, exact GELU, LayerNorm
eps 1e-12). So M-BERT's and VL-BERT's keys ``encoder.layer.{i}.attention.self.query.weight``,
... and ``cls.predictions.transform.*`` load one to one
(:mod:`~mmt_repro.models.bertgen_convert`), and a model built after ``torch.manual_seed(s)`` draws
the same initial weights as with Hugging Face's classes.

Why here and not ``transformers``: importing ``transformers``' BERT costs every BertGen job about
2.4 s on our 2-core machines (the smoke runs six of them), for about sixty lines of PyTorch.
``tests/models/test_bert_encoder.py`` holds this module against Hugging Face's classes (keys,
initial weights from one seed, outputs with SDPA and with the eager attention).

Shapes: ``x (rows, L, H)``; ``mask`` is boolean ``(rows, 1 or L, L)`` broadcastable to
``(rows, heads, L, L)``, True where a query may attend to a key.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

#: BERT's LayerNorm epsilon (``BertConfig.layer_norm_eps``).
LN_EPS = 1e-12


class SelfAttention(nn.Module):
    """Multi-head self-attention (``BertSelfAttention``): ``softmax(Q K^T / sqrt(d) + mask) V``.
    ``sdpa``: ``F.scaled_dot_product_attention`` with the boolean mask (fused kernels on a GPU);
    otherwise the same in plain ops (Hugging Face's eager attention) with the additive mask
    :meth:`Encoder.forward` makes from the boolean one."""

    def __init__(self, hidden: int, heads: int, attention_dropout: float, sdpa: bool):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not a multiple of the {heads} attention heads")
        self.num_attention_heads = heads
        self.attention_head_size = hidden // heads
        self.scaling = self.attention_head_size**-0.5
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(attention_dropout)
        self.sdpa = sdpa

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        split = (*x.shape[:-1], -1, self.attention_head_size)
        q = self.query(x).view(split).transpose(1, 2)  # (rows, heads, L, d)
        k = self.key(x).view(split).transpose(1, 2)
        v = self.value(x).view(split).transpose(1, 2)
        p = self.dropout.p if self.training else 0.0
        if self.sdpa:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, scale=self.scaling)
        else:
            scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling
            if mask is not None:
                scores = scores + mask
            weights = F.dropout(F.softmax(scores, dim=-1), p=p, training=self.training)
            out = torch.matmul(weights, v)
        return out.transpose(1, 2).reshape(*x.shape[:-1], -1)


class ResidualOutput(nn.Module):
    """``LayerNorm(x + dropout(W h))``: the block after the attention (``BertSelfOutput``,
    ``in_dim`` = hidden) and after the feed-forward layer (``BertOutput``, ``in_dim`` = ffn)."""

    def __init__(self, in_dim: int, hidden: int, dropout: float):
        super().__init__()
        self.dense = nn.Linear(in_dim, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=LN_EPS)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class Attention(nn.Module):
    """``BertAttention``: self-attention and its output block."""

    def __init__(self, hidden: int, heads: int, dropout: float, attention_dropout: float, sdpa: bool):
        super().__init__()
        self.self = SelfAttention(hidden, heads, attention_dropout, sdpa)
        self.output = ResidualOutput(hidden, hidden, dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.output(self.self(x, mask), x)


class Intermediate(nn.Module):
    """``GELU(W x + b)`` (``BertIntermediate``, exact GELU: ``hidden_act: gelu``)."""

    def __init__(self, hidden: int, ffn: int):
        super().__init__()
        self.dense = nn.Linear(hidden, ffn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(x))


class Layer(nn.Module):
    """One Transformer block (``BertLayer``): attention, then feed-forward, each post-LN."""

    def __init__(self, hidden: int, heads: int, ffn: int, dropout: float, attention_dropout: float, sdpa: bool):
        super().__init__()
        self.attention = Attention(hidden, heads, dropout, attention_dropout, sdpa)
        self.intermediate = Intermediate(hidden, ffn)
        self.output = ResidualOutput(ffn, hidden, dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        a = self.attention(x, mask)
        return self.output(self.intermediate(a), a)


class Encoder(nn.Module):
    """``BertEncoder``: ``layers`` blocks; returns the last hidden states ``(rows, L, H)``.
    Without SDPA the boolean mask becomes an additive one once, masked keys at ``finfo.min`` of
    the input's dtype (a softmax weight of exactly 0, as the boolean mask gives; 1/0 added to
    the scores would leave padding and other examples' keys visible)."""

    def __init__(self, hidden: int, layers: int, heads: int, ffn: int, dropout: float = 0.1,
                 attention_dropout: float = 0.1, sdpa: bool = True):
        super().__init__()
        self.layer = nn.ModuleList(Layer(hidden, heads, ffn, dropout, attention_dropout, sdpa) for _ in range(layers))
        self.sdpa = sdpa

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is not None and not self.sdpa:
            mask = torch.zeros(mask.shape, dtype=x.dtype, device=mask.device).masked_fill(~mask, torch.finfo(x.dtype).min)
        for layer in self.layer:
            x = layer(x, mask)
        return x


class PredictionHeadTransform(nn.Module):
    """The MLM head's ``LayerNorm(GELU(W h + b))`` before the tied output layer
    (``BertPredictionHeadTransform``)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=LN_EPS)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(F.gelu(self.dense(h)))
