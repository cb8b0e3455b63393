"""A trained system on new input (mmt_repro.decode.system, mmt_repro.text.system_recipe): ``export``
writes the system's text recipe read off the files the workflow prepared, the recipe turns a raw
sentence into exactly the workflow's prepared line, and ``translate`` takes raw sentences to
detokenised text. The system is trained here (~3 s) in a run folder laid out as the workflow
lays it out, its text made by the text stage's own functions (``prepare_text``, ``learn_bpe``,
``apply_bpe``, ``build_vocab_file``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mmt_repro.cli import main
from mmt_repro.io import DataError, read_lines, write_lines
from mmt_repro.text.system_recipe import SideRecipe, SystemRecipe, parse_prepared_name

NOUNS = {"Dog": "Hund", "Cat": "Katze", "Ball": "Ball", "House": "Haus", "Car": "Auto", "Bird": "Vogel"}
COLOURS = {"red": "rot", "blue": "blau", "green": "grün", "black": "schwarz"}
TEMPLATES = [("The {n} is {c}.", "Der {N} ist {C}."),
             ("Isn't the {n} {c}?", "Ist der {N} nicht {C}?"),
             ('A "{n}" & a {c} one!', 'Ein "{N}" & ein {C}es!')]
CHAIN = "lc.norm.tok"
MODEL = dict(emb_dim=24, enc_dim=24, dec_dim=32, att_dim=24, dropout_enc=0.0, dropout_dec=0.0, dropout_out=0.0,
             init_std=0.1)


def _pairs() -> list[tuple[str, str]]:
    return [(en.format(n=n.lower(), c=c), de.format(N=N, C=C))
            for en, de in TEMPLATES for n, N in NOUNS.items() for c, C in COLOURS.items()]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A run folder (``results/...`` as the workflow writes it) with a text-only system of
    ``doubly_attentive`` trained on raw en-de sentences through the paper's recipe chain
    ``lc.norm.tok`` and joint BPE; returns the run folder and the checkpoint."""
    import dataclasses
    import os

    from mmt_repro.execute.record import write_json
    from mmt_repro.plan.paths import path
    from mmt_repro.text.bpe import apply_bpe, learn_bpe
    from mmt_repro.text.recipes import prepare_text
    from mmt_repro.text.vocab import build_vocab_file
    from mmt_repro.train.trainer import train
    from training_jobs import train_job

    root = tmp_path_factory.mktemp("run")
    cwd = Path.cwd()
    os.chdir(root)  # the workflow's paths are relative to its run folder
    try:
        pairs = _pairs()
        rng = np.random.default_rng(3)
        order = rng.permutation(len(pairs))
        splits = {"train": [pairs[i] for i in order], "val": [pairs[i] for i in order[:12]],
                  "test": [pairs[i] for i in order[12:24]]}
        ds, pair = "toy", "en-de"
        for split, rows in splits.items():
            for k, lang in enumerate(("en", "de")):
                raw = write_lines(path("corpus", dataset=ds, split=split, lang=lang), [r[k] for r in rows])
                prepare_text(raw, path("text", dataset=ds, split=split, chain=CHAIN, lang=lang), CHAIN, lang)
        codes = path("bpe_codes", paper="doubly_attentive", dataset=ds, pair=pair, side="joint")
        learn_bpe([Path(path("text", dataset=ds, split="train", chain=CHAIN, lang=lang)) for lang in ("en", "de")],
                  Path(codes), 30)
        inputs = {}
        for split in splits:
            for side, lang in (("src", "en"), ("tgt", "de")):
                out = path("bpe_text", paper="doubly_attentive", dataset=ds, pair=pair, split=split, chain=CHAIN,
                           lang=lang)
                apply_bpe(codes, path("text", dataset=ds, split=split, chain=CHAIN, lang=lang), out)
                inputs[f"{split}_{side}"] = out
        for side, lang in (("src", "en"), ("tgt", "de")):
            vocab = path("vocab", paper="doubly_attentive", dataset=ds, pair=pair, side=lang)
            build_vocab_file([Path(inputs[f"train_{side}"])], Path(vocab))
            inputs[f"{side}_vocab"] = vocab
        inputs["val_ref"] = inputs["val_tgt"]
        test = {side: inputs.pop(f"test_{side}") for side in ("src", "tgt")}
        model = Path(path("model", paper="doubly_attentive", system="nmt", dataset=ds, pair=pair, seed=1))
        job = train_job(model.parent, "doubly_attentive.nmt", MODEL,
                        dict(optimizer="adam", lr=0.02, batch_size=8, max_epochs=10, patience=50, log_every=0,
                             seed=7),
                        inputs, pair=pair, subword="bpe", paper="doubly_attentive", system="nmt")
        stem = str(model)
        job = dataclasses.replace(job, best=f"{stem}.best.pt", last=f"{stem}.last.pt", curve=f"{stem}.curve.tsv",
                                  record=f"{stem}.job.json", dataset=ds)
        train(job)
        write_json(job.record, {"job": job.to_dict()})  # the record's part export reads (execute.train.run)
    finally:
        os.chdir(cwd)
    return {"root": root, "checkpoint": root / f"{stem}.best.pt", "test": test, "splits": splits}


