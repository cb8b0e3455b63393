"""Mitzalis, Caglayan, Madhyastha and Specia (2021), "BERTGEN: Multi-task Generation through
BERT" (ACL). Paper text: ``../shared/papers/bertgen-mitzalis2021.txt``; the authors' code is
ImperialNLP/BertGen (VL-BERT's code with a generation module).

One registered model, ``bertgen.bertgen``: a single BERT (no encoder/decoder split) that reads
one stream ``[TO_XX] [CLS] x [SEP] y_<t [MASK] [SEP]``, then the RoI features of the image, then
``[END]``, and predicts ``y_t`` at the ``[MASK]`` slot. The Transformer is BERT's encoder in
:mod:`~mmt_repro.models.bert` (Hugging Face's ``BertEncoder`` module for module, SDPA
attention; nothing of BertGen is in it); this module adds VL-BERT's
visual-linguistic embeddings, the MLM head on the masked slot, the hybrid initialisation, the
packed training layout and the [MASK]-shift greedy decoding.

Paper -> code (shapes ``(batch, len, dim)``; ``H`` = hidden size, ``R`` = region slots, slot 0
the whole image; ``N`` = images in the batch):

=====================  =======================================================================
section 2.1, input     :func:`text_ids`: ``[lang] [CLS] x [SEP] y_<t [MASK] [SEP]`` (captioning:
configuration          no ``x``); :func:`layout` adds the regions and ``[END]`` per example
                       and packs examples into rows (:class:`Layout`, ``(rows, L)``)
visual embeddings      :meth:`BertGen.regions`: ``obj (N, R, H) = ReLU(W [g(box); v] + b)``, the
                       2048-d RoI feature ``v`` and the sin/cos geometric embedding ``g`` of its
                       box (:func:`coordinate_embedding`, VL-BERT's); "summing its feature vector
                       and its geometric embedding" is this one linear map of both
"the same RoI feature  :meth:`BertGen.embed`: a text position adds ``LN_text(obj[:, 0])`` (the
for the full image"    whole image; zeros for tasks without image) to its word embedding; a
                       region position is ``[IMG] + LN_obj(obj)``; then position (regions share
                       the position after the text, ``[END]`` the next one) and token-type
                       embeddings, LayerNorm and dropout
eq. 1, sequence        :meth:`BertGen.forward`: ``-log P(y_t | x, v, y_<t)`` of every unrolled
unrolling, Fig. 3      example (:mod:`mmt_repro.datasets.unroll` makes them, one per target token
                       and one for ``[STOP]``), bidirectional attention within each example
                       (a packed row holds several, with a block-diagonal mask)
seq_len cap (not       :class:`Stream` with ``image_seq_len`` (the authors' 64): an image
stated; code)          task's example keeps the text + region positions of
                       :func:`~mmt_repro.text.positions.seq_len_cap`, regions cut first; a cut
                       text loses its [MASK], and its label is ignored (:data:`IGNORE`)
MLM head               :meth:`BertGen.predict`: ``logits = W_E T(h_mask) + b`` (BERT's
                       ``BertPredictionHeadTransform``, output tied to the word embeddings)
decoding               :meth:`BertGen.search`: put the argmax into the [MASK] slot, shift
                       [MASK] right, stop at ``[STOP]`` (our ``<eos>``) or after ``max_len``
                       steps; every sentence of a batch at once, sentences leaving as they stop
hybrid initialisation  :func:`~mmt_repro.models.bertgen_convert.load_pretrained` with its key
(Figure 2)             tables: VL-BERT's visual parts, position and token-type
                       embeddings; M-BERT's word embeddings, embedding LayerNorm, Transformer
                       and MLM head
=====================  =======================================================================

Vocabulary: the target vocabulary is BertGen's WordPiece ``vocab.txt`` as
:meth:`~mmt_repro.text.vocab.Vocab.from_wordpiece` reads it (id ``4 + i`` = line ``i``; our
``<pad> <bos> <eos> <unk>`` take M-BERT's ``[PAD] [CLS] [STOP] [UNK]`` rows). Source and target
share it. ``[SEP]``, ``[MASK]``, ``[END]``-less ids and the language specifiers come from the
vocabulary's reserved tokens (:class:`~mmt_repro.models.base.VocabSpec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .base import MMTModel, Vocabs, length_limits
from .bert import Encoder, PredictionHeadTransform
from .bertgen_convert import load_pretrained
from .registry import register

#: BertGen's language specifiers (its vocab.txt renames [unused17-21]; Turkish is ``[TO_TU]``).
LANG_TOKENS = {"en": "[TO_EN]", "de": "[TO_DE]", "fr": "[TO_FR]", "tr": "[TO_TU]", "cs": "[TO_CS]"}
#: Reserved tokens the input stream needs besides the language specifiers.
NEEDED = ("[CLS]", "[SEP]", "[MASK]")
#: Kinds of positions in a :class:`Layout` row.
PAD, TEXT, REGION, END = 0, 1, 2, 3
#: The label of an example whose [MASK] the ``image_seq_len`` cap cut (no loss; cross-entropy's default).
IGNORE = -100


@dataclass
class BertGenConfig:
    """BertGen (Mitzalis et al. 2021, section 2.1): VL-BERT base with M-BERT's vocabulary."""

    hidden_size: int = 768  # "model ... dimensions ... 768"
    num_layers: int = 12  # "12 self-attention layers"
    num_heads: int = 12  # "and 12 heads"
    ffn_size: int = 3072  # "feed-forward dimensions ... 3072"
    dropout: float = 0.1  # not stated: VL-BERT/BertGen config hidden_dropout_prob
    attention_dropout: float = 0.1  # not stated: VL-BERT/BertGen config attention_probs_dropout_prob
    max_positions: int = 512  # not stated: VL-BERT/M-BERT max_position_embeddings
    img_dim: int = 2048  # RoI feature size ("2048-dimensional RoI features", BUTD)
    coord_freqs: int = 256  # sin/cos frequencies per box coordinate (VL-BERT: 4 x 2 x 256 = 2048)
    # not stated: dropout on each region's [box; RoI feature] before its projection (VL-BERT's
    # FastRCNN.obj_downsample, Dropout(p=0.1) written into its code, apart from hidden_dropout_prob)
    region_dropout: float = 0.1
    # slot 0 = the whole image: "store" (the feature store holds it, e.g. full_image: true), or
    # "mean" (prepended as the mean of the regions, box = the image; BertGen's code for BUTD)
    full_image: str = "mean"
    max_regions: int = 101  # region slots kept per image, slot 0 included ("k in [10, 100]" + 1)
    # text + region positions of a training example with an image, cut as the authors' dataset code
    # cuts them (mmt_repro.text.positions.seq_len_cap: regions first; a text over half of it loses its
    # tail, its [MASK] and its label); 0: off, every region and label kept. Their DATASET.SEQ_LEN: 64
    image_seq_len: int = 0
    # random | visual (VL-BERT's visual layers only, Fig. 5) | hybrid (VL-BERT + M-BERT, Fig. 2)
    init: str = "hybrid"
    init_std: float = 0.02  # std of the random initialisation (BERT's initializer_range)
    # scale of the visual LayerNorms at initialisation (VL-BERT's visual_scale_text/object_init: 0,
    # the image enters as training grows them; pre-trained weights replace it): both at once, or
    # each apart (None: visual_ln_init). The text LayerNorm scales the whole-image vector every text
    # position of an image task adds to its word; the object LayerNorm the region positions.
    visual_ln_init: float = 0.0
    visual_ln_text_init: float | None = None
    visual_ln_object_init: float | None = None
    lang_tokens: dict = field(default_factory=lambda: dict(LANG_TOKENS))  # language -> specifier token
    pack_len: int = 0  # training rows packed with several unrolled examples up to this length (0: one per row)
    epoch_examples: int = 0  # an epoch = this many reference-task examples (0: one pass, the paper's epoch)
    use_sdpa: bool = True  # SDPA attention (FlashAttention/memory-efficient kernels on GPU); else plain ops

    def visual_ln_scales(self) -> tuple[float, float]:
        """Initial scales ``(text, object)`` of the two visual LayerNorms."""
        text, obj = self.visual_ln_text_init, self.visual_ln_object_init
        return (self.visual_ln_init if text is None else text, self.visual_ln_init if obj is None else obj)

    def __post_init__(self):
        if self.full_image not in ("store", "mean"):
            raise ValueError(f"full_image={self.full_image!r}: valid values are 'store' and 'mean'")
        if self.init not in ("random", "visual", "hybrid"):
            raise ValueError(f"init={self.init!r}: valid values are 'random', 'visual' and 'hybrid'")
        if self.image_seq_len < 0:
            raise ValueError(f"image_seq_len={self.image_seq_len}: 0 (off) or the positions kept")
        for name in ("dropout", "attention_dropout", "region_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name}={getattr(self, name)}: a dropout probability in [0, 1)")
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of num_heads {self.num_heads}")


