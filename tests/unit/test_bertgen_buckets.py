"""BertGen's step levers through the shared trainer: shape buckets (padded batches, exact
resume, the eager path on a CPU) and ``batch_scale`` (k examples per task a step; k = 1 is the
run without it, bit for bit)."""

from __future__ import annotations

import dataclasses
import os
import signal

import pytest
import torch

from mmt_repro.checkpoint import read_checkpoint
from mmt_repro.settings import make_train_config
from mmt_repro.train.schedules import scaled_train_config
from mmt_repro.train.graphs import step_forward
from mmt_repro.train.run import build_run
from mmt_repro.train.trainer import INTERRUPTED_EXIT_CODE, train
from test_multitask_contract import lines, region_store, vocab  # noqa: F401 (fixture)
from training_jobs import train_job

MODEL = {"hidden_size": 16, "num_layers": 1, "num_heads": 2, "ffn_size": 32, "img_dim": 4, "coord_freqs": 2,
         "init": "random", "full_image": "mean", "max_regions": 4}
TRAIN = {"optimizer": "adamw", "lr": 1e-3, "batch_size": 3, "max_epochs": 2, "patience": 2, "val_max_len": 4,
         "log_every": 0, "lr_schedule": "linear", "warmup_steps": 4, "seed": 3}


def job_of(tmp_path, vocab, out, **train_over):  # noqa: F811 (the fixture)
    """A three-task BertGen job (MMT with regions, MT, captioning) writing into ``out``."""
    data = tmp_path / "data"
    if not (data / "vocab.json").exists():
        data.mkdir(exist_ok=True)
        vocab.save(data / "vocab.json")
        region_store(data / "train", 10)
        region_store(data / "val", 3, seed=1)
        lines(data / "tr.en", 10, 2), lines(data / "tr.de", 10, 3)
        lines(data / "va.en", 3, 4), lines(data / "va.de", 3, 5)
        lines(data / "mt.de", 7, 6), lines(data / "mt.en", 7, 6, reverse=True)
        lines(data / "cap.de", 10, 21)
    tasks = [{"name": "mt", "pair": "de-en", "src": str(data / "mt.de"), "tgt": [str(data / "mt.en")], "features": None},
             {"name": "ic", "pair": "im-de", "src": None, "tgt": [str(data / "cap.de")],
              "features": [str(data / "train" / "s.npy"), str(data / "train" / "s.index.parquet")]}]
    inputs = {"src_vocab": data / "vocab.json", "tgt_vocab": data / "vocab.json", "train_src": data / "tr.en",
              "train_tgt": data / "tr.de", "val_src": data / "va.en", "val_tgt": data / "va.de", "val_ref": data / "va.de",
              "train_npy": data / "train" / "s.npy", "train_index": data / "train" / "s.index.parquet",
              "val_npy": data / "val" / "s.npy", "val_index": data / "val" / "s.index.parquet"}
    return train_job(out, "bertgen.bertgen", MODEL, dict(TRAIN, **train_over),
                     {k: str(v) for k, v in inputs.items()}, pair="en-de", tasks=tasks)


def weights(path):
    return read_checkpoint(path)["weights"]


