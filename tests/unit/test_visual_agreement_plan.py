"""Yang et al. (2020) planned on the full config (mmt_repro.plan.Plan, no torch): DAMT and
Imagination are systems of this paper's Table 1 (the project's models of Calixto et al. and
Elliott and Kadar, on this paper's data, regions and scoring), Table 5 is marked not comparable,
and every score carries the lowercased BLEU beside the cased one (issue 26)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import load_yaml
from mmt_repro.plan import Plan

REPO = Path(__file__).resolve().parents[2]
PAPER = "visual_agreement"
BASELINES = {"damt": "doubly_attentive.nmt_src_img", "imagination": "emb_pred.imag"}


@pytest.fixture(scope="module")
def full():
    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


@pytest.mark.parametrize("table,pair", [("table1_en_de", "en-de"), ("table1_de_en", "de-en"),
                                        ("table1_en_fr", "en-fr"), ("table1_fr_en", "fr-en")])
def test_table1_runs_damt_and_imagination_in_this_papers_recipe(full, table, pair):
    job = full.table_jobs.job(W(paper=PAPER, table=table))
    assert not set(BASELINES) & set(job.unavailable)  # our rows now, not published-only ones
    scores = job.files()["scores"]
    for system, model in BASELINES.items():
        run = W(paper=PAPER, system=system, dataset="multi30k", split="test_2017_flickr", pair=pair, seed="1",
                condition="congruent")
        score = full.score_jobs.job(run)
        assert score.out in scores
        assert score.scoring["metrics"] == ["bleu", "bleu_lc", "meteor"]  # Yang's scoring, + lowercased BLEU
        assert score.scoring["bleu_compat"] == "multi-bleu"
        train = full.train_jobs.job(W(paper=PAPER, system=system, dataset="multi30k", pair=pair, seed="1"))
        assert train.model == model and train.model_config["img_dim"] == 2048
        files = train.files()
        src, tgt = pair.split("-")
        assert files["train_src"] == f"results/text/multi30k/train.norm.tok.{src}"  # Yang's norm.tok words
        assert files["src_vocab"] == f"results/vocab/{PAPER}/multi30k.{pair}.{src}.json"
        assert files["train_npy"] == "results/features/multi30k/butd-obj36/train.npy"  # Yang's 36 regions
        assert full.translate_jobs.job(run).files()["checkpoint"] == train.best


def test_table2_keeps_the_transformer_baselines_published_only(full):
    job = full.table_jobs.job(W(paper=PAPER, table="table2_en_de"))
    assert set(BASELINES) <= set(job.unavailable)
    assert not set(BASELINES) & set(full.table(PAPER, "table2_en_de")["systems"])


def test_table5_gets_no_delta_while_the_word_list_is_ours(full):
    for table in ("table5_en_de", "table5_en_fr"):
        job = full.table_jobs.job(W(paper=PAPER, table=table))
        assert set(job.not_comparable) == {"mhca", "soft"}
        assert "word list" in job.note


def _backward(plan, system, dataset, pair="en-de"):
    return plan.train_jobs.job(W(paper=PAPER, system=system, dataset=dataset, pair=pair, seed="1")).model_config["backward"]


def test_the_backward_model_trains_only_where_a_job_reads_it(full):
    """backward: auto (the settings) resolved per run: both directions for agreement, a `*_bwd`
    decoding, VAD and the Transformer's block choice; the forward model alone elsewhere."""
    assert _backward(full, "image", "multi30k") is False  # Table 3's + Image: decoded En->De only
    assert _backward(full, "image", "multi30k", "en-fr") is False
    assert _backward(full, "onlytext", "multi30k") is True  # onlytext_bwd in table1_de_en
    assert _backward(full, "hard", "multi30k") is True  # agreement
    assert _backward(full, "mhca", "multi30k") is True  # Table 5's VAD
    assert _backward(full, "t_mhca", "multi30k") is True  # t_hard's block is chosen on its checkpoint
    for system in ("onlytext", "mhca", "t_onlytext", "t_mhca"):  # the grounded BLEU check, one direction
        assert _backward(full, system, "grounded") is False
    assert _backward(full, "mhca", "grounded_distinct") is True  # the VAD check
    # a table that decodes the backward model changes the training job (it then re-runs)
    config = load_yaml(REPO / "config" / "config.yaml")
    config["papers"][PAPER]["tables"]["table3_de_en"] = {**config["papers"][PAPER]["tables"]["table3_en_de"],
                                                         "pair": "de-en", "systems": ["image_bwd"]}
    config["papers"][PAPER]["overrides"] = {"systems": {"image_bwd": {"variant_of": "onlytext_bwd", "reverse_of": "image"}}}
    assert _backward(Plan(config, REPO), "image", "multi30k") is True
