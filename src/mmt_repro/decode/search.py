"""The one decoder every model shares: greedy search and batched beam search.

A model with ``decoding = "step"`` or ``"nearest"`` (:mod:`mmt_repro.models.base`) plugs in
through three methods:

- ``encode(batch) -> enc``: a dict of tensors whose first dimension is the batch (or None);
- ``init_state(enc) -> state``: a tensor or dict of tensors, batch first;
- ``step(enc, state, prev_tokens (batch,)) -> (log_probs (batch, vocab), state, info)``, where
  ``info`` is a dict of per-step tensors (attention weights, gates) that greedy search can dump.

The batch size is the number of example ids (``batch["ids"]``), so tasks without source text
(captioning) decode the same way. Special ids come from the model's target vocabulary
(``model.specials``).

Beam search keeps ``beam_size`` hypotheses per sentence in one flat batch of
``batch * beam_size`` rows, finalises a hypothesis when it emits ``<eos>`` among the top
``beam_size`` candidates, and a sentence is done when it has ``beam_size`` finished
hypotheses (Nematus, which Calixto et al. used) or reaches its length bound; a done sentence
leaves the flat batch, so later steps run only the rows still searching. It ranks finished
hypotheses by ``score / length ** alpha`` (``alpha = 0``: raw log-probability; ``1``:
per-token average), where length counts ``<eos>``.

Hypothesis length is bounded per sentence (:func:`~mmt_repro.models.base.length_limits`, which
models that decode themselves apply too): ``min(max_len, max_len_a * source_length +
max_len_b)`` tokens (``max_len_a = 0``: ``max_len`` only; examples without source text:
``max_len``). A hypothesis that reaches its bound is cut there (counted by the decode loop), so
a looping model cannot run on to ``max_len`` on a short sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..models.base import length_limits


def tree_map(fn: Callable[[torch.Tensor], torch.Tensor], obj: Any) -> Any:
    """Apply ``fn`` to every tensor in nested dicts/lists/tuples; None and scalars pass."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: tree_map(fn, v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(tree_map(fn, v) for v in obj)
    return obj


def _forbid_specials(log_probs: torch.Tensor, pad_id: int, bos_id: int) -> torch.Tensor:
    """Padding and <bos> are never emitted."""
    log_probs = log_probs.clone()
    log_probs[:, pad_id] = float("-inf")
    log_probs[:, bos_id] = float("-inf")
    return log_probs


def _strip(tokens: list[int], eos_id: int) -> list[int]:
    return tokens[: tokens.index(eos_id)] if eos_id in tokens else tokens


def _specials(model, bos_id, eos_id, pad_id):
    sp = getattr(model, "specials", None)
    if sp is None:
        return (1 if bos_id is None else bos_id), (2 if eos_id is None else eos_id), (0 if pad_id is None else pad_id)
    return (sp.bos if bos_id is None else bos_id), (sp.eos if eos_id is None else eos_id), (sp.pad if pad_id is None else pad_id)


@torch.no_grad()
def greedy(
    model, batch: dict, max_len: int, bos_id: int | None = None, eos_id: int | None = None, collect_info: bool = False,
    pad_id: int | None = None, max_len_a: float = 0.0, max_len_b: int = 0,
):
    """Greedy decoding. Returns ``(hyps, infos)``: ``hyps`` a list of token-id lists without
    ``<eos>``; ``infos`` (when ``collect_info``) a list per sentence of ``{name: tensor (steps, ...)}``
    covering the emitted tokens and the ``<eos>`` step. Special ids default to ``model.specials``.
    ``max_len_a``, ``max_len_b``: the per-sentence bound of :func:`~mmt_repro.models.base.length_limits`."""
    bos_id, eos_id, pad_id = _specials(model, bos_id, eos_id, pad_id)
    enc = model.encode(batch)
    state = model.init_state(enc)
    bsz = batch["ids"].size(0)
    device = batch["ids"].device
    limits = torch.tensor(length_limits(batch, max_len, max_len_a, max_len_b), device=device)
    prev = torch.full((bsz,), bos_id, dtype=torch.long, device=device)
    finished = torch.zeros(bsz, dtype=torch.bool, device=device)
    out, steps_info = [], []
    for t in range(int(limits.max())):
        log_probs, state, info = model.step(enc, state, prev)
        tok = _forbid_specials(log_probs, pad_id, bos_id).argmax(-1).masked_fill(finished, eos_id)
        out.append(tok)
        if collect_info:
            steps_info.append({k: v.detach().cpu() for k, v in info.items()})
        finished |= (tok == eos_id) | (limits <= t + 1)  # <eos>, or cut at the sentence's bound
        prev = tok
        if bool(finished.all()):
            break
    tokens = torch.stack(out, dim=1).tolist()
    hyps = [_strip(t, eos_id) for t in tokens]
    infos = None
    if collect_info:
        infos = []
        for b, hyp in enumerate(hyps):
            n = min(len(hyp) + 1, len(steps_info))
            infos.append({k: torch.stack([steps_info[t][k][b] for t in range(n)]) for k in steps_info[0]})
    return hyps, infos


