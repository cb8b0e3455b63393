"""The project's one Transformer NMT (Vaswani et al. 2017, "Attention is all you need"), shared
by DeepFuse (Wu 2020), Yang et al. (2020)'s Transformer systems and BertGen's fairseq
``transformer_iwslt_de_en`` baselines.

Registered model: ``transformer.nmt`` (text only). Papers build on the pieces:

=========================  ======================================================================
piece                      what (shapes: ``(batch, len, d_model)``; masks ``(batch, len)``, True = real)
=========================  ======================================================================
:func:`sinusoidal_table`   ``PE(pos, 2i) = sin(pos / 10000^(2i/d))``, ``PE(pos, 2i+1) = cos(...)``
                           (Vaswani et al., section 3.5), ``(n, d)``
:class:`Embedding`         ``dropout(E[y] * sqrt(d) + PE[offset + t])`` (the scale is optional)
:class:`MultiHeadAttention` eq. 1-3 of DeepFuse / section 3.2 of Vaswani et al.:
                           ``Concat(head_1..h) W^O``, ``head_i = softmax(Q W_i^Q (K W_i^K)^T /
                           sqrt(d_k)) V W_i^V``; key padding masks, causal masks, cached keys and
                           values (incremental decoding), precomputed keys and values (cross
                           attention at decoding time) and, on request, the per-head weights
                           ``(batch, heads, q_len, k_len)``
:class:`FeedForward`       ``max(0, x W_1 + b_1) W_2 + b_2`` (eq. 4 of DeepFuse)
:class:`Sublayer`          the residual wrapper: post-LN ``LayerNorm(x + dropout(f(x)))``
                           (Vaswani et al., fairseq's default) or pre-LN ``x + dropout(f(LN(x)))``
:class:`EncoderLayer`      self-attention, then FFN
:class:`DecoderLayer`      causal self-attention (cached at decoding time), cross-attention over
                           the encoder output (keys/values computed once per sentence), FFN
:class:`Encoder`,          stacks of layers (+ the final LayerNorm of pre-LN stacks); extra
:class:`Decoder`           keyword arguments reach every layer (DeepFuse's video)
:func:`label_smoothed_nll` the label-smoothed loss (Szegedy et al. 2016; fairseq's form), summed
                           over target tokens
=========================  ======================================================================

:class:`TransformerNMT` puts them together for the shared trainer and decoder
(:mod:`mmt_repro.models.base`):

- ``forward(batch)``: teacher forcing over ``tgt_in`` with a causal mask; the loss is the
  label-smoothed cross-entropy per target token (``loss``), with the plain NLL per token
  (``nll``) logged beside it. The output projection runs only on real (non-padding) positions.
- ``encode(batch)``: ``memory (batch, src_len, d)``, ``memory_mask`` and every decoder layer's
  cross-attention keys and values ``(batch, heads, src_len, d_k)``, computed once per sentence
  (they depend only on the source, so beam search repeats them per beam and never reorders them).
- ``init_state(enc)``: per decoder layer, empty self-attention caches ``(batch, heads, 0, d_k)``.
- ``step(enc, state, prev)``: embeds ``prev`` at position ``t`` (the cache length), runs every
  layer on that one position against the cached keys/values, appends the new keys/values and
  returns ``log_softmax`` of the output projection. Every state tensor is batch-first, so the
  shared beam search reorders it with ``index_select`` on dim 0 (``tree_map``) and drops
  finished sentences from the flat batch.

Sizes come from :class:`TransformerConfig` (defaults: Vaswani et al.'s base model, 6+6 layers x
512, 8 heads, FFN 2048, dropout 0.1; BertGen's ``transformer_iwslt_de_en`` is 6+6 x 512/1024/4).
Initialisation as fairseq: Xavier-uniform matrices, zero biases, embeddings and an untied output
projection ``N(0, d^-1/2)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .base import MMTModel, Vocabs
from .registry import register


@dataclass
class TransformerConfig:
    """Sizes and options of the Transformer (Vaswani et al. 2017, base model by default)."""

    d_model: int = 512  # model (embedding) size d_model
    n_heads: int = 8  # attention heads h (d_k = d_model / h)
    d_ff: int = 2048  # inner size of the position-wise feed-forward network
    enc_layers: int = 6  # encoder layers L
    dec_layers: int = 6  # decoder layers
    dropout: float = 0.1  # residual dropout (on every sub-layer output and on the embeddings + positions)
    attention_dropout: float = 0.1  # dropout on the attention weights
    activation_dropout: float = 0.0  # dropout after the FFN's ReLU (fairseq's relu_dropout)
    label_smoothing: float = 0.1  # epsilon of the label-smoothed loss (0: plain cross-entropy)
    pre_norm: bool = False  # False: post-LN LayerNorm(x + f(x)) (Vaswani, fairseq default); True: pre-LN
    tie_embeddings: bool = False  # the decoder's output projection is its input embedding matrix
    share_all_embeddings: bool = False  # one embedding matrix for source and target (needs equal vocabularies)
    scale_embeddings: bool = True  # multiply embeddings by sqrt(d_model) before adding positions
    max_positions: int = 1024  # longest sequence the sinusoidal table covers

    def __post_init__(self):
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not a multiple of n_heads={self.n_heads}")
        if min(self.d_model, self.n_heads, self.d_ff, self.enc_layers, self.dec_layers, self.max_positions) < 1:
            raise ValueError("d_model, n_heads, d_ff, enc_layers, dec_layers and max_positions must be >= 1")
        for name in ("dropout", "attention_dropout", "activation_dropout", "label_smoothing"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name}={getattr(self, name)} must be in [0, 1)")


# ----------------------------------------------------------------------------- building blocks
def sinusoidal_table(n: int, dim: int) -> torch.Tensor:
    """Vaswani et al. section 3.5: ``(n, dim)`` with ``sin`` on even and ``cos`` on odd columns,
    ``PE(pos, 2i) = sin(pos / 10000^(2i/dim))``."""
    pos = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    div = torch.pow(10000.0, torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    table = torch.zeros(n, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos / div)
    table[:, 1::2] = torch.cos(pos / div[: dim // 2])
    return table.float()


class Embedding(nn.Module):
    """Token embedding plus sinusoidal positions: ``dropout(E[y] sqrt(d) + PE[offset + t])``.

    ``tokens (batch, len)`` -> ``(batch, len, d)``; ``offset`` is the position of the first
    token (incremental decoding embeds one token at position ``t``)."""

    def __init__(self, vocab_size: int, dim: int, pad_id: int, dropout: float, scale: bool = True,
                 max_positions: int = 1024):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, dim, padding_idx=pad_id)
        nn.init.normal_(self.tokens.weight, mean=0.0, std=dim**-0.5)
        with torch.no_grad():
            self.tokens.weight[pad_id].zero_()
        self.scale = math.sqrt(dim) if scale else 1.0
        self.dropout = dropout
        self.register_buffer("positions", sinusoidal_table(max_positions, dim), persistent=False)

    def forward(self, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        n = tokens.size(1)
        if offset + n > self.positions.size(0):
            raise ValueError(f"sequence of {offset + n} positions is longer than max_positions="
                             f"{self.positions.size(0)}; raise max_positions in the model config")
        x = self.tokens(tokens) * self.scale + self.positions[offset : offset + n]
        return F.dropout(x, self.dropout, self.training)


def _heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(batch, len, d)`` -> ``(batch, heads, len, d / heads)``."""
    b, n, d = x.shape
    return x.view(b, n, n_heads, d // n_heads).transpose(1, 2)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (Vaswani et al. section 3.2; DeepFuse eq. 1-3).

    ``forward(query, key, value, key_mask=None, causal=False, kv=None, cache=None,
    need_weights=False) -> (out, weights, cache)``:

    - ``query (batch, q_len, d)``; ``key``/``value (batch, k_len, kdim/vdim)`` (None for
      self-attention: the query itself);
    - ``key_mask (batch, k_len)``: True = a real key (padding is False); a row without any
      real key gives a zero output instead of NaN;
    - ``causal``: query ``i`` sees keys ``<= i`` (decoder self-attention in training);
    - ``kv``: keys and values already projected and split, ``(batch, heads, k_len, d_k)`` each
      (:meth:`project_kv`; cross-attention at decoding time);
    - ``cache``: ``(k, v)`` of the earlier positions ``(batch, heads, t, d_k)``: the new
      position's key and value are appended and the updated cache returned (incremental
      self-attention; the query attends to every cached position);
    - ``need_weights``: also return the attention weights ``(batch, heads, q_len, k_len)``
      (after masking and softmax, before dropout); otherwise the fused
      ``scaled_dot_product_attention`` kernel runs and ``weights`` is None.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, kdim: int | None = None,
                 vdim: int | None = None, bias: bool = True):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not a multiple of n_heads={n_heads}")
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)  # W^Q (all heads)
        self.k_proj = nn.Linear(kdim or d_model, d_model, bias=bias)  # W^K
        self.v_proj = nn.Linear(vdim or d_model, d_model, bias=bias)  # W^V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)  # W^O
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_uniform_(lin.weight)
            if bias:
                nn.init.zeros_(lin.bias)

    def project_kv(self, key: torch.Tensor, value: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``K W^K`` and ``V W^V`` split into heads: ``(batch, heads, k_len, d_k)`` each."""
        value = key if value is None else value
        return _heads(self.k_proj(key), self.n_heads), _heads(self.v_proj(value), self.n_heads)

    def forward(self, query, key=None, value=None, key_mask=None, causal: bool = False, kv=None, cache=None,
                need_weights: bool = False):
        q = _heads(self.q_proj(query), self.n_heads)
        if kv is not None:
            k, v = kv
        else:
            k, v = self.project_kv(query if key is None else key, value if key is not None else None)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
            cache = (k, v)
        out, weights = attention(q, k, v, key_mask, causal, self.dropout if self.training else 0.0, need_weights)
        b, h, n, dk = out.shape
        out = self.out_proj(out.transpose(1, 2).reshape(b, n, h * dk))
        return out, weights, cache


def attention(q, k, v, key_mask=None, causal: bool = False, dropout: float = 0.0, need_weights: bool = False):
    """``softmax(q k^T / sqrt(d_k)) v`` for ``q (batch, heads, q_len, d_k)``, ``k``/``v (batch,
    heads, k_len, d_k)``, ``key_mask (batch, k_len)`` (True = real); returns ``(out, weights or
    None)``. Rows whose keys are all masked give zeros. No host synchronisation: the all-masked
    rows are unmasked for the softmax and zeroed after it whether there are any or not (asking
    first would wait for the device on every call)."""
    empty = None
    mask = None
    if key_mask is not None:
        empty = ~key_mask.any(-1)  # (batch,)
        key_mask = key_mask | empty.unsqueeze(-1)
        mask = key_mask[:, None, None, :]
    if need_weights:
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        if causal:
            n, m = scores.shape[-2:]
            scores = scores.masked_fill(torch.ones(n, m, dtype=torch.bool, device=q.device).triu(m - n + 1),
                                        float("-inf"))
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = F.dropout(weights, dropout, training=dropout > 0) @ v
    else:
        weights = None
        if causal and mask is not None:  # padding of the keys and the causal mask together
            n, m = q.size(-2), k.size(-2)
            mask = mask & torch.ones(n, m, dtype=torch.bool, device=q.device).tril(m - n)
            causal = False
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=causal)
    if empty is not None:
        out = out.masked_fill(empty[:, None, None, None], 0.0)
        if weights is not None:
            weights = weights.masked_fill(empty[:, None, None, None], 0.0)
    return out, weights


class FeedForward(nn.Module):
    """Position-wise FFN ``max(0, x W_1 + b_1) W_2 + b_2`` (``d -> d_ff -> d``)."""

    def __init__(self, d_model: int, d_ff: int, activation_dropout: float = 0.0):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.activation_dropout = activation_dropout
        for lin in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.dropout(torch.relu(self.fc1(x)), self.activation_dropout, self.training))


class Sublayer(nn.Module):
    """Residual connection and LayerNorm around a sub-layer ``f``: post-LN
    ``LayerNorm(x + dropout(f(x)))`` or pre-LN ``x + dropout(f(LayerNorm(x)))``.
    ``sublayer(x, f)`` calls ``f`` on the (normalised, for pre-LN) input and returns the new
    ``x`` and whatever else ``f`` returned."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout, self.pre_norm = dropout, pre_norm

    def forward(self, x: torch.Tensor, fn):
        res = fn(self.norm(x) if self.pre_norm else x)
        out, extra = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
        y = x + F.dropout(out, self.dropout, self.training)
        y = y if self.pre_norm else self.norm(y)
        return (y, *extra) if extra else y


class EncoderLayer(nn.Module):
    """Self-attention, then FFN, each in a :class:`Sublayer`. ``forward(x, mask, need_weights=False)
    -> (x, info)``, ``info["self_attn"] (batch, heads, len, len)`` when asked."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.self_attn_sub = Sublayer(c.d_model, c.dropout, c.pre_norm)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.activation_dropout)
        self.ffn_sub = Sublayer(c.d_model, c.dropout, c.pre_norm)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool = False):
        x, w, _ = self.self_attn_sub(x, lambda h: self.self_attn(h, key_mask=mask, need_weights=need_weights))
        x = self.ffn_sub(x, self.ffn)
        return x, ({"self_attn": w} if need_weights else {})


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the encoder output, FFN.

    ``forward(x, memory, memory_mask, cache=None, cross_kv=None, need_weights=False)
    -> (x, cache, info)``: in training ``x`` is the whole target ``(batch, tgt_len, d)`` and
    ``cache`` None; at decoding time ``x`` is one position, ``cache`` the layer's ``(k, v)`` so
    far (returned with the new position appended) and ``cross_kv`` the cross-attention keys
    and values of :meth:`cross_kv`. ``info["cross_attn"] (batch, heads, tgt_len, src_len)``
    (and ``"self_attn"``) when ``need_weights``."""

    def __init__(self, c: TransformerConfig, memory_dim: int | None = None):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.self_attn_sub = Sublayer(c.d_model, c.dropout, c.pre_norm)
        self.cross_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout, kdim=memory_dim,
                                             vdim=memory_dim)
        self.cross_attn_sub = Sublayer(c.d_model, c.dropout, c.pre_norm)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.activation_dropout)
        self.ffn_sub = Sublayer(c.d_model, c.dropout, c.pre_norm)

    def cross_kv(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.cross_attn.project_kv(memory)

    def forward(self, x, memory, memory_mask, cache=None, cross_kv=None, need_weights: bool = False):
        x, w_self, cache = self.self_attn_sub(
            x, lambda h: self.self_attn(h, causal=cache is None, cache=cache, need_weights=need_weights))
        x, w_cross, _ = self.cross_attn_sub(
            x, lambda h: self.cross_attn(h, memory, key_mask=memory_mask, kv=cross_kv, need_weights=need_weights))
        x = self.ffn_sub(x, self.ffn)
        return x, cache, ({"self_attn": w_self, "cross_attn": w_cross} if need_weights else {})


class Encoder(nn.Module):
    """A stack of encoder layers (+ a final LayerNorm for pre-LN). ``forward(x, mask,
    need_weights=False, **extra) -> (x, infos)``: ``extra`` keyword arguments reach every layer
    (DeepFuse's ``video``/``video_mask``); ``infos`` is one dict per layer."""

    def __init__(self, layers: list[nn.Module], d_model: int, pre_norm: bool):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.final_norm = nn.LayerNorm(d_model) if pre_norm else None

    def forward(self, x, mask, need_weights: bool = False, **extra):
        infos = []
        for layer in self.layers:
            x, info = layer(x, mask, need_weights=need_weights, **extra)
            infos.append(info)
        return (x if self.final_norm is None else self.final_norm(x)), infos


class Decoder(nn.Module):
    """A stack of decoder layers (+ a final LayerNorm for pre-LN).

    ``forward(x, memory, memory_mask, caches=None, cross_kvs=None, need_weights=False)
    -> (x, caches, infos)``; ``caches``/``cross_kvs`` hold one ``(k, v)`` per layer."""

    def __init__(self, layers: list[nn.Module], d_model: int, pre_norm: bool):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.final_norm = nn.LayerNorm(d_model) if pre_norm else None

    def forward(self, x, memory, memory_mask, caches=None, cross_kvs=None, need_weights: bool = False):
        new_caches, infos = [], []
        for i, layer in enumerate(self.layers):
            x, cache, info = layer(x, memory, memory_mask, cache=None if caches is None else caches[i],
                                   cross_kv=None if cross_kvs is None else cross_kvs[i], need_weights=need_weights)
            new_caches.append(cache)
            infos.append(info)
        return (x if self.final_norm is None else self.final_norm(x)), new_caches, infos


def label_smoothed_nll(lprobs: torch.Tensor, target: torch.Tensor, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Label-smoothed loss and plain NLL, both summed over the rows of ``lprobs (N, V)``
    (log-probabilities) for ``target (N,)`` (padding already removed).

    fairseq's ``label_smoothed_nll_loss``: the target distribution puts ``1 - epsilon`` on the
    gold token and ``epsilon / (V - 1)`` on every other one, so per token
    ``loss = (1 - epsilon - epsilon/(V-1)) * nll + epsilon/(V-1) * sum_v (-log p_v)``."""
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    if epsilon <= 0.0:
        return nll.sum(), nll.sum()
    eps_i = epsilon / (lprobs.size(-1) - 1)
    smooth = -lprobs.sum(-1)
    loss = (1.0 - epsilon - eps_i) * nll + eps_i * smooth
    return loss.sum(), nll.sum()


# ----------------------------------------------------------------------------- the model
@register("transformer.nmt", TransformerConfig)
class TransformerNMT(MMTModel):
    """Text-only Transformer NMT (Vaswani et al. 2017); see the module docstring.

    Subclasses change the encoder through two hooks: :meth:`make_encoder_layer` (one layer of
    the stack) and :meth:`encoder_extra` (keyword arguments every encoder layer receives, from
    the batch)."""

    visual = "none"
    decoding = "step"

    def __init__(self, config: TransformerConfig, vocabs: Vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        c = config
        if vocabs.src is None:
            raise ValueError(f"{type(self).__name__} translates text: it needs a source vocabulary")
        self.src_pad = vocabs.src.specials.pad
        self.tgt_embed = Embedding(vocabs.tgt.size, c.d_model, self.specials.pad, c.dropout, c.scale_embeddings,
                                   c.max_positions)
        if c.share_all_embeddings:
            if vocabs.src.size != vocabs.tgt.size or vocabs.src.specials.pad != self.specials.pad:
                raise ValueError(f"share_all_embeddings needs one vocabulary for both sides (source {vocabs.src.size}, "
                                 f"target {vocabs.tgt.size} entries): set the recipe's joint_vocab: true")
            self.src_embed = self.tgt_embed
        else:
            self.src_embed = Embedding(vocabs.src.size, c.d_model, self.src_pad, c.dropout, c.scale_embeddings,
                                       c.max_positions)
        self.encoder = Encoder([self.make_encoder_layer(c, i) for i in range(c.enc_layers)], c.d_model, c.pre_norm)
        self.decoder = Decoder([DecoderLayer(c) for _ in range(c.dec_layers)], c.d_model, c.pre_norm)
        if c.tie_embeddings or c.share_all_embeddings:
            self.out_proj = None  # logits = h E_tgt^T
        else:
            self.out_proj = nn.Linear(c.d_model, vocabs.tgt.size, bias=False)
            nn.init.normal_(self.out_proj.weight, mean=0.0, std=c.d_model**-0.5)

    # ------------------------------------------------------------------ hooks for papers
    def make_encoder_layer(self, config: TransformerConfig, index: int) -> nn.Module:
        """Layer ``index`` of the encoder stack (DeepFuse returns its video-augmented layer)."""
        return EncoderLayer(config)

    def encoder_extra(self, batch: dict) -> dict:
        """Keyword arguments every encoder layer gets besides ``(x, mask)`` (DeepFuse: the video)."""
        return {}

    # ------------------------------------------------------------------ shared computation
    @property
    def output_weight(self) -> torch.Tensor:
        """The output projection ``(vocab, d)``: its own, or the target embedding when tied."""
        return self.tgt_embed.tokens.weight if self.out_proj is None else self.out_proj.weight

    def run_encoder(self, batch: dict, need_weights: bool = False):
        """``(memory (batch, src_len, d), mask (batch, src_len), per-layer infos)``."""
        src = batch["src"]
        mask = src != self.src_pad
        memory, infos = self.encoder(self.src_embed(src), mask, need_weights=need_weights, **self.encoder_extra(batch))
        return memory, mask, infos

    def decoder_hidden(self, batch: dict, need_weights: bool = False):
        """Teacher forcing: decoder outputs ``(batch, tgt_len, d)`` over ``tgt_in``, and the
        encoder's and decoder's per-layer infos."""
        memory, mask, enc_infos = self.run_encoder(batch, need_weights)
        hidden, _, dec_infos = self.decoder(self.tgt_embed(batch["tgt_in"]), memory, mask, need_weights=need_weights)
        return hidden, enc_infos, dec_infos

    def forward(self, batch: dict) -> dict:
        """Label-smoothed cross-entropy per target token (``loss``) and plain NLL (``nll``)."""
        hidden, _, _ = self.decoder_hidden(batch)
        return self.loss_from_hidden(hidden, batch)

    def loss_from_hidden(self, hidden: torch.Tensor, batch: dict) -> dict:
        """The contract's ``{"loss", "n_tokens", "nll"}`` from decoder outputs ``(batch, tgt_len, d)``."""
        tgt_out = batch["tgt_out"]
        keep = tgt_out != self.specials.pad
        n_tokens = keep.sum()
        logits = F.linear(hidden[keep], self.output_weight)  # (n_tokens, vocab): no padding rows
        loss, nll = label_smoothed_nll(F.log_softmax(logits.float(), dim=-1), tgt_out[keep],
                                       self.config.label_smoothing)
        n = n_tokens.clamp_min(1)
        return {"loss": loss / n, "n_tokens": n_tokens, "nll": nll.detach() / n}

    # ------------------------------------------------------------------ step decoding
    def encode(self, batch: dict) -> dict:
        memory, mask, _ = self.run_encoder(batch)
        enc = {"memory": memory, "memory_mask": mask, "cross_k": [], "cross_v": []}
        for layer in self.decoder.layers:
            k, v = layer.cross_kv(memory)
            enc["cross_k"].append(k)
            enc["cross_v"].append(v)
        return enc

    def init_state(self, enc: dict) -> dict:
        """Empty self-attention caches, ``(batch, heads, 0, d_k)`` per decoder layer."""
        b = enc["memory"].size(0)
        c = self.config
        empty = enc["memory"].new_zeros(b, c.n_heads, 0, c.d_model // c.n_heads)
        return {"k": [empty] * c.dec_layers, "v": [empty] * c.dec_layers}

    def step(self, enc: dict, state: dict, prev: torch.Tensor):
        """One target position: ``prev (batch,)`` at position ``t`` = the cache length.
        Returns ``(log_probs (batch, vocab), state with the position appended, {})``."""
        t = state["k"][0].size(2)
        x = self.tgt_embed(prev.unsqueeze(1), offset=t)
        caches = list(zip(state["k"], state["v"]))
        cross = list(zip(enc["cross_k"], enc["cross_v"]))
        h, caches, _ = self.decoder(x, enc["memory"], enc["memory_mask"], caches=caches, cross_kvs=cross)
        logits = F.linear(h[:, 0], self.output_weight)
        state = {"k": [k for k, _ in caches], "v": [v for _, v in caches]}
        return F.log_softmax(logits.float(), dim=-1), state, {}

    def full_step_scores(self, batch: dict, prefix: torch.Tensor) -> torch.Tensor:
        """Log-probabilities of the next token after ``prefix (batch, t)`` (``<bos>`` first),
        recomputed over the whole prefix without any cache: ``(batch, vocab)``. The check of
        the incremental path (tests) and decoding without a cache (benchmarks)."""
        memory, mask, _ = self.run_encoder(batch)
        h, _, _ = self.decoder(self.tgt_embed(prefix), memory, mask)
        return F.log_softmax(F.linear(h[:, -1], self.output_weight).float(), dim=-1)


class UncachedDecoding:
    """A :class:`TransformerNMT` driven by the shared step search *without* its cache: the
    encoder runs once per batch, but every step recomputes the decoder over the whole target
    prefix (the state is the prefix), as a toolkit without incremental state does. Decodes
    exactly what the cached model decodes, slower; tests and benchmarks use it to check that the
    cache changes nothing."""

    decoding = "step"

    def __init__(self, model: TransformerNMT):
        self.model, self.specials = model, model.specials
        self.registry_name = f"{model.registry_name} (uncached)"

    def eval(self):
        self.model.eval()
        return self

    def encode(self, batch: dict) -> dict:
        memory, mask, _ = self.model.run_encoder(batch)
        return {"memory": memory, "memory_mask": mask}

    def init_state(self, enc: dict) -> torch.Tensor:
        return enc["memory_mask"].new_zeros(enc["memory"].size(0), 0, dtype=torch.long)  # no token before <bos>

    def step(self, enc: dict, state: torch.Tensor, prev: torch.Tensor):
        prefix = torch.cat([state, prev.unsqueeze(1)], 1)
        m = self.model
        h, _, _ = m.decoder(m.tgt_embed(prefix), enc["memory"], enc["memory_mask"])
        return F.log_softmax(F.linear(h[:, -1], m.output_weight).float(), dim=-1), prefix, {}
