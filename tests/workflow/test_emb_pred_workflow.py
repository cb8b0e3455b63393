"""Hirasawa et al. (2019) through the workflow: the full configuration plans Tables 1-3, Figure 1
and the retrieval check from raw data (the official fastText vectors, pool5 features with the
training centroid subtracted), and the smoke run (grounded data, vectors trained here) makes
them, with IMAGINATION's latent space retrieving the right images and its shuffled control not."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

TARGETS = [f"results/tables/emb_pred/{t}.tsv" for t in ("table1", "table2", "table3", "figure1", "retrieval")]


def _jobs(wf, tmp_path, *extra) -> str:
    res = wf.snakemake("-n", *TARGETS, "--directory", str(tmp_path), *extra)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout


def test_full_config_plans_every_table_from_raw_data(wf, tmp_path):
    out = _jobs(wf, tmp_path)
    # the official vectors are fetched (manifest input fasttext_cc), never trained, in the full run
    assert "resources/fasttext_cc/cc.fr.300.vec.gz" in out and "resources/fasttext_cc/cc.en.300.vec.gz" in out
    assert "rule train_word_vectors" not in out
    assert "results/embeddings/emb_pred/multi30k.fr-en.fr.npy" in out
    # pool5 with the training centroid subtracted; "- Debias" reads the same store uncentred
    assert "results/features/multi30k/resnet50-pool5.ctr/train.npy" in out
    assert "results/features/multi30k/resnet50-pool5/train.npy" in out
    for system in ("nmt", "nmt_pre", "imag", "imag_pre", "ours", "ours_enc_random", "ours_dec_random", "ours_random",
                   "ours_unfixed", "ours_enc_random_unfixed", "ours_nodebias", "ours_text"):
        for seed in (1, 2, 3):
            assert f"results/models/emb_pred/{system}/multi30k.fr-en.seed{seed}.best.pt" in out, (system, seed)
    for split in ("val", "test_2016_flickr", "test_2017_flickr"):
        assert f"results/scores/emb_pred/ours/multi30k.{split}.fr-en.seed1.congruent.json" in out
    assert "results/models/emb_pred/imag_shuffled/grounded.fr-en.seed1.best.pt" in out


def test_trained_vectors_when_the_official_ones_are_not_used(wf, tmp_path):
    cfg = tmp_path / "trained.yaml"
    cfg.write_text("papers:\n  emb_pred:\n    overrides:\n      word_vectors: {source: trained}\n", encoding="utf-8")
    out = _jobs(wf, tmp_path, "--configfile", str(cfg))
    assert "rule train_word_vectors" in out and "resources/fasttext_cc" not in out
    assert "results/embeddings/emb_pred/fasttext/multi30k.fr.vec" in out


@pytest.mark.slow  # a dry run of the overlay's DAG (54-65 s beside two trainings)
def test_a_begun_training_of_the_paper_setting_goes_before_new_ones(wf, tmp_path):
    """The paper-setting overlay (config/paper_multi30k_fr_en.yaml) plans its nine trainings; the
    one that left a .last.pt in the run folder gets priority -1, the other eight -2, every other
    job Snakemake's 0: a re-run on two cores does the data, decoding and scoring first and resumes
    the begun training before it starts a new seed."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    last = tmp_path / "results" / "models" / "emb_pred" / "nmt_pre" / "multi30k.fr-en.seed2.last.pt"
    last.parent.mkdir(parents=True)
    last.write_bytes(b"")
    res = wf.snakemake("-n", "results/tables/emb_pred/table1.tsv", "results/tables/emb_pred/table3.tsv",
                       "--directory", str(tmp_path), "--configfile", str(repo / "config" / "paper_multi30k_fr_en.yaml"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    blocks = res.stdout.split("rule ")[1:]
    trains = [b for b in blocks if b.startswith("train_model:")]
    assert len(trains) == 9
    first = [b for b in trains if "priority: -1" in b]
    assert len(first) == 1 and "emb_pred/nmt_pre/multi30k.fr-en.seed2.best.pt" in first[0]
    assert sum("priority: -2" in b for b in trains) == 8
    assert not any("priority:" in b for b in blocks if not b.startswith("train_model:"))


@pytest.mark.e2e
def test_smoke_tables_rows_and_notes(smoke_run):
    table = pd.read_csv(smoke_run / "results" / "tables" / "all.tsv", sep="\t", keep_default_na=False)
    ep = table[table.paper == "emb_pred"]
    assert set(ep.table) == {"table1", "table2", "table3", "figure1", "retrieval"}
    ours = ep[(ep.test_set == "test") & (ep.metric == "bleu")]
    t1 = ours[ours.table == "table1"].set_index("system")
    softmax = {"nmt", "nmt_pre", "imag", "imag_pre"}
    assert set(t1.index) == softmax | {"ours"} | {f"{s}_beam6" for s in softmax}  # the same checkpoints, beam 6
    assert (t1.ours.astype(float) > 10).all(), t1.ours  # every system learns the grounded captions
    assert set(t1.runs["nmt_beam6"].split()) == set(t1.runs["nmt"].split())  # decode_of: nmt's checkpoint
    # rows of systems that read the vectors say they were trained here, and have no delta
    pre = ep[ep.system.isin(["nmt_pre", "imag_pre", "ours", "ours_text"]) & (ep.ours != "")]
    assert pre.note.str.contains("trained here").all() and (pre.delta == "").all()
    assert not ep[(ep.system == "nmt") & (ep.ours != "")].note.str.contains("trained here").any()
    # the published rows (test_2016_flickr) are there, not run in the smoke
    pub = ep[(ep.test_set == "test_2016_flickr") & (ep.table == "table1")]
    assert set(pub.system) == softmax | {"ours"} and (pub.ours == "").all()
    assert set(ep[ep.table == "table3"].system) == {"ours", "ours_nodebias", "ours_text"}
    t2 = ep[ep.table == "table2"]
    assert len(set(t2.system)) == 6  # the smoke runs three; the other three are published rows
    assert set(t2[t2.ours != ""].system) == {"ours", "ours_random", "ours_unfixed"}
    fig1 = ep[ep.table == "figure1"]
    assert fig1[fig1.ours != ""].metric.str.startswith("f_freq_").all()
    assert set(fig1[fig1.ours == ""].metric) == {"f_rare_gain"}  # the abstract's +7.67, a published row


@pytest.mark.e2e
def test_smoke_vectors_tables_and_features(smoke_run):
    results = smoke_run / "results"
    for lang in ("fr", "en"):
        report = json.loads((results / "embeddings" / "emb_pred" / f"grounded.fr-en.{lang}.json").read_text())
        table = np.load(results / "embeddings" / "emb_pred" / f"grounded.fr-en.{lang}.npy")
        assert table.shape == (report["rows"], 32) and report["n_components"] == 5
        assert report["vocab_words_missing"] == 0  # trained on the same text: every word has a vector
        assert np.allclose(table[:2], 0) and np.allclose(np.linalg.norm(table[2:], axis=1), 1, atol=1e-5)
    centred = np.load(results / "features" / "grounded" / "resnet50-pool5.ctr" / "train.npy").astype(np.float64)
    raw = np.load(results / "features" / "grounded" / "resnet50-pool5" / "train.npy").astype(np.float64)
    assert centred.shape == raw.shape == (3000, 1, 2048)
    assert np.abs(centred.mean(axis=0)).max() < 0.05 * np.abs(raw.mean(axis=0)).max()
    figure = results / "figures" / "emb_pred" / "figure1.rare_words.png"
    assert figure.stat().st_size > 1000


@pytest.mark.e2e
def test_smoke_latent_space_retrieves_images_and_shuffling_removes_it(smoke_run):
    table = pd.read_csv(smoke_run / "results" / "tables" / "all.tsv", sep="\t", keep_default_na=False)
    ret = table[(table.paper == "emb_pred") & (table.table == "retrieval")]
    value = {(r.system, r.metric): float(r.ours) for r in ret.itertuples()}
    chance = value[("imag", "chance_r1")]
    print("retrieval R@1 / median rank: " + ", ".join(
        f"{s} {value[(s, 'r1')]:.2f} / {value[(s, 'median_rank')]:.0f}" for s in ("imag", "ours", "imag_shuffled"))
        + f" (chance R@1 {chance:.2f})")
    # The image task has the authors' weight (J_V on their scale, lambda = 0.01: issue 24), so
    # after the smoke's 72 updates R@1 is a handful of the 300 images (1.00-2.33 %, 2026-11-26):
    # the test reads the ranks of all 300 instead. Chance: median rank 150, R@10 3.33 %.
    for system in ("imag", "ours"):
        assert value[(system, "median_rank")] <= 0.25 * 300
        assert value[(system, "r10")] >= 3 * 10 * chance
    # trained on shuffled images, the latent space ranks the right image no better than chance
    assert value[("imag_shuffled", "r10")] < 2 * 10 * chance
    assert value[("imag_shuffled", "median_rank")] > 0.4 * 300


@pytest.mark.e2e
def test_smoke_probe_finds_no_test_time_image_use(smoke_run):
    """Hirasawa et al.'s images train the shared encoder only: decoding never reads them, so the
    image-use probe (docs/probes.md) finds shuffled images changing nothing, whatever Ours gains
    over Ours - Images (the smoke decodes no blank images for it)."""
    from mmt_repro.tables.probe import read_probe

    (row,) = read_probe(smoke_run / "results" / "tables" / "emb_pred" / "table3.probe.tsv")
    assert (row["system"], row["counterpart"]) == ("ours", "ours_text")
    assert row["congruent"] == row["shuffled"] and row["blank_mean"] == row["blank_zero"] == "", row
    assert row["use_shuffled"] == "0.00", row
    assert row["verdict"] in ("gain not from the image", "no gain"), row
