"""Yang, Chen, Zhang and Sun (2020), "Visual Agreement Regularized Training for Multi-Modal
Machine Translation" (AAAI). Paper text: ``../shared/papers/visual-agreement-yang2020.txt``.
No public code: this is its first public implementation.

Registered models (every one holds a forward ``x -> y`` and a backward ``y -> x`` model in
one checkpoint, trained jointly on the same batches; ``directions = ("forward", "backward")``,
so a ``reverse_of`` system decodes the backward one). ``backward: false`` (the plan's choice for
``backward: auto`` where no job reads the backward model: no agreement, no ``reverse_of``
decoding, no analysis of both directions) builds and trains the forward model alone:

- ``visual_agreement.seq2seq_text``: OnlyText (Bahdanau et al.), 2-layer bi-LSTM encoder,
  2-layer LSTM decoder with additive attention over the source;
- ``visual_agreement.seq2seq``: the same with the image (``+ Image``: eqs. 5-9), multi-head
  co-attention (``+ MHCA``: eqs. 1-4, 10-11), adaptive weighting (eqs. 17-18) and hard or soft
  visual agreement (eqs. 12-16, 19-20), each switched by the config;
- ``visual_agreement.transformer_text`` / ``visual_agreement.transformer``: the Transformer
  versions (section "We also implement ... based on the Transformer"), built on the shared
  layers of :mod:`mmt_repro.models.transformer`, in
  :mod:`mmt_repro.models.visual_agreement_transformer`.

The jobs and analyses that read a trained checkpoint (the alignment-layer choice, VAD, beta by
word) are in :mod:`mmt_repro.analyses.visual_agreement`.

Equation -> code (shapes ``(batch, ...)``; ``n`` source words, ``m`` image regions, ``d`` the
model size, ``K`` co-attention subspaces):

==============  ==========================================================================
eq. 1-4         :func:`co_attention`: ``S_k = V M_k X^T (batch, K, m, n)``, ``A^x_k`` = softmax
                over the words, ``A^v_k`` = softmax of ``S_k^T`` over the regions,
                ``X^_k = A^x_k X (batch, K, m, d)``, ``V^_k = A^v_k V (batch, K, n, d)``, mean
                over ``K`` -> ``X^ (batch, m, d)``, ``V^ (batch, n, d)``
eq. 5 / 18      :meth:`_Seq2SeqDirection._step`: ``s_t = LSTM(s_{t-1}, [e(y_{t-1}); (beta) c-_v; c-_x])``
eq. 6-7         ``att_v(s_{t-1}, V)``: ``A_{y_t -> v} (batch, m)``, ``c^v_t``
eq. 8-9         ``att_x(s_{t-1}, X)``: ``A_{y_t -> x} (batch, n)``, ``c^x_t``
(after eq. 9)   ``att_vhat(s_{t-1}, V^)``, ``att_xhat(s_{t-1}, X^)``: ``c^_v``, ``c^_x``
eq. 10-11       :func:`fuse`: ``g = sigmoid(U_1 c + U_2 c^)``, ``c- = g * c + (1 - g) * c^``
eq. 17          :meth:`_VisualGates.beta`: ``beta = sigmoid(w^T tanh(W_1 s_{t-1} + W_2 c-_v))``
+ Image gate    ``damt_gate``: DAMT's ``beta = sigmoid(W_beta s_{t-1} + b)`` on ``c_v`` (Table 3's
                "+ Image" row repeats DAMT's numbers; Calixto et al. 2017, eq. 8)
eq. 12-13       :func:`agreement_terms` with constant weights (frozen weighting)
eq. 14          hard: ``x^ = argmax aligner(x | y)`` from the align stage's links
                (:func:`hard_targets`; several links: the one nearest the diagonal)
eq. 15-16       soft: ``A_{x* -> v} ~ sum_x A_{y -> x}(fwd) A_{x -> v}(bwd)`` (:func:`soft_targets`)
eq. 19-20       :func:`agreement_terms` with ``beta_y`` weights (adaptive weighting)
eq. 21-22       VAD, :mod:`mmt_repro.metrics.vad`, through the analysis ``visual_agreement.vad``
==============  ==========================================================================

``Delta`` is the MSE of two attention vectors (the mean over the ``m`` region slots of the
squared difference). The joint loss per batch is
``nll_fwd / N_y + nll_bwd / N_x + lambda_1 sum_y w_y Delta_y / N_y + lambda_2 sum_x w_x Delta_x / N_x``
(``N``: the tokens of each side, ``<eos>`` counted in the NLL as everywhere in this project;
``Delta`` is summed over the words, not ``<eos>``). ``agreement_grad: own`` (default, the
paper's two objectives eqs. 19-20, each maximised over its own model's parameters): the other
model's image attention is a constant target, so ``lambda_1`` regularises the forward model and
``lambda_2`` the backward one; ``both``: gradients reach both models through both attention
vectors (agreement-based joint training, Cheng et al. 2016). Soft agreement keeps the gradient
through the own model's ``A_{y -> x}`` in eq. 16 either way (it is a function of that model).

Transformer (the paper gives no detail): every decoder block attends over ``X`` and ``X^``
(fused by eqs. 10-11) and, with multi-head attention of its own, over ``V`` and ``V^`` (fused,
scaled by ``beta``); the block's output is ``c-_x + beta c-_v`` in the place of the usual
cross-attention. ``A_{y -> v}`` is the mean over heads of the image attention (over ``V``) of
the decoder block that aligns best (section 4): the rule ``select_alignment_layer`` measures
each block's text attention against the align stage's links on validation data and records the
block (``layer.<system>.seed<seed>.json``), which the agreement systems read as the resource
``alignment_layer``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .base import MMTModel, Specials, Vocabs, VocabSpec
from .layers import MLPAttention
from .registry import register

AGREEMENTS = ("none", "hard", "soft")
WEIGHTINGS = ("adaptive", "frozen")
AGREEMENT_GRADS = ("own", "both")


# ============================================================================ configs
@dataclass
class DirectionOptions:
    """Which of the joint model's two directions exist and train (every model of this module)."""

    # true: the forward and the backward model (section 3's joint training); false: the forward
    # model alone, where nothing reads the backward one (a baseline trained for one direction,
    # as the paper's OnlyText / + MHCA rows are; half the training). "auto" (the settings' value):
    # the plan decides per run (mmt_repro.plan.build.train: TrainJobs.backward_read); built outside the plan, both.
    backward: bool | str = True

    def check_directions(self):
        if self.backward == "auto":
            self.backward = True
        if not isinstance(self.backward, bool):
            raise ValueError(f"backward={self.backward!r}; valid: true, false, auto")
        if not self.backward and getattr(self, "agreement", "none") != "none":
            raise ValueError(f"agreement={self.agreement!r} regularises both directions against each other: "
                             "it needs backward: true")


