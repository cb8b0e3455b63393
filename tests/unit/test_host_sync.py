"""No host synchronisation inside a training update: the trainer reads the loss and token sums
back only when it logs (``log_every``) and at the end of the epoch; the device sums give the
figures the former per-step ``float()`` reads gave, bit for bit; a non-finite loss is still
reported, with its step, before anything is saved.

On the CPU a "sync" is any read of a tensor's value into Python (``.item()``, ``.tolist()``,
``.cpu()``, ``.numpy()``, ``bool()``/``int()``/``float()``/``index``): on a GPU each one waits
for the device. Counted are reads made outside the host-side batch building (``mmt_repro.datasets``:
it works on host tensors before the copy to the device) and outside ``torch.optim`` (its step
counters live on the host unless ``capturable``)."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from mmt_repro.models import MMTModel, Vocabs, available, build_model, register
from mmt_repro.train import trainer
from mmt_repro.train.run import build_run
from mmt_repro.train.step import StepSums, to_device, train_update
from training_jobs import corpus_inputs, train_job

READS = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__")
TORCH_OPTIM = str(Path(torch.optim.__file__).parent)
PACKAGE = Path(trainer.__file__).resolve().parents[1]
DATA = str(PACKAGE / "data")
TRAIN = str(PACKAGE / "train")


@dataclass
class _FreeConfig:
    dim: int = 8
    nan_at_call: int = 0  # return a NaN loss at this forward call (1-based; 0: never)


class SyncFree(MMTModel):
    """A model whose forward reads nothing back from the device (what the count needs)."""

    def __init__(self, config, vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        self.emb = nn.Embedding(vocabs.tgt.size, config.dim)
        self.out = nn.Linear(config.dim, vocabs.tgt.size)
        self.calls = 0

    def forward(self, batch):
        self.calls += 1
        pad = self.specials.pad
        logits = self.out(torch.tanh(self.emb(batch["tgt_in"])))
        tgt = batch["tgt_out"]
        n = (tgt != pad).sum()
        nll = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=pad, reduction="sum")
        loss = nll / n.clamp_min(1)
        if self.calls == self.config.nan_at_call:
            loss = loss * float("nan")
        return {"loss": loss, "n_tokens": n, "nll": nll.detach() / n.clamp_min(1), "constant": 0.25}


if "test_host_sync.free" not in available():
    register("test_host_sync.free", _FreeConfig)(SyncFree)


class SyncCounter:
    """Counts value reads of tensors by the caller's file (see the module docstring)."""

    def __init__(self, monkeypatch, only: str | None = None):
        self.calls: list[tuple[str, str, int]] = []
        self.only = only
        for name in READS:
            real = getattr(torch.Tensor, name)
            monkeypatch.setattr(torch.Tensor, name, self._wrap(name, real))

    def _wrap(self, name, real):
        counter = self

        def read(self, *args, **kwargs):
            frame = sys._getframe(1)
            where = frame.f_code.co_filename
            if not (where.startswith(TORCH_OPTIM) or where.startswith(DATA)) and (
                    counter.only is None or where.startswith(counter.only)):
                counter.calls.append((name, where, frame.f_lineno))
            return real(self, *args, **kwargs)

        return read

    def __len__(self):
        return len(self.calls)


def _run(toy, tmp_path, model_name, model_cfg, features=True, **train):
    """The run of a training job on the toy corpus (``build_run``, as ``train(job)`` builds it),
    its images only when ``features``."""
    cfg = dict(dict(optimizer="adam", lr=0.01, batch_size=8, seed=3, clip_norm=1.0), **train)
    job = train_job(tmp_path, model_name, model_cfg, cfg, corpus_inputs(toy["dir"], toy["stores"] if features else None))
    return build_run(job)


def _epoch(run):
    return trainer._run_epoch(run, trainer._SignalFlag(), time.monotonic(), 0.0)


@pytest.mark.parametrize("accumulate, log_every", [(1, 3), (2, 2), (1, 0)])
def test_an_epoch_reads_the_device_only_to_log_and_at_its_end(toy_corpus, tmp_path, monkeypatch, accumulate, log_every):
    run = _run(toy_corpus, tmp_path, "test_host_sync.free", {}, features=False, accumulate=accumulate,
               log_every=log_every)
    counter = SyncCounter(monkeypatch)
    sums, _, _ = _epoch(run)
    updates = run.progress["step"]
    assert updates == 8 // accumulate  # 64 pairs, batches of 8
    logs = updates // log_every if log_every else 0
    assert len(counter) == logs + 1, counter.calls  # one read per log line, one at the end
    assert sums["n_tokens"] > 0 and set(sums) == {"n_tokens", "train_loss", "train_nll", "train_constant"}


