"""The job record (mmt_repro.execute.record): a job run by a rule writes the plan's code version
(the rule's `code` param, what Snakemake compares) instead of recomputing it; outside Snakemake it
is computed from the job's module closure."""

from __future__ import annotations

import json

import pytest

from mmt_repro.execute import run_job
from mmt_repro.execute.record import provenance
from mmt_repro.plan.jobs import ScoreJob
from mmt_repro.plan.version import JOB_CODE, code_version


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
    assert provenance(job)["code_version"] == code_version(*JOB_CODE["score"]) != "9.9.9+planned00000"


def test_without_a_plan_the_code_version_is_computed(tmp_path):
    job = _score_job(tmp_path)
    run_job(job.to_dict(), rule="score")
    record = json.loads((tmp_path / "score.json").read_text(encoding="utf-8"))
    assert record["provenance"]["code_version"] == code_version(*JOB_CODE["score"])
