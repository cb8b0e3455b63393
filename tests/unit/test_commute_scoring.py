"""CoMMuTE end to end on stand-ins: the release's files fetched from the stand-in mirror (checked
against their sha256 and line counts), stand-in images named as img.order names them, and tiny
doubly_attentive systems exported with their recipes and scored by forced decoding
(mmt_repro.decode.commute); and the planning of the CoMMuTE tables (mmt_repro.plan.commute)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from mmt_repro.io import DataError, write_lines
import test_system_export

MODEL = test_system_export.MODEL
run_folder = test_system_export.run_folder  # the fixture: a trained text-only toy system in a run folder

pytestmark = pytest.mark.slow


def test_a_text_only_system_is_blind_to_the_image_and_its_nll_is_its_loss(run_folder, standin, tmp_path, capsys):
    from mmt_repro.analyses.commute import commute_accuracy
    from mmt_repro.checkpoint import load_model
    from mmt_repro.datasets.batching import ParallelData
    from mmt_repro.decode.commute import score_commute_checkpoint
    from mmt_repro.text.system_recipe import SystemRecipe
    from mmt_repro.text.vocab import Vocab

    text = standin("commute")["resources"]
    out = tmp_path / "en-de.json"
    result = score_commute_checkpoint(run_folder["checkpoint"], text, "en-de", out, device="cpu")
    assert json.loads(out.read_text(encoding="utf-8")) == result
    assert result["n"] == 300 and not result["images"] and result["segmentation"] == "bpe"
    # each source twice, the translations swapped: one line of each pair right, or a tie on both
    assert result["ties"] % 2 == 0 and result["right"] == 150 - result["ties"] // 2
    # the NLL of a line is the model's own training loss on that line
    from mmt_repro.decode.system import export_system

    system = tmp_path / "system"
    export_system(run_folder["checkpoint"], system)
    recipe = SystemRecipe.load(system)
    from mmt_repro.corpora.commute import read_commute

    data = read_commute(text, "en-de")
    src = write_lines(tmp_path / "src", recipe.prepare(data.src[:1], "src"))
    tgt = write_lines(tmp_path / "tgt", recipe.prepare(data.incorrect[:1], "tgt"))
    model, _ = load_model(system)
    model.eval()
    batch = next(ParallelData(src, Vocab.load(system / "src_vocab.json"), tgt,
                              Vocab.load(system / "tgt_vocab.json")).eval_batches(1))
    with torch.no_grad():
        loss = float(model(batch)["loss"])
    assert result["incorrect_nll"][0] == pytest.approx(loss, rel=1e-5)
    # python -m mmt_repro commute, on the checkpoint and on its exported folder
    from mmt_repro.cli import main

    for given in (run_folder["checkpoint"], system):
        capsys.readouterr()
        assert main(["commute", str(given), "--commute", str(text), "--split", "en-de", "--device", "cpu",
                     "--out", str(tmp_path / "cli.json")]) == 0
        assert json.loads((tmp_path / "cli.json").read_text(encoding="utf-8")) == result
        assert capsys.readouterr().out == (f"CoMMuTE en-de: {result['accuracy']:.2f} % ({result['right']} of 300 lines; "
                                           f"{result['ties']} ties, counted as misses)\n")
    # the analysis of a CoMMuTE table reports the same accuracy
    scores = commute_accuracy({"checkpoint": run_folder["checkpoint"], "commute_src": text / "en-de" / "src.en"})
    assert scores["commute_acc"]["value"] == result["accuracy"]
    assert scores["commute_acc"]["signature"].startswith("commute:v3|split:en-de|n:300|nll:token-mean|ties:miss|")
    # a table's options {lines: 12} (the rehearsal's cut): the first 12 lines, the same NLLs, and
    # the signature says so
    from mmt_repro.metrics.commute import contrastive_accuracy

    cut = score_commute_checkpoint(run_folder["checkpoint"], text, "en-de", None, device="cpu", lines=12)
    assert cut["n"] == 12 and cut["correct_nll"] == pytest.approx(result["correct_nll"][:12], rel=1e-6)
    first = contrastive_accuracy(result["correct_nll"][:12], result["incorrect_nll"][:12])
    scores = commute_accuracy({"checkpoint": run_folder["checkpoint"], "commute_src": text / "en-de" / "src.en"},
                              lines=12)
    assert scores["commute_acc"]["value"] == pytest.approx(first["accuracy"])
    assert scores["commute_acc"]["signature"].startswith("commute:v3|split:en-de|n:12|lines:first-12|nll:token-mean|")


def test_a_multimodal_system_reads_each_lines_image_as_its_own_features(run_folder, standin, tmp_path,
                                                                         monkeypatch):
    """nmt_src_img with resnet50-res4f features (random weights, 32 px, standardised): each CoMMuTE
    image becomes the system's own kind of features, and the image changes the NLL."""
    from PIL import Image

    from mmt_repro.checkpoint import save_checkpoint
    from mmt_repro.decode.commute import score_commute, score_commute_checkpoint
    from mmt_repro.decode.system import export_system
    from mmt_repro.execute.record import write_json
    from mmt_repro.features.grid import extract_features
    from mmt_repro.features.standardize import standardize_store
    from mmt_repro.models import Vocabs, build_model
    from mmt_repro.text.vocab import Vocab

    text, images = standin("commute")["resources"], standin("commute_images")["folder"]
    root = tmp_path / "run"
    shutil.copytree(run_folder["root"], root)
    monkeypatch.chdir(root)
    toy = Path("results/data/toy/images")
    toy.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(toy / f"{i}.png")
    write_lines("results/data/toy/image_splits/train.txt", [f"{i}.png" for i in range(3)])
    raw, std = "results/features/toy/resnet50-res4f", "results/features/toy/resnet50-res4f.std"
    extract_features(Path("results/data/toy/image_splits/train.txt"), toy, Path(f"{raw}/train.npy"),
                     Path(f"{raw}/train.index.parquet"), extractor="resnet50", layer="res4f", weights="random",
                     image_size=32, seed=0, device="cpu")
    standardize_store(f"{raw}/train.npy", f"{raw}/train.index.parquet", f"{std}/train.npy",
                      f"{std}/train.index.parquet", stats_from=f"{raw}/train.npy")
    sv, tv = (Vocab.load(f"results/vocab/doubly_attentive/toy.en-de.{lang}.json") for lang in ("en", "de"))
    torch.manual_seed(0)
    model = build_model("doubly_attentive.nmt_src_img", dict(MODEL, img_dim=1024, img_att_dim=8, dropout_img=0.0),
                        Vocabs.sizes(len(sv), len(tv)))
    stem = "results/models/doubly_attentive/nmt_src_img/toy.en-de.seed1"
    save_checkpoint(Path(f"{stem}.best.pt"), model, {"src": sv.fingerprint(), "tgt": tv.fingerprint()},
                    with_rng=False)
    prepared = "results/text/doubly_attentive/toy.en-de"
    write_json(f"{stem}.job.json", {"job": {
        "paper": "doubly_attentive", "system": "nmt_src_img", "dataset": "toy", "pair": "en-de",
        "record": f"{stem}.job.json",
        "inputs": {"src_vocab": "results/vocab/doubly_attentive/toy.en-de.en.json",
                   "tgt_vocab": "results/vocab/doubly_attentive/toy.en-de.de.json",
                   "val_src": f"{prepared}/val.lc.norm.tok.bpe.en", "val_tgt": f"{prepared}/val.lc.norm.tok.bpe.de",
                   "train_npy": f"{std}/train.npy", "train_index": f"{std}/train.index.parquet"}}})
    monkeypatch.chdir(tmp_path)
    checkpoint = root / f"{stem}.best.pt"
    with pytest.raises(DataError, match="needs grid features"):
        score_commute_checkpoint(checkpoint, text, "en-de", None, device="cpu")
    system = tmp_path / "system"
    export_system(checkpoint, system)
    result = score_commute(system, text, "en-de", tmp_path / "acc.json", images=images, device="cpu")
    assert result["images"] and result["n"] == 300 and result["model"] == "doubly_attentive.nmt_src_img"
    assert 0 <= result["right"] <= 300 and result["accuracy"] == pytest.approx(100 * result["right"] / 300)
    # the same lines under each other's image (the two images of each pair swapped): other NLLs
    from mmt_repro.corpora.commute import read_commute
    from mmt_repro.decode.system import extract_for_system

    order = read_commute(text, "en-de").images
    swapped = [order[i ^ 1] for i in range(len(order))]
    npy, index = extract_for_system(system, [images / n for n in swapped], tmp_path, device="cpu")
    other = score_commute(system, text, "en-de", None, features_npy=npy, features_index=index, device="cpu")
    assert other["correct_nll"] != result["correct_nll"]
    # under the swapped images the correct and incorrect translations swap too: line i's correct NLL
    # under image i^1 is line i^1's incorrect NLL under its own image
    assert other["correct_nll"][0] == pytest.approx(result["incorrect_nll"][1], rel=1e-5)
    with pytest.raises(DataError, match="lacks 300 of the 300 images"):
        score_commute(system, text, "en-de", None, images=tmp_path, device="cpu")
    with pytest.raises(DataError, match="translates en-de; CoMMuTE's en-fr is en-fr"):
        score_commute(system, text, "en-fr", None, images=images, device="cpu")


