"""Unknown names (paper, table, system, dataset, feature set), asked of the plan: one paragraph
naming the name, "did you mean" the closest valid ones and every valid one, raised as the
package's user error (mmt_repro.io.UnknownNameError, a DataError) at once, not as a KeyError or
another problem later. The Snakemake side (no traceback) is tests/workflow/test_unknown_names_workflow.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import deep_update, load_yaml
from mmt_repro.io import DataError, UnknownNameError, unknown_name
from mmt_repro.plan import PATHS, Plan

REPO = Path(__file__).resolve().parents[2]
RUN = dict(dataset="multi30k", pair="en-de", seed="1")


@pytest.fixture(scope="module")
def base():
    return load_yaml(REPO / "config" / "config.yaml")


@pytest.fixture(scope="module")
def full(base):
    return Plan(base, REPO)


def one_paragraph(err: Exception) -> str:
    text = str(err)
    assert "\n\n" not in text and "Traceback" not in text
    return text


def test_the_message_names_the_name_the_closest_and_every_valid_one():
    err = unknown_name("table", "tabel1", ["table2", "table1", "figure2"], "paper toy")
    assert isinstance(err, DataError) and isinstance(err, ValueError)
    assert one_paragraph(err) == ("unknown table 'tabel1' in paper toy. Did you mean 'table1' or 'table2'? "
                                  "Valid: figure2, table1, table2.")
    assert "Did you mean" not in str(unknown_name("paper", "zzz", ["bertgen", "deepfuse"]))
    assert str(unknown_name("system", "x", [])) == "unknown system 'x'. None is configured."


def test_unknown_table_names_the_paper_and_its_tables(full):
    with pytest.raises(UnknownNameError) as exc:
        full.table_jobs.job(W(paper="doubly_attentive", table="table9"))
    text = one_paragraph(exc.value)
    assert text.startswith("unknown table 'table9' in paper doubly_attentive")
    assert "Did you mean 'table1'?" in text and text.endswith("Valid: commute, figure2, grounded, image_use, table1.")


def test_unknown_paper_names_the_configured_papers(full):
    for ask in (lambda: full.table_jobs.job(W(paper="doubly_atentive", table="table1")),
                lambda: full.train_jobs.job(W(paper="doubly_atentive", system="nmt", **RUN)),
                lambda: full.recipe("doubly_atentive")):
        with pytest.raises(UnknownNameError) as exc:
            ask()
        text = one_paragraph(exc.value)
        assert text.startswith("unknown paper 'doubly_atentive'") and "Did you mean 'doubly_attentive'?" in text
        assert "Valid: bertgen, deepfuse, doubly_attentive, emb_pred, visual_agreement." in text


def test_unknown_system_names_the_papers_systems(full):
    with pytest.raises(UnknownNameError) as exc:
        full.train_jobs.job(W(paper="doubly_attentive", system="nmt_srcimg", **RUN))
    text = one_paragraph(exc.value)
    assert text.startswith("unknown system 'nmt_srcimg' in paper doubly_attentive (systems in ")
    assert "Did you mean 'nmt_src_img'" in text and "Valid: bt_reverse, nmt, nmt_bt," in text


def test_a_mistyped_feature_set_of_a_table_stops_planning_naming_it(base):
    config = deep_update(base, {"papers": {"doubly_attentive": {"tables": {"table1": {"features": "resnet50-res4F"}}}}})
    with pytest.raises(UnknownNameError) as exc:
        Plan(config, REPO)
    text = one_paragraph(exc.value)
    assert text.startswith("unknown feature set 'resnet50-res4F' in papers.doubly_attentive.tables.table1.features")
    assert "Did you mean 'resnet50-res4f'" in text and "Valid: butd-obj36, butd-regions, resnet50-pool5, " in text
    assert "several feature sets" not in text


def test_a_text_only_table_may_keep_an_unconfigured_feature_set():
    """config/cpu_vatex.yaml: a text-only table on a dataset without feature sets."""
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(REPO / "config" / "cpu_vatex.yaml"))
    Plan(config, REPO)


@pytest.mark.parametrize("key,value,start", [
    ("systems", ["nmt", "nmt_src_imgg"], "unknown system 'nmt_src_imgg' in papers.doubly_attentive.tables.table1"),
    ("dataset", "multi31k", "unknown dataset 'multi31k' in papers.doubly_attentive.tables.table1.dataset"),
])
def test_a_mistyped_table_system_or_dataset_stops_planning(base, key, value, start):
    config = deep_update(base, {"papers": {"doubly_attentive": {"tables": {"table1": {key: value}}}}})
    with pytest.raises(UnknownNameError) as exc:
        Plan(config, REPO)
    assert one_paragraph(exc.value).startswith(start)


@pytest.mark.parametrize("target,start", [
    ("results/tables/doubly_attentive/table9.tsv", "unknown table 'table9'"),
    ("results/tables/doubly_atentive/table1.tsv", "unknown paper 'doubly_atentive'"),
    ("results/figures/doubly_attentive/table9.scores.png", "unknown table 'table9'"),
    ("results/models/doubly_attentive/nmt_srcimg/multi30k.en-de.seed1.best.pt", "unknown system 'nmt_srcimg'"),
    ("results/translations/doubly_attentive/nmt/multi31k.test_2016_flickr.en-de.seed1.congruent.txt",
     "unknown dataset 'multi31k'"),
    ("results/features/multi30k/resnet50-res4ff.std/train.npy", "unknown feature set 'resnet50-res4ff'"),
])
def test_a_requested_target_with_an_unknown_name_is_refused(full, target, start):
    with pytest.raises(UnknownNameError) as exc:
        full.targets.check_targets(["results/tables/all.tsv", target])
    assert one_paragraph(exc.value).startswith(start)


def test_every_target_the_workflow_builds_passes(full, base):
    smoke = Plan(deep_update(base, load_yaml(REPO / "config" / "smoke.yaml")), REPO)
    for plan in (full, smoke):
        plan.targets.check_targets(plan.targets.default_targets())
        plan.targets.check_targets(plan.targets.all_tables())
    job = full.train_jobs.job(W(paper="doubly_attentive", system="nmt_src_img", **RUN))
    full.targets.check_targets([*job.files().values(), job.best, job.record])
    full.targets.check_targets([
        "all", "results/tables/all.tsv", "results/data/stats.tsv", "./results/tables/doubly_attentive/table1.tsv",
        "results/figures/doubly_attentive/figure2.attention.png",
        "results/features/multi30k/resnet50-res4f/train.index.parquet",
        "results/translations/doubly_attentive/nmt/multi30k.test_2016_flickr.en-de.seed1.congruent.txt",
        "results/somewhere/else.txt",  # no template: left to Snakemake
    ])
    assert "table" in PATHS and "model" in PATHS  # the templates the check reads
