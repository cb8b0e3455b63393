"""Packed trainings (config ``packing``): a packed job's members, each its own process, write what
separate train_model jobs write; a failed member fails the job with its log named, and the
members that finished keep their work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from mmt_repro.checkpoint import read_checkpoint
from mmt_repro.execute import run_job
from mmt_repro.execute.packed import run_packed
from mmt_repro.io import DataError
from training_jobs import corpus_inputs, train_job

MODEL = dict(emb_dim=16, enc_dim=16, dec_dim=24, att_dim=16, img_dim=4, img_att_dim=8,
             dropout_enc=0.1, dropout_dec=0.1, dropout_out=0.1, dropout_img=0.1, init_std=0.1)
TRAIN = dict(optimizer="adam", lr=0.01, batch_size=16, max_epochs=2, patience=5, log_every=0)
CODE = "train:0123456789ab"  # the plan's code version of the jobs (train_model's `code` param)
TIMING = {"elapsed_s", "tokens_per_s"}  # wall-clock columns of the curve: the only figures that differ


def _job(toy, out: Path, seed: int, **inputs):
    return train_job(out, "doubly_attentive.nmt_src_img", MODEL, dict(TRAIN, seed=seed),
                     {**corpus_inputs(toy["dir"], toy["stores"]), **inputs}, seed=seed)


def _separate(job) -> None:
    """What a separate train_model job runs (workflow/scripts/run_job.py), on one thread as each
    member process runs here."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run_job(job.to_dict(), rule="train_model", code=CODE)
    finally:
        torch.set_num_threads(threads)


def _member(job, log: Path) -> dict:
    return {"job": job.to_dict(), "code": CODE, "log": str(log)}


def _outputs(job) -> list[Path]:
    return [Path(job.best), Path(job.curve), Path(job.record), Path(job.last)]


def _keep(job, folder: Path) -> dict:
    """Move a job's outputs into ``folder`` (the same paths are trained again)."""
    folder.mkdir(parents=True, exist_ok=True)
    kept = {}
    for f in _outputs(job):
        kept[f.name] = folder / f.name
        shutil.move(f, kept[f.name])
    Path(job.last).with_suffix(".best.pt").unlink()  # the trainer's copy of the best checkpoint
    return kept


def _curve(path: Path) -> list[dict]:
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    return [{k: v for k, v in zip(rows[0], r) if k not in TIMING} for r in rows[1:]]


def _same_checkpoint(a: Path, b: Path) -> None:
    x, y = read_checkpoint(a), read_checkpoint(b)
    assert x["weights"].keys() == y["weights"].keys()
    assert all(torch.equal(x["weights"][k], y["weights"][k]) for k in x["weights"])
    for ck in (x, y):
        for row in ck["progress"]["history"]:
            for k in TIMING:
                row.pop(k)
    assert x["progress"] == y["progress"] and x["train_config"] == y["train_config"]
    assert x["model_config"] == y["model_config"] and x["vocab"] == y["vocab"]
    if x["optimizer"] is not None:
        sx, sy = x["optimizer"]["state"], y["optimizer"]["state"]
        assert all(torch.equal(sx[i][m], sy[i][m]) for i in sx for m in ("exp_avg", "exp_avg_sq"))


