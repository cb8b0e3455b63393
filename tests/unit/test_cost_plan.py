"""The cost plan (mmt_repro.plan_tools.cost, `python -m mmt_repro plan`) and train_model's SLURM
resources: hand-computable numbers, no torch, BertGen at its measured step time, and resources
that cover the feature stores a job maps and its estimated runtime (or resume by retry)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import load_yaml
from mmt_repro.plan import Plan
from mmt_repro.plan_tools.cost import (MiB, cost_plan, format_cost_plan, mapped_stores, max_runtime_min, train_cost,
                                       train_mem_mb, train_retries, train_runtime)
from mmt_repro.plan_tools.walk import training_runs

REPO = Path(__file__).resolve().parents[2]
H100 = json.loads((REPO / "config" / "calibration" / "h100.json").read_text())


@pytest.fixture()
def plan(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no results/ here: sizes from the manifest and the config
    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


def _ms(entry, prec):
    return H100["models"][entry]["train"][prec]["step_ms"]["median"]


def test_updates_times_step_time_is_the_hours(plan):
    """Hirasawa's Ours on Multi30k: 29,000 pairs (manifest) / 64 a batch = 454 updates an epoch,
    100 epochs, at the H100's measured fp32/TF32 step time."""
    report = cost_plan(plan, ["results/models/emb_pred/ours/multi30k.fr-en.seed1.best.pt"], "h100")
    (row,) = report["rows"]
    assert (row["examples"], row["size_source"]) == (29000, "manifest")
    assert row["updates"] == 100 * math.ceil(29000 / 64) == 45400
    assert row["step_source"] == "measured" and row["step_ms"] == _ms("emb_pred.ours", "fp32_tf32")
    assert row["train_h"] == pytest.approx(45400 * _ms("emb_pred.ours", "fp32_tf32") / 3.6e6)
    assert row["hours"] == pytest.approx(row["train_h"] + row["val_h"])
    assert report["total_hours"] == pytest.approx(row["hours"])
    assert row["peak_gib"] == H100["models"]["emb_pred.ours"]["train"]["fp32_tf32"]["peak_mem_gib"]
    text = format_cost_plan(report)
    assert "45,400 (100 ep x 454)" in text and "(measured, tf32)" in text and "= total" in text


def test_bertgen_runs_at_its_measured_launch_bound_step(plan):
    report = cost_plan(plan, ["results/models/bertgen/bertgen/multi30k.en-de.seed1.best.pt"], "h100")
    (row,) = report["rows"]
    ms = _ms("bertgen.bertgen", "bf16")  # amp: true; ~50 ms per 13-task step, not an MFU guess
    assert 40 < ms < 60 and row["step_ms"] == ms and row["step_source"] == "measured"
    assert row["precision"] == "bf16"
    # one step per unrolled target token of the reference task (batch 1 per task), 45 epochs
    assert row["updates"] % 45 == 0 and row["updates"] > 45 * 29000
    assert row["train_h"] == pytest.approx(row["updates"] * ms / 3.6e6)


def test_the_walk_finds_pretraining_and_the_cost_plan_never_imports_torch(plan):
    runs, deps = training_runs(plan, ["results/tables/doubly_attentive/table1.tsv"])
    systems = {w.system for w in runs}
    assert {"nmt_pre_wmt", "nmt_pre_bt", "bt_reverse", "nmt_src_img_bt"} <= systems
    assert ("doubly_attentive", "nmt_pre_bt", "multi30k", "en-de", 1) in deps[
        ("doubly_attentive", "nmt_bt", "multi30k", "en-de", 1)]
    code = ("import sys, time; t = time.time(); from mmt_repro.cli import main; "
            "main(['plan', 'results/tables/all.tsv']); print(time.time() - t, 'torch' in sys.modules)")
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert time.monotonic() - t0 < 30  # ~3 s on an idle core (README)
    assert out.split()[-1] == "False"
    assert "bertgen" in out and "= total" in out