# ----------------------------------------------------------------------------- input layout


def text_ids(lang: int, cls: int, sep: int, mask: int, src: list[int] | None, prefix: list[int]) -> list[int]:
    """One unrolled example's text: ``[lang] [CLS] x [SEP] y_<t [MASK] [SEP]`` (no ``x`` without
    source text); the [MASK] is at index ``len - 2``."""
    return [lang, cls, *(src or ()), sep, *prefix, mask, sep]


@dataclass
class Layout:
    """Rows of the single stream, as index tensors (``(rows, L)`` each): every position's
    token id (text), kind (0 pad, 1 text, 2 region, 3 [END]), position id, segment (the example
    it belongs to within the row, from 1; 0 = padding), region (flat index ``image * R + slot``
    into the batch's regions) and text image (the example's image, -1 without one), plus the
    ``[MASK]`` positions ``(row, col)`` in example order."""

    tokens: torch.Tensor
    kind: torch.Tensor
    pos: torch.Tensor
    seg: torch.Tensor
    region: torch.Tensor
    text_image: torch.Tensor
    mask_rows: torch.Tensor
    mask_cols: torch.Tensor
    packed: bool

    def to(self, device) -> Layout:
        return Layout(*(getattr(self, k).to(device) for k in self._TENSORS), packed=self.packed)

    _TENSORS = ("tokens", "kind", "pos", "seg", "region", "text_image", "mask_rows", "mask_cols")

    def to_batch(self) -> dict:
        return {f"lay_{k}": v for k, v in vars(self).items() if k != "packed"} | {"lay_packed": self.packed}

    @classmethod
    def from_batch(cls, batch: dict) -> Layout:
        return cls(**{k[4:]: v for k, v in batch.items() if k.startswith("lay_")})