@pytest.mark.slow  # four member processes, each importing torch (~3 s of CPU apiece)
def test_a_packed_job_writes_what_separate_jobs_write_names_a_failed_members_log_and_keeps_the_finished(
        toy_corpus, tmp_path):
    jobs = [_job(toy_corpus, tmp_path / f"seed{s}", s) for s in (1, 2)]
    refs = []
    for job in jobs:
        _separate(job)
        refs.append(_keep(job, tmp_path / "separate" / f"seed{job.seed}"))
    # the same two trainings packed, with a third whose target vocabulary is missing
    bad = _job(toy_corpus, tmp_path / "bad", 3, tgt_vocab=str(tmp_path / "missing.json"))
    logs = [tmp_path / "logs" / f"seed{s}.log" for s in (1, 2, 3)]
    members = [_member(jobs[0], logs[0]), _member(jobs[1], logs[1]), _member(bad, logs[2])]
    with pytest.raises(DataError) as err:
        run_packed(members, cores=3)
    message = str(err.value)
    assert "1 of 3 packed trainings failed" in message and f"see {logs[2]}" in message
    assert str(logs[0]) not in message and "missing.json" in logs[2].read_text(encoding="utf-8")
    assert not Path(bad.best).exists()
    for job, ref, log in zip(jobs, refs, logs):
        # the job record byte for byte (the job, its settings hash, the code that trained it)
        assert Path(job.record).read_bytes() == ref["best.job.json"].read_bytes()
        record = json.loads(Path(job.record).read_text(encoding="utf-8"))
        assert record["code"] == {"trained_by": [CODE], "restored_by": None}
        # the weights, optimiser state and progress exactly; the curve but for its wall-clock columns
        _same_checkpoint(Path(job.best), ref["best.pt"])
        _same_checkpoint(Path(job.last), ref["last.pt"])
        assert _curve(Path(job.curve)) == _curve(ref["curve.tsv"]) and len(_curve(ref["curve.tsv"])) == 2
        # each member's own log, as a separate job writes it
        text = log.read_text(encoding="utf-8")
        assert "mmt_repro.execute.run_job(" in text and "training finished" in text and "done in" in text

    # Snakemake deletes a failed job's declared outputs, the finished members' too; the re-run
    # restores a finished member's from its .last.pt and best copy, without training
    curve = Path(jobs[0].curve).read_text(encoding="utf-8")
    for f in (jobs[0].best, jobs[0].curve, jobs[0].record):
        Path(f).unlink()
    run_packed([members[0]], cores=1)
    _same_checkpoint(Path(jobs[0].best), refs[0]["best.pt"])
    assert Path(jobs[0].curve).read_text(encoding="utf-8") == curve
    record = json.loads(Path(jobs[0].record).read_text(encoding="utf-8"))
    assert record["code"] == {"trained_by": [CODE], "restored_by": CODE}
    _same_checkpoint(Path(jobs[0].last), refs[0]["last.pt"])  # no update since
    assert "'restored': True" in logs[0].read_text(encoding="utf-8")


# ------------------------------------------------------------------ the runner alone (no torch)
FAKE = """
import signal, sys, time
def stop(signum, frame):
    print("saved .last.pt", flush=True)
    sys.exit(75)
signal.signal(signal.SIGTERM, stop)
print("training", flush=True)
{body}
"""


def _fake_members(monkeypatch, tmp_path, bodies: list[str]) -> list[dict]:
    """Members whose processes run ``bodies`` (Python) instead of a training: the runner's
    waiting, forwarding and reporting without torch."""
    import subprocess
    import sys

    from mmt_repro.execute import packed

    def start(member, threads):  # noqa: ARG001
        with open(member["log"], "ab") as out:
            return subprocess.Popen([sys.executable, "-c", FAKE.format(body=member["body"])], stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)

    monkeypatch.setattr(packed, "_start", start)
    monkeypatch.setattr(packed, "POLL_S", 0.05)
    return [{"job": {"paper": "p", "system": "s", "dataset": "d", "pair": "a-b", "seed": i}, "body": body,
             "log": str(tmp_path / f"m{i}.log")} for i, body in enumerate(bodies, 1)]


def test_the_job_waits_for_every_member_and_names_each_failed_ones_log(monkeypatch, tmp_path):
    members = _fake_members(monkeypatch, tmp_path, ["sys.exit(3)", "time.sleep(0.5)", "raise SystemExit(1)"])
    with pytest.raises(DataError) as err:
        run_packed(members, cores=3)
    message = str(err.value)
    assert "2 of 3 packed trainings failed" in message
    assert f"p.s d.a-b seed1 (status 3): see {members[0]['log']}" in message
    assert f"p.s d.a-b seed3 (status 1): see {members[2]['log']}" in message and members[1]["log"] not in message
    assert "the 1 that finished keep their .last.pt" in message
    assert Path(members[1]["log"]).read_text(encoding="utf-8") == "training\n"  # it ran to its end


def test_a_signal_reaches_every_member_and_the_job_exits_to_be_resumed(monkeypatch, tmp_path):
    import os
    import signal
    import threading

    members = _fake_members(monkeypatch, tmp_path, ["time.sleep(30)", "time.sleep(30)"])
    before = signal.getsignal(signal.SIGTERM)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))  # SLURM's time limit, to the job
    timer.start()
    with pytest.raises(SystemExit) as exc:
        run_packed(members, cores=2)
    timer.cancel()
    assert exc.value.code == 75
    for m in members:
        assert Path(m["log"]).read_text(encoding="utf-8") == "training\nsaved .last.pt\n"
    assert signal.getsignal(signal.SIGTERM) is before  # the job's own handler is gone again