@pytest.mark.parametrize("system,paper,pair", [("ours", "emb_pred", "fr-en"), ("bertgen", "bertgen", "en-de")])
def test_slurm_resources_cover_the_stores_and_the_runtime(plan, tmp_path, system, paper, pair):
    w = W(paper=paper, system=system, dataset="multi30k", pair=pair, seed="1")
    job = plan.train_jobs.job(w)
    stores = mapped_stores(plan, job)
    assert stores and all(f.startswith("results/features/") for f in stores)
    # a store on disk counts with its real size (a sparse 3 GB file)
    on_disk = tmp_path / next(iter(stores))
    on_disk.parent.mkdir(parents=True)
    with open(on_disk, "wb") as f:
        f.truncate(3 * 1024**3)
    fresh = Plan(plan.config, REPO)
    cost = train_cost(fresh, fresh.train_jobs.job(w))
    assert cost["stores"][next(iter(stores))] == 3 * 1024**3
    mem_mb = train_mem_mb(fresh, w)
    assert mem_mb * MiB >= sum(cost["stores"].values()) + cost["params"] * 4
    runtime = train_runtime(fresh, w)
    assert runtime <= max_runtime_min(fresh)
    if runtime < cost["estimate_min"]:  # capped: the run resumes from .last.pt on retries
        assert runtime == max_runtime_min(fresh) and job.last.endswith(".last.pt")
        assert cost["attempts"] * runtime >= cost["estimate_min"]
    else:
        assert runtime >= cost["hours"] * 60


def test_training_retries_cover_the_attempts_of_the_longest_job(plan):
    """A training longer than max_runtime_min resumes from .last.pt on each retry: under the
    SLURM profile's cap, train_model's retries give every planned job the attempts the cost plan
    says it needs; on a workstation (no cap) the global --retries stay in force."""
    from mmt_repro.plan_tools.cost import TRAIN_RETRIES_CAPPED

    assert "retries: train_retries(PLAN)" in (REPO / "workflow" / "rules" / "train.smk").read_text()
    assert train_retries(plan) is None  # no max_runtime_min: Snakemake's own --retries
    profile = load_yaml(REPO / "workflow" / "profiles" / "slurm" / "config.yaml")["config"]
    capped = Plan({**load_yaml(REPO / "config" / "config.yaml"), **profile}, REPO)
    assert train_retries(capped) == TRAIN_RETRIES_CAPPED
    rows = cost_plan(capped, ["results/tables/all.tsv"])["rows"]
    worst = max(rows, key=lambda r: r["attempts"])
    assert worst["system"] == "bertgen" and worst["attempts"] >= 2 and worst["resumable"]
    assert TRAIN_RETRIES_CAPPED + 1 >= worst["attempts"] + 2  # and two spare for failures of another kind


def test_trainings_go_after_the_short_jobs_and_a_begun_one_before_new_ones(plan, tmp_path):
    """train_model's priority is below every other rule's default 0: -1 for a run whose .last.pt
    exists (relative to the run folder, Snakemake's working directory), -2 otherwise, so a re-run
    on fewer cores than jobs does the data, decoding and scoring first and resumes what it had
    begun before it starts a new seed."""
    assert "priority: PLAN.train_jobs.priority" in (REPO / "workflow" / "rules" / "train.smk").read_text()
    for rules in (REPO / "workflow" / "rules").glob("*.smk"):  # no other rule sets a priority
        assert rules.name == "train.smk" or "priority:" not in rules.read_text(), rules.name
    seed1, seed2 = (W(paper="emb_pred", system="nmt_pre", dataset="multi30k", pair="fr-en", seed=s)
                    for s in ("1", "2"))
    assert plan.train_jobs.priority(seed1) == plan.train_jobs.priority(seed2) == -2
    last = tmp_path / "results" / "models" / "emb_pred" / "nmt_pre" / "multi30k.fr-en.seed1.last.pt"
    last.parent.mkdir(parents=True)
    last.write_bytes(b"")
    assert (plan.train_jobs.priority(seed1), plan.train_jobs.priority(seed2)) == (-1, -2)
    # the trainer's file name: the checkpoint it resumes from is the one the priority looks for
    assert plan.train_jobs.job(seed1).last == "results/models/emb_pred/nmt_pre/multi30k.fr-en.seed1.last.pt"
