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
        energies = self.v(torch.tanh(self.query_proj(query).unsqueeze(1) + projected_keys)).squeeze(-1)
        if mask is not None:
            energies = energies.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(energies, dim=-1)
        context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)
        return context, weights


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
