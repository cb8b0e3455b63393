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


def test_mlp_attention_gradients_recomputed_in_backward_are_exact():
    # The scores' backward recomputes tanh(W k + U q) instead of keeping it: gradcheck against
    # finite differences for the query, the keys and every weight.
    torch.manual_seed(0)
    att = MLPAttention(5, 6, 4).double()
    q = torch.randn(3, 5, dtype=torch.double, requires_grad=True)
    k = torch.randn(3, 7, 6, dtype=torch.double, requires_grad=True)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[0, 4:] = False
    assert torch.autograd.gradcheck(lambda q, k: att(q, k, mask), (q, k))
    for p in att.parameters():
        p.requires_grad_(False)
    for name, p in att.named_parameters():
        p.requires_grad_(True)
        assert torch.autograd.gradcheck(lambda w: att(q, k, mask)[0].sum(), (p,)), name
        p.requires_grad_(False)


def test_linear_cross_entropy_equals_the_plain_loss_and_gradients():
    import torch.nn.functional as F

    from mmt_repro.models.layers import linear_cross_entropy

    torch.manual_seed(1)
    n, e, v, pad = 11, 4, 9, 0
    target = torch.randint(1, v, (n,))
    target[[2, 7]] = pad  # padding rows count for nothing
    for bias in (True, False):
        for chunk in (1 << 23, 2 * v):  # one chunk; chunks of 2 rows (the last one short)
            h1 = torch.randn(n, e, dtype=torch.double, requires_grad=True)
            w1 = torch.randn(v, e, dtype=torch.double, requires_grad=True)
            b1 = torch.randn(v, dtype=torch.double, requires_grad=True) if bias else None
            ref = F.cross_entropy(F.linear(h1, w1, b1), target, ignore_index=pad, reduction="sum")
            (3.0 * ref).backward()
            h2, w2 = h1.detach().clone().requires_grad_(), w1.detach().clone().requires_grad_()
            b2 = b1.detach().clone().requires_grad_() if bias else None
            got = linear_cross_entropy(h2, w2, b2, target, ignore_index=pad, max_chunk_elements=chunk)
            (3.0 * got).backward()  # the incoming gradient scales the stored ones
            assert torch.allclose(got, ref, atol=1e-10)
            assert torch.allclose(h2.grad, h1.grad, atol=1e-10) and torch.allclose(w2.grad, w1.grad, atol=1e-10)
            assert torch.all(h2.grad[[2, 7]] == 0)
            if bias:
                assert torch.allclose(b2.grad, b1.grad, atol=1e-10)
    with torch.no_grad():
        assert torch.allclose(linear_cross_entropy(h1, w1, b1, target, pad), ref.detach())
