"""What the shared core gained for BertGen, used through the shared code: box geometry in
batches of region stores, language pairs in batches, several caption files per image, extra
training tasks through the trainer (with their validation curves), decoding a visual-optional
model without images, WordPiece vocabularies with reserved tokens, published values of other
conditions, and the settings that declare one model for many tables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from mmt_repro.checkpoint import read_checkpoint
from mmt_repro.config import ConfigError
from mmt_repro.datasets.batching import ParallelData
from mmt_repro.decode.translate import translate
from mmt_repro.features.store import box_geometry
from mmt_repro.features.store import open_features, write_index
from mmt_repro.models.base import Specials, Vocabs, VocabSpec
from mmt_repro.settings import load_paper, pair_langs
from mmt_repro.tables.build import make_table, read_published
from mmt_repro.text.vocab import Vocab
from mmt_repro.text.wordpiece import LEARNED_SPECIALS, learn_wordpiece, merge_wordpiece_line, wordpiece_lines
from mmt_repro.io import DataError
from mmt_repro.train.task_best import is_new_best, take_task_best
from mmt_repro.train.trainer import train
from training_jobs import train_job

WORDS = [f"w{i}" for i in range(30)]


def region_store(folder: Path, n: int, k: int = 3, d: int = 4, seed: int = 0) -> tuple[Path, Path]:
    """A real region store on disk (features, boxes, index with n_boxes/width/height)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    n_boxes = rng.integers(1, k + 1, size=n)
    feats = np.zeros((n, k, d), dtype=np.float16)
    boxes = np.zeros((n, k, 4), dtype=np.float32)
    for i in range(n):
        feats[i, : n_boxes[i]] = rng.normal(size=(n_boxes[i], d))
        x1, y1 = rng.uniform(0, 40, size=(2, n_boxes[i]))
        boxes[i, : n_boxes[i]] = np.stack([x1, y1, x1 + 20, y1 + 10], 1)
    np.save(folder / "s.npy", feats)
    np.save(folder / "s.boxes.npy", boxes)
    write_index(folder / "s.index.parquet", [f"{i}.jpg" for i in range(n)], {"shape": [n, k, d]},
                columns={"n_boxes": n_boxes, "width": np.full(n, 80), "height": np.full(n, 50)})
    return folder / "s.npy", folder / "s.index.parquet"


@pytest.fixture
def vocab(tmp_path) -> Vocab:
    (tmp_path / "vocab.txt").write_text("\n".join([*LEARNED_SPECIALS, *WORDS]) + "\n", encoding="utf-8")
    return Vocab.from_wordpiece(tmp_path / "vocab.txt")