def layout(texts: list[list[int]], mask_at: list[int], img_of: list[int], n_regions: np.ndarray | list[int],
           slots: int, pad_id: int, pack_len: int = 0, regions_of: list[int] | None = None) -> Layout:
    """Lay out examples (``texts[e]``, its [MASK] index, its image or -1) with their regions
    (``n_regions[image]`` valid slots of ``slots``, or the first ``regions_of[e]`` of them when
    given: the ``image_seq_len`` cap) and ``[END]``. Text positions take ids ``0..T-1``, the
    regions ``T`` (VL-BERT's ``obj_pos_id_relative``), ``[END]`` ``T + 1``.
    ``pack_len`` 0: one example per row; else consecutive examples share a row while it stays
    within ``pack_len`` positions (an example longer than that gets a row of its own)."""
    n_ex = len(texts)
    n_reg = [0 if i < 0 else int(n_regions[i]) if regions_of is None else min(int(n_regions[i]), int(regions_of[e]))
             for e, i in enumerate(img_of)]
    sizes = [len(t) + k + 1 for t, k in zip(texts, n_reg)]
    rows: list[list[int]] = []
    if pack_len <= 0:
        rows = [[e] for e in range(n_ex)]
    else:
        used = 0
        for e in range(n_ex):
            if rows and used + sizes[e] <= pack_len:
                rows[-1].append(e)
                used += sizes[e]
            else:
                rows.append([e])
                used = sizes[e]
    width = max(sum(sizes[e] for e in row) for row in rows) if rows else 1
    shape = (len(rows), width)
    tokens = np.full(shape, pad_id, dtype=np.int64)
    kind = np.zeros(shape, dtype=np.int64)
    pos = np.zeros(shape, dtype=np.int64)
    seg = np.zeros(shape, dtype=np.int64)
    region = np.zeros(shape, dtype=np.int64)
    text_image = np.full(shape, -1, dtype=np.int64)
    mask_rows = np.zeros(n_ex, dtype=np.int64)
    mask_cols = np.zeros(n_ex, dtype=np.int64)
    for r, row in enumerate(rows):
        off = 0
        for s, e in enumerate(row, start=1):
            t = texts[e]
            n_t = len(t)
            tokens[r, off : off + n_t] = t
            kind[r, off : off + n_t] = TEXT
            pos[r, off : off + n_t] = np.arange(n_t)
            seg[r, off : off + n_t] = s
            text_image[r, off : off + n_t] = img_of[e]
            mask_rows[e], mask_cols[e] = r, off + mask_at[e]
            off += n_t
            if img_of[e] >= 0:
                k = n_reg[e]
                kind[r, off : off + k] = REGION
                pos[r, off : off + k] = n_t
                seg[r, off : off + k] = s
                region[r, off : off + k] = img_of[e] * slots + np.arange(k)
                off += k
            kind[r, off], pos[r, off], seg[r, off] = END, n_t + 1, s
            off += 1
    as_t = torch.from_numpy
    return Layout(as_t(tokens), as_t(kind), as_t(pos), as_t(seg), as_t(region), as_t(text_image),
                  as_t(mask_rows), as_t(mask_cols), packed=any(len(row) > 1 for row in rows))


