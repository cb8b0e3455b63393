"""Unknown names through Snakemake (`snakemake -n`): a mistyped table in a requested target, or a
mistyped feature set in a config overlay, stops planning with the plan's one-paragraph message
(the name, "did you mean", the valid names) and no Python traceback. The messages themselves are
unit-tested on the plan (tests/unit/test_unknown_names.py)."""

from __future__ import annotations


def test_an_unknown_table_stops_the_dry_run_without_a_traceback(wf, tmp_path):
    res = wf.snakemake("-n", "results/tables/doubly_attentive/table9.tsv", "--directory", str(tmp_path), timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert ("mmt-repro: unknown table 'table9' in paper doubly_attentive (papers.doubly_attentive.tables of the "
            "config). Did you mean 'table1'? Valid: commute, figure2, grounded, image_use, table1.") in out, out[-3000:]
    assert "Traceback" not in out and "KeyError" not in out and "InputFunctionException" not in out


def test_a_mistyped_feature_set_stops_the_dry_run_without_a_traceback(wf, tmp_path):
    overlay = tmp_path / "typo.yaml"
    overlay.write_text("papers:\n  doubly_attentive:\n    tables:\n      table1: {features: resnet50-res4F}\n",
                       encoding="utf-8")
    res = wf.snakemake("-n", "results/tables/doubly_attentive/table1.tsv", "--directory", str(tmp_path),
                       "--configfile", str(overlay), timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert "mmt-repro: unknown feature set 'resnet50-res4F' in papers.doubly_attentive.tables.table1.features" in out
    assert "Did you mean 'resnet50-res4f'" in out and "several feature sets" not in out
    assert "Traceback" not in out


def test_a_wrong_typed_override_stops_the_dry_run_at_planning_without_a_traceback(wf, tmp_path):
    """The preflight (mmt_repro.plan_tools.preflight) runs before the DAG: a wrong type in an override
    is named by its key path in a dry run, not at the start of a real run or inside a job."""
    overlay = tmp_path / "typo.yaml"
    overlay.write_text("papers:\n  doubly_attentive:\n    overrides:\n      systems:\n"
                       "        nmt: {model_config: {emb_dim: big}}\n", encoding="utf-8")
    res = wf.snakemake("-n", "results/tables/doubly_attentive/grounded.tsv", "--directory", str(tmp_path),
                       "--configfile", str(overlay), timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert ("mmt-repro: papers.doubly_attentive.overrides.systems.nmt.model_config.emb_dim: 'big' is not of type "
            "int") in out, out[-3000:]
    assert "Traceback" not in out and "Building DAG" not in out
