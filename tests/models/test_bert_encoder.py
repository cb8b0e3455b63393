"""mmt_repro.models.bert against Hugging Face's BERT classes, which it replaces in BertGen: the
same parameter names and shapes (M-BERT's and VL-BERT's keys load one to one), the same
initial weights from one seed (the same draws in the same order), the same outputs with SDPA
and with the eager attention, in training mode without dropout and with gradients; and a
BertGen job no longer imports ``transformers``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from mmt_repro.models.bert import Encoder, PredictionHeadTransform

modeling_bert = pytest.importorskip("transformers.models.bert.modeling_bert")
BertConfig = pytest.importorskip("transformers").BertConfig

H, LAYERS, HEADS, FFN = 32, 3, 4, 48


def hf_config(sdpa: bool, dropout: float = 0.0) -> "BertConfig":
    return BertConfig(vocab_size=50, hidden_size=H, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                      intermediate_size=FFN, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                      attn_implementation="sdpa" if sdpa else "eager")


def pair(sdpa: bool, seed: int = 3):
    torch.manual_seed(seed)
    hf = modeling_bert.BertEncoder(hf_config(sdpa))
    hf_head = modeling_bert.BertPredictionHeadTransform(hf_config(sdpa))
    torch.manual_seed(seed)
    ours = Encoder(H, LAYERS, HEADS, FFN, dropout=0.0, attention_dropout=0.0, sdpa=sdpa)
    head = PredictionHeadTransform(H)
    return hf, hf_head, ours, head


def padded_mask(rows: int, length: int, lengths: list[int]) -> torch.Tensor:
    keys = torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]  # (rows, L)
    return keys[:, None, None, :]  # (rows, 1, 1, L), True = attend


def test_the_same_keys_shapes_and_initial_weights_from_one_seed():
    hf, hf_head, ours, head = pair(sdpa=True)
    a, b = hf.state_dict(), ours.state_dict()
    assert list(a) == list(b)  # names and order: encoder.layer.{i}.attention.self.query.weight, ...
    assert len(a) == LAYERS * 16
    for k in a:
        assert a[k].shape == b[k].shape, k
        assert torch.equal(a[k], b[k]), k  # the same RNG draws in the same order
    assert list(hf_head.state_dict()) == list(head.state_dict()) == ["dense.weight", "dense.bias",
                                                                      "LayerNorm.weight", "LayerNorm.bias"]
    for k, v in hf_head.state_dict().items():
        assert torch.equal(v, head.state_dict()[k]), k


@pytest.mark.parametrize("sdpa", [True, False])
def test_outputs_and_gradients_equal_hugging_faces(sdpa):
    hf, hf_head, ours, head = pair(sdpa)
    x = torch.randn(3, 7, H)
    bool_mask = padded_mask(3, 7, [7, 4, 2])
    # BertGen hands Hugging Face's SDPA path the boolean mask and its eager path 0 / finfo.min
    hf_mask = bool_mask if sdpa else torch.zeros(bool_mask.shape).masked_fill(~bool_mask, torch.finfo(x.dtype).min)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = hf_head(hf(x1, hf_mask).last_hidden_state)
    got = head(ours(x2, bool_mask))
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    want.square().sum().backward()
    got.square().sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad, rtol=1e-5, atol=1e-6)
    for (k, p), (_, q) in zip(hf.named_parameters(), ours.named_parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-5, atol=1e-6, msg=k)


def test_masked_keys_get_no_weight_in_either_attention():
    """A padded key must not change the unpadded rows: fill the padding with garbage."""
    for sdpa in (True, False):
        torch.manual_seed(0)
        enc = Encoder(H, 2, HEADS, FFN, dropout=0.0, attention_dropout=0.0, sdpa=sdpa).eval()
        x = torch.randn(1, 6, H)
        mask = padded_mask(1, 6, [4])
        y = x.clone()
        y[:, 4:] = 1e3 * torch.randn(1, 2, H)
        torch.testing.assert_close(enc(x, mask)[:, :4], enc(y, mask)[:, :4], rtol=0, atol=1e-6)
        alone = enc(x[:, :4], None)
        torch.testing.assert_close(enc(x, mask)[:, :4], alone, rtol=0, atol=1e-5)


def test_a_bertgen_job_does_not_import_transformers():
    code = textwrap.dedent("""
        import sys, torch
        from mmt_repro.models import build_model
        from mmt_repro.train.synthetic import bertgen_vocabs
        model = build_model("bertgen.bertgen", {"hidden_size": 32, "num_layers": 1, "num_heads": 2,
                                                "ffn_size": 32}, bertgen_vocabs(200))
        print(sum(p.numel() for p in model.parameters()) > 0, "transformers" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False"]
