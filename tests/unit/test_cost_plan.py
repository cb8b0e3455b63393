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
from mmt_repro.plan import Plan, load_plan
from mmt_repro.plan_tools.cost import (ASSUMED, SPARE_RETRIES, MiB, attempts_for, calibration_entry, cost_plan,
                                       decode_step_s, family, mapped_stores, max_runtime_min,
                                       mean_length, retries_for, split_size, train_cost, train_mem_mb, train_retries,
                                       train_runtime, validation_sets, wordpieces)
from mmt_repro.plan_tools.cost_table import format_cost_plan
from mmt_repro.plan_tools.levers import suggested_buckets
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


def test_retries_follow_the_runtime_and_the_partition_cap():
    """Attempts = the estimate over the cap, rounded up; retries = attempts - 1 + 2 spare."""
    assert attempts_for(None, 1440) == 1 and retries_for(None, 1440) == SPARE_RETRIES == 2
    assert attempts_for(1440, 1440) == 1 and retries_for(1440, 1440) == 2
    assert attempts_for(1441, 1440) == 2 and retries_for(1441, 1440) == 3
    # 364 h x 1.25 + 10 min = 27,310 min: 19 attempts of 24 h, 10 of 48 h
    assert attempts_for(27310, 1440) == 19 and retries_for(27310, 1440) == 20
    assert attempts_for(27310, 2880) == 10 and retries_for(27310, 2880) == 11


@pytest.mark.parametrize("cap", [1440, 2880])
def test_training_retries_cover_the_attempts_of_the_longest_job(plan, cap):
    """A training longer than max_runtime_min resumes from .last.pt on each retry: under the
    SLURM profile's cap, train_model's retries give the plan's longest job (BertGen's 13-task
    run) the attempts its estimate needs plus two spare; on a workstation (no cap) the global
    --retries stay in force."""
    assert "retries: train_retries(PLAN)" in (REPO / "workflow" / "rules" / "train.smk").read_text()
    assert train_retries(plan) is None  # no max_runtime_min: Snakemake's own --retries
    profile = load_yaml(REPO / "workflow" / "profiles" / "slurm" / "config.yaml")["config"]
    assert profile["max_runtime_min"] == 2880
    capped = Plan({**load_yaml(REPO / "config" / "config.yaml"), **profile, "max_runtime_min": cap}, REPO)
    rows = cost_plan(capped, ["results/tables/all.tsv"])["rows"]
    worst = max(rows, key=lambda r: r["attempts"])
    assert worst["system"] == "bertgen" and worst["resumable"]
    assert worst["attempts"] == math.ceil(worst["estimate_min"] / cap) == {1440: 19, 2880: 10}[cap]
    assert train_retries(capped) == worst["attempts"] - 1 + 2 == {1440: 20, 2880: 11}[cap]


def test_bertgen_epoch_is_the_counted_unrolled_reference_task(plan):
    """One BertGen epoch = one example per target WordPiece + [STOP] of the reference task
    (Multi30k En->De): 29,000 sentences (manifest) + 553,329 German pieces (counted by
    benchmarks/bertgen_table1.py) = 582,329 steps of the 13-task run (batch 1 per task), and
    582,329 / 13 of a single-task run (batch 13); the grounded system's pieces are not counted:
    assumed, and said so."""
    (row,) = cost_plan(plan, ["results/models/bertgen/bertgen/multi30k.en-de.seed1.best.pt"], "h100")["rows"]
    assert row["updates"] == 45 * 582_329
    assert "582,329 unrolled, wordpieces" in row["updates_source"]
    single = train_cost(plan, plan.train_jobs.job(W(paper="bertgen", system="single_hybrid", dataset="multi30k",
                                                     pair="en-de", seed="1")), "h100")
    assert single["updates"] == 45 * math.ceil(582_329 / 13) == 45 * 44_795
    smoke = load_plan(REPO, [REPO / "config" / "smoke.yaml"])
    (grounded,) = cost_plan(smoke, ["results/models/bertgen/grounded/grounded.en-de.seed1.best.pt"], "h100")["rows"]
    n = grounded["examples"]
    assert grounded["size_source"] == "config" and "est" in grounded["updates_source"]
    assert f"{round(n * 16):,} unrolled, est" in grounded["updates_source"]  # 15 assumed pieces + [STOP]


