"""The job record (mmt_repro.execute.record): a job run by a rule writes the plan's code version
(the rule's `code` param, what Snakemake compares) instead of recomputing it; outside Snakemake it
is computed from the job's module closure."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mmt_repro.execute import run_job
from mmt_repro.execute.record import provenance
from mmt_repro.plan.jobs import ScoreJob
from mmt_repro.plan_tools.version import code_param, code_version


def _score_job(tmp_path) -> ScoreJob:
    (tmp_path / "hyp.txt").write_text("a small red circle .\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("a small red circle .\n", encoding="utf-8")
    return ScoreJob(
        meta={"paper": "p", "table": "t", "system": "s", "pair": "en-de", "test_set": "test", "seed": 1,
              "condition": "congruent"},
        scoring={"metrics": ["bleu"], "tokenize": "none", "bleu_compat": "multi-bleu", "meteor_lang": "en",
                 "meteor_norm": False, "ter_lowercase": False},
        ref_subword="none", meteor_jar=None,
        inputs={"hyp": str(tmp_path / "hyp.txt"), "decode_stats": None, "ref": [str(tmp_path / "ref.txt")]},
        out=str(tmp_path / "score.json"),
    )


def test_a_rule_job_records_the_plans_code_version(tmp_path):
    job = _score_job(tmp_path)
    run_job(job.to_dict(), rule="score", code="9.9.9+planned00000")
    record = json.loads((tmp_path / "score.json").read_text(encoding="utf-8"))
    assert record["provenance"]["code_version"] == "9.9.9+planned00000"
    assert record["scores"]["bleu"]["value"] == pytest.approx(100.0)
    # the planned version is the job's alone: the next provenance (no rule) computes it
    assert provenance(job)["code_version"] == code_version("score") != "9.9.9+planned00000"


def test_without_a_plan_the_code_version_is_computed(tmp_path):
    job = _score_job(tmp_path)
    run_job(job.to_dict(), rule="score")
    record = json.loads((tmp_path / "score.json").read_text(encoding="utf-8"))
    assert record["provenance"]["code_version"] == code_version("score")


def test_a_job_starts_without_the_planning_layer(tmp_path):
    """A rule's job rebuilds its job object (plan.jobs, stdlib only) and runs: the plan's other
    parts, the config schema (jsonschema) and pandas are not imported (0.4 s of every job)."""
    job = _score_job(tmp_path)
    code = ("import json, sys; from mmt_repro.execute import run_job;"
            f"run_job(json.loads({json.dumps(json.dumps(job.to_dict()))}), rule='score', code='0+planned');"
            "heavy = ['mmt_repro.plan.whole', 'mmt_repro.plan.lookup', 'mmt_repro.settings', 'jsonschema', 'pandas'];"
            "print(json.dumps([m for m in heavy if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
    assert json.loads((tmp_path / "score.json").read_text())["scores"]["bleu"]["value"] == pytest.approx(100.0)


def test_a_training_outside_snakemake_records_its_own_models_code_version():
    """A training run without a rule (benchmarks/gpu_paper_run.py) records what train_model's
    `code` param would be: the training stage's modules and its own model's, not every model's."""
    from pathlib import Path
    from types import SimpleNamespace as W

    from mmt_repro.config import load_yaml
    from mmt_repro.plan import Plan

    repo = Path(__file__).resolve().parents[2]
    w = W(paper="emb_pred", system="nmt", dataset="multi30k", pair="fr-en", seed="1")
    plan = Plan(load_yaml(repo / "config" / "config.yaml"), repo)
    job = plan.train_jobs.job(w)
    assert provenance(job)["code_version"] == code_param(plan, "train")(w) == code_version("train", "emb_pred.nmt")
    assert provenance(job)["code_version"] != code_version("train", "bertgen.bertgen")


def test_a_decoding_outside_snakemake_finds_its_model_in_the_training_record(tmp_path):
    """A translate job names a checkpoint, not a model: the model is read from the training's
    job record beside it (torch-free)."""
    from mmt_repro.execute.record import _code_version
    from mmt_repro.plan.jobs import TranslateJob

    stem = tmp_path / "m.seed1"
    (tmp_path / "m.seed1.job.json").write_text(json.dumps({"job": {"model": "deepfuse.deepfuse"}}))
    job = TranslateJob(paper="deepfuse", system="x", dataset="d", split="test", pair="en-zh", seed=1,
                       condition="congruent", checkpoint=f"{stem}.best.pt", direction="forward", decode={},
                       subword="none", shuffle_seed=None, inputs={}, out="o", stats=None, device="cpu")
    assert _code_version(job) == code_version("translate", "deepfuse.deepfuse", "deepfuse")
    assert _code_version(job) != code_version("translate", "emb_pred.nmt", "deepfuse")
