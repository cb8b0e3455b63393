"""Wu (2020), "DeepFuse: HKU's Multimodal Machine Translation System for VMT'20"
(``../shared/papers/deepfuse-wu2020.txt``), and the baselines of its Table 1.

Registered models:

- ``deepfuse.deepfuse``: the video-augmented Transformer encoder (section 3.1) with a standard
  Transformer decoder (section 3.2), built on the shared :mod:`mmt_repro.models.transformer`;
- ``transformer.nmt`` (the shared module): Table 1's text-only "Transformer";
- ``deepfuse.vatex``: "vatex", the LSTM video-guided MT baseline of Wang et al. (2019), as in its
  public code (eric-xw/Video-guided-Machine-Translation, ``model.py``);
- ``deepfuse.lstm``: "lstm", the same LSTM encoder-decoder without the video stream.

Equation -> code for one DeepFuse encoder layer (:class:`DeepFuseEncoderLayer`; ``n`` source
positions, ``m`` video segments; shapes ``(batch, n, d_model)``, ``E (batch, m, img_dim)``):

===========  ===============================================================================
eq. 1-3      :class:`~mmt_repro.models.transformer.EncoderLayer` self-attention sub-layer
             (multi-head scaled dot-product attention), ``LayerNorm(x + Sublayer(x))``
eq. 4        the FFN sub-layer ``max(0, x W_1 + b_1) W_2 + b_2``; its output is ``H^L``
eq. 5        :meth:`DeepFuseEncoderLayer.video_attention`: ``K_E = E W_K + b_K``,
             ``V_E = E W_V + b_V`` (``video_k``, ``video_v``), ``H_bar = softmax(H^L K_E^T /
             sqrt(d_model)) V_E`` over the real segments (``video_mask``), ``(batch, n, d)``;
             one head, the query ``H^L`` itself (eq. 5 applies eq. 3, not eq. 1)
eq. 7        :meth:`DeepFuseEncoderLayer.gate`: ``lambda = sigmoid(W_lambda H_bar + U_lambda H^L)``
             (``gate_w`` with the gate's bias, ``gate_u``), a scalar per position ``(batch, n, 1)``
eq. 6 + LN   :meth:`DeepFuseEncoderLayer.forward`: ``fuse_residual: once`` (default)
             ``LayerNorm(H^L + dropout(lambda H_bar))``: eq. 6's ``H = H^L + lambda H_bar`` is the
             residual connection of the paper's rule ``LayerNorm(x + Sublayer(x))``;
             ``twice``: the sentence after eq. 6 read literally, ``LayerNorm(H^L + H) =
             LayerNorm(2 H^L + lambda H_bar)``. LayerNorm is scale-invariant, so ``twice`` equals
             ``once`` with the gate halved (``lambda / 2`` in (0, 0.5)): the readings differ only
             in the range of the gate (docs/deepfuse.md).
===========  ===============================================================================

The video reaches every encoder layer (the paper's "fuses multimodal representation at multiple
layers"); each layer has its own ``W_K, W_V, W_lambda, U_lambda``. Video segments are padded to
the store's length and masked (``batch["img_mask"]``); a video without any real segment gives
``H_bar = 0``. Decoding is the shared step search through the Transformer's cached decoder.

Segment order: eq. 5 makes ``K_E`` and ``V_E`` linear transforms of ``E`` alone, so by default
(``video_positions: none``) the encoder is blind to the order of the segments: permuting them
leaves its output unchanged. ``video_positions: sinusoidal`` adds Vaswani et al.'s ``PE(j)``
(``d_model`` wide, the text's table) to ``K_E`` and ``V_E`` of segment ``j`` (real segments
first, numbered from 0), our option, not the paper's (docs/deepfuse.md).

The VATEX baseline (:class:`VatexLSTM`, Wang et al. 2019 as in their public code): a 2-layer
bi-LSTM over the source embeddings and another over the projected segment features
(``frame_embed``), each ``enc_dim`` wide (``enc_dim / 2`` per direction); the decoder's initial
state per layer is ``[h_src; h_video]`` (``dec_dim = 2 enc_dim``); at each step the previous
first-layer state ``h`` queries both with "soft dot" attention ``softmax(C W h)``
(``SoftDotAttention``), the decoder LSTM reads ``[E y_{t-1}; c_src; c_video]``, and the output
is ``W_2 dropout(tanh(W_1 h_t))``. ``deepfuse.lstm`` drops the video stream: its initial state is
the source's (``enc_dim = dec_dim``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .base import MMTModel, Vocabs
from .layers import linear_cross_entropy
from .registry import register
from .transformer import EncoderLayer, TransformerConfig, TransformerNMT, attention, sinusoidal_table

FUSE_RESIDUALS = ("once", "twice")
VIDEO_POSITIONS = ("none", "sinusoidal")


@dataclass
class DeepFuseConfig(TransformerConfig):
    """DeepFuse (section 3): the Transformer's sizes plus the video inputs of every encoder layer."""

    img_dim: int = 1024  # size of a segment feature e_j (official VATEX I3D: 1024; pytorchvideo i3d_r50: 2048)
    # once: LayerNorm(H^L + lambda H_bar) (eq. 6 is the residual); twice: LayerNorm(H^L + H), H^L added twice
    fuse_residual: str = "once"
    # none: K_E, V_E are linear transforms of E alone (eq. 5), blind to the segments' order;
    # sinusoidal: PE(j) of Vaswani et al. added to K_E and V_E of segment j (0-based)
    video_positions: str = "none"

    def __post_init__(self):
        super().__post_init__()
        if self.fuse_residual not in FUSE_RESIDUALS:
            raise ValueError(f"fuse_residual={self.fuse_residual!r}; valid: {', '.join(FUSE_RESIDUALS)}")
        if self.video_positions not in VIDEO_POSITIONS:
            raise ValueError(f"video_positions={self.video_positions!r}; valid: {', '.join(VIDEO_POSITIONS)}")
        if self.fuse_residual == "twice" and self.pre_norm:
            raise ValueError("fuse_residual: twice is a post-LN reading (LayerNorm(H^L + H)); use once with pre_norm")


