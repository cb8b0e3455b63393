"""The model contract: what every paper's model gives the shared trainer and decoder.

Build
    ``build_model(name, config, vocabs, resources)`` (:mod:`mmt_repro.models.registry`) calls
    ``cls(config, vocabs, resources)``:

    - ``config``: the model's dataclass config (``config/papers/<paper>.yaml``,
      ``systems.<system>.model_config``, checked key by key);
    - ``vocabs``: :class:`Vocabs`, the sizes and special-token ids of the source (None when the
      task has no source text, e.g. captioning) and target vocabularies, and the ids of their
      reserved tokens by name (``VocabSpec.reserved``: BERT-style ``[SEP]``, ``[MASK]``,
      ``[TO_DE]``; empty for ordinary vocabularies);
    - ``resources``: ``{name: Path}``, the pretrained vectors or weights the system declares
      (``systems.<system>.resources``; DAG inputs of the training job; a path may name the
      run's ``{paper}``, ``{dataset}``, ``{pair}``, ``{src}``, ``{tgt}``, e.g. a vocabulary-sized
      table the workflow builds). ``None`` when a checkpoint is rebuilt for decoding (the
      weights then come from the checkpoint); a dict, possibly empty, in training.

Train
    ``forward(batch) -> {"loss": scalar tensor to minimise, "n_tokens": int tensor, ...}``. The
    trainer logs ``loss`` averaged over ``n_tokens`` and every other scalar the model returns
    (e.g. ``nll``, ``margin``, ``agreement``) in the log and the training curve.

Data
    ``visual`` (class attribute): ``none | grid | regions | video``. A model that reads features
    gets ``batch["img"] (batch, L, D)`` and ``batch["img_mask"] (batch, L)`` (True = a real
    region or segment; padded slots are False); from a region store (detector boxes beside the
    features) also ``batch["img_geometry"] (batch, L, 6)``: each box as ``x1, y1, x2, y2, w, h``
    divided by the image's width or height (zeros in padded slots). ``visual_optional`` (class
    attribute, default False): the model also runs without its visual input (no ``img``), e.g.
    BertGen's text-only MT tasks; decoding then accepts a run without features.

    When the data knows its language pair (the rules pass ``{pair}``; ``im-<lang>`` is
    captioning), batches carry ``src_lang`` and ``tgt_lang``: lists of language codes, one per
    example (``src_lang`` None without source text); a multilingual model picks its output
    language from ``tgt_lang``. Per-example extras are lists in the batch under their own names;
    word alignments arrive as tensors (``align_fwd``, ``align_bwd``: :mod:`mmt_repro.datasets.alignments`).

    ``training_examples`` (class attribute): ``pairs`` (the default: the training data is the
    split's sentence pairs) or ``unrolled`` (BertGen: every target unrolled into one example per
    token and the tasks mixed per step; :mod:`mmt_repro.datasets.bertgen` lays out its batches).
    The data layer builds that view (:func:`mmt_repro.datasets.view.training_view`); the model
    sees tensors only. Extra training tasks (``systems.<system>.tasks``: other datasets and
    pairs, e.g. captioning and MT corpora) go only to models with unrolled examples. A task with
    ``val: true`` is also decoded after every
    epoch on its validation split (curve column ``val_bleu_<task>``).

Decode (``decoding``, class attribute)
    - ``"step"``: encoder-decoder step search, greedy and batched beam
      (:mod:`mmt_repro.decode.search`) through ``encode(batch)``, ``init_state(enc)`` and
      ``step(enc, state, prev) -> (log_probs (batch, vocab), state, info)``;
    - ``"nearest"``: continuous outputs; ``step`` returns similarities of the predicted
      embedding to every target embedding (:func:`nearest_neighbour_scores`) and decoding is
      greedy (the nearest neighbour at each step);
    - ``"custom"``: the model decodes itself with ``search(batch, settings, specials)`` returning
      one list of token ids per sentence (BertGen's [MASK]-shift decoding); it gives a given
      translation a probability (forced scoring, :mod:`mmt_repro.decode.forced`) through a function of
      its own (``target_nll(model, batch)``, :func:`mmt_repro.decode.forced.custom_scorer`).

    Every kind bounds a hypothesis by :func:`length_limits` (``max_len``, ``max_len_a``,
    ``max_len_b`` of the decode settings), the same bound the shared search applies.

Directions (``directions``, class attribute; default ``("forward",)``)
    A model that holds a source-to-target *and* a target-to-source model in one checkpoint
    (Yang et al. 2020's jointly trained forward and backward models) lists
    ``("forward", "backward")``. ``set_direction("backward")`` before decoding makes
    ``encode``/``init_state``/``step``/``search`` translate target-language input into the
    source language: the batch's ``src`` then holds ids of the *target* vocabulary, and
    ``model.specials`` becomes the source vocabulary's (the one it now emits). Training always
    runs ``forward(batch)`` on the pair as given; the model trains both directions there. In the
    settings, a system with ``reverse_of: <system>`` decodes that system's checkpoint of the
    reversed pair with ``direction: backward`` (:mod:`mmt_repro.settings`).

Special token ids (``pad``, ``bos``, ``eos``, ``unk`` and optionally ``mask``) come from the
target vocabulary (``model.specials``), never from constants.

One model for many tables: a system with ``train_on: {dataset, pair}`` is trained once, on that
dataset and pair (its validation set picks the best checkpoint), and every table listing the
system decodes with that one checkpoint and its vocabularies (BertGen's multi-task model on
every task, zero-shot pairs included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn as nn

VISUAL_KINDS = ("none", "grid", "regions", "video")
DECODING_KINDS = ("step", "nearest", "custom")
DIRECTIONS = ("forward", "backward")


@dataclass(frozen=True)
class Specials:
    """Ids of the special tokens of a vocabulary."""

    pad: int = 0
    bos: int = 1
    eos: int = 2
    unk: int = 3
    mask: int | None = None

    @classmethod
    def of(cls, vocab) -> Specials:
        """The specials of a :class:`~mmt_repro.text.vocab.Vocab` (or any object with the ids)."""
        return cls(pad=vocab.pad_id, bos=vocab.bos_id, eos=vocab.eos_id, unk=vocab.unk_id,
                   mask=getattr(vocab, "mask_id", None))


@dataclass(frozen=True)
class VocabSpec:
    """What a model needs to know of one vocabulary: its size, the special ids and the ids of
    its reserved tokens by name (``{"[SEP]": 106, "[TO_DE]": 21, ...}``; BERT-style bracketed
    names, :data:`mmt_repro.text.vocab.RESERVED`; empty for ordinary vocabularies)."""

    size: int
    specials: Specials = Specials()
    reserved: dict = field(default_factory=dict, hash=False, compare=True)

    @classmethod
    def of(cls, vocab) -> VocabSpec:
        reserved = vocab.reserved() if hasattr(vocab, "reserved") else {}
        return cls(size=len(vocab), specials=Specials.of(vocab), reserved=dict(reserved))


@dataclass(frozen=True)
class Vocabs:
    """Source (None for tasks without source text) and target vocabularies of a model."""

    src: VocabSpec | None
    tgt: VocabSpec

    @classmethod
    def of(cls, src_vocab, tgt_vocab) -> Vocabs:
        return cls(src=None if src_vocab is None else VocabSpec.of(src_vocab), tgt=VocabSpec.of(tgt_vocab))

    @classmethod
    def sizes(cls, src_size: int | None, tgt_size: int) -> Vocabs:
        """Vocabularies of the given sizes with the default specials (tests, benchmarks)."""
        return cls(src=None if src_size is None else VocabSpec(src_size), tgt=VocabSpec(tgt_size))

    def to_dict(self) -> dict:
        def one(v):
            if v is None:
                return None
            out = {"size": v.size, "specials": vars(v.specials).copy()}
            if v.reserved:
                out["reserved"] = dict(v.reserved)
            return out

        return {"src": one(self.src), "tgt": one(self.tgt)}

    @classmethod
    def from_dict(cls, data: dict) -> Vocabs:
        def one(v):
            return None if v is None else VocabSpec(v["size"], Specials(**v["specials"]), dict(v.get("reserved") or {}))

        return cls(src=one(data["src"]), tgt=one(data["tgt"]))


class MMTModel(nn.Module):
    """Base class of every model; see the module docstring for the contract."""

    registry_name: str = ""  # set by @register
    visual: str = "none"
    visual_optional: bool = False  # also runs without its visual input (BertGen's MT tasks)
    decoding: str = "step"
    training_examples: str = "pairs"  # pairs | unrolled (BertGen's view: mmt_repro.datasets.bertgen)
    directions: tuple[str, ...] = ("forward",)  # + "backward": a target-to-source model in the same checkpoint

    def __init__(self, config, vocabs: Vocabs, resources: dict[str, Path] | None = None):
        super().__init__()
        if self.visual not in VISUAL_KINDS:
            raise ValueError(f"{type(self).__name__}.visual = {self.visual!r}; valid: {', '.join(VISUAL_KINDS)}")
        if self.decoding not in DECODING_KINDS:
            raise ValueError(f"{type(self).__name__}.decoding = {self.decoding!r}; valid: {', '.join(DECODING_KINDS)}")
        self.config = config
        self.vocabs = vocabs
        self.specials = vocabs.tgt.specials
        self.resources = dict(resources or {})
        self.direction = "forward"

    def set_direction(self, direction: str) -> MMTModel:
        """Decode ``forward`` (source -> target, the default) or ``backward`` (target -> source,
        for models that list it in ``directions``); ``specials`` follow the emitted language."""
        if direction not in self.directions:
            raise ValueError(f"{self.registry_name or type(self).__name__} decodes {', '.join(self.directions)}; "
                             f"direction {direction!r} asked (reverse_of a model without a backward model?)")
        if direction == "backward" and self.vocabs.src is None:
            raise ValueError(f"{self.registry_name}: no source vocabulary to decode backward into")
        self.direction = direction
        self.specials = (self.vocabs.tgt if direction == "forward" else self.vocabs.src).specials
        return self

    @property
    def uses_visual(self) -> bool:
        return self.visual != "none"

    @property
    def visual_dim(self) -> int | None:
        """Feature size the model expects on the last axis of ``img`` (None: any / none)."""
        return getattr(self.config, "img_dim", None) if self.uses_visual else None

    def ready_to_train(self) -> None:
        """Refuse to train when something only training needs is missing (default: nothing is)."""

    def search(self, batch: dict, settings, specials: Specials) -> list[list[int]]:
        raise NotImplementedError(f"{self.registry_name} declares decoding='custom' but has no search()")


def nearest_neighbour_scores(pred: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of each predicted embedding ``pred (batch, dim)`` to every row of
    ``table (vocab, dim)``, as one matrix product: ``(batch, vocab)``. Greedy decoding of these
    scores picks the nearest neighbour (Hirasawa et al. 2019, eq. 3)."""
    pred = torch.nn.functional.normalize(pred, dim=-1)
    table = torch.nn.functional.normalize(table, dim=-1)
    return pred @ table.t()


def length_limits(batch: dict, max_len: int, max_len_a: float = 0.0, max_len_b: int = 0) -> list[int]:
    """Most target tokens per example: ``min(max_len, ceil(max_len_a * src_len) + max_len_b)``
    with a source, else ``max_len`` (:mod:`mmt_repro.decode.search`); at least 1."""
    n = batch["ids"].size(0)
    if max_len_a <= 0 or batch.get("src_len") is None:
        return [max_len] * n
    return [max(1, min(max_len, math.ceil(max_len_a * int(s)) + max_len_b)) for s in batch["src_len"].tolist()]
