"""config/published_features.yaml: Calixto et al.'s and Hirasawa et al.'s image systems on pysimt's
published ResNet-50 release (manifest multi30k_features_resnet50) instead of features extracted from
the request-only Flickr30k images. Planning only: torch-free, no file is read but the config."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import deep_update, load_yaml
from mmt_repro.plan import Plan
from mmt_repro.plan_tools.listing import catalogue, format_catalogue
from mmt_repro.plan_tools.needs import NeedsWalk, input_problems, media_problems

REPO = Path(__file__).resolve().parents[2]
OVERLAY = REPO / "config" / "published_features.yaml"
TABLES = {("doubly_attentive", "table1"): "pysimt-res5c", ("doubly_attentive", "figure2"): "pysimt-res5c",
          ("emb_pred", "table1"): "pysimt-pool5", ("emb_pred", "table2"): "pysimt-pool5",
          ("emb_pred", "table3"): "pysimt-pool5", ("emb_pred", "figure1"): "pysimt-pool5"}
RELEASE = "resources/multi30k_features_resnet50/multi30k_resnet50_features.tar.bz2"


@pytest.fixture(scope="module")
def plan():
    return Plan(deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(OVERLAY)), REPO)


@pytest.fixture(scope="module")
def full():
    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


def test_the_image_rows_are_runnable_without_the_images_and_name_the_release(plan, full):
    rows = {(r["paper"], r["table"]): r for r in catalogue(plan)}
    for key, feature_set in TABLES.items():
        row = rows[key]
        assert row["configured"], key
        assert [n["need"] for n in row["needs"]] == [f"pretrained features {feature_set}"], key
        assert row["needs"][0]["input"] == "multi30k_features_resnet50"
    text = format_catalogue(catalogue(plan, "doubly_attentive"))
    assert "  table1           ready " in text and "needs images" not in text
    assert ("needs pretrained features pysimt-res5c: set (datasets.multi30k.features.pysimt-res5c.src; "
            "published release multi30k_features_resnet50)") in text
    # the full config alone is unchanged: those rows still need the Flickr30k images
    default = {(r["paper"], r["table"]): r for r in catalogue(full)}
    assert all(not default[k]["configured"] and default[k]["needs"][0]["key"] == "datasets.multi30k.images"
               for k in TABLES)


def test_the_planned_inputs_are_the_release_not_the_images(plan):
    targets = [f"results/tables/{p}/{t}.tsv" for p, t in TABLES]
    needs = NeedsWalk(plan, REPO / "no-such-run-folder").walk(targets)
    assert needs.problems == []
    assert set(needs.media) == {("multi30k", "pysimt-res5c"), ("multi30k", "pysimt-pool5")}
    assert "multi30k_resnet50_features.tar.bz2" in needs.files["multi30k_features_resnet50"]
    assert "flickr30k_images" not in needs.files
    assert media_problems(plan, needs) == [] and input_problems(plan, needs) == []


def test_the_image_systems_read_the_imported_stores(plan):
    calixto = plan.train_jobs.job(W(paper="doubly_attentive", system="nmt_src_img", dataset="multi30k",
                                    pair="en-de", seed="1")).files()
    assert calixto["train_npy"] == "results/features/multi30k/pysimt-res5c/train.npy"
    ours = plan.train_jobs.job(W(paper="emb_pred", system="ours", dataset="multi30k", pair="fr-en", seed="1")).files()
    assert ours["train_npy"] == "results/features/multi30k/pysimt-pool5.ctr/train.npy"  # centred, as the paper
    nodebias = plan.train_jobs.job(W(paper="emb_pred", system="ours_nodebias", dataset="multi30k", pair="fr-en",
                                     seed="1")).files()
    assert nodebias["train_npy"] == "results/features/multi30k/pysimt-pool5/train.npy"  # "- Debias"
    w = W(dataset="multi30k", feature_set="pysimt-res5c", split="train")
    assert plan.features.pretrained_inputs(w)["src"] == "resources/multi30k_features_resnet50/resnet50"
    assert plan.unpacked["resources/multi30k_features_resnet50/resnet50"][0] == RELEASE
    assert plan.features.feature_param("layer")(w) == "res5c"
    assert plan.features.feature_param("layer")(W(dataset="multi30k", feature_set="pysimt-pool5", split="val")) == "pool5"
    # the rules that centre or standardise grids take the imported grid sets too (and no region set)
    pattern = plan.features.feature_sets_of("grid|pretrained", "resnet50")
    assert re.fullmatch(pattern, "pysimt-pool5") and re.fullmatch(pattern, "lium-pool5")
    assert not re.fullmatch(pattern, "butd-obj36") and not re.fullmatch(pattern, "vatex-i3d")


def test_calixtos_image_model_takes_the_releases_2048_d_vectors(plan, full):
    for system in ("nmt_src_img", "nmt_src_img_pre_bt", "nmt_src_img_bt", "nmt_src_img_wmt"):
        cfg = plan.system_settings("doubly_attentive", system).model_config
        assert (cfg["img_dim"], cfg["img_att_dim"]) == (2048, 2048), system
        assert full.system_settings("doubly_attentive", system).model_config["img_dim"] == 1024


def test_every_row_of_an_image_system_declares_the_features_and_no_text_row_does(plan):
    for (paper, table), feature_set in TABLES.items():
        job = plan.table_jobs.job(W(paper=paper, table=table))
        systems = plan.table(paper, table)["systems"]
        multimodal = {s for s in systems if plan.multimodal(paper, s)}
        declared = {s for s, why in job.differences.items() if why.startswith("image features: ")}
        assert declared == multimodal, (paper, table)
        assert all("pysimt's published" in job.differences[s] for s in declared)
        text_only = set(systems) - multimodal
        assert not any(job.differences.get(s, "").startswith("image features") for s in text_only)


def test_the_overlay_listing_from_the_command_line_is_torch_free():
    code = ("import sys; from mmt_repro.cli import main; "
            f"rc = main(['list', 'emb_pred', '--configfile', {str(OVERLAY)!r}]); "
            "print('torch' in sys.modules, rc, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stderr.split() == ["False", "0"]
    assert "  table1           ready " in out.stdout and "NEEDS INPUT" not in out.stdout


def test_lium_pool5_is_the_overlays_alternative_release_for_hirasawa():
    overlay = load_yaml(OVERLAY)
    for table in ("table1", "table2", "table3", "figure1", "image_use"):
        t = overlay["papers"]["emb_pred"]["tables"][table]
        t["features"] = "lium-pool5"
    plan = Plan(deep_update(load_yaml(REPO / "config" / "config.yaml"), overlay), REPO)
    [row] = [r for r in catalogue(plan, "emb_pred") if r["table"] == "table3"]
    assert row["configured"] and row["needs"][0]["input"] == "multi30k_features_pool5_lium"
    needs = NeedsWalk(plan, REPO / "no-such-run-folder").walk(["results/tables/emb_pred/table3.tsv"])
    assert needs.problems == [] and media_problems(plan, needs) == []
    assert list(needs.files["multi30k_features_pool5_lium"]) == ["wmt17-mmt-resnet50-imagenet-pool5.tar.bz2"]
