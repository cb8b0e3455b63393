"""The one decode loop: every batch of a data set through the model's decoding kind.

Training's validation and the ``translate`` rule both call :func:`decode_data`; what differs
between models is only their ``decoding`` kind (:mod:`mmt_repro.models.base`):

- ``step``: greedy (``beam_size`` 1) or batched beam search (:mod:`mmt_repro.decode.search`);
- ``nearest``: greedy over the model's similarity scores (beam search over similarities is
  not a search over probabilities, so a beam above 1 is refused);
- ``custom``: the model's own ``search(batch, settings, specials)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..datasets.batching import move
from ..models.base import length_limits
from ..settings import DecodeSettings
from ..text.recipes import merge_subwords
from .search import beam_search, greedy


@dataclass
class Decoded:
    hyps: list[list[int]] = field(default_factory=list)  # token ids per example, without <eos>
    infos: list[dict] | None = None  # per-step attention/gates (collect_info, greedy only)
    cut: int = 0  # hypotheses cut at their length bound (max_len, or relative to the source) without <eos>


def decode_batch(model, batch: dict, settings: DecodeSettings, collect_info: bool = False):
    """Token ids (and per-step infos when asked) of one batch already on the model's device."""
    if model.decoding == "custom":
        if collect_info:
            raise ValueError(f"{model.registry_name} decodes itself: no per-step information to collect")
        return model.search(batch, settings, model.specials), None
    if model.decoding == "nearest" and settings.beam_size > 1:
        raise ValueError(
            f"{model.registry_name} predicts embeddings and decodes by nearest neighbour (greedy); "
            f"beam_size={settings.beam_size}: set decode.beam_size (or the system's decode.beam_size) to 1")
    bounds = {"max_len_a": settings.max_len_a, "max_len_b": settings.max_len_b}
    if settings.beam_size <= 1 or collect_info:
        return greedy(model, batch, settings.max_len, collect_info=collect_info, **bounds)
    return beam_search(model, batch, settings.beam_size, settings.max_len, alpha=settings.alpha, **bounds), None


def decode_data(model, data, settings: DecodeSettings, device, collect_info: bool = False) -> Decoded:
    """Decode every example of ``data`` (a :class:`~mmt_repro.datasets.batching.ParallelData`); the
    batches hold sentences of similar source length, and the results come back in data order."""
    model.eval()
    n = data.n_examples
    hyps: list = [None] * n
    infos: list = [None] * n
    cut = 0
    with torch.inference_mode():
        for batch in data.eval_batches(settings.batch_size, by_length=True):
            ids, batch_infos = decode_batch(model, move(batch, device), settings, collect_info)
            limits = length_limits(batch, settings.max_len, settings.max_len_a, settings.max_len_b)
            cut += sum(len(h) >= lim for h, lim in zip(ids, limits))
            for j, i in enumerate(batch["ids"].tolist()):
                hyps[i] = ids[j]
                if collect_info:
                    infos[i] = batch_infos[j]
    return Decoded(hyps=hyps, infos=infos if collect_info else None, cut=cut)


def to_text(hyps: list[list[int]], tgt_vocab, subword: str = "none") -> list[str]:
    """Token ids -> text in the scoring form: subwords (``bpe``, ``wordpiece``) merged back."""
    return merge_subwords([" ".join(tgt_vocab.decode(h)) for h in hyps], subword)