@dataclass
class Seq2SeqTextConfig(DirectionOptions):
    """OnlyText (Yang et al. 2020, Settings)."""

    emb_dim: int = 512  # "The size of word embedding is set to 512 ... learned from scratch"
    hidden: int = 512  # "2-layer LSTM with hidden size 512"; the bi-LSTM's two directions give 256 each
    enc_layers: int = 2  # "the textual encoder and decoder are all a 2-layer LSTM"
    dec_layers: int = 2
    att_dim: int = 512  # not stated: hidden size of the additive attention MLP (= hidden)
    dropout: float = 0.3  # "We also make use of dropout": rate not stated (OpenNMT-py's 0.3)

    def __post_init__(self):
        if self.hidden % 2:
            raise ValueError(f"hidden={self.hidden} must be even (two encoder directions of hidden / 2)")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout} must be in [0, 1)")
        self.check_directions()


@dataclass
class AgreementOptions:
    """Visual input and visual agreement (shared by the Seq2Seq and Transformer configs)."""

    img_dim: int = 2048  # region feature size (BUTD Faster R-CNN: 2048), projected to d ("512-dim")
    co_attention: bool = True  # multi-head co-attention and the fusion gates (eqs. 1-4, 10-11): "+ MHCA"
    subspaces: int = 8  # K of eqs. 1-4: not stated (the Transformer's 8 heads)
    beta_gate: bool = False  # eqs. 17-18: the gate beta scales the visual context (adaptive weighting)
    agreement: str = "none"  # none | hard (eq. 14) | soft (eqs. 15-16)
    weighting: str = "adaptive"  # adaptive: beta_y Delta (eqs. 19-20; needs beta_gate) | frozen: constant (eqs. 12-13)
    lambda_fwd: float = 0.2  # lambda_1 (eq. 19): 0.2 for En->De, 0.5 for En->Fr
    lambda_bwd: float = 0.2  # lambda_2 (eq. 20): 0.2 for De->En, 0.1 for Fr->En
    detach_beta: bool = False  # not stated: True keeps the agreement term's gradient out of beta
    # own: each model's term (eq. 19 / 20) regularises that model only, the other model's attention
    # is a constant target (the paper's two objectives L(theta->) and L(theta<-), so lambda_1 and
    # lambda_2 act on one model each); both: gradient through both attention vectors (Cheng et al.)
    agreement_grad: str = "own"

    def check(self):
        if self.agreement not in AGREEMENTS:
            raise ValueError(f"agreement={self.agreement!r}; valid: {', '.join(AGREEMENTS)}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting={self.weighting!r}; valid: {', '.join(WEIGHTINGS)}")
        if self.agreement != "none" and self.weighting == "adaptive" and not self.beta_gate:
            raise ValueError("adaptive weighting (eqs. 19-20) weighs Delta by beta: set beta_gate: true "
                             "(or weighting: frozen)")
        if self.agreement_grad not in AGREEMENT_GRADS:
            raise ValueError(f"agreement_grad={self.agreement_grad!r}; valid: {', '.join(AGREEMENT_GRADS)}")
        if self.subspaces < 1:
            raise ValueError(f"subspaces={self.subspaces} must be >= 1")


