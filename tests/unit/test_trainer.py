"""The shared trainer: learning, early outputs, exact resume after a kill, bad input."""

import os
import signal

import pytest
import torch

from mmt_repro.io import DataError
from mmt_repro.checkpoint import check_vocab, load_model, read_checkpoint
from mmt_repro.train.trainer import INTERRUPTED_EXIT_CODE, make_train_config, train
from training_jobs import corpus_inputs, train_job

MODEL = dict(emb_dim=16, enc_dim=16, dec_dim=24, att_dim=16, img_dim=4, img_att_dim=8,
             dropout_enc=0.1, dropout_dec=0.1, dropout_out=0.1, dropout_img=0.1, init_std=0.1)
TEXT_MODEL = {k: v for k, v in MODEL.items() if not k.startswith(("img", "dropout_img"))}
TRAIN = dict(optimizer="adam", lr=0.01, batch_size=8, max_epochs=3, patience=5, log_every=0, seed=7)


def run(toy, out, **overrides):
    job = train_job(out, "doubly_attentive.nmt_src_img", MODEL, dict(TRAIN, **overrides),
                    corpus_inputs(toy["dir"], toy["stores"]))
    return train(job)


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


def test_a_finished_run_is_restored_only_while_its_training_inputs_are_unchanged(toy_corpus, tmp_path):
    first = run(toy_corpus, tmp_path, max_epochs=2)
    assert not first["restored"] and first["steps"] == 16
    inputs = read_checkpoint(tmp_path / "last.pt")["progress"]["inputs"]
    assert str(toy_corpus["dir"] / "train.tgt") in inputs and str(toy_corpus["dir"] / "val.src") in inputs
    again = run(toy_corpus, tmp_path, max_epochs=2)  # the same inputs: the finished run is restored
    assert again["restored"] and again["steps"] == 16
    # a corpus fixed since (same vocabulary): the finished run's weights belong to the old text
    tgt = toy_corpus["dir"] / "train.tgt"
    lines = tgt.read_text(encoding="utf-8").splitlines()
    tgt.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n", encoding="utf-8")
    before = read_checkpoint(tmp_path / "last.pt")["weights"]
    fixed = run(toy_corpus, tmp_path, max_epochs=2)
    assert not fixed["restored"] and fixed["steps"] == 16
    after = read_checkpoint(tmp_path / "last.pt")
    assert after["progress"]["inputs"][str(tgt)] != inputs[str(tgt)]
    assert not all(torch.equal(before[k], after["weights"][k]) for k in before)


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


# ------------------------------------------------------------------ optimisers and schedules
def test_inverse_sqrt_is_vaswani_eq_with_peak_lr():
    """lr = d^-0.5 * min(K^-0.5, K * N^-1.5) (Wu 2020 eq. 8, Vaswani et al.) with the base lr set
    to its peak d^-0.5 * N^-0.5, for K = 1, 10, N, 2N, 10N."""
    from mmt_repro.train.schedules import LRFactor

    d, n = 512, 4000
    peak = d**-0.5 * n**-0.5
    f = LRFactor("inverse_sqrt", n, 0, 0.5)
    for k in (1, 10, n, 2 * n, 10 * n):
        assert peak * f(k - 1) == pytest.approx(d**-0.5 * min(k**-0.5, k * n**-1.5), rel=1e-12)


def test_linear_warmup_then_decay_and_epoch_decay_factors():
    from mmt_repro.train.schedules import LRFactor

    lin = LRFactor("linear", 4, 12, 0.5)
    assert [lin(i) for i in range(13)] == pytest.approx(
        [0.25, 0.5, 0.75, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8, 0.0, 0.0])
    ep = LRFactor("epoch_decay", 0, 0, 0.5)
    assert [ep(i) for i in (0, 7, 100)] == [1.0, 1.0, 1.0]  # moved only by the trainer's halvings
    ep.halvings = 3
    assert ep(5) == 0.125


def test_epoch_decay_halves_lr_after_every_epoch_in_the_curve(toy_corpus, tmp_path):
    run(toy_corpus, tmp_path, lr_schedule="epoch_decay", lr_decay=0.5, max_epochs=3)
    rows = [r.split("\t") for r in (tmp_path / "curve.tsv").read_text().splitlines()]
    lr = [float(r[rows[0].index("lr")]) for r in rows[1:]]
    assert lr == pytest.approx([0.005, 0.0025, 0.00125])  # lr after epochs 1, 2, 3 (base 0.01)


def test_epoch_decay_with_warmup_factors():
    """Warm-up over W = 3 updates: update u runs at min(1, u / 3) * 0.5 ** halvings."""
    from mmt_repro.train.schedules import LRFactor

    f = LRFactor("epoch_decay", 3, 0, 0.5)
    assert [f(i) for i in range(5)] == pytest.approx([1 / 3, 2 / 3, 1.0, 1.0, 1.0])
    f.halvings = 2
    assert [f(i) for i in (0, 4)] == pytest.approx([1 / 12, 0.25])


