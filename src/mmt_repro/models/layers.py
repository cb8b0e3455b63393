"""Layers shared by several papers' models.

- :class:`MLPAttention`: Bahdanau-style additive attention, ``e_i = v^T tanh(U q + W k_i)``,
  ``alpha = softmax(e)`` over unmasked keys, context ``sum_i alpha_i k_i``.
- :func:`variational_mask`: one dropout mask per sequence reused at every time step
  (Gal & Ghahramani 2016).
- :func:`masked_mean`: mean of annotation vectors over unmasked positions.
"""

from __future__ import annotations

import torch
import torch.nn as nn


class _AdditiveScores(torch.autograd.Function):
    """``e = tanh(P + q) v`` for ``P (batch, n, A)``, ``q (batch, A)``, ``v (A,)`` -> ``(batch, n)``,
    recomputing ``tanh(P + q)`` in the backward pass instead of keeping it.

    Plain autograd keeps one ``(batch, n, A)`` tensor per decoder step for the backward pass
    (with 64 sentences of 50 source tokens and A = 512, 6.5 MB a step, 340 MB for 52 steps);
    this keeps only ``q`` (``P`` is the same tensor at every step), at the price of one more
    add and tanh per step in the backward pass."""

    @staticmethod
    def forward(ctx, proj_keys: torch.Tensor, q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(proj_keys, q, v)
        return torch.tanh(proj_keys + q.unsqueeze(1)) @ v

    @staticmethod
    def backward(ctx, grad_e: torch.Tensor):
        proj_keys, q, v = ctx.saved_tensors
        h = torch.tanh(proj_keys + q.unsqueeze(1))
        grad_v = torch.einsum("bna,bn->a", h, grad_e) if ctx.needs_input_grad[2] else None
        # d e / d (P + q) = v (1 - h^2), scaled by the incoming gradient
        grad_pre = h.square_().neg_().add_(1.0).mul_(v).mul_(grad_e.unsqueeze(-1))
        grad_q = grad_pre.sum(1) if ctx.needs_input_grad[1] else None
        return (grad_pre if ctx.needs_input_grad[0] else None), grad_q, grad_v


class MLPAttention(nn.Module):
    """Additive attention.

    Shapes: query ``(batch, query_dim)``, keys ``(batch, n_keys, key_dim)``, mask
    ``(batch, n_keys)`` (True = real position). Returns context ``(batch, key_dim)`` and weights
    ``(batch, n_keys)``. ``precompute(keys)`` gives ``W k_i`` once per sentence so that each
    decoder step costs only ``U q``.
    """

    def __init__(self, query_dim: int, key_dim: int, att_dim: int):
        super().__init__()
        self.query_proj = nn.Linear(query_dim, att_dim, bias=False)  # U_a
        self.key_proj = nn.Linear(key_dim, att_dim, bias=True)  # W_a (+ bias)
        self.v = nn.Linear(att_dim, 1, bias=False)  # v_a

    def precompute(self, keys: torch.Tensor) -> torch.Tensor:
        return self.key_proj(keys)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        projected_keys: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if projected_keys is None:
            projected_keys = self.precompute(keys)
        energies = _AdditiveScores.apply(projected_keys, self.query_proj(query), self.v.weight.squeeze(0))
        if mask is not None:
            energies = energies.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(energies, dim=-1)
        context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)
        return context, weights