def test_bertgen_levers_price_k_examples_per_task_beside_the_exact_run(plan, tmp_path):
    """The 13-task run's levers: exact (45 x 582,329 updates at the measured step), k = 8
    (45 x ceil(582,329 / 8) updates; the step at 8 examples is not measured, so between the
    1-example step and 8 times it), the CUDA-graph factor of the committed benchmark (2.74, one
    fixed shape) and the bucketed step, not measured (no figure). A config at batch_scale 4 plans
    its own updates and prices k = 4 beside the exact run."""
    report = cost_plan(plan, ["results/models/bertgen/bertgen/multi30k.en-de.seed1.best.pt"], "h100")
    (row,) = report["rows"]
    ms = _ms("bertgen.bertgen", "bf16")
    exact, k8, graphs, buckets = row["levers"]
    assert (exact["updates"], exact["train_h"]) == (45 * 582_329, (pytest.approx(row["train_h"]),) * 2)
    assert k8["lever"] == "k=8" and k8["updates"] == 45 * math.ceil(582_329 / 8) == 3_275_640
    assert k8["train_h"] == (pytest.approx(3_275_640 * ms / 3.6e6), pytest.approx(3_275_640 * 8 * ms / 3.6e6))
    assert k8["step_ms"] == (ms, 8 * ms) and "not measured at k" in k8["step_source"]
    assert graphs["step_ms"][0] == pytest.approx(ms / 2.74) and "one fixed shape, H200" in graphs["step_source"]
    assert buckets["train_h"] is None and buckets["step_source"].startswith("not measured")
    # the suggested buckets: the capped image rows (64 + [END] -> 72), then x1.5 up to the longest
    # MT row (150 + 150 pieces + 6 = 306 -> 312), multiples of 8
    assert "shape_buckets [72, 112, 168, 256, 312]" in buckets["what"]
    assert suggested_buckets({"image_seq_len": 0, "max_regions": 5}, {"max_len": 10}, True) == [16, 24, 32]  # 2 x 10 + 6 = 26
    assert suggested_buckets({}, {"max_len": 150}, False) == [16, 24, 40, 64, 96, 144, 216, 312]
    text = format_cost_plan(report)
    assert "BertGen step levers" in text and "3,275,640" in text and "26,204,805" in text
    assert "not measured: no GPU has run the bucketed step" in text
    assert "| buckets |" in format_cost_plan(report, markdown=True)
    assert cost_plan(plan, ["results/models/bertgen/bertgen/multi30k.en-de.seed1.best.pt"], "h100",
                     bertgen_k=2)["rows"][0]["levers"][1]["updates"] == 45 * math.ceil(582_329 / 2)
    overlay = tmp_path / "k4.yaml"
    overlay.write_text("papers:\n  bertgen:\n    overrides:\n      systems:\n        bertgen:\n"
                       "          train: {batch_scale: 4}\n")
    scaled = load_plan(REPO, [overlay])
    (row4,) = cost_plan(scaled, ["results/models/bertgen/bertgen/multi30k.en-de.seed1.best.pt"], "h100")["rows"]
    assert row4["updates"] == 45 * math.ceil(582_329 / 4) and row4["levers"][0]["updates"] == 45 * 582_329
    assert row4["levers"][1]["lever"] == "k=4" and row4["levers"][1]["updates"] == row4["updates"]
    # a single-task BertGen run and the other papers' runs get no levers
    single = train_cost(plan, plan.train_jobs.job(W(paper="bertgen", system="single_hybrid", dataset="multi30k",
                                                     pair="en-de", seed="1")), "h100")
    assert "levers" not in single


def test_wordpiece_counts_are_the_table1_record():
    """config/calibration/wordpieces.tsv holds the transcribed Table 1 counts: pieces =
    unrolled - sentences, task by task."""
    record = {}
    for line in (REPO / "reference/benchmarks/transcribed/bertgen_table1_counts.tsv").read_text().splitlines()[1:]:
        task, sents, _, unrolled, *_ = line.split("\t")
        record[task] = (int(sents.replace(",", "")), int(unrolled.replace(",", "")))
    tasks = {("multi30k", "en"): "Multi30k MMT DE->EN", ("multi30k", "fr"): "Multi30k MMT EN->FR",
             ("multi30k", "de"): "Multi30k MMT EN->DE", ("flickr30k_captions", "en"): "Flickr30k IC IM->EN",
             ("flickr30k_captions", "de"): "Flickr30k IC IM->DE (Multi30k task 2)"}
    plan = Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)
    for (dataset, lang), task in tasks.items():
        sents, unrolled = record[task]
        assert wordpieces(plan, dataset, "train", lang) == (sents, unrolled - sents)
    assert wordpieces(plan, "multi30k", "train", "cs") is None