@dataclass
class Seq2SeqConfig(Seq2SeqTextConfig, AgreementOptions):
    """The Seq2Seq model with the image, co-attention and visual agreement."""

    # Table 3's "+ Image" row repeats DAMT's numbers, and DAMT "further uses the gate mechanism to
    # rescale visual information": Calixto et al.'s gate beta_t = sigmoid(W_beta s_{t-1} + b_beta)
    # (their eq. 8, a scalar) on the visual context, without co-attention or eq. 17's gate.
    damt_gate: bool = False

    def __post_init__(self):
        Seq2SeqTextConfig.__post_init__(self)  # checks the directions too
        self.check()
        if self.damt_gate and (self.beta_gate or self.co_attention):
            raise ValueError("damt_gate is the + Image row's gate (DAMT's): it replaces eq. 17's gate and has no "
                             "co-attention; set beta_gate: false and co_attention: false")


# ============================================================================ equations
def co_attention(X: torch.Tensor, x_mask: torch.Tensor, V: torch.Tensor, v_mask: torch.Tensor | None,
                 M: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eqs. 1-4. ``X (batch, n, d)`` with ``x_mask (batch, n)``, ``V (batch, m, d)`` with ``v_mask
    (batch, m)`` (True = real), ``M (K, d, d)``. Returns ``X^ (batch, m, d)`` (image-aware text,
    one row per region) and ``V^ (batch, n, d)`` (text-aware image, one row per word)."""
    S = torch.einsum("bmd,kde,bne->bkmn", V, M, X)  # eq. 1, (batch, K, m, n)
    neg = torch.finfo(S.dtype).min
    A_x = torch.softmax(S.masked_fill(~x_mask[:, None, None, :], neg), dim=-1)  # eq. 2, rows over words
    St = S.transpose(-1, -2)  # (batch, K, n, m)
    if v_mask is not None:
        St = St.masked_fill(~v_mask[:, None, None, :], neg)
    A_v = torch.softmax(St, dim=-1)  # eq. 2, rows over regions
    X_hat = (A_x @ X.unsqueeze(1)).mean(1)  # eqs. 3-4
    V_hat = (A_v @ V.unsqueeze(1)).mean(1)
    return X_hat, V_hat


def fuse(c: torch.Tensor, c_hat: torch.Tensor, U1: nn.Linear, U2: nn.Linear) -> torch.Tensor:
    """Eqs. 10-11: ``g = sigmoid(U_1 c + U_2 c^)``, ``c- = g * c + (1 - g) * c^``."""
    g = torch.sigmoid(U1(c) + U2(c_hat))
    return g * c + (1.0 - g) * c_hat


def attention_mse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Delta (eq. 12): the MSE of two attention vectors over the regions, ``(..., m) -> (...)``."""
    return (a - b).pow(2).mean(-1)


def hard_targets(other_img_att: torch.Tensor, aligned: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 14: ``A_{x^ -> v}`` for every target row: ``other_img_att (batch, n, m)`` (the other
    model's image attention when generating word ``i``), ``aligned (batch, T)`` the index ``x^``
    (-1: none). Returns ``(targets (batch, T, m), valid (batch, T))``."""
    valid = aligned >= 0
    idx = aligned.clamp_min(0).clamp_max(other_img_att.size(1) - 1)
    targets = other_img_att.gather(1, idx.unsqueeze(-1).expand(-1, -1, other_img_att.size(-1)))
    return targets, valid


def soft_targets(own_text_att: torch.Tensor, other_img_att: torch.Tensor) -> torch.Tensor:
    """Eq. 16: ``sum_x A_{y -> x}(own) A_{x -> v}(other)``: ``own_text_att (batch, T, n)`` (the
    model's attention over the source words), ``other_img_att (batch, n, m)`` -> ``(batch, T, m)``."""
    n = own_text_att.size(-1)
    return own_text_att @ other_img_att[:, :n]


def agreement_terms(img_att: torch.Tensor, targets: torch.Tensor, valid: torch.Tensor,
                    weights: torch.Tensor | None) -> torch.Tensor:
    """``sum_y w_y Delta(A_{y -> v}, A_{x* -> v})`` over the valid rows (eqs. 12-13 with
    ``weights`` None, i.e. 1; eqs. 19-20 with ``beta``). ``img_att``/``targets (batch, T, m)``,
    ``valid (batch, T)``, ``weights (batch, T)``. Returns a scalar (the sum)."""
    delta = attention_mse(img_att, targets)
    if weights is not None:
        delta = delta * weights
    return (delta * valid.to(delta.dtype)).sum()


# ============================================================================ Seq2Seq
class _VisualGates(nn.Module):
    """Eqs. 10-11 (the fusion of both contexts) and eq. 17 (beta)."""

    def __init__(self, d: int, query_dim: int, beta_gate: bool):
        super().__init__()
        self.U1, self.U2 = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)  # visual fusion
        self.U3, self.U4 = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)  # textual fusion
        if beta_gate:
            self.W1 = nn.Linear(query_dim, d, bias=False)  # eq. 17: W_1 s_{t-1}
            self.W2 = nn.Linear(d, d, bias=False)  # W_2 c-_v
            self.w = nn.Linear(d, 1, bias=False)  # w^T

    def beta(self, query: torch.Tensor, c_v: torch.Tensor) -> torch.Tensor:
        """Eq. 17: ``sigmoid(w^T tanh(W_1 s + W_2 c-_v))``, ``(..., 1)``."""
        return torch.sigmoid(self.w(torch.tanh(self.W1(query) + self.W2(c_v))))


class _Seq2SeqDirection(nn.Module):
    """One translation direction: encoder, image projection, co-attention, attentive decoder."""

    def __init__(self, c, src: VocabSpec, tgt: VocabSpec, visual: bool):
        super().__init__()
        d = c.hidden
        self.c, self.visual = c, visual
        self.src_pad, self.tgt = src.specials.pad, tgt.specials
        self.src_emb = nn.Embedding(src.size, c.emb_dim, padding_idx=src.specials.pad)
        self.tgt_emb = nn.Embedding(tgt.size, c.emb_dim, padding_idx=tgt.specials.pad)
        self.encoder = nn.LSTM(c.emb_dim, d // 2, num_layers=c.enc_layers, batch_first=True, bidirectional=True,
                               dropout=c.dropout if c.enc_layers > 1 else 0.0)
        self.init_h = nn.Linear(d, d * c.dec_layers)  # s_0 (not stated): tanh(W mean_i h_i + b) per layer
        self.att_x = MLPAttention(d, d, c.att_dim)  # eq. 8
        in_dim = c.emb_dim + d
        if visual:
            self.img_proj = nn.Linear(c.img_dim, d)  # "an extra linear layer ... into 512-dim"
            self.att_v = MLPAttention(d, d, c.att_dim)  # eq. 6
            in_dim += d
            if c.co_attention:
                self.M = nn.Parameter(torch.empty(c.subspaces, d, d))  # eq. 1: M_1..M_K
                nn.init.xavier_uniform_(self.M.view(-1, d))
                self.att_vhat = MLPAttention(d, d, c.att_dim)  # c^_v over V^ (one row per word)
                self.att_xhat = MLPAttention(d, d, c.att_dim)  # c^_x over X^ (one row per region)
            if c.co_attention or c.beta_gate:
                self.gates = _VisualGates(d, d, c.beta_gate)
            if getattr(c, "damt_gate", False):
                self.damt_beta = nn.Linear(d, 1)  # Calixto et al.'s eq. 8: W_beta, b_beta
        self.cells = nn.ModuleList([nn.LSTMCell(in_dim if k == 0 else d, d) for k in range(c.dec_layers)])
        # Output (not stated; Bahdanau et al.'s deep output): tanh(L_s s_t + L_c [c-_x; c-_v] + L_e e(y_{t-1}))
        self.out_s = nn.Linear(d, c.emb_dim)
        self.out_c = nn.Linear(in_dim - c.emb_dim, c.emb_dim, bias=False)
        self.out_e = nn.Linear(c.emb_dim, c.emb_dim, bias=False)
        self.out = nn.Linear(c.emb_dim, tgt.size)

    # ---------------------------------------------------------------- encoder
    def encode(self, src: torch.Tensor, src_len: torch.Tensor, img=None, img_mask=None) -> dict:
        c = self.c
        emb = F.dropout(self.src_emb(src), c.dropout, self.training)
        packed = pack_padded_sequence(emb, src_len.clamp_min(1).cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.encoder(packed)
        X, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))
        X = F.dropout(X, c.dropout, self.training)
        x_mask = src != self.src_pad
        enc = {"X": X, "x_mask": x_mask, "X_proj": self.att_x.precompute(X)}
        if self.visual:
            if img is None:
                raise ValueError("visual_agreement.seq2seq needs region features (batch['img'])")
            if img.size(-1) != c.img_dim:
                raise ValueError(f"image features have dimension {img.size(-1)}, the model expects img_dim={c.img_dim}")
            V = self.img_proj(img)
            v_mask = img_mask if img_mask is not None else torch.ones(V.shape[:2], dtype=torch.bool, device=V.device)
            enc.update(V=V, v_mask=v_mask, V_proj=self.att_v.precompute(V))
            if c.co_attention:
                X_hat, V_hat = co_attention(X, x_mask, V, v_mask, self.M)
                enc.update(X_hat=X_hat, V_hat=V_hat, X_hat_proj=self.att_xhat.precompute(X_hat),
                           V_hat_proj=self.att_vhat.precompute(V_hat))
        return enc

    def init_state(self, enc: dict) -> dict:
        X, m = enc["X"], enc["x_mask"].unsqueeze(-1).to(enc["X"].dtype)
        mean = (X * m).sum(1) / m.sum(1).clamp_min(1.0)
        h = torch.tanh(self.init_h(mean)).chunk(self.c.dec_layers, dim=-1)
        return {"h": torch.stack(h, 1), "c": torch.zeros_like(torch.stack(h, 1))}  # (batch, layers, d)

    # ---------------------------------------------------------------- decoder
    def _contexts(self, enc: dict, s_prev: torch.Tensor):
        """Eqs. 6-11 and 17 from ``s_{t-1} (batch, d)``: the decoder input's context part, and info."""
        c = self.c
        c_x, a_x = self.att_x(s_prev, enc["X"], enc["x_mask"], enc["X_proj"])  # eqs. 8-9
        info = {"alpha_src": a_x}
        if not self.visual:
            return c_x, info
        c_v, a_v = self.att_v(s_prev, enc["V"], enc["v_mask"], enc["V_proj"])  # eqs. 6-7
        info["alpha_img"] = a_v
        if c.co_attention:
            ch_v, _ = self.att_vhat(s_prev, enc["V_hat"], enc["x_mask"], enc["V_hat_proj"])
            ch_x, _ = self.att_xhat(s_prev, enc["X_hat"], enc["v_mask"], enc["X_hat_proj"])
            c_v = fuse(c_v, ch_v, self.gates.U1, self.gates.U2)  # eqs. 10-11
            c_x = fuse(c_x, ch_x, self.gates.U3, self.gates.U4)
        if getattr(c, "damt_gate", False):
            beta = torch.sigmoid(self.damt_beta(s_prev))  # DAMT's gate (Calixto et al. eq. 8), from s_{t-1}
            c_v = beta * c_v
            info["beta"] = beta.squeeze(-1)
        if c.beta_gate:
            beta = self.gates.beta(s_prev, c_v)  # eq. 17
            c_v = beta * c_v  # eq. 18
            info["beta"] = beta.squeeze(-1)
        return torch.cat([c_x, c_v], dim=-1), info

    def _step(self, enc: dict, state: dict, emb_prev: torch.Tensor):
        """One step: contexts from ``s_{t-1}`` (the top layer), then the LSTM stack (eq. 5 / 18);
        returns the readout input, the new state and info."""
        ctx, info = self._contexts(enc, state["h"][:, -1])
        x = torch.cat([emb_prev, ctx], dim=-1)
        hs, cs = [], []
        for k, cell in enumerate(self.cells):
            h, cc = cell(x, (state["h"][:, k], state["c"][:, k]))
            hs.append(h)
            cs.append(cc)
            x = F.dropout(h, self.c.dropout, self.training)
        new = {"h": torch.stack(hs, 1), "c": torch.stack(cs, 1)}
        hidden = torch.tanh(self.out_s(hs[-1]) + self.out_c(ctx) + self.out_e(emb_prev))
        return F.dropout(hidden, self.c.dropout, self.training), new, info

    def step(self, enc: dict, state: dict, prev: torch.Tensor):
        hidden, state, info = self._step(enc, state, self.tgt_emb(prev))
        return F.log_softmax(self.out(hidden), dim=-1), state, info

    def teacher_forced(self, src, src_len, tgt_in, tgt_out, img=None, img_mask=None) -> dict:
        """NLL (summed) and per-step attention: ``alpha_src (batch, T, n)``, ``alpha_img (batch, T, m)``,
        ``beta (batch, T)`` for ``T = tgt_in.size(1)``."""
        enc = self.encode(src, src_len, img, img_mask)
        state = self.init_state(enc)
        emb = F.dropout(self.tgt_emb(tgt_in), self.c.dropout, self.training)
        hiddens, infos = [], []
        for t in range(tgt_in.size(1)):
            hidden, state, info = self._step(enc, state, emb[:, t])
            hiddens.append(hidden)
            infos.append(info)
        logits = self.out(torch.stack(hiddens, 1))
        nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1), ignore_index=self.tgt.pad,
                              reduction="sum")
        out = {k: torch.stack([i[k] for i in infos], 1) for k in infos[0]}
        out["nll"] = nll
        return out