def lines(path: Path, n: int, seed: int, reverse: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = [WORDS[i] for i in rng.integers(0, 12, size=rng.integers(1, 5))]
        out.append(" ".join(reversed(words) if reverse else words))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def test_region_store_batches_carry_box_geometry(tmp_path, vocab):
    npy, index = region_store(tmp_path / "f", 4)
    store = open_features(npy, index)
    data = ParallelData(None, vocab, features=store)
    batch = data.collate([2, 0])
    geo = batch["img_geometry"]
    assert geo.shape == (2, 3, 6) and geo.dtype == torch.float32
    want = box_geometry(store.boxes[2], 80, 50)
    k = int(store.lengths[2])
    assert np.allclose(geo[0, :k].numpy(), want[:k])
    assert (geo[0, k:] == 0).all() and (geo[0, :k, 2] > geo[0, :k, 0]).all()
    grid = ParallelData(None, vocab, features=GridStore())
    assert "img_geometry" not in grid.collate([0])  # no boxes, no geometry: batches as before


class GridStore:
    shape = (1, 4, 2)

    def __len__(self):
        return 1

    def __getitem__(self, row):
        return np.ones((4, 2), dtype=np.float32)


def test_language_pairs_and_caption_files_in_batches(tmp_path, vocab):
    src, tgt = lines(tmp_path / "s", 3, 0), lines(tmp_path / "t", 3, 1)
    batch = ParallelData(src, vocab, tgt, vocab, langs=pair_langs("en-de")).collate([0, 1])
    assert batch["src_lang"] == ["en", "en"] and batch["tgt_lang"] == ["de", "de"]
    assert "tgt_lang" not in ParallelData(src, vocab, tgt, vocab).collate([0])  # unchanged without a pair
    npy, index = region_store(tmp_path / "f", 3)
    caps = [lines(tmp_path / f"c{k}", 3, 10 + k) for k in (1, 2)]
    data = ParallelData(None, vocab, caps, vocab, features=open_features(npy, index), langs=pair_langs("im-tr"))
    assert data.n_examples == 6 and data.image_rows.tolist() == [0, 1, 2, 0, 1, 2]
    assert data.collate([4])["src_lang"] is None and data.collate([4])["tgt_lang"] == ["tr"]
    assert data.tgt[4] == vocab.encode(caps[1].read_text().splitlines()[1].split())


def test_trainer_hands_extra_tasks_to_the_model_and_writes_their_curves(tmp_path, vocab):
    """A BertGen-like run through the shared trainer: an MMT reference task, an MT task without
    images and a captioning task, each task's validation curve and passes in the training curve,
    then decoding the MT task (no features) with the same checkpoint."""
    vpath = tmp_path / "vocab.json"
    vocab.save(vpath)
    npy, index = region_store(tmp_path / "train", 12)
    vnpy, vindex = region_store(tmp_path / "val", 4, seed=1)
    src, tgt = lines(tmp_path / "tr.en", 12, 2), lines(tmp_path / "tr.de", 12, 3)
    vsrc, vtgt = lines(tmp_path / "va.en", 4, 4), lines(tmp_path / "va.de", 4, 5)
    mt_src, mt_tgt = lines(tmp_path / "mt.de", 9, 6), lines(tmp_path / "mt.en", 9, 6, reverse=True)
    caps = [lines(tmp_path / f"cap{k}.de", 12, 20 + k) for k in (1, 2)]
    tasks = [
        {"name": "mt_de_en", "pair": "de-en", "src": str(mt_src), "tgt": [str(mt_tgt)], "features": None,
         "val": {"src": str(mt_src), "refs": [str(mt_tgt)], "features": None}},
        {"name": "ic_de", "pair": "im-de", "src": None, "tgt": [str(c) for c in caps], "features": [str(npy), str(index)],
         "val": None},
    ]
    model_config = {"hidden_size": 16, "num_layers": 1, "num_heads": 2, "ffn_size": 32, "img_dim": 4, "coord_freqs": 2,
                    "init": "random", "full_image": "mean", "max_regions": 4}
    inputs = {"src_vocab": vpath, "tgt_vocab": vpath, "train_src": src, "train_tgt": tgt, "val_src": vsrc, "val_tgt": vtgt,
              "val_ref": vtgt, "train_npy": npy, "train_index": index, "val_npy": vnpy, "val_index": vindex}
    job = train_job(
        tmp_path, "bertgen.bertgen", model_config,
        {"optimizer": "adamw", "lr": 1e-3, "batch_size": 8, "max_epochs": 2, "val_max_len": 6, "log_every": 0,
         "best_per_task": True},
        {role: str(path) for role, path in inputs.items()}, pair="en-de", tasks=tasks,
    )
    # the workflow's names (<model>.best.pt: the tasks' bests go to <model>.task_best/)
    job = dataclasses.replace(job, best=str(tmp_path / "m.best.pt"), last=str(tmp_path / "m.last.pt"),
                              curve=str(tmp_path / "m.curve.tsv"))
    summary = train(job)
    assert summary["epochs"] == 2
    curve = pd.read_csv(tmp_path / "m.curve.tsv", sep="\t")
    n_ref = sum(len(x.split()) + 1 for x in tgt.read_text().splitlines())
    n_mt = sum(len(x.split()) + 1 for x in mt_tgt.read_text().splitlines())
    steps = -(-n_ref // 8)
    assert curve["passes_reference"].tolist() == [round(steps * 8 / n_ref, 4), round(2 * steps * 8 / n_ref, 4)]
    assert curve["passes_mt_de_en"].iloc[-1] == round(2 * steps * 8 / n_mt, 4)
    assert "val_bleu_mt_de_en" in curve and "val_bleu_ic_de" not in curve
    assert read_checkpoint(tmp_path / "m.best.pt")["vocabs"]["tgt"]["reserved"]["[MASK]"] == vocab.mask_id
    # best_per_task: the MT task's own best epoch (by its curve column) kept beside the run's best
    task_best = read_checkpoint(tmp_path / "m.task_best" / "mt_de_en.pt")
    scores = curve["val_bleu_mt_de_en"].tolist()
    assert task_best["progress"]["best_epoch"] == 1 + scores.index(max(scores))
    assert task_best["progress"]["task_best"]["mt_de_en"] == pytest.approx(max(scores), abs=0.005)
    assert not (tmp_path / "m.task_best" / "ic_de.pt").exists()  # no validation set: no best of its own
    take_task_best(tmp_path / "m.best.pt", "mt_de_en", tmp_path / "m.best.mt_de_en.pt")
    assert (tmp_path / "m.best.mt_de_en.pt").read_bytes() == (tmp_path / "m.task_best" / "mt_de_en.pt").read_bytes()
    with pytest.raises(DataError, match="kept no best checkpoint of task 'ic_de'"):
        take_task_best(tmp_path / "m.best.pt", "ic_de", tmp_path / "x.pt")
    info = translate(tmp_path / "m.best.pt", mt_src, tmp_path / "mt.hyp", vpath, vpath, decode={"beam_size": 1,
                     "max_len": 6, "max_len_a": 0}, pair="de-en", device="cpu")
    assert info["sentences"] == 9  # the MT task: no features given, the model runs on text alone
    cap = translate(tmp_path / "m.best.pt", None, tmp_path / "cap.hyp", None, vpath, features_npy=vnpy,
                    features_index=vindex, decode={"beam_size": 1, "max_len": 6, "max_len_a": 0}, pair="im-de", device="cpu")
    assert cap["sentences"] == 4  # one caption per image


def test_wordpiece_vocabulary_keeps_file_order_and_reserved_tokens(tmp_path):
    text = tmp_path / "t.de"
    text.write_text("ein hund läuft über die wiese .\nzwei hunde spielen im gras .\n" * 20, encoding="utf-8")
    learn_wordpiece([text], tmp_path / "vocab.txt", vocab_size=60, min_frequency=1)
    pieces = (tmp_path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert pieces[: len(LEARNED_SPECIALS)] == list(LEARNED_SPECIALS)
    vocab = Vocab.from_wordpiece(tmp_path / "vocab.txt")
    assert vocab.tokens[4:] == pieces  # id 4 + i is line i
    assert vocab.mask_id == 4 + pieces.index("[MASK]")
    assert set(vocab.reserved()) == set(LEARNED_SPECIALS)
    assert Vocab(["a", "b"]).mask_id is None and Vocab(["a"]).reserved() == {}
    seg = wordpiece_lines(["ein hund läuft ."], tmp_path / "vocab.txt")[0]
    assert merge_wordpiece_line(seg) == "ein hund läuft ." and all(p in vocab for p in seg.split())
    spec = VocabSpec.of(vocab)
    assert spec.specials.mask == vocab.mask_id and spec.reserved["[TO_DE]"] == vocab.token_to_id("[TO_DE]")
    again = Vocabs.from_dict(Vocabs(None, spec).to_dict())
    assert again.tgt == spec
    assert Vocabs.from_dict({"src": None, "tgt": {"size": 5, "specials": vars(Specials())}}).tgt.reserved == {}


def test_published_values_of_the_shuffled_condition(tmp_path):
    pub = tmp_path / "pub.tsv"
    pub.write_text("paper\ttable\tsystem\tpair\ttest_set\tmetric\tvalue\tsource\tmarks\tcondition\n"
                   "p\tt\ts\ten-de\ttest\tbleu\t42.2\tT4\t\t\n"
                   "p\tt\ts\ten-de\ttest\tbleu\t41.1\tT4 - 1.1\t\tshuffled\n", encoding="utf-8")
    assert read_published(pub)["condition"].tolist() == ["congruent", "shuffled"]
    df = make_table([], "p", "t", pub, tmp_path / "t.tsv")
    assert dict(zip(df["condition"], df["paper_value"])) == {"congruent": 42.2, "shuffled": 41.1}
    old = tmp_path / "old.tsv"  # files without the column read as before: every value congruent
    old.write_text("paper\ttable\tsystem\tpair\ttest_set\tmetric\tvalue\tsource\n"
                   "p\tt\ts\ten-de\ttest\tbleu\t42.2\tT4\n", encoding="utf-8")
    assert read_published(old)["condition"].tolist() == ["congruent"]


def test_systems_declare_one_model_for_many_tables_and_their_tasks(tmp_path):
    paper = tmp_path / "p.yaml"
    paper.write_text(
        "recipe: {langs: [en, de], chain: lc, joint_vocab: true, lowercase: true}\n"
        "systems:\n  big:\n    model: bertgen.bertgen\n    visual: regions\n"
        "    train_on: {dataset: multi30k, pair: en-de}\n"
        "    tasks:\n      ic_de: {dataset: flickr30k_captions, pair: im-de}\n"
        "      mt: {dataset: iwslt, pair: de-en, images: false, val: true}\n", encoding="utf-8")
    s = load_paper("p", paper).system("big")
    tasks = s.task_settings()
    assert s.train_on == {"dataset": "multi30k", "pair": "en-de"}
    assert tasks["ic_de"].images is None and tasks["mt"].images is False and tasks["mt"].val
    assert pair_langs("im-de") == (None, "de")
    for bad, match in (("    tasks:\n      x: {dataset: d, pair: english-de}\n", "task pair"),
                       ("    tasks:\n      x: {dataset: d, pair: en-de, colour: red}\n", "colour"),
                       ("    train_on: {dataset: d}\n", "train_on must be")):
        paper.write_text("recipe: {langs: [en, de], chain: lc, lowercase: true}\n"
                         "systems:\n  big:\n    model: bertgen.bertgen\n" + bad, encoding="utf-8")
        with pytest.raises(ConfigError, match=match):
            load_paper("p", paper)


def test_manual_input_comes_from_a_copy_put_in_place(tmp_path):
    """Pre-trained weights behind a download page (VL-BERT): the run stops with where to get them,
    unless ``inputs.local.<input>`` holds a copy, which is then fetched like any file."""
    import yaml

    from mmt_repro.corpora.fetch import fetch_input_file
    from mmt_repro.corpora.manifest import load_manifest
    from mmt_repro.io import DataError

    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump({"inputs": {"weights": {
        "title": "Some weights", "papers": ["bertgen"], "access": "manual", "licence": "MIT", "homepage": "h",
        "request": "download w.model from the page", "config_key": "inputs.local.weights",
        "files": {"w.model": {"sha256": None}}}}}))
    manifest = load_manifest(path)
    with pytest.raises(DataError) as info:
        fetch_input_file("weights", "w.model", tmp_path / "out.model", manifest=manifest)
    assert "manual-only" in info.value.problem and "`inputs.local.weights`" in info.value.fix
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "w.model").write_bytes(b"weights")
    got = fetch_input_file("weights", "w.model", tmp_path / "out.model", local_dir=tmp_path / "copy", manifest=manifest)
    assert (tmp_path / "out.model").read_bytes() == b"weights" and not got["verified"]


def test_a_task_best_counts_only_when_it_beats_the_saved_one():
    """The per-task bests live in the run's progress (saved in .last.pt): a resumed run compares
    with the scores before the interruption."""
    progress = {"task_best": {"mt_de_en": 20.0}}
    assert not is_new_best(progress, "mt_de_en", 19.5) and not is_new_best(progress, "mt_de_en", 20.0)
    assert is_new_best(progress, "mt_de_en", 20.5) and progress["task_best"]["mt_de_en"] == 20.5
    assert is_new_best(progress, "mt_en_de", 0.0) and progress["task_best"]["mt_en_de"] == 0.0