def prepare_images(img: torch.Tensor, mask: torch.Tensor, geom: torch.Tensor, full_image: str,
                   max_regions: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Regions ``(N, R, D)``, mask and geometry ``(N, R, 6)`` with slot 0 the whole image: as
    stored (``full_image="store"``), or the mean of the regions prepended with the image's box
    (``"mean"``, BertGen's ``add_image_as_a_box`` for pre-computed features); at most
    ``max_regions`` slots. Valid slots come first (stores pad at the end)."""
    if full_image == "mean":
        m = mask.unsqueeze(-1).to(img.dtype)
        mean = (img * m).sum(1, keepdim=True) / m.sum(1, keepdim=True).clamp(min=1)
        whole = torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0, 1.0], dtype=geom.dtype, device=geom.device)
        img = torch.cat([mean, img], 1)
        geom = torch.cat([whole.expand(geom.size(0), 1, 6), geom], 1)
        mask = torch.cat([torch.ones_like(mask[:, :1]), mask], 1)
    return img[:, :max_regions], mask[:, :max_regions], geom[:, :max_regions]


@dataclass
class Stream:
    """What BertGen's data view (:mod:`mmt_repro.datasets.bertgen`, which lays out the batches
    of unrolled examples) needs of the model: its special ids, language specifiers and image
    settings (plain values, picklable)."""

    cls_id: int
    sep_id: int
    mask_id: int
    pad_id: int
    eos_id: int
    lang_ids: dict
    full_image: str
    max_regions: int
    pack_len: int = 0
    image_seq_len: int = 0  # BertGenConfig.image_seq_len (0: off)


def coordinate_embedding(geometry: torch.Tensor, freqs: int) -> torch.Tensor:
    """VL-BERT's geometric embedding of boxes ``(..., 6)`` (normalised ``x1, y1, x2, y2, w, h``):
    centre, width and height in percent of the image, each through ``sin`` and ``cos`` of
    ``freqs`` wavelengths ``1000^(k / freqs)`` -> ``(..., 4 * 2 * freqs)``."""
    x1, y1, x2, y2 = geometry[..., 0], geometry[..., 1], geometry[..., 2], geometry[..., 3]
    pos = torch.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], dim=-1) * 100
    dim_mat = 1000 ** (torch.arange(freqs, dtype=pos.dtype, device=pos.device) / freqs)
    angles = pos.unsqueeze(-1) / dim_mat
    return torch.cat([angles.sin(), angles.cos()], dim=-1).flatten(-2)


# ----------------------------------------------------------------------------- the model


@register("bertgen.bertgen", BertGenConfig)
class BertGen(MMTModel):
    """BertGen: see the module docstring."""

    visual = "regions"
    visual_optional = True  # the MT tasks run without an image
    decoding = "custom"
    training_examples = "unrolled"  # eq. 1, in the multi-task mix (mmt_repro.datasets.bertgen)

    def __init__(self, config: BertGenConfig, vocabs: Vocabs, resources: dict[str, Path] | None = None):
        super().__init__(config, vocabs, resources)
        c = config
        if vocabs.src is not None and vocabs.src.size != vocabs.tgt.size:
            raise ValueError(f"BertGen reads and writes one WordPiece vocabulary; source has {vocabs.src.size} "
                             f"entries, target {vocabs.tgt.size} (use the recipe's joint vocabulary)")
        reserved = vocabs.tgt.reserved
        missing = [t for t in NEEDED if t not in reserved]
        if missing:
            raise ValueError(f"the target vocabulary lacks {missing}: BertGen needs a BERT WordPiece vocabulary "
                             f"(reserved tokens it has: {sorted(reserved)[:20]})")
        self.cls_id, self.sep_id, self.mask_id = (reserved[t] for t in NEEDED)
        self.lang_ids = {lang: reserved[tok] for lang, tok in c.lang_tokens.items() if tok in reserved}
        V, H = vocabs.tgt.size, c.hidden_size
        # Names follow VL-BERT's modules, so that the key tables below read one to one.
        self.word_embeddings = nn.Embedding(V, H)
        self.position_embeddings = nn.Embedding(c.max_positions, H)
        self.token_type_embeddings = nn.Embedding(3, H)  # 0 text, 2 regions and [END] (VL-BERT)
        self.end_embedding = nn.Embedding(1, H)
        self.embedding_LayerNorm = nn.LayerNorm(H, eps=1e-12)
        self.embedding_dropout = nn.Dropout(c.dropout)
        self.obj_downsample = nn.Sequential(nn.Dropout(c.region_dropout), nn.Linear(8 * c.coord_freqs + c.img_dim, H),
                                            nn.ReLU())
        self.object_linguistic_embeddings = nn.Embedding(1, H)  # the [IMG] word of region positions
        self.visual_ln_text = nn.LayerNorm(H, eps=1e-12)
        self.visual_ln_object = nn.LayerNorm(H, eps=1e-12)
        self.encoder = Encoder(H, c.num_layers, c.num_heads, c.ffn_size, c.dropout, c.attention_dropout, c.use_sdpa)
        self.mlm_transform = PredictionHeadTransform(H)
        self.mlm_bias = nn.Parameter(torch.zeros(V))
        self._init_random()
        self.stream = Stream(self.cls_id, self.sep_id, self.mask_id, self.specials.pad, self.specials.eos,
                             self.lang_ids, c.full_image, c.max_regions, c.pack_len, c.image_seq_len)
        self.pretrained: dict = {}
        if self.resources and c.init != "random":
            self.pretrained = load_pretrained(self, c.init, self.resources)

    # -- initialisation ------------------------------------------------------------------------
    def _init_random(self) -> None:
        """BERT's initialisation (N(0, init_std) weights, zero biases, unit LayerNorms); VL-BERT
        starts the visual LayerNorms at scale :meth:`BertGenConfig.visual_ln_scales` (its
        visual_scale_text_init and visual_scale_object_init, 0 both)."""
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=self.config.init_std)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
            if isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        text, obj = self.config.visual_ln_scales()
        nn.init.constant_(self.visual_ln_text.weight, text)
        nn.init.constant_(self.visual_ln_object.weight, obj)

    # -- data ----------------------------------------------------------------------------------
    def lang_id(self, lang: str | None) -> int:
        if lang is None:
            raise ValueError("BertGen needs each example's target language (batch['tgt_lang']): give the data "
                             "its language pair (ParallelData(langs=...), the rules' {pair})")
        if lang not in self.lang_ids:
            raise ValueError(f"no language specifier for {lang!r}: lang_tokens {self.config.lang_tokens} and the "
                             f"vocabulary's reserved tokens give {sorted(self.lang_ids)}")
        return self.lang_ids[lang]

    def ready_to_train(self) -> None:
        """Training from VL-BERT/M-BERT needs the pre-trained weights (a checkpoint to decode does not)."""
        if self.config.init != "random" and not self.pretrained:
            raise ValueError(f"init={self.config.init!r} needs the pre-trained weights as the system's resources "
                             "(vl_bert, and mbert for hybrid); declare them, or set init: random")

    def images(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """``(img (N, R, D), mask (N, R), geometry (N, R, 6))`` with slot 0 the whole image, or
        None when the batch has no image."""
        img = batch.get("img")
        if img is None:
            return None
        if batch.get("img_geometry") is None:
            raise ValueError("BertGen embeds each region's box: read a region store (boxes beside the features)")
        return prepare_images(img, batch["img_mask"], batch["img_geometry"], self.config.full_image,
                              self.config.max_regions)

    # -- the network ---------------------------------------------------------------------------
    def regions(self, img: torch.Tensor, geometry: torch.Tensor) -> torch.Tensor:
        """``obj (N, R, H) = ReLU(W [g(box); v] + b)`` (VL-BERT's obj_downsample)."""
        dtype = self.obj_downsample[1].weight.dtype
        coord = coordinate_embedding(geometry.to(dtype), self.config.coord_freqs)
        return self.obj_downsample(torch.cat([coord, img.to(dtype)], dim=-1))

    def embed(self, lay: Layout, obj: torch.Tensor | None) -> torch.Tensor:
        """Embeddings ``(rows, L, H)`` of a layout; ``obj (N, R, H)`` the batch's region vectors."""
        H = self.config.hidden_size
        kind = lay.kind
        text = kind == TEXT
        word = self.word_embeddings(lay.tokens)
        if obj is not None:
            flat = obj.reshape(-1, H)
            whole = obj[:, 0]  # (N, H): the full-image RoI of each image
            idx = lay.text_image.clamp(min=0)
            vis = torch.where((lay.text_image >= 0).unsqueeze(-1), whole[idx], torch.zeros_like(word))
            emb = word + self.visual_ln_text(vis)
            reg = self.object_linguistic_embeddings.weight[0] + self.visual_ln_object(flat[lay.region])
            emb = torch.where((kind == REGION).unsqueeze(-1), reg, emb)
        else:
            emb = word + self.visual_ln_text(torch.zeros_like(word))
        emb = torch.where((kind == END).unsqueeze(-1), self.end_embedding.weight[0].expand_as(emb), emb)
        token_type = torch.where(text, 0, 2)
        emb = emb + self.position_embeddings(lay.pos) + self.token_type_embeddings(token_type)
        return self.embedding_dropout(self.embedding_LayerNorm(emb))

    def attention_mask(self, lay: Layout) -> torch.Tensor:
        """Boolean attention mask: ``(rows, 1, 1, L)`` (keys that are not padding) with one example
        per row, else ``(rows, 1, L, L)``, block-diagonal by segment; a padding position attends to
        itself so that no row of the softmax is empty."""
        if not lay.packed:
            return (lay.kind != PAD)[:, None, None, :]
        same = lay.seg.unsqueeze(2) == lay.seg.unsqueeze(1)
        same &= (lay.seg != 0).unsqueeze(1)
        eye = torch.eye(lay.seg.size(1), dtype=torch.bool, device=lay.seg.device).unsqueeze(0)
        return (same | eye).unsqueeze(1)

    def hidden(self, lay: Layout, obj: torch.Tensor | None) -> torch.Tensor:
        """Hidden states at the [MASK] positions ``(examples, H)`` (the boolean mask, True =
        attend; without SDPA the encoder adds it to the scores as 0 / ``finfo.min``)."""
        h = self.encoder(self.embed(lay, obj), self.attention_mask(lay))
        return h[lay.mask_rows, lay.mask_cols]

    def predict(self, h: torch.Tensor) -> torch.Tensor:
        """MLM head on masked slots: ``(examples, H) -> (examples, V)`` logits."""
        return F.linear(self.mlm_transform(h), self.word_embeddings.weight, self.mlm_bias)

    def obj(self, batch: dict) -> torch.Tensor | None:
        imgs = self.images(batch)
        return None if imgs is None else self.regions(imgs[0], imgs[2])

    def forward(self, batch: dict) -> dict:
        """Mean ``-log P(y_t | x, v, y_<t)`` over the batch's unrolled examples (eq. 1); one
        predicted token per example, so ``n_tokens`` is the number of examples. With
        ``image_seq_len``, examples whose [MASK] was cut (label :data:`IGNORE`) count for
        neither: the mean over the labels left, as the authors' loss over the step's labels
        (0, with no gradient, when none is left). A batch padded to a fixed shape (``padded``:
        the training config's ``shape_buckets``) has rows labelled :data:`IGNORE` too, counted
        the same way."""
        lay = Layout.from_batch(batch)
        logits = self.predict(self.hidden(lay, self.obj(batch)))
        labels = batch["labels"]
        if self.config.image_seq_len > 0 or batch.get("padded"):
            n = (labels != IGNORE).sum()
            loss = F.cross_entropy(logits.float(), labels, ignore_index=IGNORE, reduction="sum") / n.clamp(min=1)
            return {"loss": loss, "n_tokens": n}
        loss = F.cross_entropy(logits.float(), labels)
        return {"loss": loss, "n_tokens": torch.tensor(labels.numel(), device=labels.device)}

    # -- decoding ------------------------------------------------------------------------------
    def never_emitted(self) -> list[int]:
        """Ids no training example has as its label, kept out of the argmax: ``<pad>``, ``<bos>``
        and the literal ``[PAD] [CLS] [SEP] [MASK] [STOP]`` of vocab.txt (``[STOP]`` is our ``<eos>``)."""
        res = self.vocabs.tgt.reserved
        ids = {self.specials.pad, self.specials.bos, self.mask_id}
        ids |= {res[t] for t in ("[PAD]", "[CLS]", "[SEP]", "[STOP]") if t in res}
        return sorted(ids)

    @torch.no_grad()
    def search(self, batch: dict, settings, specials) -> list[list[int]]:
        """Greedy [MASK]-shift decoding (section 2.1) of a batch of sentences of any lengths:
        at step ``t`` every unfinished sentence is one row ``[lang] [CLS] x [SEP] y_<t [MASK]
        [SEP]`` + regions + [END]; the argmax at [MASK] becomes ``y_t``. A sentence stops at
        ``[STOP]`` (``<eos>``) or its length bound (:func:`~mmt_repro.models.base.length_limits`:
        ``max_len``, BertGen 150) and leaves the batch. Outputs do not depend on the batch: a
        row sees only its own sentence (key padding mask)."""
        n = batch["ids"].size(0)
        src = batch.get("src")
        srcs = [None] * n if src is None else [s[: int(k)].tolist() for s, k in zip(src, batch["src_len"])]
        langs = batch.get("tgt_lang") or [None] * n
        lang = [self.lang_id(x) for x in langs]
        imgs = self.images(batch)
        obj = n_reg = None
        if imgs is not None:
            obj = self.regions(imgs[0], imgs[2])
            n_reg = imgs[1].sum(1).tolist()
        limits = length_limits(batch, settings.max_len, settings.max_len_a, settings.max_len_b)
        # the longest text that still leaves the regions' and [END]'s positions
        room = self.config.max_positions - 2
        fixed = []
        for b in range(n):
            s = srcs[b]
            if s is not None and len(s) + 5 + limits[b] > room:
                s = s[: max(0, room - 5 - limits[b])]
            fixed.append(s)
        out: list[list[int]] = [[] for _ in range(n)]
        active = list(range(n))
        forbid = torch.tensor(self.never_emitted(), device=batch["ids"].device)
        while active:
            texts = [text_ids(lang[b], self.cls_id, self.sep_id, self.mask_id, fixed[b], out[b]) for b in active]
            img_of = [i if imgs is not None else -1 for i in range(len(active))]
            sub = None
            if obj is not None:
                sub = obj[torch.tensor(active, device=obj.device)]
            regs = [n_reg[b] for b in active] if n_reg is not None else [0] * len(active)
            lay = layout(texts, [len(t) - 2 for t in texts], img_of, regs, sub.size(1) if sub is not None else 1,
                         specials.pad)
            lay = lay.to(batch["ids"].device)
            logits = self.predict(self.hidden(lay, sub)).float()
            logits[:, forbid] = float("-inf")
            tok = logits.argmax(-1).tolist()
            still = []
            for b, y in zip(active, tok):
                if y == specials.eos:
                    continue
                out[b].append(y)
                if len(out[b]) < limits[b]:
                    still.append(b)
            active = still
        return out


def parameter_count(model: BertGen, with_word_embeddings: bool = False) -> int:
    """Parameters (BertGen: "~89.3M parameters excluding the word embeddings")."""
    n = sum(p.numel() for p in model.parameters())
    return n if with_word_embeddings else n - model.word_embeddings.weight.numel()