class DeepFuseEncoderLayer(EncoderLayer):
    """Self-attention, FFN, then video-encoder attention with the position-wise gate (eq. 1-7).

    ``forward(x, mask, video, video_mask, need_weights=False) -> (x, info)``; ``info["gate"]``
    is ``lambda (batch, n, 1)``, and ``info["video_attn"] (batch, n, m)`` when asked."""

    def __init__(self, c: DeepFuseConfig):
        super().__init__(c)
        d = c.d_model
        self.video_k = nn.Linear(c.img_dim, d)  # W_K (K_E = E W_K + b)
        self.video_v = nn.Linear(c.img_dim, d)  # W_V
        self.gate_w = nn.Linear(d, 1)  # W_lambda (+ the gate's bias)
        self.gate_u = nn.Linear(d, 1, bias=False)  # U_lambda
        for lin in (self.video_k, self.video_v, self.gate_w, self.gate_u):
            nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)
        self.video_norm = nn.LayerNorm(d)
        self.scale = math.sqrt(d)
        self.c = c

    def video_attention(self, h: torch.Tensor, video: torch.Tensor, video_mask: torch.Tensor | None,
                        need_weights: bool = False, video_pos: torch.Tensor | None = None):
        """Eq. 5: ``H_bar = softmax(H^L K_E^T / sqrt(d)) V_E``; ``(batch, n, d)`` and the weights
        ``(batch, n, m)`` (or None). ``video_pos (m, d)``, when given, is added to ``K_E`` and
        ``V_E`` (``video_positions: sinusoidal``)."""
        k, v = self.video_k(video), self.video_v(video)  # (batch, m, d)
        if video_pos is not None:
            k, v = k + video_pos.to(k.dtype), v + video_pos.to(v.dtype)
        k, v = k.unsqueeze(1), v.unsqueeze(1)  # (batch, 1, m, d)
        drop = self.c.attention_dropout if self.training else 0.0
        out, w = attention(h.unsqueeze(1), k, v, video_mask, dropout=drop, need_weights=need_weights)
        return out.squeeze(1), (None if w is None else w.squeeze(1))

    def gate(self, h_bar: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Eq. 7: ``lambda = sigmoid(W_lambda H_bar + U_lambda H^L)``, ``(batch, n, 1)``."""
        return torch.sigmoid(self.gate_w(h_bar) + self.gate_u(h))

    def forward(self, x, mask, video=None, video_mask=None, need_weights: bool = False, video_pos=None):
        x, info = super().forward(x, mask, need_weights)  # H^L
        h = self.video_norm(x) if self.c.pre_norm else x
        h_bar, w = self.video_attention(h, video, video_mask, need_weights, video_pos)
        lam = self.gate(h_bar, h)
        fused = F.dropout(lam * h_bar, self.c.dropout, self.training)  # lambda H_bar (residual dropout)
        if self.c.pre_norm:
            x = x + fused
        elif self.c.fuse_residual == "twice":
            x = self.video_norm(x + (x + fused))  # LayerNorm(H^L + H), H = H^L + lambda H_bar
        else:
            x = self.video_norm(x + fused)  # LayerNorm(H), H = H^L + lambda H_bar (eq. 6)
        info["gate"] = lam
        if need_weights:
            info["video_attn"] = w
        return x, info


@register("deepfuse.deepfuse", DeepFuseConfig)
class DeepFuse(TransformerNMT):
    """DeepFuse: every encoder layer attends to the video segments (eq. 5-7); Transformer decoder."""

    visual = "video"

    def __init__(self, config: DeepFuseConfig, vocabs: Vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        if config.video_positions == "sinusoidal":
            self.register_buffer("video_pos_table", sinusoidal_table(config.max_positions, config.d_model),
                                 persistent=False)
        else:
            self.video_pos_table = None

    def make_encoder_layer(self, config: DeepFuseConfig, index: int) -> nn.Module:
        return DeepFuseEncoderLayer(config)

    def encoder_extra(self, batch: dict) -> dict:
        video = batch.get("img")
        if video is None:
            raise ValueError(f"model {self.registry_name} reads video segment features but the batch has none")
        if video.size(-1) != self.config.img_dim:
            raise ValueError(f"video features have dimension {video.size(-1)}, model expects img_dim={self.config.img_dim}")
        extra = {"video": video, "video_mask": batch.get("img_mask")}
        if self.video_pos_table is not None:
            m = video.size(1)
            if m > self.video_pos_table.size(0):
                raise ValueError(f"{m} video segments are more than max_positions={self.video_pos_table.size(0)}")
            extra["video_pos"] = self.video_pos_table[:m]  # segment j at position j (real segments come first)
        return extra

    def forward(self, batch: dict) -> dict:
        """The Transformer's loss, plus ``gate``: the mean lambda over the real source positions of
        every layer (logged per target token by the trainer)."""
        hidden, enc_infos, _ = self.decoder_hidden(batch)
        out = self.loss_from_hidden(hidden, batch)
        real = (batch["src"] != self.src_pad).unsqueeze(-1).to(hidden.dtype)
        gates = torch.stack([(info["gate"] * real).sum() / real.sum().clamp_min(1) for info in enc_infos])
        out["gate"] = gates.mean().detach()
        return out


# ----------------------------------------------------------------------------- VATEX baseline
@dataclass
class VatexConfig:
    """LSTM video-guided MT of Wang et al. 2019 (their code's configs.yaml)."""

    emb_dim: int = 512  # word embeddings and projected segment features (wordembed_dim)
    enc_dim: int = 512  # each bi-LSTM encoder's output size, enc_dim / 2 per direction (enc_hid_size)
    dec_dim: int = 1024  # decoder LSTM size (dec_hid_size): [h_src; h_video] of the encoders
    layers: int = 2  # layers of every LSTM (their n_layers)
    dropout: float = 0.5  # between LSTM layers, on the target embeddings and before the output layer
    img_dim: int = 1024  # segment feature size (official VATEX I3D: 1024)


class SoftDotAttention(nn.Module):
    """``alpha = softmax(C W h)`` over the unmasked rows of ``C (batch, len, ctx_dim)`` for a query
    ``h (batch, h_dim)``; returns ``(sum_i alpha_i C_i (batch, ctx_dim), alpha (batch, len))``."""

    def __init__(self, ctx_dim: int, h_dim: int):
        super().__init__()
        self.linear_in = nn.Linear(h_dim, ctx_dim, bias=False)

    def forward(self, ctx: torch.Tensor, h: torch.Tensor, mask: torch.Tensor | None = None):
        scores = torch.bmm(ctx, self.linear_in(h).unsqueeze(2)).squeeze(2)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        alpha = torch.softmax(scores, dim=-1)
        return torch.bmm(alpha.unsqueeze(1), ctx).squeeze(1), alpha


def _bi_lstm_states(states: torch.Tensor, layers: int) -> torch.Tensor:
    """``(layers * 2, batch, h)`` final states of a bi-LSTM -> ``(layers, batch, 2h)``: per layer
    ``[forward; backward]`` (their code's permute/view)."""
    b = states.size(1)
    return states.view(layers, 2, b, -1).permute(0, 2, 1, 3).reshape(layers, b, -1)


class VatexLSTM(MMTModel):
    """Shared body of ``deepfuse.vatex`` (``use_video``) and ``deepfuse.lstm``."""

    use_video = True

    def __init__(self, config: VatexConfig, vocabs: Vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        c = config
        if vocabs.src is None:
            raise ValueError(f"{type(self).__name__} translates text: it needs a source vocabulary")
        streams = 2 if self.use_video else 1
        if c.enc_dim % 2 or streams * c.enc_dim != c.dec_dim:
            raise ValueError(f"dec_dim={c.dec_dim} must be {streams} x enc_dim={c.enc_dim} (the decoder starts from "
                             f"the encoders' final states) and enc_dim even (two directions)")
        self.src_pad = vocabs.src.specials.pad
        self.src_embed = nn.Embedding(vocabs.src.size, c.emb_dim, padding_idx=self.src_pad)
        drop = c.dropout if c.layers > 1 else 0.0
        self.src_encoder = nn.LSTM(c.emb_dim, c.enc_dim // 2, c.layers, dropout=drop, batch_first=True,
                                   bidirectional=True)
        if self.use_video:
            self.frame_embed = nn.Linear(c.img_dim, c.emb_dim)
            self.video_encoder = nn.LSTM(c.emb_dim, c.enc_dim // 2, c.layers, dropout=drop, batch_first=True,
                                         bidirectional=True)
            self.vid_attention = SoftDotAttention(c.enc_dim, c.dec_dim)
        self.embed = nn.Embedding(vocabs.tgt.size, c.emb_dim, padding_idx=self.specials.pad)
        self.src_attention = SoftDotAttention(c.enc_dim, c.dec_dim)
        self.decoder = nn.LSTM(c.emb_dim + streams * c.enc_dim, c.dec_dim, c.layers, dropout=drop, batch_first=True)
        self.fc1 = nn.Linear(c.dec_dim, c.emb_dim)
        self.fc2 = nn.Linear(c.emb_dim, vocabs.tgt.size)

    @staticmethod
    def _run(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor, layers: int):
        packed = pack_padded_sequence(x, lengths.clamp_min(1).cpu(), batch_first=True, enforce_sorted=False)
        out, (h, c) = lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return out, _bi_lstm_states(h, layers), _bi_lstm_states(c, layers)

    def encode(self, batch: dict) -> dict:
        """Encoder outputs ``src_out (batch, src_len, enc_dim)`` (+ ``vid_out``) and their masks."""
        c = self.config
        src = batch["src"]
        mask = src != self.src_pad
        src_out, h, cell = self._run(self.src_encoder, self.src_embed(src), mask.sum(1), c.layers)
        enc = {"src_out": src_out, "src_mask": mask, "h0": h.transpose(0, 1), "c0": cell.transpose(0, 1)}
        if self.use_video:
            video, vmask = batch.get("img"), batch.get("img_mask")
            if video is None:
                raise ValueError(f"model {self.registry_name} reads video segment features but the batch has none")
            if video.size(-1) != c.img_dim:
                raise ValueError(f"video features have dimension {video.size(-1)}, model expects img_dim={c.img_dim}")
            if vmask is None:
                vmask = torch.ones(video.shape[:2], dtype=torch.bool, device=video.device)
            vid_out, vh, vc = self._run(self.video_encoder, self.frame_embed(video), vmask.sum(1), c.layers)
            enc.update(vid_out=vid_out, vid_mask=vmask, h0=torch.cat([enc["h0"], vh.transpose(0, 1)], -1),
                       c0=torch.cat([enc["c0"], vc.transpose(0, 1)], -1))
        return enc

    def init_state(self, enc: dict) -> dict:
        """``h``, ``c`` of every decoder layer, batch first: ``(batch, layers, dec_dim)``."""
        return {"h": enc["h0"], "c": enc["c0"]}

    def _core(self, enc: dict, state: dict, emb: torch.Tensor):
        """One decoder step from the embedded previous token ``(batch, emb_dim)``: attention with the
        previous first-layer ``h``, then the LSTM. Returns the top layer's output and the state."""
        query = state["h"][:, 0]
        src_ctx, alpha = self.src_attention(enc["src_out"], query, enc["src_mask"])
        inputs = [F.dropout(emb, self.config.dropout, self.training), src_ctx]
        info = {"alpha_src": alpha}
        if self.use_video:
            vid_ctx, beta = self.vid_attention(enc["vid_out"], query, enc["vid_mask"])
            inputs.append(vid_ctx)
            info["alpha_video"] = beta
        hc = (state["h"].transpose(0, 1).contiguous(), state["c"].transpose(0, 1).contiguous())
        out, (h, cell) = self.decoder(torch.cat(inputs, -1).unsqueeze(1), hc)
        return out.squeeze(1), {"h": h.transpose(0, 1), "c": cell.transpose(0, 1)}, info

    def _hidden(self, out: torch.Tensor) -> torch.Tensor:
        return F.dropout(torch.tanh(self.fc1(out)), self.config.dropout, self.training)

    def step(self, enc: dict, state: dict, prev: torch.Tensor):
        out, state, info = self._core(enc, state, self.embed(prev))
        return F.log_softmax(self.fc2(self._hidden(out)), dim=-1), state, info

    def forward(self, batch: dict) -> dict:
        """Teacher-forced cross-entropy per target token (their code: teacher ratio 1, no smoothing)."""
        enc = self.encode(batch)
        state = self.init_state(enc)
        emb = self.embed(batch["tgt_in"])
        outs = []
        for t in range(emb.size(1)):
            out, state, _ = self._core(enc, state, emb[:, t])
            outs.append(out)
        hidden = self._hidden(torch.stack(outs, 1))
        tgt = batch["tgt_out"]
        pad = self.specials.pad
        n_tokens = (tgt != pad).sum()
        nll = linear_cross_entropy(hidden.reshape(-1, hidden.size(-1)), self.fc2.weight, self.fc2.bias,
                                   tgt.reshape(-1), ignore_index=pad)
        return {"loss": nll / n_tokens.clamp_min(1), "n_tokens": n_tokens}


@register("deepfuse.vatex", VatexConfig)
class VatexBaseline(VatexLSTM):
    """Table 1 "vatex": LSTM encoder-decoder attending over source and video (Wang et al. 2019)."""

    use_video = True
    visual = "video"


@register("deepfuse.lstm", VatexConfig)
class LSTMBaseline(VatexLSTM):
    """Table 1 "lstm": the VATEX baseline without the video stream (text only)."""

    use_video = False
    visual = "none"
