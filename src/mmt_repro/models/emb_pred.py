"""Hirasawa, Yamagishi, Matsumura and Komachi (2019), "Multimodal Machine Translation with
Embedding Prediction" (NAACL SRW). Paper text: ``../shared/papers/embedding-prediction-hirasawa2019.txt``.

Four registered models share one body, the attentive GRU encoder-decoder of nmtpytorch v3
(the paper's toolkit: "an extension of Bahdanau et al. (2015)", a conditional GRU decoder):

=========================  ==========  ========================================  ===========
key                        images      output layer / loss                       decoding
=========================  ==========  ========================================  ===========
``emb_pred.nmt``           none        softmax, cross-entropy                    step
``emb_pred.imag``          pool5 (1)   softmax + IMAGINATION (eqs. 1, 6, 7)      step
``emb_pred.ours``          pool5 (1)   embedding prediction (eqs. 2-5) + IMAG.   nearest
``emb_pred.ours_text``     none        embedding prediction ("- Images")         nearest
=========================  ==========  ========================================  ===========

(1) images train the shared encoder only; no image is read at test time.

Equation -> code (shapes ``(batch, ...)``; ``T`` target steps, ``S`` source tokens):

==============  ===========================================================================
encoder         ``encode``: ``ctx (batch, S, 2*enc_dim)`` from a bi-GRU over the source
                embeddings (dropout on the embeddings and on ``ctx``)
s_0             ``init_state``: ``tanh(W_init mean_i h_i + b)`` (nmtpytorch ``mean_ctx``)
decoder step    ``_core``: ``h'_j = GRU_0(E[y_{j-1}], s_{j-1})``; MLP attention over ``ctx``
                with ``h'_j`` -> ``c_j``; ``s_j = GRU_1(W_c c_j, h'_j)``
eq. 2           ``_output``: ``e_hat_j = tanh(W_o s_j + b_o)`` -> ``(batch, T, emb_dim)``
                (the softmax models put ``L_o e_hat_j`` into a softmax: nmtpytorch's
                ``hid2out`` + ``out2prob``)
eq. 3           ``step`` (``decoding = "nearest"``): cosine of ``e_hat_j`` to every row of the
                fixed target table, one ``(batch, vocab)`` product
                (:func:`~mmt_repro.models.base.nearest_neighbour_scores`); the greedy
                decoder takes the nearest neighbour
eqs. 4-5        :func:`hardest_negative_margin`, per target token
eq. 6           ``predict_image``: ``v_hat = tanh(W_v mean_i h_i)`` -> ``(batch, img_dim)``
eq. 7           :func:`imagination_loss` over the other images of the batch
eq. 1           ``forward``: ``(1 - lambda_v) J_T + lambda_v J_V`` (see "lambda" below)
==============  ===========================================================================

Readings where the paper is silent or contradicts itself (each follows the authors' public
code, ``toshohirasawa/nmtpytorch-emb-pred``, read for facts only; ``docs/emb_pred.md`` lists
them with the evidence):

* ``d`` is called a distance, but eqs. 4-5 and 7 are hinge losses that only make sense for a
  similarity; the code scores by the dot product of the unit-length prediction with the
  unit-length table rows: cosine similarity. We use cosine similarity everywhere.
* Eq. 5's argmax runs over all of ``V`` with the gold word included (as printed, and as the
  code's ``max(O - O_gold)``): when the gold word is the nearest, the hinge is ``gamma`` and
  has no gradient. The text describes another negative, Lazaridou et al.'s intruder, "close to
  the predicted embedding and far from the gold embedding": ``negative: intruder``
  (``argmax_{w != y} cos(e_hat, e(w)) - cos(e(w), e(y))``); ``negative: nearest_other`` is the
  nearest word other than the gold.
* lambda: eq. 1 prints ``lambda J_T + (1 - lambda) J_V`` with lambda = 0.01, which would give
  translation 1 % of the weight. The authors' configuration (``mtl_loss_type: naive``,
  ``z_w: 0.01``) adds J_V at full weight on a random ``z_w / (1 - z_w)`` share of the batches,
  i.e. lambda weights J_V. ``mtl: interpolate`` (default) uses ``(1 - lambda) J_T + lambda J_V``
  on every batch: in expectation the code's objective times ``1 - lambda`` (0.99),
  *provided J_V is on the code's scale*: see the next point. ``mtl: sample`` is the code's scheme.
* The scale of J_V: eq. 7 sums over the contrastive images; the code takes the mean of the
  ``B x B`` hinge matrix (zero diagonal), i.e. the sum divided by ``B^2``, and adds the
  contrastive sentences of each image. A per-sentence sum (our reading before) weighs the image
  task ``B / 2`` = 32 times the code's at B = 64 (``tests/models/test_emb_pred.py`` checks the
  ratio). ``jv_reduction: matrix_mean`` (default) is the code's scale; ``jv_contrastive:
  images`` keeps eq. 7's terms (half the code's sum when the two directions cost alike), ``both``
  adds the code's second direction.
* Eq. 7 follows the printed equation with ``d`` a similarity. The authors' code has the hinge's
  sign reversed (it computes eq. 7 with the cosine *distance*, which pushes paired sentence and
  image apart); not reproduced.
* The pretrained tables (:mod:`mmt_repro.text.word_vectors`) have unit rows; ``<pad>`` and
  ``<bos>`` are zero rows. The decoder's output table is its input embedding table (tied, as
  the code's ``dec_out_init_type: tied``); scores read it without gradient (the code's
  ``weight.data``), so an unfixed table (Table 2, "Fixed: No") changes only through the input
  embeddings. Rows are normalised when scored (the code compares with raw rows, which are
  unit length only while the pretrained table is fixed).
* Initialisation as the code: Kaiming-normal for every matrix, zero biases of the
  feed-forward layers, PyTorch's defaults for the GRU biases; dropout on the source
  embeddings, the annotations and the output vector (after its normalisation, before scoring).

Resources (``systems.<system>.resources``): ``src_emb`` and ``tgt_emb``, vocabulary-sized
tables built by the workflow (``enc_init`` / ``dec_init: pretrained``). ``resources`` is None
when a checkpoint is rebuilt for decoding (the tables then come from the checkpoint).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .base import MMTModel, Vocabs, nearest_neighbour_scores
from .layers import MLPAttention, linear_cross_entropy, masked_mean
from .registry import register

INITS = ("random", "pretrained")
NEGATIVES = ("vocab", "nearest_other", "intruder")
JV_REDUCTIONS = ("matrix_mean", "sum")
JV_CONTRASTIVE = ("images", "both")


@dataclass
class NMTConfig:
    """Attentive GRU NMT with a softmax output (Table 1's NMT, sec. 3.2)."""

    emb_dim: int = 300  # source and target word embedding size ("input word embedding size ... 300")
    enc_dim: int = 256  # encoder GRU size per direction ("256 hidden dimensions ... bidirectional 512")
    dec_dim: int = 256  # decoder GRU size ("The decoder ... has 256 hidden dimension")
    dropout_emb: float = 0.3  # dropout on the source embeddings ("The dropout rate is 0.3")
    dropout_ctx: float = 0.3  # dropout on the encoder annotations
    dropout_out: float = 0.3  # dropout on the decoder's output vector
    enc_init: str = "random"  # source embeddings: random | pretrained (resource src_emb); trained either way
    dec_init: str = "random"  # target embeddings (and the tied output table): random | pretrained (tgt_emb)
    fix_dec_emb: bool = False  # keep the target embeddings (and the tied output table) fixed

    def __post_init__(self):
        for key in ("enc_init", "dec_init"):
            if getattr(self, key) not in INITS:
                raise ValueError(f"{key}={getattr(self, key)!r}; valid: {', '.join(INITS)}")


@dataclass
class ImagConfig(NMTConfig):
    """IMAGINATION (Elliott & Kádár 2017): the shared encoder also predicts the image (sec. 2.2)."""

    img_dim: int = 2048  # latent size = image feature size ("The latent space vector size is 2,048"; pool5)
    lambda_v: float = 0.01  # weight of the image task J_V in eq. 1 ("lambda = 0.01"; side: authors' code)
    alpha: float = 0.1  # margin of eq. 7 ("alpha = 0.1")
    mtl: str = "interpolate"  # interpolate: (1-l) J_T + l J_V per batch | sample: the code's J_V on l/(1-l) of batches
    jv_reduction: str = "matrix_mean"  # matrix_mean: eq. 7's hinge terms summed and divided by B^2 (the code's
                                       # loss.mean() over the B x B matrix) | sum: eq. 7 per sentence, batch mean
    jv_contrastive: str = "images"  # images: eq. 7's contrastive images of each sentence | both: + the contrastive
                                    # sentences of each image (the code's loss_s + loss_i)
    shuffle_images: bool = False  # control: each training sentence gets another sentence's image of its batch

    def __post_init__(self):
        super().__post_init__()
        if self.mtl not in ("interpolate", "sample"):
            raise ValueError(f"mtl={self.mtl!r}; valid: interpolate, sample")
        if self.jv_reduction not in JV_REDUCTIONS:
            raise ValueError(f"jv_reduction={self.jv_reduction!r}; valid: {', '.join(JV_REDUCTIONS)}")
        if self.jv_contrastive not in JV_CONTRASTIVE:
            raise ValueError(f"jv_contrastive={self.jv_contrastive!r}; valid: {', '.join(JV_CONTRASTIVE)}")
        if not 0.0 <= self.lambda_v < 1.0:
            raise ValueError(f"lambda_v must be in [0, 1), got {self.lambda_v}")


@dataclass
class EmbOutConfig(NMTConfig):
    """Embedding-prediction output (Kumar & Tsvetkov 2019; sec. 2.1, eqs. 2-5)."""

    margin: float = 0.5  # gamma of eq. 4 ("gamma = 0.5")
    negative: str = "vocab"  # vocab: eq. 5's argmax over V, gold included (as printed; the code) |
                             # nearest_other: the nearest word other than the gold | intruder: Lazaridou et
                             # al.'s, "close to the predicted embedding and far from the gold embedding"

    def __post_init__(self):
        super().__post_init__()
        if self.negative not in NEGATIVES:
            raise ValueError(f"negative={self.negative!r}; valid: {', '.join(NEGATIVES)}")


@dataclass
class OursConfig(ImagConfig, EmbOutConfig):
    """The paper's model: embedding prediction trained multitask with IMAGINATION."""


# --------------------------------------------------------------------------- losses


def hardest_negative_margin(pred: torch.Tensor, table: torch.Tensor, gold: torch.Tensor, margin: float,
                            negative: str = "vocab", chunk: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 4 per row, ``max(0, gamma + s(p, e(w-)) - s(p, e(y)))`` with ``s(p, e) = p . e/|e|``,
    with the negative ``w-``:

    * ``vocab`` (eq. 5 as printed): ``argmax_w s(p, e(w)) - s(p, e(y))`` over all of V, i.e.
      the row of ``table`` nearest to ``p`` (the gold word included: then the hinge is gamma);
    * ``nearest_other``: the nearest row other than ``y``;
    * ``intruder`` (Lazaridou et al. 2015, as the paper's text describes ``w-``: "close to the
      predicted embedding and far from the gold embedding"):
      ``argmax_{w != y} s(p, e(w)) - cos(e(w), e(y))``.

    ``pred (N, dim)`` is scored as given: a unit vector makes ``s`` the cosine. The model passes
    its unit-normalised prediction after dropout, which is longer than one while training, as
    the authors' decoder scores it (the paper leaves ``d`` open; deviation 11 of
    docs/emb_pred.md). ``table (V, dim)``: read without gradient, rows normalised (zero rows
    score 0); ``gold (N,)``. Returns the loss per row ``(N,)`` and the negative ids ``(N,)``.
    The argmax is found under ``no_grad`` in chunks of rows, so no ``N x V`` tensor is kept for
    the backward pass: the gradient of the max flows to its argmax only, which is what the two
    gathered rows give."""
    if negative not in NEGATIVES:
        raise ValueError(f"negative={negative!r}; valid: {', '.join(NEGATIVES)}")
    p = pred
    t = F.normalize(table.detach(), dim=-1)
    with torch.no_grad():
        neg = torch.empty_like(gold)
        for a in range(0, p.size(0), chunk):
            g = gold[a : a + chunk]
            sims = p[a : a + chunk] @ t.t()
            if negative == "intruder":
                sims = sims - t[g] @ t.t()
            if negative != "vocab":
                sims.scatter_(1, g[:, None], float("-inf"))
            neg[a : a + chunk] = sims.argmax(1)
    pos_sim = (p * t[gold]).sum(-1)
    neg_sim = (p * t[neg]).sum(-1)
    return torch.clamp_min(margin + neg_sim - pos_sim, 0.0), neg


def imagination_loss(v_hat: torch.Tensor, v: torch.Tensor, alpha: float, reduction: str = "matrix_mean",
                     contrastive: str = "images") -> torch.Tensor:
    """Eq. 7 with ``d`` the cosine similarity. The hinge of sentence ``k`` and contrastive image
    ``a != k``: ``max(0, alpha + cos(v_hat_k, v_a) - cos(v_hat_k, v_k))``; with ``contrastive:
    both`` also that of image ``k`` and contrastive sentence ``a``:
    ``max(0, alpha + cos(v_hat_a, v_k) - cos(v_hat_k, v_k))`` (the authors' code adds both).

    ``reduction``: ``matrix_mean`` divides the sum of all hinge terms by ``B^2`` (the authors'
    ``loss.mean()`` over the ``B x B`` matrix with a zero diagonal: the scale their lambda
    weights); ``sum`` sums eq. 7 over each sentence's contrastive images and averages over the
    batch (``B`` times larger at ``contrastive: images``). ``v_hat, v (batch, img_dim)``; a batch
    of one has no contrastive pair (loss 0)."""
    if reduction not in JV_REDUCTIONS or contrastive not in JV_CONTRASTIVE:
        raise ValueError(f"reduction={reduction!r}, contrastive={contrastive!r}; valid: {JV_REDUCTIONS}, {JV_CONTRASTIVE}")
    sims = F.normalize(v_hat, dim=-1) @ F.normalize(v, dim=-1).t()  # (batch, batch): [sentence k, image a]
    diag = sims.diagonal()
    eye = torch.eye(sims.size(0), dtype=torch.bool, device=sims.device)
    cost = torch.clamp_min(alpha + sims - diag.unsqueeze(1), 0.0).masked_fill(eye, 0.0)
    if contrastive == "both":
        cost = cost + torch.clamp_min(alpha + sims - diag.unsqueeze(0), 0.0).masked_fill(eye, 0.0)
    b = sims.size(0)
    return cost.sum() / (b * b) if reduction == "matrix_mean" else cost.sum() / b


def batch_derangement(n: int, device=None) -> torch.Tensor:
    """A random permutation of ``range(n)`` without fixed points (n >= 2), from torch's generator."""
    if n < 2:
        return torch.arange(n, device=device)
    order = torch.randperm(n, device=device)
    out = torch.empty_like(order)
    out[order] = order.roll(-1)
    return out


# --------------------------------------------------------------------------- the model


class _EmbPredBase(MMTModel):
    """Shared body; ``use_image`` adds IMAGINATION, ``output`` picks the output layer."""

    use_image = False
    output = "softmax"  # softmax | embedding

    def __init__(self, config, vocabs: Vocabs, resources: dict[str, Path] | None = None):
        super().__init__(config, vocabs, resources)
        c = config
        if vocabs.src is None:
            raise ValueError(f"{type(self).__name__} translates text: it needs a source vocabulary")
        self.src_pad = vocabs.src.specials.pad
        ctx_dim = 2 * c.enc_dim
        self.src_emb = nn.Embedding(vocabs.src.size, c.emb_dim, padding_idx=self.src_pad)
        self.tgt_emb = nn.Embedding(vocabs.tgt.size, c.emb_dim, padding_idx=self.specials.pad)
        self.encoder = nn.GRU(c.emb_dim, c.enc_dim, batch_first=True, bidirectional=True)
        self.init_proj = nn.Linear(ctx_dim, c.dec_dim)  # W_init (mean_ctx)
        self.dec0 = nn.GRUCell(c.emb_dim, c.dec_dim)  # GRU_0 on the previous word
        self.att = MLPAttention(c.dec_dim, ctx_dim, ctx_dim)  # nmtpytorch att_bottleneck: ctx
        self.ctx2hid = nn.Linear(ctx_dim, c.dec_dim, bias=False)  # W_c
        self.dec1 = nn.GRUCell(c.dec_dim, c.dec_dim)  # GRU_1 on the context
        self.hid2out = nn.Linear(c.dec_dim, c.emb_dim)  # W_o, b_o (eq. 2)
        if self.output == "softmax":
            self.out2prob = nn.Linear(c.emb_dim, vocabs.tgt.size)  # L_o
        if self.use_image:
            self.latent = nn.Linear(ctx_dim, c.img_dim, bias=False)  # W_v (eq. 6)
        self._init_weights()
        self._load_pretrained(resources)
        if c.fix_dec_emb:
            self.tgt_emb.weight.requires_grad_(False)

    def _init_weights(self) -> None:
        """nmtpytorch (the authors' ``reset_parameters``): Kaiming-normal matrices; zero biases
        of the feed-forward layers (its ``FF(bias_zero=True)``); GRU biases as PyTorch makes them."""
        for name, param in self.named_parameters():
            if param.dim() > 1:
                nn.init.kaiming_normal_(param)
            elif not name.startswith(("encoder.", "dec0.", "dec1.")):
                nn.init.zeros_(param)
        with torch.no_grad():
            self.src_emb.weight[self.src_pad].zero_()
            self.tgt_emb.weight[self.specials.pad].zero_()

    def _load_pretrained(self, resources: dict | None) -> None:
        """Copy the declared tables into the embeddings (``resources`` None: rebuilt from a
        checkpoint, whose weights come next)."""
        if resources is None:
            return
        from ..text.word_vectors import load_embedding_table

        c = self.config
        for key, name, emb, vocab in (("enc_init", "src_emb", self.src_emb, self.vocabs.src),
                                      ("dec_init", "tgt_emb", self.tgt_emb, self.vocabs.tgt)):
            if getattr(c, key) != "pretrained":
                continue
            if name not in resources:
                raise ValueError(f"{self.registry_name}: {key}: pretrained needs the resource {name!r} (a table "
                                 f"built by build_embedding_table); declare it under the system's `resources`")
            table = load_embedding_table(resources[name], vocab.size, c.emb_dim)
            with torch.no_grad():
                emb.weight.copy_(torch.from_numpy(table))

    # ------------------------------------------------------------------ encoder
    def encode(self, batch: dict) -> dict:
        """``ctx (batch, S, 2*enc_dim)``, its mask and attention keys. Images are not read:
        they only train the encoder (``forward``)."""
        src, src_len = batch["src"], batch["src_len"]
        c = self.config
        emb = F.dropout(self.src_emb(src), c.dropout_emb, self.training)
        packed = pack_padded_sequence(emb, src_len.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.encoder(packed)
        ctx, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))
        ctx = F.dropout(ctx, c.dropout_ctx, self.training)
        return {"ctx": ctx, "ctx_mask": src != self.src_pad, "ctx_proj": self.att.precompute(ctx)}

    def init_state(self, enc: dict) -> torch.Tensor:
        """``s_0 = tanh(W_init mean_i h_i + b)``: ``(batch, dec_dim)``."""
        return torch.tanh(self.init_proj(masked_mean(enc["ctx"], enc["ctx_mask"])))

    def predict_image(self, enc: dict) -> torch.Tensor:
        """Eq. 6: ``v_hat = tanh(W_v mean_i h_i)``, ``(batch, img_dim)``."""
        return torch.tanh(self.latent(masked_mean(enc["ctx"], enc["ctx_mask"])))

    # ------------------------------------------------------------------ decoder
    def _core(self, enc: dict, s_prev: torch.Tensor, y_emb: torch.Tensor):
        """One conditional-GRU step: ``(s_j (batch, dec_dim), alpha_j (batch, S))``."""
        h1 = self.dec0(y_emb, s_prev)
        ctx_j, alpha = self.att(h1, enc["ctx"], enc["ctx_mask"], enc["ctx_proj"])
        return self.dec1(self.ctx2hid(ctx_j), h1), alpha

    def _output(self, s: torch.Tensor) -> torch.Tensor:
        """Eq. 2: ``e_hat = tanh(W_o s + b_o)``, ``(..., emb_dim)``."""
        return torch.tanh(self.hid2out(s))

    def target_table(self) -> torch.Tensor:
        """The fixed target table of eq. 3: the target embeddings (tied), ``(vocab, emb_dim)``."""
        return self.tgt_emb.weight

    def step(self, enc: dict, state: torch.Tensor, prev: torch.Tensor):
        """One step: ``(scores (batch, vocab), s_j, {"alpha_src": (batch, S)})``. Softmax models
        give log-probabilities; embedding prediction gives the cosine of ``e_hat_j`` to every
        table row (eq. 3; the greedy decoder picks the nearest neighbour)."""
        s, alpha = self._core(enc, state, self.tgt_emb(prev))
        out = self._output(s)
        if self.output == "embedding":
            scores = nearest_neighbour_scores(out, self.target_table())
        else:
            scores = F.log_softmax(self.out2prob(out), dim=-1)
        return scores, s, {"alpha_src": alpha}

    def _translation_loss(self, out: torch.Tensor, tgt_out: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """Summed J_T over the real target tokens of ``out (batch, T, emb_dim)``."""
        c, pad = self.config, self.specials.pad
        flat, gold = out.reshape(-1, out.size(-1)), tgt_out.reshape(-1)
        if self.output == "softmax":
            hidden = F.dropout(flat, c.dropout_out, self.training)
            return linear_cross_entropy(hidden, self.out2prob.weight, self.out2prob.bias, gold, ignore_index=pad), {}
        keep = gold != pad
        # unit length, then dropout, scored as it is (not normalised again): the authors' decoder
        pred = F.dropout(F.normalize(flat[keep], dim=-1), c.dropout_out, self.training)
        loss, neg = hardest_negative_margin(pred, self.target_table(), gold[keep], c.margin, negative=c.negative)
        return loss.sum(), {"nearest_is_gold": (neg == gold[keep]).float().mean().detach()}

    def forward(self, batch: dict) -> dict:
        """J_T (cross-entropy, or eqs. 4-5) per target token, plus the image task (eqs. 1, 6, 7)."""
        enc = self.encode(batch)
        state = self.init_state(enc)
        emb = self.tgt_emb(batch["tgt_in"])  # (batch, T, emb_dim)
        states = []
        for j in range(emb.size(1)):
            state, _ = self._core(enc, state, emb[:, j])
            states.append(state)
        out = self._output(torch.stack(states, dim=1))
        tgt_out = batch["tgt_out"]
        n_tokens = (tgt_out != self.specials.pad).sum()
        total, extra = self._translation_loss(out, tgt_out)
        j_t = total / n_tokens.clamp_min(1)
        result = {"n_tokens": n_tokens, "translation": j_t.detach(), **extra}
        if not self.use_image:
            return {"loss": j_t, **result}
        c = self.config
        lam = c.lambda_v
        if c.mtl == "sample":  # the authors' "naive" scheme: J_V on a random share of the batches
            run = bool(torch.rand(()) < (1.0 if lam >= 0.5 else lam / (1.0 - lam)))
            if not run:
                return {"loss": j_t, **result}
        img = batch.get("img")
        if img is None:
            raise ValueError(f"model {self.registry_name} trains its encoder on images but the batch has none")
        v = masked_mean(img, batch["img_mask"]) if batch.get("img_mask") is not None else img.mean(1)
        if c.shuffle_images:
            v = v[batch_derangement(v.size(0), v.device)]
        j_v = imagination_loss(self.predict_image(enc), v, c.alpha, c.jv_reduction, c.jv_contrastive)
        loss = j_t + j_v if c.mtl == "sample" else (1.0 - lam) * j_t + lam * j_v
        return {"loss": loss, **result, "latent": j_v.detach()}


@register("emb_pred.nmt", NMTConfig)
class EmbPredNMT(_EmbPredBase):
    """Text-only attentive NMT with a softmax output (Table 1: NMT, + pretrained)."""

    visual = "none"


@register("emb_pred.imag", ImagConfig)
class Imagination(_EmbPredBase):
    """IMAGINATION: NMT whose shared encoder also learns the visual latent space (IMAG+)."""

    visual = "grid"  # pool5: one 2,048-d vector per image (training only)
    use_image = True


@register("emb_pred.ours", OursConfig)
class EmbPredMMT(_EmbPredBase):
    """The paper's model: embedding prediction + IMAGINATION (Table 1: Ours)."""

    visual = "grid"
    decoding = "nearest"
    use_image = True
    output = "embedding"


@register("emb_pred.ours_text", EmbOutConfig)
class EmbPredText(_EmbPredBase):
    """Embedding prediction without the image task (Table 3: "- Images")."""

    visual = "none"
    decoding = "nearest"
    output = "embedding"
