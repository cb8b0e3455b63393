"""The workflow on a real SLURM cluster (single node, set up by tests/slurm_cluster.py):

- the reduced smoke DAG submitted through tests/slurm_profile: every non-local job goes through
  sbatch, and results/tables/all.tsv, the translations and the weights are identical to the
  same DAG run locally (this is the suite's determinism check);
- a training job cancelled with scancel mid-way resumes from its .last.pt when the workflow is
  re-run with --rerun-incomplete, and ends with exactly the weights of an uninterrupted run;
- Snakemake deletes a failed job's outputs (best.pt, curve.tsv) and the resumed trainer
  restores them (no cluster needed for that one).

Snakemake ignores SIGTERM while it waits for cluster jobs, so every run here has a timeout that
ends it with SIGKILL (subprocess' timeout, or Popen.kill), like ``timeout -s KILL`` in CI.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import torch


SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")
REMOTE_RULE = re.compile(r"^rule (\w+):", re.MULTILINE)  # local jobs print "localrule <name>:"
TRAIN = "results/models/doubly_attentive/nmt/grounded.en-de.seed1"  # + .best.pt, .last.pt, .curve.tsv
TRAIN_LOG = "results/logs/train_model/doubly_attentive/nmt/grounded.en-de.seed1.log"
SLURM_TIMEOUT = 900  # seconds for the whole reduced DAG through SLURM (~3 min on 2 free cores)


def slurm_args(wf) -> list[str]:
    # --max-threads: a rule's threads become --cpus-per-task; the same thread count as the local
    # run's --cores keeps the numbers identical (see THREADS in conftest.py).
    return ["--profile", str(wf.SLURM_PROFILE), "--max-threads", str(wf.THREADS)]


@pytest.fixture(scope="module")
def slurm_run(wf, slurm_cluster, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("reduced_slurm")
    started = time.monotonic()
    res = wf.snakemake(*wf.reduced_args(workdir, "results/tables/all.tsv"), *slurm_args(wf),
                       env=slurm_cluster.env, timeout=SLURM_TIMEOUT)
    seconds = time.monotonic() - started
    out = res.stdout + res.stderr
    if res.returncode != 0:
        pytest.fail(f"reduced smoke run through SLURM failed:\n{wf.failure_report(res, workdir)}\n{slurm_cluster.logs()}")
    print(f"\nreduced smoke run through SLURM: {seconds:.0f} s, {len(SUBMITTED.findall(out))} sbatch jobs")
    yield workdir, out
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.slurm
def test_every_job_went_through_sbatch(wf, slurm_run, slurm_cluster):
    workdir, out = slurm_run
    submitted = SUBMITTED.findall(out)
    remote_jobs = REMOTE_RULE.findall(out)
    assert submitted, f"no job was submitted with sbatch:\n{out[-3000:]}"
    assert len(submitted) == len(remote_jobs), f"{len(remote_jobs)} non-local jobs, {len(submitted)} sbatch submissions"
    ids = [int(slurm_id) for _, slurm_id, _ in submitted]
    assert len(set(ids)) == len(ids)
    logdir = workdir / ".snakemake" / "slurm_logs"
    rules = set()
    for _, slurm_id, log in submitted:
        log = Path(log)
        assert log.is_relative_to(logdir) and log.name == f"{slurm_id}.log", log
        text = log.read_text(errors="replace")
        assert "Finished jobid" in text, f"{log} does not show the job finishing:\n{text[-2000:]}"
        rules.add(log.relative_to(logdir).parts[0].removeprefix("rule_"))
    assert rules == set(remote_jobs), f"rules with a SLURM log {sorted(rules)} != non-local rules {sorted(set(remote_jobs))}"
    for heavy in ("generate_grounded", "extract_features", "train_model", "translate", "score"):
        assert heavy in rules, f"{heavy} did not run through SLURM"
    # SLURM itself knows the jobs (finished ones stay visible for MinJobAge=300 s) ...
    known = {int(j["id"]): j["state"] for j in slurm_cluster.jobs()}
    recent = [i for i in ids if i in known]
    assert recent and all(known[i] == "COMPLETED" for i in recent), known
    # ... and training ran with the local run's thread count (--cpus-per-task = the rule's threads:
    # the config's threads.train, capped by --max-threads; Snakemake prints it when over 1)
    train_log = next(Path(log) for _, _, log in submitted if "rule_train_model" in log).read_text()
    expected = min(int(wf.smoke_config()["threads"]["train"]), wf.THREADS)
    printed = re.findall(r"threads: (\d+)", train_log)
    assert set(printed) <= {str(expected)} and (expected == 1 or printed), train_log[-2000:]


@pytest.mark.slurm
def test_slurm_run_is_byte_identical_to_the_local_run(slurm_run, reduced_local_run):
    """The determinism check: two runs of the reduced DAG with the same seeds, one local and one
    through SLURM (other processes, other scheduling), give byte-identical tables and
    translations and identical model weights."""
    workdir, _ = slurm_run
    ours = workdir / "results" / "tables" / "all.tsv"
    local = reduced_local_run / "results" / "tables" / "all.tsv"
    a = pd.read_csv(local, sep="\t", keep_default_na=False)
    b = pd.read_csv(ours, sep="\t", keep_default_na=False)
    assert len(a) > 0 and list(a.columns) == list(b.columns)
    diff = a.compare(b) if a.shape == b.shape else f"shapes {a.shape} vs {b.shape}"
    assert local.read_bytes() == ours.read_bytes(), f"SLURM and local all.tsv differ:\n{diff}"
    for hyp in sorted((reduced_local_run / "results" / "translations").rglob("*.txt")):
        other = workdir / hyp.relative_to(reduced_local_run)
        assert other.read_bytes() == hyp.read_bytes(), f"{other} differs from the local run's {hyp}"
    models = sorted((reduced_local_run / "results" / "models").rglob("*.best.pt"))
    assert models
    for model in models:
        a, b = weights(model), weights(workdir / model.relative_to(reduced_local_run))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), model.relative_to(reduced_local_run)


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=False)["weights"]


@pytest.mark.slurm
def test_cancelled_training_resumes_with_identical_weights(wf, slurm_cluster, reduced_local_run, tmp_path):
    # The local run's inputs (text, vocabularies) with their Snakemake metadata; only the
    # text-only model is trained again, through SLURM.
    workdir = tmp_path / "kill"
    shutil.copytree(reduced_local_run, workdir, symlinks=True, ignore=shutil.ignore_patterns("locks"))
    for suffix in (".best.pt", ".last.pt", ".curve.tsv"):
        (workdir / f"{TRAIN}{suffix}").unlink()
    (workdir / TRAIN_LOG).unlink()
    last = workdir / f"{TRAIN}.last.pt"
    args = [f"{TRAIN}.best.pt", *slurm_args(wf), "--directory", str(workdir), "--configfile", str(wf.SMOKE),
            str(workdir / "reduced.yaml")]
    out = tmp_path / "first.out"

    with open(out, "w") as fh:
        first = subprocess.Popen([*wf.SNAKEMAKE, "--snakefile", str(wf.REPO / "Snakefile"), *args], cwd=wf.REPO,
                                 env=dict(slurm_cluster.env, PYTHONUNBUFFERED="1"), stdout=fh, stderr=subprocess.STDOUT)
        try:
            job_id = cancel_after_checkpoint(slurm_cluster, last, out, first)
            first.wait(timeout=180)  # it sees CANCELLED at its next squeue poll and stops
        finally:
            if first.poll() is None:
                first.kill()  # SIGKILL: Snakemake ignores SIGTERM while waiting for cluster jobs
                first.wait()
    text = out.read_text()
    assert first.returncode != 0, f"the cancelled run should fail:\n{text[-3000:]}"
    assert f"SLURM-job '{job_id}' failed" in text and "CANCELLED" in text, text[-3000:]
    assert last.exists(), "the resumable checkpoint must survive the failed job"
    cancelled = torch.load(last, map_location="cpu", weights_only=False)["progress"]
    assert not cancelled["done"], f"training finished before the cancel arrived: {cancelled}"

    res = wf.snakemake(*args, "--rerun-incomplete", env=slurm_cluster.env, timeout=300)
    assert res.returncode == 0, wf.failure_report(res, workdir)
    assert int(SUBMITTED.search(res.stdout + res.stderr).group(2)) > int(job_id)
    log = (workdir / TRAIN_LOG).read_text()
    assert "resuming from" in log, log[-3000:]
    resumed = log.split("resuming from", 1)[1].splitlines()[0]
    assert f"step {cancelled['step']}" in resumed, resumed
    print(f"\ncancelled SLURM job {job_id} at step {cancelled['step']}; re-run: resuming from{resumed}")

    # Same weights as the uninterrupted local run, in the last and the best checkpoint.
    for suffix in (".last.pt", ".best.pt"):
        ours, full = weights(workdir / f"{TRAIN}{suffix}"), weights(reduced_local_run / f"{TRAIN}{suffix}")
        assert ours.keys() == full.keys()
        for name in full:
            assert torch.equal(ours[name], full[name]), f"{name} of {suffix} differs after the resume"


def cancel_after_checkpoint(cluster, last: Path, out: Path, proc: subprocess.Popen, timeout: float = 240) -> str:
    """Wait until the training job has written .last.pt, then scancel it; returns its job id."""
    deadline = time.monotonic() + timeout
    job_id = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"snakemake ended before the cancel ({proc.returncode}):\n{out.read_text()[-3000:]}")
        if job_id is None:
            match = SUBMITTED.search(out.read_text())
            job_id = match.group(2) if match else None
        if job_id is not None and last.exists():
            cluster.run("scancel", job_id)
            return job_id
        time.sleep(0.1)
    pytest.fail(f"no training checkpoint {last} after {timeout} s:\n{out.read_text()[-3000:]}")


def test_resume_restores_the_outputs_snakemake_deleted(toy_corpus, tmp_path):
    """Snakemake removes the outputs of a failed job before re-running it (best.pt, curve.tsv),
    but not .last.pt: a re-run that finds training finished (or that never beats the best
    validation score again) must still leave the best checkpoint and the curve."""
    import dataclasses

    from mmt_repro.train.trainer import train
    from training_jobs import corpus_inputs, train_job

    job = train_job(tmp_path, "doubly_attentive.nmt_src_img",
                    dict(emb_dim=16, enc_dim=16, dec_dim=24, att_dim=16, img_dim=4, img_att_dim=8),
                    dict(optimizer="adam", lr=0.01, batch_size=8, max_epochs=2, log_every=0, seed=7),
                    corpus_inputs(toy_corpus["dir"], toy_corpus["stores"]))
    job = dataclasses.replace(job, best=str(tmp_path / "m.best.pt"), last=str(tmp_path / "m.last.pt"),
                              curve=str(tmp_path / "m.curve.tsv"))  # the workflow's names
    first = train(job, code="train:000000000001")
    best, curve = weights(tmp_path / "m.best.pt"), (tmp_path / "m.curve.tsv").read_text()
    (tmp_path / "m.best.pt").unlink()  # what Snakemake does to a failed job's outputs
    (tmp_path / "m.curve.tsv").unlink()
    again = train(job, code="train:000000000002")  # a re-run for new code
    assert again["steps"] == first["steps"]  # nothing trained twice
    # the summary (and so the job record) says which code trained the weights, and that this run restored them
    assert (first["trained_by_code"], first["restored"]) == (["train:000000000001"], False)
    assert (again["trained_by_code"], again["restored"]) == (["train:000000000001"], True)
    restored = weights(tmp_path / "m.best.pt")
    assert all(torch.equal(restored[k], best[k]) for k in best)
    assert (tmp_path / "m.curve.tsv").read_text() == curve