# ============================================================================ the joint model
def _reverse_batch(batch: dict, src_specials: Specials, tgt_specials: Specials) -> dict:
    """The backward model's batch: source ``y`` (the target words without ``<eos>``), target
    ``x`` (``<bos> x`` in, ``x <eos>`` out, the source vocabulary's specials), the same images."""
    src, src_len = batch["src"], batch["src_len"]
    tgt_out = batch["tgt_out"]
    y_len = ((tgt_out != tgt_specials.pad) & (tgt_out != tgt_specials.eos)).sum(1)
    y = batch["tgt_in"][:, 1:]
    if y.size(1) == 0:
        y = batch["tgt_in"].new_full((src.size(0), 1), tgt_specials.pad)
    b, n = src.shape
    x_in = src.new_full((b, n + 1), src_specials.pad)
    x_out = src.new_full((b, n + 1), src_specials.pad)
    x_in[:, 0] = src_specials.bos
    x_in[:, 1:] = src
    x_out[:, :n] = src
    x_out[torch.arange(b, device=src.device), src_len] = src_specials.eos
    # source positions past a sentence's end hold padding already (ParallelData pads with pad)
    return {"src": y, "src_len": y_len, "tgt_in": x_in, "tgt_out": x_out, "img": batch.get("img"),
            "img_mask": batch.get("img_mask")}


