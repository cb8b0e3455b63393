"""Attention and the conditional GRU against hand computations."""

import math

import torch

from mmt_repro.models.layers import MLPAttention, masked_mean


def test_mlp_attention_matches_hand_computation():
    att = MLPAttention(query_dim=1, key_dim=1, att_dim=1)
    with torch.no_grad():
        att.query_proj.weight.fill_(1.0)
        att.key_proj.weight.fill_(1.0)
        att.key_proj.bias.fill_(0.0)
        att.v.weight.fill_(1.0)
    keys = torch.tensor([[[0.0], [1.0], [2.0]]])
    query = torch.tensor([[0.5]])
    context, weights = att(query, keys)
    energies = [math.tanh(0.5 + k) for k in (0.0, 1.0, 2.0)]
    z = sum(math.exp(e) for e in energies)
    expected = [math.exp(e) / z for e in energies]
    assert torch.allclose(weights[0], torch.tensor(expected), atol=1e-6)
    assert abs(float(weights.sum()) - 1.0) < 1e-6
    assert abs(float(context[0, 0]) - sum(w * k for w, k in zip(expected, (0.0, 1.0, 2.0)))) < 1e-6


def test_mlp_attention_ignores_masked_keys():
    torch.manual_seed(0)
    att = MLPAttention(4, 3, 5)
    keys = torch.randn(2, 4, 3)
    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])
    _, weights = att(torch.randn(2, 4), keys, mask)
    assert torch.all(weights[0, 2:] == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(2), atol=1e-6)
    # Changing a masked key changes nothing.
    keys2 = keys.clone()
    keys2[0, 3] = 100.0
    query = torch.zeros(2, 4)
    ctx1, weights1 = att(query, keys, mask)
    ctx2, weights2 = att(query, keys2, mask)
    assert torch.allclose(weights1[0], weights2[0])
    assert torch.allclose(ctx1[0], ctx2[0])


def test_masked_mean():
    x = torch.tensor([[[1.0], [3.0], [100.0]]])
    assert float(masked_mean(x, torch.tensor([[True, True, False]]))) == 2.0
