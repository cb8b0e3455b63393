"""Yang, Chen, Zhang and Sun (2020): the Transformer versions of the joint model of
:mod:`mmt_repro.models.visual_agreement` (section "We also implement ... based on the
Transformer"), built on the shared layers of :mod:`mmt_repro.models.transformer`.

Registered models: ``visual_agreement.transformer_text`` (OnlyText) and
``visual_agreement.transformer`` (image, co-attention, beta and visual agreement, switched by
the config). Every decoder block attends over ``X`` and ``X^`` (fused by eqs. 10-11) and, with
multi-head attention of its own, over ``V`` and ``V^`` (fused, scaled by ``beta``); the block's
output is ``c-_x + beta c-_v`` in the place of the usual cross-attention. The agreement reads
the image attention of one decoder block (``align_layer``, or the resource ``alignment_layer``
that :func:`mmt_repro.train.alignment_layer.select_alignment_layer` writes; see
:func:`read_layer_choice`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from .base import Vocabs, VocabSpec
from .registry import register
from .transformer import (
    Embedding,
    Encoder,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    Sublayer,
    TransformerConfig,
    label_smoothed_nll,
)
from .visual_agreement import AgreementOptions, DirectionOptions, _JointModel, _VisualGates, co_attention, fuse

log = logging.getLogger(__name__)


# ============================================================================ configs
@dataclass
class TransformerTextConfig(TransformerConfig, DirectionOptions):
    """OnlyText Transformer: "the hidden size of multi-head attention layer to 512 and the hidden
    size of the feed-forward layer to 2,048 ... 8 heads ... 6 blocks" (the shared config's base
    model; dropout 0.1 and label smoothing 0.1 are not stated: Vaswani et al.'s)."""

    def __post_init__(self):
        TransformerConfig.__post_init__(self)
        self.check_directions()


@dataclass
class TransformerVAConfig(TransformerConfig, AgreementOptions, DirectionOptions):
    """The Transformer with the image, co-attention and visual agreement."""

    align_layer: int | None = None  # decoder block whose attention is A_{y->v}; None: the resource alignment_layer

    def __post_init__(self):
        TransformerConfig.__post_init__(self)
        self.check()
        self.check_directions()
        if self.align_layer is not None and not 0 <= self.align_layer < self.dec_layers:
            raise ValueError(f"align_layer={self.align_layer} outside 0..{self.dec_layers - 1}")


# ============================================================================ Transformer
class _VADecoderLayer(nn.Module):
    """Causal self-attention; attention over the text (``X``, and ``X^`` fused by eqs. 10-11) and,
    with images, over the regions (``V``, and ``V^`` fused), scaled by ``beta`` (eq. 17-18); FFN.
    The block's cross sub-layer adds ``c-_x + beta c-_v``."""

    def __init__(self, c, visual: bool):
        super().__init__()
        d = c.d_model
        self.c, self.visual = c, visual
        self.self_attn = MultiHeadAttention(d, c.n_heads, c.attention_dropout)
        self.self_attn_sub = Sublayer(d, c.dropout, c.pre_norm)
        self.att_x = MultiHeadAttention(d, c.n_heads, c.attention_dropout)
        if visual:
            self.att_v = MultiHeadAttention(d, c.n_heads, c.attention_dropout)
            if c.co_attention:
                self.att_xhat = MultiHeadAttention(d, c.n_heads, c.attention_dropout)
                self.att_vhat = MultiHeadAttention(d, c.n_heads, c.attention_dropout)
            if c.co_attention or c.beta_gate:
                self.gates = _VisualGates(d, d, c.beta_gate)
        self.cross_sub = Sublayer(d, c.dropout, c.pre_norm)
        self.ffn = FeedForward(d, c.d_ff, c.activation_dropout)
        self.ffn_sub = Sublayer(d, c.dropout, c.pre_norm)

    def memories(self, enc: dict) -> dict:
        """Keys and values of every memory this block attends over (once per sentence)."""
        kv = {"x": self.att_x.project_kv(enc["X"])}
        if self.visual:
            kv["v"] = self.att_v.project_kv(enc["V"])
            if self.c.co_attention:
                kv["xhat"] = self.att_xhat.project_kv(enc["X_hat"])
                kv["vhat"] = self.att_vhat.project_kv(enc["V_hat"])
        return kv

    def _cross(self, h, enc, kv, need_weights: bool, info: dict):
        c = self.c
        c_x, w_x, _ = self.att_x(h, key_mask=enc["x_mask"], kv=kv["x"], need_weights=need_weights)
        if need_weights:
            info["text_att"] = w_x  # (batch, heads, T, n)
        if not self.visual:
            return c_x
        c_v, w_v, _ = self.att_v(h, key_mask=enc["v_mask"], kv=kv["v"], need_weights=need_weights)
        if need_weights:
            info["img_att"] = w_v  # (batch, heads, T, m)
        if c.co_attention:
            ch_x, _, _ = self.att_xhat(h, key_mask=enc["v_mask"], kv=kv["xhat"])
            ch_v, _, _ = self.att_vhat(h, key_mask=enc["x_mask"], kv=kv["vhat"])
            c_x = fuse(c_x, ch_x, self.gates.U3, self.gates.U4)
            c_v = fuse(c_v, ch_v, self.gates.U1, self.gates.U2)
        if c.beta_gate:
            beta = self.gates.beta(h, c_v)
            info["beta"] = beta.squeeze(-1)  # (batch, T)
            c_v = beta * c_v
        return c_x + c_v

    def forward(self, x, enc, kv, cache=None, need_weights: bool = False):
        x, _, cache = self.self_attn_sub(x, lambda h: self.self_attn(h, causal=cache is None, cache=cache))
        info: dict = {}
        x = self.cross_sub(x, lambda h: self._cross(h, enc, kv, need_weights, info))
        x = self.ffn_sub(x, self.ffn)
        return x, cache, info


