"""The image-use probes (docs/probes.md): their planning (every multimodal system of the full
config probed beside a text-only counterpart under every condition; the smoke's probes on each
paper's grounded set, on the grounded tables' own runs), the one shuffle seed of every paper, and
the probe table's figures and verdicts from score files."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as W

import numpy as np
import pytest

from mmt_repro.config import ConfigError, deep_update, load_yaml
from mmt_repro.datasets.batching import derangement
from mmt_repro.io import UnknownNameError
from mmt_repro.plan import Plan
from mmt_repro.tables.probe import COLUMNS, make_probe, probe_rows, read_probe, verdict

REPO = Path(__file__).resolve().parents[2]
PAPERS = ["doubly_attentive", "emb_pred", "visual_agreement", "bertgen", "deepfuse"]


@pytest.fixture(scope="module")
def full():
    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


@pytest.fixture(scope="module")
def smoke():
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(REPO / "config" / "smoke.yaml"))
    return Plan(config, REPO)


def _probes(plan):
    return [(p, t, table) for p, t, table in plan.enabled if table.get("probe")]


def test_every_multimodal_system_of_the_full_config_is_probed_under_every_condition(full):
    for paper in PAPERS:
        translated = {s for p, t, table in full.enabled if p == paper and full.table_kind(p, t) == "translation"
                      for s in table["systems"] if full.multimodal(p, s)}
        probed = set()
        for p, t, table in _probes(full):
            if p != paper:
                continue
            job = full.probe_jobs.job(W(paper=p, table=t))
            assert job.conditions[:2] == ["congruent", "shuffled"] and job.conditions[-2:] == ["blank_zero", "blank_mean"]
            assert job.out == f"results/tables/{p}/{t}.probe.tsv" and job.metric == "bleu"
            for system, counterpart in job.pairs.items():
                assert full.multimodal(p, system)
                assert counterpart == system or not full.multimodal(p, counterpart)
                for ts in table["test_sets"]:
                    for seed in table["seeds"]:
                        for c in job.conditions:
                            if c != "no_image" or counterpart == system:
                                assert f"{system}|{ts}|{c}|{seed}" in job.scores
                        assert f"{counterpart}|{ts}|{'no_image' if counterpart == system else 'congruent'}|{seed}" \
                            in job.scores
            probed |= set(job.pairs)
        assert translated <= probed, (paper, sorted(translated - probed))
    # the papers' data: Multi30k's test2016 Flickr set, VATEX's validation set for DeepFuse
    image_use = {p: table for p, t, table in _probes(full) if t == "image_use"}
    assert sorted(image_use) == sorted(PAPERS)
    for p, table in image_use.items():
        want = ("vatex", ["val"]) if p == "deepfuse" else ("multi30k", ["test_2016_flickr"])
        assert (table["dataset"], table["test_sets"]) == want
    assert set(full.targets.all_probes()) <= set(full.targets.default_targets())
    assert len(full.targets.all_probes()) == 10  # image_use x 5, image_use_de_en, 4 grounded checks


def test_the_smoke_probes_each_papers_grounded_set_on_its_own_runs(smoke):
    probes = {p: (t, table) for p, t, table in _probes(smoke)}
    assert sorted(probes) == sorted(PAPERS)
    runs = {(p, *run) for p, t, _ in smoke.enabled if smoke.table_kind(p, t) == "translation"
            for run in smoke.table_runs(p, t)}
    for paper, (table, t) in probes.items():
        assert t["dataset"] in ("grounded", "grounded_video")
        job = smoke.probe_jobs.job(W(paper=paper, table=table))
        # CI time: one blank decode a probed run, on a grid (Calixto et al.) and a video (DeepFuse) layout only
        blanks = ["blank_mean"] if paper in ("doubly_attentive", "deepfuse") else []
        assert [c for c in job.conditions if c.startswith("blank_")] == blanks
        own = [k for k in job.scores if (paper, *k.split("|")[:1], k.split("|")[1], int(k.split("|")[3]),
                                        k.split("|")[2]) not in runs]
        # what the probe adds: a blank_mean run per probed system where it decodes one (Hirasawa et al.'s: the
        # shuffled run, which its tables do not have; decoding never reads its images); nothing for the others
        adds = {"emb_pred": {"shuffled"}, "doubly_attentive": {"blank_mean"}, "deepfuse": {"blank_mean"}}.get(paper, set())
        assert {k.split("|")[2] for k in own} == adds
        assert len(own) == (len(job.pairs) if adds else 0)
    assert probes["bertgen"][1]["probe"]["pairs"] == {"grounded": "grounded"}  # its own no_image runs


def test_every_paper_shuffles_a_test_set_with_the_same_derangement(full, smoke):
    seeds = set()
    for plan in (full, smoke):
        for p, t, table in _probes(plan):
            system = next(iter(table["probe"]["pairs"]))
            job = plan.translate_jobs.job(W(paper=p, system=system, dataset=table["dataset"],
                                            split=table["test_sets"][0], pair=table["pair"], seed="1",
                                            condition="shuffled"))
            seeds.add(job.shuffle_seed)
    assert seeds == {1234} == {full.config["shuffle_seed"]}
    # the same seed and n: the same permutation, without a fixed point (test2016: 1,000 sentences)
    perms = [derangement(1000, seed) for seed in seeds for _ in PAPERS]
    assert all(np.array_equal(perms[0], q) for q in perms)
    assert not np.any(perms[0] == np.arange(1000)) and sorted(perms[0]) == list(range(1000))
    # a paper whose own seed differs is refused: the probes compare papers on one permutation
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"),
                         {"papers": {"deepfuse": {"overrides": {"scoring": {"shuffle_seed": 7}}}}})
    with pytest.raises(ConfigError, match="deepfuse: scoring.shuffle_seed is 7.*one derangement for every system"):
        Plan(config, REPO)
    # another seed: the config's, and every paper's with it
    moved = deep_update(config, {"shuffle_seed": 7, "papers": {p: {"overrides": {"scoring": {"shuffle_seed": 7}}}
                                                                for p in PAPERS}})
    assert Plan(moved, REPO).translate_jobs.job(W(paper="deepfuse", system="deepfuse", dataset="vatex", split="val",
                                                  pair="en-zh", seed="1", condition="shuffled")).shuffle_seed == 7


def test_a_blank_mean_decode_reads_the_training_store_of_its_feature_set(smoke):
    w = dict(paper="bertgen", system="grounded", dataset="grounded", split="test", pair="en-de", seed="1")
    mean = smoke.translate_jobs.job(W(**w, condition="blank_mean"))
    stem = "results/features/grounded/frcnn-objects.std"
    assert mean.files()["features_npy"] == f"{stem}/test.npy"
    assert {k: v for k, v in mean.files().items() if k.startswith("mean_")} == {
        "mean_npy": f"{stem}/train.npy", "mean_index": f"{stem}/train.index.parquet",
        "mean_boxes": f"{stem}/train.boxes.npy"}
    zero = smoke.translate_jobs.job(W(**w, condition="blank_zero"))
    assert not [k for k in zero.files() if k.startswith("mean_")] and zero.shuffle_seed is None
    assert mean.out.endswith("grounded.test.en-de.seed1.blank_mean.txt")
    # a blank condition is scored with the probe's BLEU alone; the paper's other metrics stay on its tables
    assert smoke.score_jobs.job(W(**w, condition="blank_mean")).scoring["metrics"] == ["bleu"]
    assert smoke.score_jobs.job(W(**w, condition="shuffled")).scoring["metrics"] == ["bleu", "cider"]
    with pytest.raises(ValueError, match="reads no images"):
        smoke.translate_jobs.job(W(paper="deepfuse", system="transformer", dataset="grounded_video", split="test",
                                   pair="en-zh", seed="1", condition="blank_mean"))


@pytest.mark.parametrize("pairs, match", [
    ({"mhca": "t_mhca"}, "reads images"),
    ({"onlytext": "mhca"}, "reads no images"),
    ({"mhca": "mhca"}, "no_image: true"),
    ({"mhca": "text_only"}, "unknown system"),
])
def test_a_probe_pair_must_be_a_multimodal_system_and_a_text_only_counterpart(pairs, match):
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"),
                         {"papers": {"visual_agreement": {"tables": {"grounded": {"probe": {"pairs": pairs}}}}}})
    config["papers"]["visual_agreement"]["tables"]["grounded"]["probe"]["pairs"] = pairs
    plan = Plan(config, REPO)
    with pytest.raises((ValueError, UnknownNameError), match=match):
        plan.probe_jobs.job(W(paper="visual_agreement", table="grounded"))


def _score(folder, system, condition, seed, bleu):
    path = folder / f"{system}.{condition}.{seed}.json"
    path.write_text(json.dumps({"meta": {}, "scores": {"bleu": {"value": bleu}, "chrf3": {"value": 0.0}}}))
    return {f"{system}|test|{condition}|{seed}": str(path)}


def test_the_probe_table_gives_the_image_use_figures_and_a_verdict_per_system(tmp_path):
    scores = {}
    for seed, shift in ((1, 0.0), (2, 1.0)):  # means over two seeds
        scores |= _score(tmp_path, "text", "congruent", seed, 50.0 + shift)
        for system, (congruent, shuffled, zero, mean) in {
            "uses": (80.0, 50.2, 49.0, 50.4),     # every condition back to the text-only model
            "ignores": (60.0, 59.8, 60.0, 59.6),  # the gain does not need the test image
            "partly": (70.0, 55.0, 50.0, 69.8),   # the average image keeps the gain, shuffling halves it
            "none": (50.3, 40.0, 40.0, 40.0),     # within 0.5 of the text-only model
        }.items():
            for condition, value in zip(("congruent", "shuffled", "blank_zero", "blank_mean"),
                                        (congruent, shuffled, zero, mean)):
                scores |= _score(tmp_path, system, condition, seed, value + shift)
    pairs = {"uses": "text", "ignores": "text", "partly": "text", "none": "text"}
    out = tmp_path / "probe.tsv"
    make_probe(scores, pairs, out, paper="p", table="t", pair="en-de", note="smoke")
    rows = {r["system"]: r for r in read_probe(out)}
    assert list(read_probe(out)[0]) == COLUMNS
    uses = rows["uses"]
    assert (uses["text"], uses["congruent"], uses["shuffled"], uses["blank_zero"], uses["blank_mean"]) == \
        ("50.50", "80.50", "50.70", "49.50", "50.90")
    assert (uses["gain"], uses["use_shuffled"], uses["use_blank_zero"], uses["use_blank_mean"]) == \
        ("30.00", "29.80", "31.00", "29.60")
    assert uses["n_seeds"] == "2" and uses["no_image"] == "" and uses["counterpart"] == "text"
    assert uses["verdict"] == "uses the image"
    assert uses["note"].startswith("smoke; gain +30.00; shuffled removes it (+0.20 left)")
    assert rows["ignores"]["verdict"] == "gain not from the image"
    assert rows["partly"]["verdict"] == "partly" and "blank_mean keeps it" in rows["partly"]["note"]
    assert "shuffled reduces it" in rows["partly"]["note"] and "blank_zero removes it" in rows["partly"]["note"]
    assert rows["none"]["verdict"] == "no gain" and rows["none"]["gain"] == "0.30"


def test_a_system_that_is_its_own_counterpart_is_compared_with_its_no_image_runs(tmp_path):
    scores = {}
    for condition, value in (("congruent", 78.0), ("no_image", 62.6), ("shuffled", 54.3), ("blank_mean", 61.0)):
        scores |= _score(tmp_path, "grounded", condition, 1, value)
    (row,) = probe_rows(scores, {"grounded": "grounded"})
    assert row["text"] == 62.6 and row["no_image"] == 62.6 and row["gain"] == 15.4
    assert row["use_shuffled"] == 23.7 and row["use_blank_mean"] == 17.0 and row["blank_zero"] is None
    assert row["verdict"] == "uses the image"  # shuffled and blank fall to (or below) the MT task's 62.6


def test_verdict_bounds():
    assert verdict(50.0, 50.5, {"shuffled": 40.0}) == ("no gain", "+0.50 over the text-only counterpart (within ±0.5)")
    assert verdict(50.0, 51.0, {"shuffled": 50.5})[0] == "uses the image"  # 0.5 left: within the bound
    assert verdict(50.0, 51.0, {})[0] == ""
    assert verdict(None, 51.0, {"shuffled": 50.0})[0] == ""