def same_weights(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_bucketed_run_pads_every_batch_and_resumes_exactly(tmp_path, vocab, monkeypatch):  # noqa: F811
    """A bucketed run (every batch 9 rows of a bucket's width) killed after update 17 (mid-epoch 2 of
    14 updates each) and re-run ends with the uninterrupted bucketed run's weights, bit for bit, and
    its curve (the resumed epoch's train_loss is the mean over the updates after the resume, as for
    every resumed run)."""
    buckets = [12, 16, 24, 40]
    run = build_run(job_of(tmp_path, vocab, tmp_path / "probe", shape_buckets=buckets))
    assert run.forward is None and run.step_path.startswith("eager with shape buckets")
    batches = run.train_data.train_batches(3, 3, 1)
    shapes = {tuple(run.train_data.collate(b)["lay_tokens"].shape) for b in batches}
    assert {rows for rows, _ in shapes} == {9} and {w for _, w in shapes} <= set(buckets), shapes

    full = tmp_path / "full"
    train(job_of(tmp_path, vocab, full, shape_buckets=buckets))
    killed = tmp_path / "killed"
    real_step = torch.optim.AdamW.step
    calls = {"n": 0}

    def step_then_signal(self, *args, **kwargs):
        out = real_step(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 17:
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    monkeypatch.setattr(torch.optim.AdamW, "step", step_then_signal)
    with pytest.raises(SystemExit) as exc:
        train(job_of(tmp_path, vocab, killed, shape_buckets=buckets))
    assert exc.value.code == INTERRUPTED_EXIT_CODE
    assert read_checkpoint(killed / "last.pt")["progress"]["step"] == 17
    monkeypatch.setattr(torch.optim.AdamW, "step", real_step)
    summary = train(job_of(tmp_path, vocab, killed, shape_buckets=buckets))
    assert summary["steps"] == read_checkpoint(full / "last.pt")["progress"]["step"] == 28
    assert same_weights(weights(full / "last.pt"), weights(killed / "last.pt"))
    a, b = ([r.split("\t") for r in (d / "curve.tsv").read_text().splitlines()] for d in (full, killed))
    assert a[0] == b[0] and a[1][:5] == b[1][:5]  # epoch 1, train_loss included (its speed and time apart)
    keep = [i for i, c in enumerate(a[0]) if c not in ("train_loss", "tokens_per_s", "elapsed_s")]
    assert [[r[i] for i in keep] for r in a] == [[r[i] for i in keep] for r in b]


def test_batch_scale_1_is_the_run_without_it_and_k_scales_batch_rate_and_warmup(tmp_path, vocab):  # noqa: F811
    plain = tmp_path / "plain"
    train(job_of(tmp_path, vocab, plain, max_epochs=1))
    one = tmp_path / "one"
    train(job_of(tmp_path, vocab, one, max_epochs=1, batch_scale=1))
    assert same_weights(weights(plain / "last.pt"), weights(one / "last.pt"))
    assert (plain / "curve.tsv").read_text().splitlines()[1].split("\t")[:4] == (
        (one / "curve.tsv").read_text().splitlines()[1].split("\t")[:4])
    cfg = make_train_config(dict(TRAIN, batch_scale=1))
    assert scaled_train_config(cfg) is cfg

    run = build_run(job_of(tmp_path, vocab, tmp_path / "k4", batch_scale=4, decay_steps=10))
    assert (run.cfg.batch_size, run.cfg.lr, run.cfg.warmup_steps, run.cfg.decay_steps, run.cfg.batch_scale) == (
        12, pytest.approx(4e-3), 1, 2, 4)
    n_ref = sum(len(x.split()) + 1 for x in (tmp_path / "data" / "tr.de").read_text().splitlines())
    assert len(run.train_data.train_batches(run.cfg.batch_size, 3, 1)) == -(-n_ref // 12)
    assert run.optimizer.param_groups[0]["initial_lr"] == pytest.approx(4e-3)


def test_step_forward_is_the_model_without_buckets_or_off_cuda():
    model = torch.nn.Linear(2, 2)
    assert step_forward(model, [], torch.device("cpu")) == (None, "eager")
    forward, what = step_forward(model, [32, 64], torch.device("cpu"))
    assert forward is None and "eager with shape buckets [32, 64]" in what and "CUDA device" in what
    with pytest.raises(ValueError, match="shape_buckets must be increasing"):
        make_train_config({"shape_buckets": [64, 32]})
    with pytest.raises(ValueError, match="batch_scale must be >= 1"):
        make_train_config({"batch_scale": 0})
    assert dataclasses.asdict(make_train_config({}))["shape_buckets"] == []