class _TransformerDirection(nn.Module):
    """One translation direction of the Transformer version."""

    def __init__(self, c, src: VocabSpec, tgt: VocabSpec, visual: bool):
        super().__init__()
        d = c.d_model
        self.c, self.visual = c, visual
        self.src_pad, self.tgt = src.specials.pad, tgt.specials
        self.src_embed = Embedding(src.size, d, src.specials.pad, c.dropout, c.scale_embeddings, c.max_positions)
        self.tgt_embed = Embedding(tgt.size, d, tgt.specials.pad, c.dropout, c.scale_embeddings, c.max_positions)
        self.encoder = Encoder([EncoderLayer(c) for _ in range(c.enc_layers)], d, c.pre_norm)
        self.layers = nn.ModuleList([_VADecoderLayer(c, visual) for _ in range(c.dec_layers)])
        self.final_norm = nn.LayerNorm(d) if c.pre_norm else None
        if visual:
            self.img_proj = nn.Linear(c.img_dim, d)
            # not stated: LayerNorm after the projection puts the regions on the scale of the
            # encoder's (layer-normalised) output; without it the image memory dominates the
            # residual sum of the decoder blocks and the model ignores the text (measured)
            self.img_norm = nn.LayerNorm(d)
            if c.co_attention:
                self.M = nn.Parameter(torch.empty(c.subspaces, d, d))
                nn.init.xavier_uniform_(self.M.view(-1, d))
        self.out_proj = nn.Linear(d, tgt.size, bias=False)
        nn.init.normal_(self.out_proj.weight, mean=0.0, std=d**-0.5)

    def encode(self, src, src_len=None, img=None, img_mask=None) -> dict:
        x_mask = src != self.src_pad
        X, _ = self.encoder(self.src_embed(src), x_mask)
        enc = {"X": X, "x_mask": x_mask}
        if self.visual:
            if img is None:
                raise ValueError("visual_agreement.transformer needs region features (batch['img'])")
            V = F.dropout(self.img_norm(self.img_proj(img)), self.c.dropout, self.training)
            v_mask = img_mask if img_mask is not None else torch.ones(V.shape[:2], dtype=torch.bool, device=V.device)
            enc.update(V=V, v_mask=v_mask)
            if self.c.co_attention:
                enc["X_hat"], enc["V_hat"] = co_attention(X, x_mask, V, v_mask, self.M)
        enc["kv"] = [layer.memories(enc) for layer in self.layers]
        return enc

    def run(self, x, enc, caches=None, weights_at: int | set | None = None):
        """The decoder stack over ``x (batch, T, d)``; infos of the layers in ``weights_at``."""
        want = set() if weights_at is None else ({weights_at} if isinstance(weights_at, int) else set(weights_at))
        new_caches, infos = [], []
        for i, layer in enumerate(self.layers):
            x, cache, info = layer(x, enc, enc["kv"][i], cache=None if caches is None else caches[i],
                                   need_weights=i in want)
            new_caches.append(cache)
            infos.append(info)
        x = x if self.final_norm is None else self.final_norm(x)
        return x, new_caches, infos

    def teacher_forced(self, src, src_len, tgt_in, tgt_out, img=None, img_mask=None, layer: int | None = None,
                       layers=None) -> dict:
        enc = self.encode(src, src_len, img, img_mask)
        hidden, _, infos = self.run(self.tgt_embed(tgt_in), enc, weights_at=layers if layers is not None else layer)
        keep = tgt_out != self.tgt.pad
        lprobs = F.log_softmax(self.out_proj(hidden[keep]).float(), dim=-1)
        loss, nll = label_smoothed_nll(lprobs, tgt_out[keep], self.c.label_smoothing)
        out = {"loss_sum": loss, "nll": nll, "infos": infos}
        if layer is not None:
            info = infos[layer]
            out["alpha_src"] = info["text_att"].mean(1)  # mean over heads (batch, T, n)
            if "img_att" in info:
                out["alpha_img"] = info["img_att"].mean(1)  # A_{y -> v}, (batch, T, m)
        if "beta" in infos[-1]:  # every block has its gate; the chosen block's weighs Delta (eq. 19)
            out["beta"] = infos[layer if layer is not None else -1]["beta"]
        return out

    def init_state(self, enc: dict) -> dict:
        b = enc["X"].size(0)
        c = self.c
        empty = enc["X"].new_zeros(b, c.n_heads, 0, c.d_model // c.n_heads)
        return {"k": [empty] * c.dec_layers, "v": [empty] * c.dec_layers}

    def step(self, enc: dict, state: dict, prev: torch.Tensor, layer: int | None = None):
        t = state["k"][0].size(2)
        x = self.tgt_embed(prev.unsqueeze(1), offset=t)
        h, caches, infos = self.run(x, enc, caches=list(zip(state["k"], state["v"])),
                                    weights_at=layer if self.visual else None)
        state = {"k": [k for k, _ in caches], "v": [v for _, v in caches]}
        info = {}
        if layer is not None and self.visual and infos[layer]:
            info["alpha_src"] = infos[layer]["text_att"].mean(1)[:, 0]
            info["alpha_img"] = infos[layer]["img_att"].mean(1)[:, 0]
            if "beta" in infos[layer]:
                info["beta"] = infos[layer]["beta"][:, 0]
        return F.log_softmax(self.out_proj(h[:, 0]).float(), dim=-1), state, info


# ============================================================================ the joint model
class _TransformerJoint(_JointModel):
    """The Transformer version: the agreement reads one decoder block (``align_layer``)."""

    direction_cls = _TransformerDirection

    def __init__(self, config, vocabs: Vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        layers = [getattr(config, "align_layer", None)] * 2
        if layers[0] is None and self.resources.get("alignment_layer"):
            chosen = read_layer_choice(self.resources["alignment_layer"])
            layers = [chosen["forward"], chosen["backward"]]
            log.info("alignment layer from %s: forward %d, backward %d", self.resources["alignment_layer"], *layers)
        # -1: not chosen (a model without agreement); kept in the checkpoint, so decoding and
        # the analyses know the block without the resource
        self.register_buffer("align_layers", torch.tensor([-1 if x is None else int(x) for x in layers]))

    def layer(self, which: str) -> int | None:
        v = int(self.align_layers[0 if which == "forward" else 1])
        return None if v < 0 else v

    def set_layers(self, forward: int, backward: int) -> None:
        self.align_layers.copy_(torch.tensor([forward, backward]))

    def _teacher(self, direction, batch: dict, which: str) -> dict:
        layer = self.layer(which)
        if layer is None and self.training and self.uses_visual and self.config.agreement != "none":
            raise ValueError("visual agreement on the Transformer needs the decoder block that aligns best: set "
                             "align_layer, or declare the resource alignment_layer (rule select_alignment_layer)")
        return direction.teacher_forced(batch["src"], batch["src_len"], batch["tgt_in"], batch["tgt_out"],
                                        batch.get("img"), batch.get("img_mask"), layer=layer)

    def step(self, enc: dict, state, prev: torch.Tensor):
        return self._dir().step(enc, state, prev, layer=self.layer(self.direction))


@register("visual_agreement.transformer_text", TransformerTextConfig)
class TransformerText(_TransformerJoint):
    """OnlyText Transformer, forward and backward."""

    visual = "none"


@register("visual_agreement.transformer", TransformerVAConfig)
class TransformerVA(_TransformerJoint):
    """The Transformer with co-attention and visual agreement."""

    visual = "regions"


# ============================================================================ the decoder block
def read_layer_choice(path) -> dict:
    """``{"forward": block, "backward": block}`` from a ``select_alignment_layer`` JSON."""
    from ..io import DataError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return {"forward": int(data["forward"]["layer"]), "backward": int(data["backward"]["layer"])}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(path, f"not a layer choice ({err})", "re-run the rule select_alignment_layer") from err