def test_epoch_decay_with_warmup_halves_at_the_same_epoch_ends(toy_corpus, tmp_path):
    """The curve's lr after each epoch equals the plain epoch_decay's (8 updates an epoch, the
    warm-up inside the first), and the schedule moves per update (last_epoch = updates)."""
    run(toy_corpus, tmp_path, lr_schedule="epoch_decay", lr_decay=0.5, warmup_steps=4, max_epochs=3)
    rows = [r.split("\t") for r in (tmp_path / "curve.tsv").read_text().splitlines()]
    lr = [float(r[rows[0].index("lr")]) for r in rows[1:]]
    assert lr == pytest.approx([0.005, 0.0025, 0.00125])
    last = read_checkpoint(tmp_path / "last.pt")
    assert last["scheduler"]["last_epoch"] == 24 and last["scheduler"]["lr_lambdas"][0]["halvings"] == 3


def test_epoch_decay_starts_at_decay_start_epoch_and_resumes(toy_corpus, tmp_path):
    """decay_start_epoch 3 (OpenNMT-py's start_decay_at): the rate stays at 0.01 after epochs 1-2,
    then halves after each epoch; a run stopped after epoch 3 resumes with the halving it had."""
    run(toy_corpus, tmp_path, lr_schedule="epoch_decay", lr_decay=0.5, decay_start_epoch=3, max_epochs=3)
    run(toy_corpus, tmp_path, lr_schedule="epoch_decay", lr_decay=0.5, decay_start_epoch=3, max_epochs=5)
    rows = [r.split("\t") for r in (tmp_path / "curve.tsv").read_text().splitlines()]
    lr = [float(r[rows[0].index("lr")]) for r in rows[1:]]
    assert lr == pytest.approx([0.01, 0.01, 0.005, 0.0025, 0.00125])


def test_epoch_decay_on_stall_starts_at_the_first_epoch_without_improvement():
    """decay_on_stall: the first epoch whose validation BLEU is not better starts the halving,
    which then goes on after every epoch, improved or not."""
    from types import SimpleNamespace

    from mmt_repro.train.schedules import decay_due

    cfg = SimpleNamespace(decay_start_epoch=8, decay_on_stall=True)
    progress = {}
    due = [decay_due(cfg, progress, e, imp) for e, imp in enumerate([True, True, False, True, True], 1)]
    assert due == [False, False, True, True, True]
    assert [decay_due(SimpleNamespace(decay_start_epoch=8, decay_on_stall=False), {}, e, False)
            for e in (1, 7, 8)] == [False, False, True]