def test_a_real_model_s_updates_have_no_read_in_the_trainer(toy_corpus, tmp_path, monkeypatch):
    """Calixto et al.'s doubly-attentive model (its own pack_padded_sequence lengths read aside):
    the trainer's part of an update reads nothing back."""
    cfg = dict(emb_dim=8, enc_dim=8, dec_dim=8, att_dim=8, img_dim=4, img_att_dim=8)
    run = _run(toy_corpus, tmp_path, "doubly_attentive.nmt_src_img", cfg, log_every=4)
    counter = SyncCounter(monkeypatch, only=TRAIN)
    _epoch(run)
    assert run.progress["step"] == 8
    assert len(counter) == 8 // 4 + 1, counter.calls


def test_device_sums_equal_the_former_python_float_sums_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    sums, ref = StepSums(), {}
    for step in range(1, 200):
        loss = torch.rand((), generator=g, dtype=torch.float32) * 7
        other = torch.rand((), generator=g, dtype=torch.bfloat16)
        n = torch.randint(1, 4000, (), generator=g)
        out = {"loss": loss, "n_tokens": n, "other": other, "plain": 0.1 * step, "vector": torch.ones(3)}
        sums.add(out, n, step)
        # the trainer's former _add_scalars: float(value) * int(n_tokens), summed in Python
        n_tok = int(n)
        ref["n_tokens"] = ref.get("n_tokens", 0) + n_tok
        for key in ("loss", "other", "plain"):
            name = "train_loss" if key == "loss" else f"train_{key}"
            value = out[key]
            ref[name] = ref.get(name, 0.0) + float(value.detach() if torch.is_tensor(value) else value) * n_tok
    got = sums.read()
    assert list(got) == list(ref) and got == ref  # same keys, same order, same bits


def test_plain_int_token_counts_and_an_empty_epoch():
    assert StepSums().read() == {}
    sums = StepSums()
    sums.add({"loss": 2.5, "n_tokens": 4}, 4)
    sums.add({"loss": torch.tensor(1.0), "n_tokens": 2}, 2)
    assert sums.read() == {"n_tokens": 6, "train_loss": 12.0}


def test_a_non_finite_loss_is_reported_with_its_step_before_a_checkpoint(toy_corpus, tmp_path):
    run = _run(toy_corpus, tmp_path, "test_host_sync.free", {"nan_at_call": 3}, features=False, log_every=0,
               checkpoint_every=5)
    with pytest.raises(FloatingPointError, match=r"loss became nan at step 3"):
        _epoch(run)
    assert run.progress["step"] == 5  # found at the first read: the checkpoint of update 5, not saved
    assert not run.last_checkpoint.exists()
    sums = StepSums()
    sums.add({"loss": torch.tensor(1.0)}, 3, step=1)
    sums.add({"loss": torch.tensor(math.inf)}, 3, step=2)
    sums.add({"loss": torch.tensor(math.nan)}, 3, step=3)
    with pytest.raises(FloatingPointError, match="loss became inf at step 2"):
        sums.read()


def test_accumulated_update_through_train_update_divides_by_the_group_tokens():
    torch.manual_seed(0)
    model = build_model("test_host_sync.free", {}, Vocabs.sizes(None, 11))
    batches = [{"tgt_in": torch.randint(1, 11, (2, 5)), "tgt_out": torch.randint(0, 11, (2, 5))} for _ in range(2)]
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    train_update(model, opt, batches, torch.device("cpu"))
    got = model.out.weight.grad.clone()
    both = {k: torch.cat([b[k] for b in batches]) for k in batches[0]}
    train_update(model, opt, [both], torch.device("cpu"))
    torch.testing.assert_close(got, model.out.weight.grad)


def test_to_device_on_the_cpu_keeps_the_tensors():
    batch = {"a": torch.ones(2), "b": [1, 2], "c": None}
    out = to_device(batch, torch.device("cpu"))
    assert out["a"] is batch["a"] and out["b"] == [1, 2] and out["c"] is None


def test_masked_attention_asks_the_device_nothing_and_zeroes_empty_rows(monkeypatch):
    """Issue 23: the Transformer's attention checked `bool(empty.any())` on every call (a host
    sync per attention call on a GPU). Now nothing in it turns a tensor into a Python value,
    and a row whose keys are all masked still gives zeros; the others are unchanged."""
    import torch

    from mmt_repro.models.transformer import attention

    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 4, 8), torch.randn(3, 2, 5, 8), torch.randn(3, 2, 5, 8)
    key_mask = torch.tensor([[True] * 5, [True, True, False, False, False], [False] * 5])
    reads = []
    real_bool, real_item = torch.Tensor.__bool__, torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "__bool__", lambda t: reads.append("bool") or real_bool(t))
    monkeypatch.setattr(torch.Tensor, "item", lambda t: reads.append("item") or real_item(t))
    for need_weights in (False, True):
        out, weights = attention(q, k, v, key_mask, need_weights=need_weights)
        assert reads == []
        assert torch.equal(out[2], torch.zeros_like(out[2]))
        ref = torch.softmax((q[1] @ k[1, :, :2].transpose(-2, -1)) / 8 ** 0.5, -1) @ v[1, :, :2]
        assert torch.allclose(out[1], ref, atol=1e-5)
        if weights is not None:
            assert torch.equal(weights[2], torch.zeros_like(weights[2]))