class _LinearCrossEntropy(torch.autograd.Function):
    """Summed cross-entropy of ``hidden @ weight.T + bias`` against ``target``, in row chunks,
    with the gradients computed in the forward pass (see :func:`linear_cross_entropy`)."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, ignore_index: int, chunk_rows: int, compute_dtype: torch.dtype):
        need_h, need_w, need_b = ctx.needs_input_grad[:3]
        # the dtypes are explicit below (autocast would pick the same for the matrix products)
        with torch.autocast(hidden.device.type, enabled=False):
            grads = _linear_ce(hidden, weight, bias, target, ignore_index, chunk_rows, compute_dtype,
                               need_h, need_w, need_b)
        ctx.save_for_backward(*grads[1:])
        return grads[0]

    @staticmethod
    def backward(ctx, grad_out):
        return tuple(None if g is None else g * grad_out for g in ctx.saved_tensors) + (None, None, None, None)


def _linear_ce(hidden, weight, bias, target, ignore_index, chunk_rows, cdt, need_h, need_w, need_b):
    """``(loss, grad_hidden, grad_weight, grad_bias)``. Matrix products run in ``cdt`` (the
    autocast dtype, e.g. bf16, or the inputs' own); the log-sum-exp, the softmax, the loss and
    the weight and bias gradients are kept in float32 (at least), each gradient returned in its
    input's dtype. With float32 everywhere these are exactly the ops of the plain fp32 path."""
    acc = torch.promote_types(hidden.dtype, torch.float32)  # loss and softmax: never below fp32
    grads = need_h or need_w or need_b
    h_all, w, b = hidden.to(cdt), weight.to(cdt), None if bias is None else bias.to(cdt)
    grad_h = torch.empty_like(hidden) if need_h else None
    grad_w = torch.zeros_like(weight) if need_w else None
    grad_b = torch.zeros_like(bias) if need_b else None
    total = torch.zeros((), dtype=acc, device=hidden.device)
    for start in range(0, hidden.size(0), chunk_rows):
        h, y = h_all[start : start + chunk_rows], target[start : start + chunk_rows]
        logits = (h @ w.t() if b is None else torch.addmm(b, h, w.t())).to(acc)
        valid = y != ignore_index
        y = y.masked_fill(~valid, 0)
        lse = torch.logsumexp(logits, dim=-1)
        total += ((lse - logits.gather(1, y.unsqueeze(1)).squeeze(1)) * valid).sum()
        if not grads:
            continue
        g = logits.sub_(lse.unsqueeze(1)).exp_()  # softmax, in place: d loss / d logits = p - onehot(y)
        g[torch.arange(g.size(0), device=g.device), y] -= 1.0
        g.mul_(valid.unsqueeze(1).to(g.dtype))
        g_c = g.to(cdt)
        if need_h:
            grad_h[start : start + chunk_rows] = g_c @ w
        if need_w:
            if grad_w.dtype == cdt:
                grad_w.addmm_(g_c.t(), h)
            else:  # bf16 product, accumulated over the chunks in the weight's fp32
                grad_w += (g_c.t() @ h).to(grad_w.dtype)
        if need_b:
            grad_b += g.sum(0).to(grad_b.dtype)
    return total, grad_h, grad_w, grad_b


def _compute_dtype(hidden: torch.Tensor, weight: torch.Tensor) -> torch.dtype:
    """The dtype of the output layer's matrix products: autocast's (bf16 under
    ``torch.autocast``) when it is on for the tensors' device, else the inputs' common dtype."""
    kind = hidden.device.type
    try:
        if torch.is_autocast_enabled(kind):
            return torch.get_autocast_dtype(kind)
    except (TypeError, RuntimeError, AttributeError):  # torch < 2.4, or a device type autocast lacks
        pass
    return torch.promote_types(hidden.dtype, weight.dtype)


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, target: torch.Tensor,
                         ignore_index: int, max_chunk_elements: int = 1 << 23) -> torch.Tensor:
    """``F.cross_entropy(F.linear(hidden, weight, bias), target, ignore_index=..., reduction="sum")``
    for ``hidden (N, E)``, ``weight (V, E)``, ``target (N,)``, without the ``(N, V)`` logits.

    The output layer and softmax run over chunks of rows (at most ``max_chunk_elements`` logits
    at a time, 32 MB in float32), and each chunk's gradients (``(p - onehot(y)) W``,
    ``(p - onehot(y))^T h``) are taken while its logits are at hand, so nothing of size
    ``N x V`` is kept for the backward pass. Plain autograd keeps the logits, their log-softmax
    and, in the backward pass, two more tensors of that size: with 64 sentences of 52 tokens and
    a 7k vocabulary that is ~380 MB. The matrix products are the ones the plain backward pass
    does, so the cost is the same; under ``no_grad`` only the loss is computed.

    Mixed precision: under ``torch.autocast`` (bf16) the three matrix products run in bf16
    like any autocast linear layer, while the log-sum-exp, softmax and summed loss stay in
    float32 (the loss is float32) and the weight's gradient is accumulated in its own float32."""
    chunk_rows = max(1, max_chunk_elements // max(1, weight.size(0)))
    return _LinearCrossEntropy.apply(hidden, weight, bias, target, ignore_index, chunk_rows,
                                     _compute_dtype(hidden, weight))


def variational_mask(batch: int, dim: int, p: float, like: torch.Tensor, training: bool) -> torch.Tensor | None:
    """A ``(batch, dim)`` inverted-dropout mask to reuse at all time steps, or None when off."""
    if not training or p <= 0.0:
        return None
    keep = 1.0 - p
    return torch.bernoulli(torch.full((batch, dim), keep, dtype=like.dtype, device=like.device)) / keep


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over dim 1 of ``x (batch, len, dim)`` counting only ``mask (batch, len)`` positions."""
    m = mask.unsqueeze(-1).to(x.dtype)
    return (x * m).sum(1) / m.sum(1).clamp_min(1.0)


def init_calixto(module: nn.Module, std: float = 0.01) -> None:
    """Calixto et al. 2017, section 5: non-recurrent matrices and embeddings ~ N(0, std^2),
    recurrent matrices random orthogonal, biases zero."""
    for name, param in module.named_parameters():
        if name.endswith("bias") or "bias_" in name:
            nn.init.zeros_(param)
        elif "weight_hh" in name or name.endswith("recurrent.weight"):
            # GRU recurrent matrices are stacked (3*h, h): make each h x h block orthogonal.
            rows = param.shape[0] // param.shape[1] if param.shape[0] % param.shape[1] == 0 else 1
            with torch.no_grad():
                for block in param.data.chunk(rows, dim=0):
                    nn.init.orthogonal_(block)
        else:
            nn.init.normal_(param, mean=0.0, std=std)