def test_commute_tables_plan_every_scoring_system_and_say_what_the_others_need():
    from mmt_repro.decode.forced import scoring_capable
    from mmt_repro.models.registry import available, model_class
    from mmt_repro.plan.commute import NOT_SCORING, pending, pending_rows
    from mmt_repro.plan.whole import Plan, load_plan

    plan = load_plan(Path(__file__).resolve().parents[2])
    t = plan.table("doubly_attentive", "commute")
    assert pending(plan, "doubly_attentive", t) == {
        s: pending(plan, "doubly_attentive", t)["nmt_src_img"] for s in ("nmt_src_img", "nmt_src_img_bt", "nmt_src_img_wmt")}
    assert "needs the CoMMuTE images (manual input commute_images: download images.tar.gz" in \
        pending(plan, "doubly_attentive", t)["nmt_src_img"]
    assert [r["system"] for r in pending_rows(plan, "doubly_attentive", t)] == \
        ["nmt_src_img", "nmt_src_img_bt", "nmt_src_img_wmt"]
    scores = plan.table_jobs.scores("doubly_attentive", "commute")
    assert len(scores) == 9 and all("/nmt" in s and "src_img" not in s for s in scores)
    # python -m mmt_repro list names the key while it is unset (not for tables no image row can use)
    from mmt_repro.plan_tools.listing import catalogue

    needs = {(r["paper"], r["table"]): [n["key"] for n in r["needs"] if not n["configured"]] for r in catalogue(plan)}
    assert "datasets.commute.images" in needs[("doubly_attentive", "commute")]
    assert "datasets.commute.images" not in needs[("bertgen", "commute_en_de")] + needs[("visual_agreement", "commute_en_de")]
    # with the images configured, every doubly_attentive system is scored
    config = json.loads(json.dumps(plan.config))
    config["datasets"]["commute"]["images"] = "/data/commute/images"
    with_images = Plan(config, plan.repo)
    assert pending(with_images, "doubly_attentive", t) == {}
    assert len(with_images.table_jobs.scores("doubly_attentive", "commute")) == 18
    w = type("W", (), dict(paper="doubly_attentive", system="nmt_src_img", dataset="multi30k",
                           split="test_2016_flickr", pair="en-de", seed="1", analysis="commute"))()
    files = with_images.analyse_jobs.files(w)
    assert files["images"] == "/data/commute/images" and files["commute_correct"] == "resources/commute/en-de/correct.de"
    # a CoMMuTE table adds no training: an overlay that keeps Table 1's nmt, seed 1 (and not the
    # image-use probe of Table 1's runs), scores that run and Figure 2's nmt_src_img (seed 1), which
    # waits for the images
    config["datasets"]["commute"]["images"] = None
    config["papers"]["doubly_attentive"]["tables"]["table1"].update(systems=["nmt"], seeds=[1])
    config["papers"]["doubly_attentive"]["tables"]["image_use"]["enabled"] = False
    one = Plan(config, plan.repo)
    assert one.table("doubly_attentive", "commute")["systems"] == ["nmt", "nmt_src_img"]
    assert one.table("doubly_attentive", "commute")["seeds"] == [1]
    assert one.table_jobs.scores("doubly_attentive", "commute") == [
        "results/analyses/doubly_attentive/nmt/multi30k.test_2016_flickr.en-de.seed1.commute.json"]
    config["papers"]["doubly_attentive"]["tables"]["table1"]["enabled"] = False
    config["papers"]["doubly_attentive"]["tables"]["figure2"]["enabled"] = False
    assert "commute" not in [name for p, name, _ in Plan(config, plan.repo).enabled if p == "doubly_attentive"]
    # imported features and models without a probability say so
    va = pending(with_images, "visual_agreement", with_images.table("visual_agreement", "commute_en_fr"))
    assert "onlytext" not in va and "t_onlytext" not in va and va["soft"].startswith("needs butd-obj36 features")
    # BertGen scores through its own target_nll: its rows are planned, and wait only for region
    # features of the CoMMuTE images (its butd-regions are imported); the fairseq baseline is scored
    for pair in ("en_de", "en_fr"):
        table = with_images.table("bertgen", f"commute_{pair}")
        bg = pending(with_images, "bertgen", table)
        assert list(bg) == ["bertgen"] and bg["bertgen"].startswith("needs butd-regions features of the CoMMuTE images")
        assert table["systems"] == ["fairseq", "bertgen"]
        assert with_images.table_jobs.scores("bertgen", f"commute_{pair}")
    # NOT_SCORING is exactly the registered models that forced decoding refuses
    papers = ("doubly_attentive", "emb_pred", "deepfuse", "visual_agreement", "bertgen")
    refused = {name for name in available() if name.split(".")[0] in papers  # not other tests' toy models
               if not scoring_capable(model_class(name))[0]}
    assert refused == set(NOT_SCORING) == {"emb_pred.ours", "emb_pred.ours_text"}