def test_validation_decodes_every_set_at_the_reference_length(plan):
    """Validation = each validation set decoded once per epoch: ceil(sentences / val batch)
    batches of (mean reference length x 1.5 + 1) steps at the calibration's time per decoding
    step. BertGen's 13-task run decodes Multi30k En->De val (1,014) and the six MT tasks' sets:
    IWSLT'14 valid (7,283 published, x4) and newstest2016 + 2017 (3,000 + 3,007, x2)."""
    job = plan.train_jobs.job(W(paper="bertgen", system="bertgen", dataset="multi30k", pair="en-de", seed="1"))
    sets = validation_sets(plan, job)
    assert sets[0] == ("multi30k", "val", "de") and len(sets) == 7
    sizes = [split_size(plan, *s)[0] for s in sets]
    assert sizes == [1014, 7283, 7283, 7283, 7283, 6007, 6007] and sum(sizes) == 42_160
    assert mean_length(plan, "bertgen", "multi30k", "val", "de") == (553_329 / 29_000, "wordpieces")
    assert mean_length(plan, "bertgen", "iwslt14_de_en", "valid", "en") == (ASSUMED["target_tokens"], "est")
    entry = H100["models"]["bertgen.bertgen"]
    dec = entry["decode"]["greedy_fp32_tf32"]
    step_s = dec["seconds"] / (1 + dec["out_tokens"] / dec["sentences"])
    assert decode_step_s(entry, 1) == (pytest.approx(step_s), 64)
    lengths = [553_329 / 29_000] + [ASSUMED["target_tokens"]] * 6
    per_epoch = sum(math.ceil(n / 64) * (length * 1.5 + 1) * step_s for n, length in zip(sizes, lengths))
    row = train_cost(plan, job, "h100")
    assert row["val_sentences"] == 42_160 and row["val_source"] == "est/wordpieces"
    assert row["val_h"] == pytest.approx(45 * per_epoch / 3600)
    assert 2 < row["val_h"] < 10  # hours, where the random-weight decodes gave 0.01


def test_step_time_falls_back_by_model_family_across_papers(plan):
    """A system without its own measurement borrows the same registered model's, from any paper
    (Yang et al.'s DAMT baseline is Calixto et al.'s doubly-attentive model), then the same model
    module (Imagination is emb_pred.imag: emb_pred.ours, the visual one), then the same
    architecture family (the VATEX LSTMs: an RNN entry, never DeepFuse's Transformer); the table
    says which entry and how much a larger batch scales it."""
    def step(paper, system, dataset="multi30k", pair="en-de"):
        return train_cost(plan, plan.train_jobs.job(W(paper=paper, system=system, dataset=dataset, pair=pair,
                                                        seed="1")), "h100")

    damt = step("visual_agreement", "damt")
    assert damt["calibration_entry"] == "doubly_attentive.nmt_src_img"
    assert damt["step_source"] == "~doubly_attentive.nmt_src_img"
    assert damt["step_ms"] == _ms("doubly_attentive.nmt_src_img", "fp32_tf32")
    imagination = step("visual_agreement", "imagination")
    assert imagination["calibration_entry"] == "emb_pred.ours"
    assert step("visual_agreement", "t_onlytext")["calibration_entry"] == "visual_agreement.t_hard"
    assert step("emb_pred", "ours", pair="fr-en")["step_source"] == "measured"
    lstm = step("deepfuse", "lstm", "vatex", "en-zh")
    assert family(lstm["model"]) == "rnn" and family(H100["models"][lstm["calibration_entry"]]["model"]) == "rnn"
    assert lstm["calibration_entry"].startswith("doubly_attentive.")  # the nearest width (dec_dim 1024)
    assert lstm["step_source"].startswith(f"~{lstm['calibration_entry']} x") and lstm["step_source"].endswith("batch")
    cal = {"models": {"a.x": {"paper": "a", "model": "transformer.nmt", "config": {"d_model": 512},
                              "train": {"fp32": {"step_ms": {"median": 1.0}}}}}}
    assert calibration_entry(cal, "b", "y", "bertgen.bertgen") == (None, None, "none")  # no family: no figure
    assert calibration_entry(cal, "b", "y", "deepfuse.deepfuse")[2] == "~a.x"


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