def test_linear_schedule_reaches_zero_at_the_last_update_and_resumes(toy_corpus, tmp_path):
    """decay_steps 0: the decay ends with the last update of max_epochs (3 epochs x 8)."""
    run(toy_corpus, tmp_path, lr_schedule="linear", warmup_steps=4, max_epochs=3)
    last = read_checkpoint(tmp_path / "last.pt")
    assert last["optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.0)
    assert last["scheduler"]["last_epoch"] == 24


def test_linear_schedule_decays_towards_decay_epochs(toy_corpus, tmp_path):
    """decay_epochs 6 with max_epochs 3 (BertGen's code decays towards epoch 60 of 45 trained):
    after 3 epochs x 8 updates the rate of the next (25th) update is (48 - 25) / (48 - 4) of its
    peak, not 0."""
    run(toy_corpus, tmp_path, lr_schedule="linear", warmup_steps=4, max_epochs=3, decay_epochs=6)
    last = read_checkpoint(tmp_path / "last.pt")
    peak = last["optimizer"]["param_groups"][0]["initial_lr"]
    assert last["optimizer"]["param_groups"][0]["lr"] == pytest.approx(peak * 23 / 44)


def test_negative_decay_epochs_is_refused():
    with pytest.raises(ValueError, match="decay_epochs"):
        make_train_config({"decay_epochs": -1})


def test_frozen_parameters_are_not_given_to_the_optimiser(toy_corpus, tmp_path):
    from mmt_repro.models import Vocabs, build_model
    from mmt_repro.train.run import configured_optimizer as _optimizer

    model = build_model("doubly_attentive.nmt", TEXT_MODEL, Vocabs.sizes(10, 12))
    model.tgt_emb.weight.requires_grad_(False)
    for name in ("adam", "adamw", "adadelta"):
        opt = _optimizer(make_train_config({"optimizer": name, "lr": 0.1}), model.parameters())
        held = {id(p) for g in opt.param_groups for p in g["params"]}
        assert id(model.tgt_emb.weight) not in held
        assert len(held) == sum(1 for p in model.parameters() if p.requires_grad)
    adamw = _optimizer(make_train_config({"optimizer": "adamw", "lr": 1e-3, "adam_betas": [0.9, 0.98],
                                          "adam_eps": 1e-9, "weight_decay": 1e-4}), model.parameters())
    assert isinstance(adamw, torch.optim.AdamW)
    assert adamw.defaults["betas"] == (0.9, 0.98) and adamw.defaults["eps"] == 1e-9


def test_accumulated_update_equals_one_batch_of_both(toy_corpus, tmp_path):
    """Two batches accumulated give the gradient of one batch holding both (per-token mean)."""
    from mmt_repro.datasets.batching import ParallelData
    from mmt_repro.models import Vocabs, build_model
    from mmt_repro.text.vocab import Vocab
    from mmt_repro.train.run import configured_optimizer
    from mmt_repro.train.step import StepSums, train_update

    d = toy_corpus["dir"]
    sv, tv = Vocab.load(d / "src.json"), Vocab.load(d / "tgt.json")
    data = ParallelData(d / "train.src", sv, d / "train.tgt", tv)
    cfg = dict(TEXT_MODEL, dropout_enc=0.0, dropout_dec=0.0, dropout_out=0.0)
    grads = []
    for accumulate, group in ((2, [[0, 1, 2], [3, 4, 5, 6, 7]]), (1, [[0, 1, 2, 3, 4, 5, 6, 7]])):
        torch.manual_seed(0)
        model = build_model("doubly_attentive.nmt", cfg, Vocabs.of(sv, tv))
        tcfg = make_train_config(dict(TRAIN, accumulate=accumulate, clip_norm=0.0, optimizer="adam", lr=0.0))
        sums = StepSums()
        train_update(model, configured_optimizer(tcfg, model.parameters()), [data.collate(ids) for ids in group],
                     torch.device("cpu"), amp=False, clip_norm=tcfg.clip_norm, sums=sums, step=1, n_batches=len(group))
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
        assert sums.read()["n_tokens"] == sum(len(data.tgt[i]) + 1 for i in range(8))
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("bad, match", [({"optimizer": "sgd"}, "unknown optimizer"),
                                        ({"lr_schedule": "cosine"}, "unknown lr_schedule"),
                                        ({"lr_schedule": "inverse_sqrt"}, "warmup_steps"),
                                        ({"accumulate": 0}, "accumulate")])
def test_bad_training_settings_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        make_train_config(bad)


def test_a_run_resumes_across_code_that_added_a_setting_at_its_default():
    """A paper-setting run spans sessions: a TrainConfig or model-config field added meanwhile
    (at its default) must not throw its .last.pt away; a changed value must."""
    from mmt_repro.train.resume import same_configuration

    defaults = {"train": {"lr": 1.0, "decay_epochs": 0}, "model": {"emb_dim": 300, "new_switch": "none"}}
    saved = {"model": {"emb_dim": 300}, "train": {"lr": 0.5}}
    assert same_configuration(saved, {"model": {"emb_dim": 300}, "train": {"lr": 0.5}}, defaults)
    assert same_configuration(saved, {"model": {"emb_dim": 300, "new_switch": "none"},
                                      "train": {"lr": 0.5, "decay_epochs": 0}}, defaults)
    assert not same_configuration(saved, {"model": {"emb_dim": 300}, "train": {"lr": 0.5, "decay_epochs": 60}},
                                  defaults)  # the new setting is not at its default
    assert not same_configuration(saved, {"model": {"emb_dim": 256}, "train": {"lr": 0.5}}, defaults)
    assert not same_configuration({"model": {"emb_dim": 300, "gone": 1}, "train": {"lr": 0.5}},
                                  {"model": {"emb_dim": 300}, "train": {"lr": 0.5}}, defaults)
    assert not same_configuration(saved, {**saved, "init_checkpoint": "x.pt"}, defaults)


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_the_optimiser_is_torchs_fused_adam_and_updates_as_the_reference(name):
    """make_optimizer runs the fused kernel (one call for all parameters: the smoke's tiny models
    are step-bound on a CPU); its update equals torch's single-tensor Adam(W) to float rounding."""
    from mmt_repro.train.step import make_optimizer

    gen = torch.Generator().manual_seed(0)
    start = [torch.randn(64, 32, generator=gen), torch.randn(32, generator=gen), torch.randn(500, 16, generator=gen)]
    grads = [[torch.randn(x.shape, generator=gen) for x in start] for _ in range(10)]

    def run(make):
        params = [x.clone().requires_grad_() for x in start]
        opt = make(params)
        for step in grads:
            for p, g in zip(params, step):
                p.grad = g.clone()
            opt.step()
        return opt, params

    opt, ours = run(lambda ps: make_optimizer(name, ps, lr=1e-3, weight_decay=0.01))
    assert opt.param_groups[0]["fused"] is True
    reference = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
    _, ref = run(lambda ps: reference(ps, lr=1e-3, weight_decay=0.01, foreach=False))
    moved = max(float((a - b).abs().max()) for a, b in zip(ours, start))
    assert moved > 5e-3  # ten updates of ~lr each
    assert max(float((a - b).abs().max()) for a, b in zip(ours, ref)) < 1e-6
