"""Calixto, Liu and Campbell (2017), "Doubly-Attentive Decoder for Multi-modal Neural
Machine Translation" (ACL). Paper text: ``../shared/papers/doubly-attentive-calixto2017.txt``.

Two registered models:

- ``doubly_attentive.nmt``: the text-only attention NMT of section 2 (bi-GRU encoder, conditional
  GRU decoder of dl4mt, Bahdanau attention).
- ``doubly_attentive.nmt_src_img``: NMT_SRC+IMG of section 3, which adds a second, independent
  attention over the 196 res4f image annotation vectors, gated by beta.

Equation -> code (``t`` is the decoder step; shapes are ``(batch, ...)``):

=================  ===========================================================================
section 2.1        ``encode``: ``h_i = [fwd h_i; bwd h_i]`` -> ``ctx (batch, src_len, 2*enc_dim)``
section 2, s_0     ``init_state``: ``s_0 = tanh(W_init [fwd h_N; bwd h_1] + b)`` ("a multilayer
                   perceptron" on the last forward and backward vectors; one layer);
                   ``init_state: mean`` gives dl4mt's ``tanh(W_init mean_i h_i + b)``
REC1               ``_core``: ``s'_t = GRU(E_y[y_{t-1}], s_{t-1})`` (``rec1_input``, ``rec1_recurrent``)
eq. 2-4            ``_core``: ``self.att_src`` gives ``alpha^src_t (batch, src_len)`` and ``c_t``
eq. 8              ``_core``: ``beta_t = sigmoid(W_beta s_{t-1} + b_beta)`` (``self.beta_gate``)
eq. 6-7, 9         ``_core``: ``self.att_img`` gives ``alpha^img_t (batch, 196)``;
                   ``i_t = beta_t sum_l alpha^img_{t,l} a_l``
eq. 10 (REC2)      ``_core``/``_gru``: ``z_t, r_t, underline s_t, s_t`` with separate ``W^src``/``W^img``
eq. 1 / eq. 5      ``_readout``: ``L_o tanh(L_s s_t + L_w E_y[y_{t-1}] + L_cs c_t [+ L_ci i_t])``
section 5          ``init_calixto``: N(0, 0.01^2), orthogonal recurrent matrices, zero biases;
                   dropout 0.5 on the encoder RNN, the image features, the decoder RNN (one mask
                   for all time steps) and before the output layer.
=================  ===========================================================================

Decoder dropout is variational (Gal & Ghahramani 2016) as in dl4mt/Nematus, which the paper's
code builds on: a mask per sentence multiplies the state only where it enters the recurrent
products, ``U (s_{t-1} * m)``, while the interpolation ``(1 - z) underline s + z s_{t-1}``
carries the unmasked state, so the state stays within [-1, 1] (masking the carried state
scales a unit that holds its value by 1/(1-p) at every step). REC1 and REC2 have masks of
their own.

Encoder dropout is variational too, but on the bi-GRU's input (embeddings) and output
(annotations), one mask per sentence for all positions: the encoder is the fused ``nn.GRU``,
which has no hook for a mask on its recurrent products. Nematus also masks the encoder state
inside the recurrence; doing that here would mean a hand-written bi-GRU stepping in Python
over every source position, for a regulariser the paper does not describe at that level
("dropout ... in the encoder bidirectional RNN"). Listed in ``docs/doubly_attentive.md``.

The shared decoder (:mod:`mmt_repro.decode.search`) drives ``encode``/``init_state``/``step``;
the shared trainer calls ``forward``, which is teacher forcing over the same ``_core``, with
the input projections of every step in one matrix product beforehand and the output layer
and softmax of every step in one product afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .base import MMTModel, Vocabs
from .layers import MLPAttention, init_calixto, linear_cross_entropy, masked_mean, variational_mask
from .registry import register


@dataclass
class NMTConfig:
    """Text-only attentive NMT (Calixto et al. 2017, sections 2 and 5)."""

    emb_dim: int = 620  # source and target word embedding size ("620D")
    enc_dim: int = 1024  # size of each encoder GRU direction ("1024D forward + 1024D backward")
    dec_dim: int = 1024  # decoder (conditional GRU) state size
    att_dim: int = 2048  # hidden size of the attention MLP (not stated; dl4mt: the context width, 2 x enc_dim)
    dropout_enc: float = 0.5  # variational dropout on the encoder bi-RNN input and output
    dropout_dec: float = 0.5  # variational dropout on the decoder state where it enters U (REC1, REC2)
    dropout_out: float = 0.5  # dropout before emitting the target word
    init_std: float = 0.01  # std of the Gaussian init of non-recurrent matrices
    # s_0 (section 2): "a multilayer perceptron ... [whose] input is the concatenation of the last
    # forward and backward vectors [->h_N; <-h_1]": ``last`` = tanh(W_init [->h_N; <-h_1] + b), one
    # layer (the paper gives no depth; dl4mt's ff_state has one). ``mean``: dl4mt/Nematus's
    # tanh(W_init mean_i h_i + b), which the code used before.
    init_state: str = "last"

    def __post_init__(self):
        if self.init_state not in ("last", "mean"):
            raise ValueError(f"init_state={self.init_state!r}: valid values are 'last' (the paper's "
                             "[->h_N; <-h_1]) and 'mean' (dl4mt's mean of the annotations)")


@dataclass
class NMTSrcImgConfig(NMTConfig):
    """NMT_SRC+IMG (section 3): adds the image attention and the beta gate."""

    img_dim: int = 1024  # dimension of an image annotation vector a_l (res4f: 1024)
    img_att_dim: int = 1024  # hidden size of the image attention MLP
    dropout_img: float = 0.5  # dropout on the image features (one mask per image)


class _CGRUBase(MMTModel):
    """Shared body of both models; ``use_image`` switches on the section 3 additions."""

    use_image = False

    def __init__(self, config: NMTConfig, vocabs: Vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        c = config
        if vocabs.src is None:
            raise ValueError(f"{type(self).__name__} translates text: it needs a source vocabulary")
        src_vocab_size, tgt_vocab_size = vocabs.src.size, vocabs.tgt.size
        self.src_pad = vocabs.src.specials.pad
        ctx_dim = 2 * c.enc_dim
        self.src_emb = nn.Embedding(src_vocab_size, c.emb_dim, padding_idx=self.src_pad)
        self.tgt_emb = nn.Embedding(tgt_vocab_size, c.emb_dim, padding_idx=self.specials.pad)
        self.encoder = nn.GRU(c.emb_dim, c.enc_dim, batch_first=True, bidirectional=True)
        self.init_proj = nn.Linear(ctx_dim, c.dec_dim)  # W_init (on [->h_N; <-h_1], or the mean)
        # REC1: W_z, W_r, W of E_y[y_{t-1}] (one product for the three gates) and U_z, U_r, U.
        self.rec1_input = nn.Linear(c.emb_dim, 3 * c.dec_dim, bias=True)
        self.rec1_recurrent = nn.Linear(c.dec_dim, 3 * c.dec_dim, bias=True)
        self.att_src = MLPAttention(c.dec_dim, ctx_dim, c.att_dim)  # eq. 2-4
        # REC2 (eq. 10): z, r and the candidate each get W^src c_t (+ W^img i_t) + U s'_t.
        self.rec2_src = nn.Linear(ctx_dim, 3 * c.dec_dim, bias=False)  # W_z^src, W_r^src, W^src
        self.rec2_recurrent = nn.Linear(c.dec_dim, 3 * c.dec_dim, bias=True)  # U_z, U_r, U
        # Output layer (eq. 1 / eq. 5).
        self.out_s = nn.Linear(c.dec_dim, c.emb_dim)  # L_s
        self.out_w = nn.Linear(c.emb_dim, c.emb_dim, bias=False)  # L_w
        self.out_c = nn.Linear(ctx_dim, c.emb_dim, bias=False)  # L_c (L_cs)
        self.out_o = nn.Linear(c.emb_dim, tgt_vocab_size)  # L_o
        if self.use_image:
            self.att_img = MLPAttention(c.dec_dim, c.img_dim, c.img_att_dim)  # eq. 6-7
            self.beta_gate = nn.Linear(c.dec_dim, 1)  # eq. 8: W_beta, b_beta
            self.rec2_img = nn.Linear(c.img_dim, 3 * c.dec_dim, bias=False)  # W_z^img, W_r^img, W^img
            self.out_i = nn.Linear(c.img_dim, c.emb_dim, bias=False)  # L_ci
        init_calixto(self, c.init_std)  # the U matrices of REC1 and REC2: orthogonal blocks

    # ------------------------------------------------------------------ encoder
    def encode(self, batch: dict) -> dict:
        """Source annotations ``ctx (batch, src_len, 2*enc_dim)`` (+ image annotations)."""
        src, src_len = batch["src"], batch["src_len"]
        bsz = src.size(0)
        c = self.config
        emb = self.src_emb(src)
        m_in = variational_mask(bsz, c.emb_dim, c.dropout_enc, emb, self.training)
        if m_in is not None:
            emb = emb * m_in.unsqueeze(1)
        packed = pack_padded_sequence(emb, src_len.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.encoder(packed)
        ctx, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))
        m_out = variational_mask(bsz, ctx.size(-1), c.dropout_enc, ctx, self.training)
        if m_out is not None:
            ctx = ctx * m_out.unsqueeze(1)
        mask = src != self.src_pad
        enc = {
            "ctx": ctx,
            "ctx_mask": mask,
            "ctx_proj": self.att_src.precompute(ctx),
            "dec_mask": variational_mask(bsz, c.dec_dim, c.dropout_dec, ctx, self.training),  # REC1's U
            "dec_mask2": variational_mask(bsz, c.dec_dim, c.dropout_dec, ctx, self.training),  # REC2's U
        }
        if self.use_image:
            img = batch["img"]
            if img is None:
                raise ValueError(f"model {self.registry_name} needs image features but the batch has none")
            if img.size(-1) != c.img_dim:
                raise ValueError(f"image features have dimension {img.size(-1)}, model expects img_dim={c.img_dim}")
            m_img = variational_mask(bsz, c.img_dim, c.dropout_img, img, self.training)
            if m_img is not None:
                img = img * m_img.unsqueeze(1)
            enc["img"] = img
            enc["img_mask"] = batch.get("img_mask")
            enc["img_proj"] = self.att_img.precompute(img)
        return enc

    def init_state(self, enc: dict) -> torch.Tensor:
        """``s_0 = tanh(W_init [->h_N; <-h_1] + b)`` (``init_state: last``, section 2) or
        ``tanh(W_init mean_i h_i + b)`` (``mean``, dl4mt): ``(batch, dec_dim)``. ``->h_N`` is the
        forward state at each sentence's last real token, ``<-h_1`` the backward state at its first."""
        ctx, mask = enc["ctx"], enc["ctx_mask"]
        if self.config.init_state == "mean":
            return torch.tanh(self.init_proj(masked_mean(ctx, mask)))
        half = ctx.size(-1) // 2
        last = (mask.sum(1) - 1).clamp_min(0)
        fwd_last = ctx[torch.arange(ctx.size(0), device=ctx.device), last, :half]
        return torch.tanh(self.init_proj(torch.cat([fwd_last, ctx[:, 0, half:]], dim=-1)))

    # ------------------------------------------------------------------ decoder
    @staticmethod
    def _gru(x: torch.Tensor, h_proj: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """One GRU update from the input products ``x = [W_z x; W_r x; W x] (+ b)`` and the
        recurrent products ``h_proj = [U_z h'; U_r h'; U h'] + b`` (``h'`` = ``h``, masked in
        training): ``z``, ``r``, ``underline h = tanh(W x + r * U h')``, then
        ``(1 - z) underline h + z h`` with the unmasked ``h``."""
        x_z, x_r, x_n = x.chunk(3, dim=-1)
        h_z, h_r, h_n = h_proj.chunk(3, dim=-1)
        z = torch.sigmoid(x_z + h_z)
        r = torch.sigmoid(x_r + h_r)
        return (1.0 - z) * torch.tanh(x_n + r * h_n) + z * h

    def _core(self, enc: dict, s_prev: torch.Tensor, x1: torch.Tensor):
        """REC1, the attention(s) and REC2 (eq. 10) of one step, from ``x1 = rec1_input(E_y[y_{t-1}])``.
        Returns ``s_t``, ``c_t``, ``i_t`` (None without images) and ``info``."""
        m1, m2 = enc.get("dec_mask"), enc.get("dec_mask2")
        s1 = self._gru(x1, self.rec1_recurrent(s_prev if m1 is None else s_prev * m1), s_prev)  # s'_t
        c_t, alpha_src = self.att_src(s1, enc["ctx"], enc["ctx_mask"], enc["ctx_proj"])
        info = {"alpha_src": alpha_src}
        x2 = self.rec2_src(c_t)
        i_t = None
        if self.use_image:
            beta = torch.sigmoid(self.beta_gate(s_prev))  # eq. 8, from s_{t-1}
            a_t, alpha_img = self.att_img(s1, enc["img"], enc.get("img_mask"), enc["img_proj"])  # eq. 6-7
            i_t = beta * a_t  # eq. 9
            x2 = x2 + self.rec2_img(i_t)
            info["alpha_img"] = alpha_img
            info["beta"] = beta.squeeze(-1)
        s_t = self._gru(x2, self.rec2_recurrent(s1 if m2 is None else s1 * m2), s1)  # eq. 10
        return s_t, c_t, i_t, info

    def _readout_hidden(self, s_t, emb_prev, c_t, i_t) -> torch.Tensor:
        """Eq. 1 / eq. 5 up to ``L_o``: ``tanh(L_s s_t + L_w E_y[y_{t-1}] + L_c c_t (+ L_ci i_t))``
        (dropout in training), ``(..., emb_dim)``; any leading dimensions (one step, or all
        steps of a batch at once)."""
        t = self.out_s(s_t) + self.out_w(emb_prev) + self.out_c(c_t)
        if i_t is not None:
            t = t + self.out_i(i_t)
        return F.dropout(torch.tanh(t), p=self.config.dropout_out, training=self.training)

    def _readout(self, s_t, emb_prev, c_t, i_t) -> torch.Tensor:
        """Eq. 1 / eq. 5 before the softmax: logits ``L_o tanh(...)``, ``(..., vocab)``."""
        return self.out_o(self._readout_hidden(s_t, emb_prev, c_t, i_t))

    def step(self, enc: dict, state: torch.Tensor, prev: torch.Tensor):
        """One decoder step. ``prev (batch,)`` previous tokens; returns
        ``(log_probs (batch, vocab), new_state (batch, dec_dim), info)`` where ``info`` holds
        ``alpha_src (batch, src_len)`` and, with images, ``alpha_img (batch, L)`` and
        ``beta (batch,)``."""
        emb = self.tgt_emb(prev)
        s_t, c_t, i_t, info = self._core(enc, state, self.rec1_input(emb))
        return F.log_softmax(self._readout(s_t, emb, c_t, i_t), dim=-1), s_t, info

    def forward(self, batch: dict) -> dict:
        """Teacher-forced cross-entropy, summed over target tokens and divided by their count.
        The same ``_core`` as :meth:`step`; the input projections before the loop and the
        output layer after it run once for all steps."""
        enc = self.encode(batch)
        state = self.init_state(enc)
        tgt_in, tgt_out = batch["tgt_in"], batch["tgt_out"]
        emb = self.tgt_emb(tgt_in)  # (batch, T, emb)
        x1 = self.rec1_input(emb)
        states, contexts, images = [], [], []
        for t in range(tgt_in.size(1)):
            state, c_t, i_t, _ = self._core(enc, state, x1[:, t])
            states.append(state)
            contexts.append(c_t)
            images.append(i_t)
        i_all = torch.stack(images, dim=1) if self.use_image else None
        hidden = self._readout_hidden(torch.stack(states, dim=1), emb, torch.stack(contexts, dim=1), i_all)
        pad = self.specials.pad
        n_tokens = (tgt_out != pad).sum()
        # L_o and the softmax of all steps, chunked (layers.linear_cross_entropy: no (batch x T x V) logits kept)
        nll = linear_cross_entropy(hidden.reshape(-1, hidden.size(-1)), self.out_o.weight, self.out_o.bias,
                                   tgt_out.reshape(-1), ignore_index=pad)
        return {"loss": nll / n_tokens.clamp_min(1), "n_tokens": n_tokens}


@register("doubly_attentive.nmt", NMTConfig)
class AttentiveNMT(_CGRUBase):
    """Text-only attention-based NMT with a conditional GRU decoder (section 2)."""

    use_image = False
    visual = "none"


@register("doubly_attentive.nmt_src_img", NMTSrcImgConfig)
class DoublyAttentiveNMT(_CGRUBase):
    """NMT_SRC+IMG: the doubly-attentive decoder (section 3, eqs. 5-10)."""

    use_image = True
    visual = "grid"  # the 196 res4f annotation vectors (14x14 grid); a mask, when given, is honoured
