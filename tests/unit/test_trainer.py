"""The shared trainer: learning, early outputs, exact resume after a kill, bad input."""

import os
import signal

import pytest
import torch

from mmt_repro.io import DataError
from mmt_repro.checkpoint import check_vocab, load_model, read_checkpoint
from mmt_repro.train.trainer import INTERRUPTED_EXIT_CODE, make_train_config, train

MODEL = dict(emb_dim=16, enc_dim=16, dec_dim=24, att_dim=16, img_dim=4, img_att_dim=8,
             dropout_enc=0.1, dropout_dec=0.1, dropout_out=0.1, dropout_img=0.1, init_std=0.1)
TRAIN = dict(optimizer="adam", lr=0.01, batch_size=8, max_epochs=3, patience=5, log_every=0, seed=7)


def run(toy, out, **overrides):
    d = toy["dir"]
    return train(
        model_name="doubly_attentive.nmt_src_img",
        model_config=MODEL,
        train_config=dict(TRAIN, **overrides),
        src_vocab=d / "src.json",
        tgt_vocab=d / "tgt.json",
        train_src=d / "train.src",
        train_tgt=d / "train.tgt",
        val_src=d / "val.src",
        val_tgt=d / "val.tgt",
        val_ref=d / "val.tgt",
        best_checkpoint=out / "best.pt",
        last_checkpoint=out / "last.pt",
        curve=out / "curve.tsv",
        train_features=toy["features"],
        val_features=toy["val_features"],
        device="cpu",
    )


def test_training_writes_best_last_and_curve(toy_corpus, tmp_path):
    summary = run(toy_corpus, tmp_path)
    assert summary["epochs"] == 3 and summary["steps"] == 3 * 8  # 64 pairs / batch 8
    rows = (tmp_path / "curve.tsv").read_text().splitlines()
    assert rows[0].split("\t")[:4] == ["epoch", "step", "train_loss", "val_bleu"]
    losses = [float(r.split("\t")[2]) for r in rows[1:]]
    assert len(losses) == 3 and losses[-1] < losses[0]
    best = read_checkpoint(tmp_path / "best.pt")
    assert best["optimizer"] is None and best["progress"]["best_bleu"] == summary["best_val_bleu"]
    last = read_checkpoint(tmp_path / "last.pt")
    assert last["optimizer"] is not None and last["progress"]["done"]


def test_resume_after_kill_gives_identical_weights(toy_corpus, tmp_path, monkeypatch):
    full = tmp_path / "full"
    run(toy_corpus, full)

    # Interrupted run: SIGTERM arrives during update 11 (mid-epoch 2).
    killed = tmp_path / "killed"
    real_step = torch.optim.Adam.step
    calls = {"n": 0}

    def step_then_signal(self, *args, **kwargs):
        out = real_step(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 11:
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    monkeypatch.setattr(torch.optim.Adam, "step", step_then_signal)
    with pytest.raises(SystemExit) as exc:
        run(toy_corpus, killed)
    assert exc.value.code == INTERRUPTED_EXIT_CODE
    assert read_checkpoint(killed / "last.pt")["progress"]["step"] == 11
    monkeypatch.setattr(torch.optim.Adam, "step", real_step)

    summary = run(toy_corpus, killed)  # resumes from last.pt
    assert summary["steps"] == 24
    a = read_checkpoint(full / "last.pt")["weights"]
    b = read_checkpoint(killed / "last.pt")["weights"]
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert (full / "curve.tsv").read_text().split("\n")[1].split("\t")[:4] == (
        (killed / "curve.tsv").read_text().split("\n")[1].split("\t")[:4]
    )


def test_checkpoint_vocabulary_mismatch_is_refused(toy_corpus, tmp_path):
    run(toy_corpus, tmp_path, max_epochs=1)
    model, ckpt = load_model(tmp_path / "best.pt", expect_model="doubly_attentive.nmt_src_img")
    assert model.use_image
    with pytest.raises(DataError, match="another tgt vocabulary"):
        check_vocab(ckpt, tmp_path / "best.pt", ckpt["vocab"]["src"], "0" * 16)
    with pytest.raises(DataError, match="expected 'doubly_attentive.nmt'"):
        load_model(tmp_path / "best.pt", expect_model="doubly_attentive.nmt")


def test_unknown_training_key_is_refused():
    with pytest.raises(ValueError, match="valid keys"):
        make_train_config({"batchsize": 3})
