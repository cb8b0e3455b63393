"""Forced decoding: the negative log-likelihood a trained model gives a given translation.

Teacher forcing through the model's own decoding interface (``encode``, ``init_state``,
``step``: :mod:`mmt_repro.decode.search`), the path ``translate`` decodes with: at step ``t``
the model reads the given token ``y_{t-1}`` (``<bos>`` first) and its log-probability of
``y_t`` (``<eos>`` last) is summed. Padding rows and steps count nothing, so a batch of
sentences of different lengths gives each sentence what it would get alone. Summed over a
batch's tokens and divided by their number this is the model's training cross-entropy on
the same batch (without label smoothing: the Transformers' ``nll``), checked by
``tests/unit/test_forced_decoding.py``.

A model that decodes itself (``decoding = "custom"``) scores through a function of its own,
``target_nll(model, batch) -> (nll (batch,), n_tokens (batch,))`` under the factorisation it
is trained with (:func:`custom_scorer`): BertGen's is eq. 1 of Mitzalis et al. (2021), one
unrolled row per target position (:func:`mmt_repro.models.bertgen_scoring.target_nll`, a module
beside the model's so that its trainings and decodings keep their code version), checked
against its greedy decoder and its training loss by ``tests/unit/test_forced_bertgen.py``.

Only a model whose output is a probability distribution over the target vocabulary can score a
translation: :func:`scoring_capable` says which cannot and why (the embedding-prediction models
of Hirasawa et al. output a word embedding and decode by nearest neighbour).
"""

from __future__ import annotations

import numpy as np
import torch

from ..datasets.batching import move


def custom_scorer(model):
    """The forced-scoring function of a model that decodes itself, or None."""
    if model.registry_name == "bertgen.bertgen":
        from ..models.bertgen_scoring import target_nll

        return target_nll
    return None


def scoring_capable(model) -> tuple[bool, str]:
    """Whether ``model`` gives translations a probability (and, if not, why)."""
    if model.decoding == "nearest":
        return False, (f"{model.registry_name} outputs a word embedding and decodes by nearest neighbour: "
                       "it gives no probability of a translation")
    if model.decoding == "custom" and custom_scorer(model) is None:
        return False, (f"{model.registry_name} decodes itself ({model.decoding}) and has no target_nll: "
                       "it gives no probability of a given translation")
    return True, ""


def batch_nll(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Per sentence of ``batch`` (on the model's device, with ``tgt_in``/``tgt_out``
    ``(batch, tgt_len)``): the summed NLL of ``tgt_out`` and its number of tokens (``<eos>``
    included), both ``(batch,)``. A model that decodes itself: its :func:`custom_scorer`."""
    ok, why = scoring_capable(model)
    if not ok:
        raise ValueError(why)
    if model.decoding == "custom":
        return custom_scorer(model)(model, batch)
    tgt_in, tgt_out = batch["tgt_in"], batch["tgt_out"]
    pad = model.specials.pad
    keep = tgt_out != pad
    enc = model.encode(batch)
    state = model.init_state(enc)
    total = torch.zeros(tgt_out.size(0), dtype=torch.float64, device=tgt_out.device)
    for t in range(tgt_in.size(1)):
        log_probs, state, _ = model.step(enc, state, tgt_in[:, t])
        gold = log_probs.gather(1, tgt_out[:, t : t + 1]).squeeze(1).double()
        total -= torch.where(keep[:, t], gold, torch.zeros_like(gold))
    return total, keep.sum(1)


def forced_nll(model, data, device, batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Summed NLL and token count of every example of ``data`` (a
    :class:`~mmt_repro.datasets.batching.ParallelData` with targets), in data order."""
    if data.tgt is None:
        raise ValueError("forced decoding needs the translations to score (ParallelData with tgt_path)")
    model.eval()
    nll = np.zeros(data.n_examples, dtype=np.float64)
    n_tokens = np.zeros(data.n_examples, dtype=np.int64)
    with torch.inference_mode():
        for batch in data.eval_batches(batch_size, by_length=True):
            ids = batch["ids"].numpy()
            total, count = batch_nll(model, move(batch, device))
            nll[ids] = total.cpu().numpy()
            n_tokens[ids] = count.cpu().numpy()
    return nll, n_tokens


__all__ = ["batch_nll", "custom_scorer", "forced_nll", "scoring_capable"]