def test_the_table_shows_each_runs_accuracy_and_what_a_pending_row_needs(tmp_path):
    """make_table on two runs' CoMMuTE results and one pending row: the mean over seeds where a
    number exists, the reason where it does not (the table job's unavailable_rows)."""
    import pandas as pd

    from mmt_repro.plan.jobs import TableJob
    from mmt_repro.tables.build import make_table_from_files

    scores = []
    for seed, value in ((1, 50.0), (2, 49.0)):
        meta = {"paper": "doubly_attentive", "table": "", "system": "nmt", "dataset": "multi30k", "pair": "en-de",
                "test_set": "test_2016_flickr", "seed": seed, "condition": "congruent",
                "checkpoint": f"results/models/doubly_attentive/nmt/multi30k.en-de.seed{seed}.best.pt"}
        path = tmp_path / f"nmt.seed{seed}.commute.json"
        path.write_text(json.dumps({"meta": meta, "scores": {"commute_acc": {
            "value": value, "signature": "commute:v3|split:en-de|n:300|nll:token-mean|ties:miss|images:no|unk:0"}}}),
            encoding="utf-8")
        scores.append(path)
    reason = "needs the CoMMuTE images (manual input commute_images: ...; then set datasets.commute.images)"
    rows = [{"system": "nmt_src_img", "pair": "en-de", "test_set": "test_2016_flickr", "metric": "commute_acc",
             "reason": reason}]
    published = Path(__file__).resolve().parents[2] / "config" / "published_results.tsv"
    out = tmp_path / "commute.tsv"
    make_table_from_files(scores, "doubly_attentive", "commute", published, out, unavailable_rows=rows)
    table = pd.read_csv(out, sep="\t", keep_default_na=False).set_index("system")
    assert table.loc["nmt", "ours"] == "49.50" and table.loc["nmt", "n_seeds"] == 2
    assert table.loc["nmt", "metric"] == "commute_acc"
    assert table.loc["nmt_src_img", "ours"] == "" and table.loc["nmt_src_img", "note"] == reason
    # a table job keeps its record as before when no row is pending
    job = TableJob(paper="p", table="t", note="", unavailable={}, not_comparable={}, inputs={}, out="o")
    assert "unavailable_rows" not in job.to_dict() and TableJob.from_dict(job.to_dict()) == job
    pending_job = TableJob(paper="p", table="t", note="", unavailable={}, not_comparable={}, inputs={}, out="o",
                           unavailable_rows=rows)
    assert TableJob.from_dict(pending_job.to_dict()) == pending_job