def _word_rows(tgt_out: torch.Tensor, specials: Specials) -> torch.Tensor:
    """True for rows of real words (not ``<eos>``, not padding): ``(batch, T)``."""
    return (tgt_out != specials.pad) & (tgt_out != specials.eos)


class _JointModel(MMTModel):
    """Forward and backward models, trained together (section 3); see the module docstring."""

    directions = ("forward", "backward")
    decoding = "step"
    direction_cls = None  # _Seq2SeqDirection | _TransformerDirection

    def __init__(self, config, vocabs: Vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        if vocabs.src is None:
            raise ValueError(f"{type(self).__name__} translates text: it needs a source vocabulary")
        visual = self.uses_visual
        self.fwd = self.direction_cls(config, vocabs.src, vocabs.tgt, visual)
        self.bwd = self.direction_cls(config, vocabs.tgt, vocabs.src, visual) if config.backward else None
        if not config.backward:
            self.directions = ("forward",)  # decoding the backward model now fails naming the directions

    def need_backward(self, what: str):
        if self.bwd is None:
            raise ValueError(f"{self.registry_name or type(self).__name__} was trained forward only "
                             f"(model_config backward: false): {what} needs the backward model; "
                             "retrain with backward: true (or auto, with the job that reads it planned)")

    @property
    def opts(self):
        return self.config if self.uses_visual else None

    def _dir(self):
        return self.fwd if self.direction == "forward" else self.bwd

    # ---------------------------------------------------------------- decoding
    def encode(self, batch: dict) -> dict:
        return self._dir().encode(batch["src"], batch["src_len"], batch.get("img"), batch.get("img_mask"))

    def init_state(self, enc: dict):
        return self._dir().init_state(enc)

    def step(self, enc: dict, state, prev: torch.Tensor):
        return self._dir().step(enc, state, prev)

    # ---------------------------------------------------------------- training
    def attention_pair(self, batch: dict) -> tuple[dict, dict, dict]:
        """Teacher forcing of both directions: ``(forward out, backward out, backward batch)``
        where each out has ``nll`` and the per-step ``alpha_src``, ``alpha_img``, ``beta``."""
        self.need_backward("teacher forcing both directions")
        rev = _reverse_batch(batch, self.vocabs.src.specials, self.vocabs.tgt.specials)
        f = self._teacher(self.fwd, batch, "forward")
        b = self._teacher(self.bwd, rev, "backward")
        return f, b, rev

    def _teacher(self, direction, batch: dict, which: str) -> dict:
        return direction.teacher_forced(batch["src"], batch["src_len"], batch["tgt_in"], batch["tgt_out"],
                                        batch.get("img"), batch.get("img_mask"))

    def forward(self, batch: dict) -> dict:
        tgt_sp, src_sp = self.vocabs.tgt.specials, self.vocabs.src.specials
        n_y = (batch["tgt_out"] != tgt_sp.pad).sum()
        ny = n_y.clamp_min(1)
        if self.bwd is None:  # the forward model alone (backward: false; no agreement, checked)
            f = self._teacher(self.fwd, batch, "forward")
            loss = f.get("loss_sum", f["nll"]) / ny
            out = {"nll_fwd": f["nll"].detach() / ny}
            self._beta_out(out, f, batch)
            out.update(loss=loss, n_tokens=n_y)
            return out
        f, b, rev = self.attention_pair(batch)
        n_x = (rev["tgt_out"] != src_sp.pad).sum()
        nx = n_x.clamp_min(1)
        loss_f = f.get("loss_sum", f["nll"])
        loss_b = b.get("loss_sum", b["nll"])
        loss = loss_f / ny + loss_b / nx
        out = {"nll_fwd": f["nll"].detach() / ny, "nll_bwd": b["nll"].detach() / nx}
        opts = self.opts
        if opts is not None and opts.agreement != "none":
            agree_f, agree_b = self._agreement(batch, rev, f, b)
            loss = loss + opts.lambda_fwd * agree_f / ny + opts.lambda_bwd * agree_b / nx
            out["agreement_fwd"] = agree_f.detach() / ny
            out["agreement_bwd"] = agree_b.detach() / nx
        self._beta_out(out, f, batch)
        out.update(loss=loss, n_tokens=n_y)
        return out

    def _beta_out(self, out: dict, f: dict, batch: dict) -> None:
        if "beta" in f:
            rows = _word_rows(batch["tgt_out"], self.vocabs.tgt.specials)
            out["beta_fwd"] = (f["beta"].detach() * rows).sum() / rows.sum().clamp_min(1)

    def _agreement(self, batch: dict, rev: dict, f: dict, b: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """The two regularisers (sums over words): forward rows against the backward model's
        image attention (hard: at x^, soft: eq. 16), and the backward rows likewise. With
        ``agreement_grad: own`` the other model's image attention is detached in each term, so
        ``lambda_1``'s term trains the forward model only and ``lambda_2``'s the backward one."""
        opts = self.opts
        rows_f = _word_rows(batch["tgt_out"], self.vocabs.tgt.specials)  # rows of y_1..y_l
        rows_b = _word_rows(rev["tgt_out"], self.vocabs.src.specials)  # rows of x_1..x_n
        a_f, a_b = f["alpha_img"], b["alpha_img"]  # (batch, T_y + 1, m), (batch, T_x + 1, m)
        # the other model's image attention as each term's target: a constant under `own`
        o_b, o_f = (a_b.detach(), a_f.detach()) if opts.agreement_grad == "own" else (a_b, a_f)
        if opts.agreement == "hard":
            if batch.get("align_fwd") is None:
                raise ValueError("hard visual agreement (eq. 14) needs the word alignments in the batch: give the "
                                 "system `extras: [align]` (the align stage)")
            # x^ of every target word, and of every source word for the backward model (eq. 14;
            # the data layer reads them from the links: mmt_repro.datasets.alignments)
            al_f, al_b = batch["align_fwd"], batch["align_bwd"]
            tgt_f, valid_f = hard_targets(o_b, al_f)
            tgt_b, valid_b = hard_targets(o_f, al_b)
            valid_f = valid_f & rows_f[:, : valid_f.size(1)]
            valid_b = valid_b & rows_b[:, : valid_b.size(1)]
            tf, tb = a_f[:, : tgt_f.size(1)], a_b[:, : tgt_b.size(1)]
        else:
            tgt_f = soft_targets(f["alpha_src"], o_b)  # eq. 16 for every forward row (A_{y->x} is the own model's)
            tgt_b = soft_targets(b["alpha_src"], o_f)
            valid_f, valid_b, tf, tb = rows_f, rows_b, a_f, a_b
        w_f = w_b = None
        if opts.weighting == "adaptive":
            w_f, w_b = f["beta"][:, : tf.size(1)], b["beta"][:, : tb.size(1)]
            if opts.detach_beta:
                w_f, w_b = w_f.detach(), w_b.detach()
        return agreement_terms(tf, tgt_f, valid_f, w_f), agreement_terms(tb, tgt_b, valid_b, w_b)

    # ---------------------------------------------------------------- analyses
    @torch.no_grad()
    def word_attention(self, batch: dict) -> tuple[list, list]:
        """Per sentence, the image attention of each word when the model generates it, teacher
        forced on the reference: forward rows ``(len(y), m)`` and backward rows ``(len(x), m)``."""
        f, b, rev = self.attention_pair(batch)
        x_len, y_len = batch["src_len"].tolist(), rev["src_len"].tolist()
        fwd = [f["alpha_img"][k, : y_len[k]].float().cpu() for k in range(len(x_len))]
        bwd = [b["alpha_img"][k, : x_len[k]].float().cpu() for k in range(len(x_len))]
        return fwd, bwd


@register("visual_agreement.seq2seq_text", Seq2SeqTextConfig)
class Seq2SeqText(_JointModel):
    """OnlyText: forward and backward attentive LSTM models (no image)."""

    visual = "none"
    direction_cls = _Seq2SeqDirection


@register("visual_agreement.seq2seq", Seq2SeqConfig)
class Seq2SeqVA(_JointModel):
    """+ Image / + MHCA / hard or soft visual agreement (Seq2Seq)."""

    visual = "regions"
    direction_cls = _Seq2SeqDirection
