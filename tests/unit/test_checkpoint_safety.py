"""Checkpoints load without unpickling code (issue 27, item 8): torch.load(weights_only=True) with
NumPy's RNG state allowed; a file that needs any other code is refused; an exported folder
(safetensors + JSON) rebuilds the same model."""

from __future__ import annotations

import collections
import json

import pytest
import torch

from mmt_repro.checkpoint import export_checkpoint, load_model, read_checkpoint, save_checkpoint
from mmt_repro.io import DataError
from mmt_repro.models import Vocabs, build_model


class Payload:  # a class a pickle would import and call on load
    def __reduce__(self):
        return (print, ("code ran while loading",))


def _model():
    vocabs = Vocabs.sizes(12, 14)
    cfg = dict(emb_dim=8, enc_dim=8, dec_dim=8, dropout_emb=0.0, dropout_ctx=0.0, dropout_out=0.0)
    return build_model("emb_pred.nmt", cfg, vocabs)


def test_a_resume_checkpoint_with_rng_state_loads_safely(tmp_path):
    torch.manual_seed(0)
    m = _model()
    opt = torch.optim.Adam(m.parameters())
    save_checkpoint(tmp_path / "last.pt", m, {"src": "a", "tgt": "b"}, opt, None, {"step": 3}, {"lr": 1.0})
    ckpt = read_checkpoint(tmp_path / "last.pt")  # NumPy's RNG state array is allowed, nothing else
    assert ckpt["progress"]["step"] == 3 and ckpt["rng"]["numpy"][0] == "MT19937" and ckpt["optimizer"] is not None


def test_a_checkpoint_that_needs_code_to_load_is_refused(tmp_path, capsys):
    payload = {"format": 2, "weights": collections.OrderedDict(), "x": Payload()}
    torch.save(payload, tmp_path / "evil.pt")
    with pytest.raises(DataError, match="files that need code to load are refused"):
        read_checkpoint(tmp_path / "evil.pt")
    assert "code ran" not in capsys.readouterr().out


def test_an_exported_folder_rebuilds_the_same_model_without_pickle(tmp_path):
    torch.manual_seed(1)
    m = _model()
    save_checkpoint(tmp_path / "m.best.pt", m, {"src": "a", "tgt": "b"}, None, None, {"step": 5}, {"lr": 1.0},
                    with_rng=False)
    (tmp_path / "tgt.json").write_text("{}")
    out = export_checkpoint(tmp_path / "m.best.pt", tmp_path / "sys", tgt_vocab=tmp_path / "tgt.json")
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors", "tgt_vocab.json"]
    config = json.loads((out / "config.json").read_text())
    assert config["model"] == "emb_pred.nmt" and "optimizer" not in config and config["progress"]["step"] == 5
    again, ckpt = load_model(out)
    assert all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), again.state_dict().values()))
    assert ckpt["optimizer"] is None
    (out / "model.safetensors").unlink()
    with pytest.raises(DataError, match="missing from the exported model folder"):
        load_model(out)


def test_a_model_is_rebuilt_for_its_weights_without_drawing_an_initialisation(tmp_path):
    """load_model builds a model whose state dict holds all its tensors with torch.nn.init's
    initialisers switched off (the weights overwrite them): the same weights as before, no
    global RNG drawn, the initialisers back afterwards; a model with a buffer left out of its
    state dict (the Transformer's sinusoidal table) is built the usual way; a checkpoint that
    lacks a weight is refused either way."""
    from mmt_repro.checkpoint import _all_state_saved, model_with_weights

    torch.manual_seed(2)
    m = _model().eval()
    save_checkpoint(tmp_path / "m.best.pt", m, {"src": "a", "tgt": "b"}, None, None, {}, {}, with_rng=False)
    rng = torch.get_rng_state()
    again, _ = load_model(tmp_path / "m.best.pt")
    assert torch.equal(rng, torch.get_rng_state())  # nothing drawn
    assert all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), again.state_dict().values()))
    w = torch.nn.init.normal_(torch.zeros(1000))
    assert 0.9 < float(w.std()) < 1.1  # the initialisers work again
    assert _all_state_saved(m)

    vocabs = Vocabs.sizes(23, 23)
    cfg = dict(d_model=16, n_heads=4, d_ff=24, enc_layers=1, dec_layers=1, dropout=0.0, attention_dropout=0.0)
    tf = build_model("transformer.nmt", cfg, vocabs)
    assert not _all_state_saved(tf)  # the positions table is no weight
    rebuilt = model_with_weights("transformer.nmt", cfg, vocabs, tf.state_dict())
    pos = [b for n, b in rebuilt.named_buffers() if n.endswith("positions")]
    assert pos and all(torch.equal(p, q) for p, q in zip(pos, [b for n, b in tf.named_buffers()
                                                                if n.endswith("positions")]))
    weights = dict(m.state_dict())
    weights.pop(next(iter(weights)))
    with pytest.raises(RuntimeError, match="Missing key"):
        model_with_weights("emb_pred.nmt", dict(emb_dim=8, enc_dim=8, dec_dim=8), Vocabs.sizes(12, 14), weights)