@torch.no_grad()
def beam_search(
    model,
    batch: dict,
    beam_size: int,
    max_len: int,
    bos_id: int | None = None,
    eos_id: int | None = None,
    alpha: float = 1.0,
    pad_id: int | None = None,
    max_len_a: float = 0.0,
    max_len_b: int = 0,
) -> list[list[int]]:
    """Batched beam search; returns the best hypothesis per sentence (token ids, no ``<eos>``).
    ``max_len_a``, ``max_len_b``: the per-sentence bound of :func:`~mmt_repro.models.base.length_limits`."""
    if beam_size < 1:
        raise ValueError("beam_size must be >= 1")
    bos_id, eos_id, pad_id = _specials(model, bos_id, eos_id, pad_id)
    k = beam_size
    enc = model.encode(batch)
    state = model.init_state(enc)
    bsz = batch["ids"].size(0)
    device = batch["ids"].device
    enc = tree_map(lambda x: x.repeat_interleave(k, dim=0), enc)
    state = tree_map(lambda x: x.repeat_interleave(k, dim=0), state)
    scores = torch.full((bsz, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # only the first beam is alive at the start
    prev = torch.full((bsz * k,), bos_id, dtype=torch.long, device=device)
    history = torch.empty((bsz * k, 0), dtype=torch.long, device=device)
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(bsz)]
    limits = length_limits(batch, max_len, max_len_a, max_len_b)
    # Sentences still searching, by their index in the batch. A sentence that is done leaves the
    # flat batch (its k rows of enc, state and history), so the model steps only live rows.
    alive = list(range(bsz))
    beam_rows = torch.arange(k, device=device)

    for t in range(max(limits)):
        n = len(alive)
        log_probs, state, _ = model.step(enc, state, prev)
        log_probs = _forbid_specials(log_probs, pad_id, bos_id)
        vocab = log_probs.size(-1)
        cand = (scores.view(-1, 1) + log_probs).view(n, k * vocab)
        top_scores, top_idx = cand.topk(min(2 * k, k * vocab), dim=1)
        beam_idx = torch.div(top_idx, vocab, rounding_mode="floor")
        tokens = top_idx % vocab
        is_eos = tokens == eos_id
        length = t + 1
        # Finalise <eos> candidates ranked within the top k.
        for i, r in (is_eos[:, :k] & torch.isfinite(top_scores[:, :k])).nonzero().tolist():
            src_row = i * k + int(beam_idx[i, r])
            finished[alive[i]].append((float(top_scores[i, r]) / (length**alpha), history[src_row].tolist()))
        done = [len(finished[b]) >= k for b in alive]
        # Continue with the best k non-<eos> candidates.
        masked = top_scores.masked_fill(is_eos, float("-inf"))
        keep_scores, keep_pos = masked.topk(k, dim=1)
        keep_beam = beam_idx.gather(1, keep_pos)
        keep_tok = tokens.gather(1, keep_pos)
        rows = (torch.arange(n, device=device).unsqueeze(1) * k + keep_beam).view(-1)
        state = tree_map(lambda x: x.index_select(0, rows), state)
        history = torch.cat([history.index_select(0, rows), keep_tok.view(-1, 1)], dim=1)
        scores = keep_scores
        prev = keep_tok.view(-1)
        for i, b in enumerate(alive):
            if not done[i] and t + 1 >= limits[b]:  # the sentence's bound: no longer hypotheses
                if not finished[b]:  # none ended with <eos>: take the alive beams as they are
                    _finish_alive(finished[b], scores[i], history[i * k : (i + 1) * k], alpha)
                done[i] = True
        if all(done):
            break
        if any(done):  # drop finished sentences from the flat batch
            keep = [i for i in range(n) if not done[i]]
            alive = [alive[i] for i in keep]
            keep_t = torch.tensor(keep, dtype=torch.long, device=device)
            flat = (keep_t.unsqueeze(1) * k + beam_rows).view(-1)
            enc = tree_map(lambda x: x.index_select(0, flat), enc)
            state = tree_map(lambda x: x.index_select(0, flat), state)
            history, prev = history.index_select(0, flat), prev.index_select(0, flat)
            scores = scores.index_select(0, keep_t)

    best: list[list[int]] = []
    for b in range(bsz):
        best.append(max(finished[b], key=lambda x: x[0])[1] if finished[b] else [])
    return best


def _finish_alive(finished: list, scores: torch.Tensor, history: torch.Tensor, alpha: float) -> None:
    """Add a sentence's alive beams (``scores (k,)``, ``history (k, t)``) to its finished list."""
    for j in range(scores.size(0)):
        s = float(scores[j])
        if s != float("-inf"):
            hyp = history[j].tolist()
            finished.append((s / (max(len(hyp), 1) ** alpha), hyp))