def test_the_exported_recipe_gives_the_workflows_prepared_text(run_folder, tmp_path, capsys):
    out = tmp_path / "system"
    # from another working directory: the job record's paths are found from where it lies
    assert main(["export", str(run_folder["checkpoint"]), str(out)]) == 0
    said = capsys.readouterr().out
    assert "bpe.joint.codes" in said and "recipe.json" in said and "decode.json" in said
    assert "checked against the run's prepared validation text: src 12 lines, tgt 12 lines" in said
    data = json.loads((out / "recipe.json").read_text(encoding="utf-8"))
    assert data["src"]["chain"] == CHAIN and data["src"]["subword"] == "bpe"
    assert data["src"]["bpe_codes"] == data["tgt"]["bpe_codes"] == "bpe.joint.codes"  # joint codes, one file
    assert data["src"]["moses"] == {"escape": True, "aggressive_dash_splits": False,
                                    "normalize_punctuation": "perl parity", "lang": "en"}
    assert data["restore"]["casing"] == "lowercase"
    assert json.loads((out / "decode.json").read_text())["beam_size"] == 12  # Calixto et al.'s beam
    recipe = SystemRecipe.load(out)
    root = run_folder["root"]
    for side, lang in (("src", "en"), ("tgt", "de")):
        raw = read_lines(root / f"results/data/toy/test.{lang}")
        assert recipe.prepare(raw, side) == read_lines(root / run_folder["test"][side])
    # one sentence by hand: lowercased, the apostrophe split and escaped, BPE on top
    isnt = next(s for s in read_lines(root / "results/data/toy/test.en") if s.startswith("Isn't"))
    assert re.sub("@@ ", "", recipe.prepare([isnt])[0]) == "isn &apos;t the " + isnt.split()[2].lower() + " " + \
        isnt.split()[3][:-1] + " ?"


def test_translate_takes_raw_sentences_to_detokenised_text(run_folder, tmp_path, capsys):
    out = tmp_path / "system"
    assert main(["export", str(run_folder["checkpoint"]), str(out)]) == 0
    capsys.readouterr()
    src = write_lines(tmp_path / "raw.en", ["The Dog is red.", "Isn't the cat blue?", 'A "Bird" & a green one!'])
    assert main(["translate", "--checkpoint", str(out), "--src", str(src), "--out", str(tmp_path / "hyp.de"),
                 "--beam", "3", "--device", "cpu"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sentences"] == 3 and info["beam_size"] == 3
    hyps = read_lines(tmp_path / "hyp.de")
    assert len(hyps) == 3
    for hyp in hyps:
        assert "@@" not in hyp and "&" + "apos;" not in hyp and "&quot;" not in hyp and "&amp;" not in hyp
        assert not re.search(r" [.?!,]", hyp), hyp  # punctuation attached
        assert hyp == hyp.lower()  # the recipe lowercases
    # the system learnt the toy task: the three raw sentences come out as the workflow's references,
    # detokenised and lowercased
    assert hyps == ["der hund ist rot.", "ist der katze nicht blau?", 'ein "vogel" & ein grünes!']
    # the same through standard input to standard output
    import io
    import sys

    stdin = sys.stdin
    sys.stdin = io.StringIO("The Dog is red.\n")
    try:
        assert main(["translate", "--checkpoint", str(out), "--beam", "3", "--device", "cpu"]) == 0
    finally:
        sys.stdin = stdin
    assert capsys.readouterr().out == "der hund ist rot.\n"
    # the old behaviour: a model-form source, tokenised output (the workflow's scoring form)
    assert main(["translate", "--checkpoint", str(out), "--segmented", "--src", str(run_folder["root"] /
                 run_folder["test"]["src"]), "--out", str(tmp_path / "seg.de"), "--subword", "bpe", "--beam", "3",
                 "--device", "cpu"]) == 0
    assert any(" ." in line for line in read_lines(tmp_path / "seg.de"))


def test_restore_merges_subwords_and_detokenises_each_recipe_form(tmp_path):
    bpe = SystemRecipe("p", "de-en", None, SideRecipe("en", "lc.norm.tok", "bpe", bpe_codes="c"))
    assert bpe.restore(["the do@@ g &apos;s ball , &quot; re@@ d &quot; &amp; blue ."]) == \
        ['the dog\'s ball, "red" & blue.']
    de = SystemRecipe("p", "en-de", None, SideRecipe("de", "norm.tok", "bpe", bpe_codes="c"))
    assert de.restore(["Der Hun@@ d ( &quot; Rex &quot; ) läuft ; nicht wahr ?"]) == \
        ['Der Hund ("Rex") läuft; nicht wahr?']
    zh = SystemRecipe("deepfuse", "en-zh", None, SideRecipe("zh", "char", "char"))
    assert zh.restore(["一 个 男 人 在 跑 步 。", "C P U 很 快"]) == ["一个男人在跑步。", "CPU很快"]
    wp = SystemRecipe("bertgen", "en-de", None, SideRecipe("en", "lc.wp", "wordpiece", wordpiece_vocab="v"))
    assert wp.restore(["a dog ' s ba ##ll , \" red \" !"]) == ['a dog\'s ball, "red"!']
    words = SystemRecipe("va", "en-de", None, SideRecipe("de", "norm.tok"))
    assert words.restore(["Ein Hund ( groß ) ."]) == ["Ein Hund (groß)."]


def test_prepared_file_names_give_the_chain_and_bpe():
    assert parse_prepared_name("results/text/x/d.en-de/val.norm.tok.bpe.de", "de") == ("val", "norm.tok", True)
    assert parse_prepared_name("results/text/grounded/train.lc.wp.en", "en") == ("train", "lc.wp", False)
    assert parse_prepared_name("results/text/grounded_video/test_tshuf.char.zh", "zh") == ("test_tshuf", "char", False)
    assert parse_prepared_name("results/backtranslation/p/d.en-de/synthetic.src", "en") is None


def test_bad_exports_name_the_file_and_the_fix(run_folder, tmp_path):
    from mmt_repro.decode.system import export_system, translate_raw

    with pytest.raises(DataError, match="recipe.json: the exported folder has no text recipe") as err:
        SystemRecipe.load(tmp_path)
    assert "python -m mmt_repro export" in str(err.value)
    with pytest.raises(DataError, match="not an exported system folder"):
        translate_raw(run_folder["checkpoint"], "-", None)
    # a prepared file that is not what the recipe makes of its raw text: the export says which line
    root = tmp_path / "run"
    import shutil

    shutil.copytree(run_folder["root"], root)
    val = root / "results/text/doubly_attentive/toy.en-de/val.lc.norm.tok.bpe.en"
    lines = read_lines(val)
    write_lines(val, [lines[0].upper(), *lines[1:]])
    with pytest.raises(DataError, match=r"val.lc.norm.tok.bpe.en: line 1 is .* but the exported recipe makes"):
        export_system(root / Path(run_folder["checkpoint"]).relative_to(run_folder["root"]), tmp_path / "bad")
    assert not (tmp_path / "bad").exists()  # nothing written
    # images for a text-only system
    export_system(run_folder["checkpoint"], tmp_path / "text_only")
    src = write_lines(tmp_path / "raw.en", ["The dog is red."])
    with pytest.raises(DataError, match="features.json: the exported system records no feature set"):
        translate_raw(tmp_path / "text_only", src, tmp_path / "x.de", media=[tmp_path / "a.png"])


def test_media_come_from_images_then_an_image_list(tmp_path):
    from argparse import Namespace

    from mmt_repro.cli import _media_of

    listing = write_lines(tmp_path / "imgs" / "list.txt", ["a.png", "sub/b.png"])
    assert _media_of(Namespace(images=["x.png"], image_list=str(listing))) == [
        Path("x.png"), tmp_path / "imgs" / "a.png", tmp_path / "imgs" / "sub" / "b.png"]


def test_images_get_the_features_the_system_was_trained_with(run_folder, tmp_path, monkeypatch):
    """A multimodal system's export records its feature set (extractor, layer, image size, weights,
    scaling and the training split's statistics); new images get the very rows the workflow's
    own store of them holds (extract_features, then standardize_store with the training statistics)."""
    import shutil

    from PIL import Image

    from mmt_repro.checkpoint import save_checkpoint
    from mmt_repro.decode.system import export_system, extract_for_system, translate_raw
    from mmt_repro.execute.record import write_json
    from mmt_repro.features.grid import extract_features
    from mmt_repro.features.standardize import standardize_store
    from mmt_repro.models import Vocabs, build_model
    from mmt_repro.text.vocab import Vocab

    root = tmp_path / "run"
    shutil.copytree(run_folder["root"], root)
    monkeypatch.chdir(root)  # the workflow's paths are relative to its run folder
    images = Path("results/data/toy/images")
    images.mkdir(parents=True)
    rng = np.random.default_rng(0)
    names = [f"{i}.png" for i in range(5)]
    for name in names:
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(images / name)
    raw, std = "results/features/toy/resnet50-res4f", "results/features/toy/resnet50-res4f.std"
    for split, listed in (("train", names[:3]), ("test", names[3:])):
        write_lines(f"results/data/toy/image_splits/{split}.txt", listed)
        extract_features(Path(f"results/data/toy/image_splits/{split}.txt"), images, Path(f"{raw}/{split}.npy"),
                         Path(f"{raw}/{split}.index.parquet"), extractor="resnet50", layer="res4f", weights="random",
                         image_size=32, seed=0, device="cpu")
        standardize_store(f"{raw}/{split}.npy", f"{raw}/{split}.index.parquet", f"{std}/{split}.npy",
                          f"{std}/{split}.index.parquet", stats_from=f"{raw}/train.npy")
    sv, tv = (Vocab.load(f"results/vocab/doubly_attentive/toy.en-de.{lang}.json") for lang in ("en", "de"))
    model = build_model("doubly_attentive.nmt_src_img", dict(MODEL, img_dim=1024, img_att_dim=8, dropout_img=0.0),
                        Vocabs.sizes(len(sv), len(tv)))
    stem = "results/models/doubly_attentive/nmt_src_img/toy.en-de.seed1"
    save_checkpoint(Path(f"{stem}.best.pt"), model, {"src": sv.fingerprint(), "tgt": tv.fingerprint()},
                    with_rng=False)
    text = "results/text/doubly_attentive/toy.en-de"
    write_json(f"{stem}.job.json", {"job": {
        "paper": "doubly_attentive", "system": "nmt_src_img", "dataset": "toy", "pair": "en-de",
        "record": f"{stem}.job.json",
        "inputs": {"src_vocab": "results/vocab/doubly_attentive/toy.en-de.en.json",
                   "tgt_vocab": "results/vocab/doubly_attentive/toy.en-de.de.json",
                   "val_src": f"{text}/val.lc.norm.tok.bpe.en", "val_tgt": f"{text}/val.lc.norm.tok.bpe.de",
                   "train_npy": f"{std}/train.npy", "train_index": f"{std}/train.index.parquet"}}})
    monkeypatch.chdir(tmp_path)
    system = tmp_path / "system"
    written = export_system(root / f"{stem}.best.pt", system)
    assert written["features"] == "resnet50-res4f.std"
    info = json.loads((system / "features.json").read_text(encoding="utf-8"))
    assert info["kind"] == "grid" and info["scaling"] == "standardized" and info["shape_per_item"] == [4, 1024]
    assert info["extract"] == {"extractor": "resnet50", "layer": "res4f", "weights": "random", "image_size": 32,
                               "seed": 0}
    new = [root / images / name for name in names[3:]]
    npy, _ = extract_for_system(system, new, tmp_path, device="cpu")
    np.testing.assert_array_equal(np.load(npy), np.load(root / f"{std}/test.npy"))
    src = write_lines(tmp_path / "raw.en", ["The dog is red.", "A cat!"])
    translate_raw(system, src, tmp_path / "hyp.de", media=new, decode={"beam_size": 1, "max_len": 6}, device="cpu")
    hyps = read_lines(tmp_path / "hyp.de")
    assert len(hyps) == 2 and not any("@@" in h for h in hyps)
    with pytest.raises(DataError, match="has 2 sentences but 1 media files were given"):
        translate_raw(system, src, tmp_path / "x.de", media=new[:1], device="cpu")


def test_constant_and_imported_feature_sets(tmp_path):
    """A constant stand-in store is made again for new images (the same block for each); a store
    imported from someone else's features cannot be, and translate asks for a store instead."""
    from mmt_repro.decode.system import _export_features, extract_for_system
    from mmt_repro.features.constant import constant_features
    from training_jobs import write_store

    root, out = tmp_path / "run", tmp_path / "system"
    out.mkdir()
    store = root / "results/features/d/constant"
    store.mkdir(parents=True)
    write_lines(store / "list.txt", ["a.png", "b.png", "c.png"])
    constant_features(store / "list.txt", store / "train.npy", store / "train.index.parquet", n_regions=2, dim=3,
                      value=0.5)
    assert _export_features({"train_index": "results/features/d/constant/train.index.parquet"}, root, out) == "constant"
    info = json.loads((out / "features.json").read_text(encoding="utf-8"))
    assert info["kind"] == "constant" and info["extract"] == {"n_regions": 2, "dim": 3, "value": 0.5}
    media = [write_lines(tmp_path / name, []) for name in ("x.png", "y.png")]  # never read
    npy, _ = extract_for_system(out, media, tmp_path)
    np.testing.assert_array_equal(np.load(npy), np.full((2, 2, 3), 0.5, dtype=np.float16))

    npy, index = write_store(root / "results/features/d/imported", "train", np.zeros((2, 4, 8), np.float16))
    from mmt_repro.features.store import write_index

    write_index(index, ["a.png", "b.png"], {"kind": "grid", "extractor": "resnet50", "layer": "res4f",
                                            "weights": "pretrained", "shape": [2, 4, 8]})
    _export_features({"train_index": "results/features/d/imported/train.index.parquet"}, root, out)
    with pytest.raises(DataError, match="features.json: the features were imported") as err:
        extract_for_system(out, media, tmp_path)
    assert "--features-npy" in str(err.value)
