"""Bad input is refused with a message naming the file (or config key) and the fix, and what
was already built is kept. One test per case of docs/bad_inputs.md, calling the package
functions directly; three cases go through Snakemake (a missing mirror, a corrupt upstream file
in a half-built DAG, and a second run on a locked directory).
"""

from __future__ import annotations

import gzip
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from mmt_repro.config import ConfigError, deep_update, load_yaml, validate_config
from mmt_repro.datasets.batching import ParallelData
from mmt_repro.corpora.multi30k import SPLIT_SIZES, prepare_multi30k
from mmt_repro.decode.translate import translate
from mmt_repro.features.grid import extract_features
from mmt_repro.features.store import FeatureStore, write_index
from mmt_repro.io import DataError, read_lines
from mmt_repro.text.vocab import Vocab
from mmt_repro.train.trainer import train
from training_jobs import corpus_inputs, train_job

REPO = Path(__file__).resolve().parents[2]
MIRROR_KEY = "inputs.mirror"
SHARED = REPO.parent / "shared" / "datasets"


# ------------------------------------------------------------------------------ helpers
def merged_config(override: str) -> dict:
    """config.yaml + smoke.yaml + ``override`` (YAML), merged the way --configfile does."""
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(REPO / "config" / "smoke.yaml"))
    return deep_update(config, yaml.safe_load(override))


def raises_data_error(func, *args, **kwargs) -> DataError:
    with pytest.raises(DataError) as info:
        func(*args, **kwargs)
    return info.value


def make_gz(path: Path, split: str = "val", lang: str = "en", words: int = 6) -> Path:
    """A fetched Multi30k file with the official line count (synthetic sentences)."""
    lines = [" ".join([f"{lang}{i % 97}"] + ["word"] * (words - 2) + ["."]) for i in range(SPLIT_SIZES[split])]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


def shared_multi30k() -> Path:
    if not (SHARED / "multi30k" / "task1" / "raw").is_dir():
        pytest.skip(f"needs real Multi30k under {SHARED} (../shared/datasets beside the repository)")
    return SHARED


# ------------------------------------------------------------------------------ configuration
def test_unknown_config_key_names_the_key_and_the_valid_ones():
    with pytest.raises(ConfigError) as info:
        validate_config(merged_config("tools: {meteorjar: x.jar}"), REPO / "config" / "schema.yaml")
    msg = str(info.value)
    assert "unknown config key 'tools.meteorjar'" in msg and "meteor_jar" in msg  # the valid keys are listed
    assert "fix: correct the key(s) in config/config.yaml or the file given with --configfile" in msg


def test_wrong_type_names_the_key_and_the_expected_type():
    with pytest.raises(ConfigError) as info:
        validate_config(merged_config("papers: {doubly_attentive: {tables: {table1: {seeds: many}}}}"),
                        REPO / "config" / "schema.yaml")
    msg = str(info.value)
    assert "config key 'papers.doubly_attentive.tables.table1.seeds'" in msg and "'many' is not of type 'array'" in msg
    assert "fix:" in msg


def test_unknown_decode_key_of_a_paper_names_the_file_the_block_and_the_valid_keys():
    from mmt_repro.settings import load_paper

    with pytest.raises(ConfigError) as info:
        load_paper("doubly_attentive", REPO / "config" / "papers" / "doubly_attentive.yaml",
                   {"decode": {"beamsize": 3}})
    msg = str(info.value)
    assert "doubly_attentive.yaml (+ papers.doubly_attentive.overrides): decode: unknown setting key(s) ['beamsize']" in msg
    assert "valid keys: alpha, batch_size, beam_size, max_len" in msg
    with pytest.raises(ConfigError, match="system 'bt_reverse' decode: unknown setting key"):
        load_paper("doubly_attentive", REPO / "config" / "papers" / "doubly_attentive.yaml",
                   {"systems": {"bt_reverse": {"decode": {"beem": 3}}}})


# ------------------------------------------------------------------------------ corpora
def test_missing_mirror_names_the_config_key(tmp_path):
    from mmt_repro.corpora.fetch import fetch_input_file

    err = raises_data_error(fetch_input_file, "multi30k_task1", "raw/val.en.gz", tmp_path / "val.en.gz",
                            mirror_root=tmp_path / "nowhere")
    assert err.path == str(tmp_path / "nowhere") and "the mirror folder does not exist" in err.problem
    assert f"set `{MIRROR_KEY}`" in err.fix
    assert not (tmp_path / "val.en.gz").exists()


def test_missing_mirror_stops_the_workflow_naming_the_key(wf, tmp_path):
    cfg = tmp_path / "mirror.yaml"
    cfg.write_text(f"inputs:\n  mirror: {tmp_path / 'nowhere'}\n", encoding="utf-8")
    res = wf.snakemake("results/data/multi30k/val.en", "--directory", str(tmp_path), "--configfile", str(cfg),
                       "--cores", "1", timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "the mirror folder set by `inputs.mirror` does not exist" in out and MIRROR_KEY in out, out[-3000:]
    assert not (tmp_path / "results/data/multi30k/val.en").exists()


@pytest.mark.slow
def test_checksum_mismatch_stops_the_fetch_naming_the_file_and_keeps_what_was_built(wf, tmp_path):
    """A mirror whose val.en.gz differs from the official file by one sentence: fetch_input
    names the file and both hashes; the outputs built from the good copy before are kept."""
    shared = shared_multi30k()
    mirror = tmp_path / "mirror" / "multi30k" / "task1"
    (mirror / "raw").mkdir(parents=True)
    for name in ("raw/val.en.gz", "raw/val.de.gz"):
        (mirror / name).write_bytes((shared / "multi30k" / "task1" / name).read_bytes())
    cfg = tmp_path / "mirror.yaml"
    cfg.write_text(f"inputs:\n  mirror: {tmp_path / 'mirror'}\n", encoding="utf-8")
    args = ["--directory", str(tmp_path), "--configfile", str(cfg), "--cores", "1"]
    res = wf.snakemake("results/data/multi30k/val.de", *args, timeout=300)
    assert res.returncode == 0, wf.failure_report(res, tmp_path)
    built = tmp_path / "results/data/multi30k/val.de"
    before = (built.read_bytes(), built.stat().st_mtime_ns)

    lines = gzip.decompress((mirror / "raw/val.en.gz").read_bytes()).decode().splitlines()
    lines[3] = "A sentence that is not in Multi30k."
    (mirror / "raw/val.en.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    res = wf.snakemake("results/data/multi30k/val.en", "results/data/multi30k/val.de", *args, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert f"{mirror / 'raw/val.en.gz'}: sha256 mismatch for multi30k_task1/raw/val.en.gz: expected 14f7d25d" in out, out[-3000:]
    assert "delete it and fetch it again from the official source" in out
    assert (built.read_bytes(), built.stat().st_mtime_ns) == before  # built from the good copy, untouched
    assert not (tmp_path / "resources/multi30k_task1/raw/val.en.gz").exists()  # the bad copy was not kept
    assert not (tmp_path / "results/data/multi30k/val.en").exists()


def test_truncated_gzip_names_the_file_and_says_fetch_again(tmp_path):
    gz = make_gz(tmp_path / "res" / "val.en.gz")
    gz.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])
    err = raises_data_error(prepare_multi30k, gz, "val", "en", tmp_path / "out" / "val.en")
    assert err.path == str(gz) and "gzip stream is truncated or corrupt" in err.problem
    assert "fetch it again" in err.fix
    assert not (tmp_path / "out" / "val.en").exists()  # nothing half-written


def test_truncated_feature_archive_names_it_says_fetch_again_and_keeps_the_unpacked_folder(tmp_path):
    import zipfile

    from mmt_repro.corpora.unpack import unpack_archive

    archive, out = tmp_path / "resources" / "vatex_i3d" / "trainval.zip", tmp_path / "resources" / "vatex_i3d" / "trainval"
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as zf:
        for vid in ("_2zXAtOKXm0_000004_000014", "-0udK4I3Ke4_000030_000040"):
            zf.writestr(f"trainval/{vid}.npy", b"\x93NUMPY" + bytes(200))
    unpack_archive(archive, out, strip="trainval/", expect="*.npy")
    archive.write_bytes(archive.read_bytes()[:150])
    err = raises_data_error(unpack_archive, archive, out, strip="trainval/", expect="*.npy")
    assert err.path == str(archive) and "corrupt or truncated" in err.problem
    assert f"delete {archive} and run the workflow again" in err.fix and "fetch_input fetches it again" in err.fix
    assert len(list(out.glob("*.npy"))) == 2  # what was unpacked before stays


def test_file_with_a_lost_line_is_refused_by_its_line_count(tmp_path):
    gz = make_gz(tmp_path / "res" / "val.de.gz", lang="de")
    lines = gzip.decompress(gz.read_bytes()).decode().splitlines()
    gz.write_bytes(gzip.compress(("\n".join(lines[:-1]) + "\n").encode()))
    err = raises_data_error(prepare_multi30k, gz, "val", "de", tmp_path / "val.de")
    assert err.path == str(gz) and f"expected {SPLIT_SIZES['val']}, got {SPLIT_SIZES['val'] - 1}" in err.problem
    assert "delete it and fetch it again" in err.fix


def test_parallel_files_of_unequal_length_name_both_files(tmp_path):
    (tmp_path / "train.en").write_text("a b\nc d\ne f\n")
    (tmp_path / "train.de").write_text("a b\nc d\n")
    vocab = Vocab.build([tmp_path / "train.en", tmp_path / "train.de"])
    err = raises_data_error(ParallelData, tmp_path / "train.en", vocab, tmp_path / "train.de", vocab)
    assert err.path == str(tmp_path / "train.de") and "has 2 lines" in err.problem and str(tmp_path / "train.en") in err.problem
    assert "re-run the preprocessing rules" in err.fix


def test_empty_line_in_a_corpus_names_file_and_line(tmp_path):
    gz = make_gz(tmp_path / "res" / "val.en.gz")
    lines = gzip.decompress(gz.read_bytes()).decode().splitlines()
    lines[4] = ""
    gz.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    err = raises_data_error(prepare_multi30k, gz, "val", "en", tmp_path / "val.en")
    assert err.path == str(gz) and err.problem == "line 5 is empty"
    assert "remove the empty line from every parallel file" in err.fix
    assert not (tmp_path / "val.en").exists()


def test_non_utf8_bytes_name_file_line_and_how_to_re_encode(tmp_path):
    path = tmp_path / "train.de"
    path.write_bytes("ein hund\nein gr\u00fcner ball\n".encode("latin-1"))
    err = raises_data_error(read_lines, path)
    assert err.path == str(path) and "line 2 is not valid UTF-8" in err.problem
    assert "iconv -f latin1 -t utf-8" in err.fix


@pytest.mark.slow
def test_non_utf8_upstream_file_fails_its_job_and_keeps_what_was_built(wf, tmp_path):
    """Half-built DAG: corrupt a fetched file, re-run; the failing job names the file and the
    fix, and every output that does not depend on the file is left untouched."""
    mirror = shared_multi30k()
    cfg = tmp_path / "mirror.yaml"
    cfg.write_text(f"inputs:\n  mirror: {mirror}\n", encoding="utf-8")
    targets = ["results/text/multi30k/val.norm.tok.en", "results/text/multi30k/val.norm.tok.de"]
    args = [*targets, "--directory", str(tmp_path), "--configfile", str(cfg), "--cores", "2"]
    res = wf.snakemake(*args, timeout=300)
    assert res.returncode == 0, wf.failure_report(res, tmp_path)
    kept = [tmp_path / "results/data/multi30k/val.en", tmp_path / targets[0], tmp_path / "results/data/multi30k/val.de"]
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in kept[:2]}

    fetched_de = kept[2]
    lines = fetched_de.read_bytes().split(b"\n")
    lines[6] = "gr\u00fcn".encode("latin-1")
    fetched_de.write_bytes(b"\n".join(lines))
    res = wf.snakemake(*args, "--keep-going", timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "results/data/multi30k/val.de: line 7 is not valid UTF-8" in out, out[-3000:]
    assert "fix: re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)" in out
    for path, (data, mtime) in before.items():
        assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime, f"{path} was touched"
    assert not (tmp_path / targets[1]).exists()  # the failed job left nothing that looks finished


# ------------------------------------------------------------------------------ images and features
def test_missing_and_unreadable_images_are_all_listed(tmp_path):
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (32, 32), "red").save(images / "ok.png")
    (images / "broken.png").write_bytes(b"not a png")
    (tmp_path / "list.txt").write_text("ok.png\nmissing.png\nbroken.png\n")
    out = tmp_path / "feats"
    err = raises_data_error(extract_features, image_list=tmp_path / "list.txt", image_dir=images,
                            out_npy=out / "x.npy", out_index=out / "x.index.parquet", extractor="resnet50",
                            layer="res4f", weights="random", image_size=64, device="cpu")
    assert err.path == str(images) and "2 missing or unreadable image(s)" in err.problem
    assert "missing.png (missing)" in err.problem and "broken.png (unreadable" in err.problem
    assert "fetch or regenerate those images" in err.fix
    assert not (out / "x.npy").exists()


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """Tiny corpus, vocabularies, feature stores and two 1-epoch checkpoints (text-only and
    doubly-attentive), for the feature, checkpoint and decoding cases."""
    d = tmp_path_factory.mktemp("toy")
    rng = np.random.default_rng(0)
    words = "a b c d e f".split()
    src = [" ".join(words[int(i)] for i in rng.integers(0, 6, int(rng.integers(2, 5)))) for _ in range(24)]
    for name, lines in (("train.src", src), ("train.tgt", [s + " red" for s in src]),
                        ("val.src", src[:8]), ("val.tgt", [s + " red" for s in src[:8]])):
        (d / name).write_text("\n".join(lines) + "\n")
    Vocab.build([d / "train.src"]).save(d / "src.json")
    Vocab.build([d / "train.tgt"]).save(d / "tgt.json")
    Vocab.build([d / "train.src", d / "train.tgt"]).save(d / "other.json")

    def store(name, array):
        np.save(d / f"{name}.npy", array)
        write_index(d / f"{name}.index.parquet", [f"img{k}.png" for k in range(len(array))], {"shape": list(array.shape)})
        return d / f"{name}.npy", d / f"{name}.index.parquet"

    stores = {"train": store("train", np.ones((24, 3, 4), np.float16)), "val": store("val", np.ones((8, 3, 4), np.float16))}
    nan = np.ones((8, 3, 4), np.float16)
    nan[5, 1, 2] = np.nan
    stores["nan"] = store("nan", nan)
    stores["wrong_dim"] = store("wrong_dim", np.ones((8, 3, 7), np.float16))
    np.save(d / "flat.npy", np.ones((8, 12), np.float16))
    stores["flat"] = (d / "flat.npy", stores["val"][1])
    small = dict(emb_dim=8, enc_dim=8, dec_dim=8, att_dim=8)
    for system, model, config, feats in (("mmt", "doubly_attentive.nmt_src_img", dict(small, img_dim=4, img_att_dim=8), True),
                                         ("nmt", "doubly_attentive.nmt", small, False)):
        train(training_job(d, d / system, stores if feats else None, model, config))
    return {"dir": d, "stores": stores}


def training_job(d: Path, out: Path, stores: dict | None, model: str, model_config: dict, val: str = "val"):
    """The training job of ``model`` on the toy corpus in ``d`` (``stores[val]``: the validation
    features), writing ``best.pt``, ``last.pt`` and ``curve.tsv`` in ``out``."""
    return train_job(out, model, model_config, dict(optimizer="adam", lr=0.01, batch_size=8, max_epochs=1, log_every=0),
                     corpus_inputs(d, {"train": stores["train"], "val": stores[val]} if stores else None))


def translate_args(toy, checkpoint: str, store: str | None = "val", **kw) -> dict:
    d = toy["dir"]
    npy, index = toy["stores"][store] if store else (None, None)
    return dict(dict(checkpoint=d / checkpoint / "best.pt", src=d / "val.src", out=d / "hyp.txt", src_vocab=d / "src.json",
                     tgt_vocab=d / "tgt.json", features_npy=npy, features_index=index, decode={"beam_size": 2},
                     device="cpu"), **kw)


def test_feature_store_of_the_wrong_shape_names_the_file(toy):
    npy, index = toy["stores"]["flat"]
    err = raises_data_error(FeatureStore, npy, index)
    assert err.path == str(npy) and "expected a 3-d array (N, L, D), found shape (8, 12)" in err.problem
    assert "re-run the feature extraction rule" in err.fix


def test_feature_dimension_other_than_the_models_names_file_and_img_dim(toy, tmp_path):
    err = raises_data_error(translate, **translate_args(toy, "mmt", "wrong_dim"))
    assert err.path == str(toy["stores"]["wrong_dim"][0])
    assert "features have dimension 7, model doubly_attentive.nmt_src_img expects img_dim=4" in err.problem
    assert "set img_dim" in err.fix
    stores = dict(toy["stores"], val=toy["stores"]["wrong_dim"])
    err = raises_data_error(train, training_job(toy["dir"], tmp_path, stores, "doubly_attentive.nmt_src_img",
                                                dict(emb_dim=8, enc_dim=8, dec_dim=8, att_dim=8, img_dim=4, img_att_dim=8)))
    assert "expects img_dim=4" in err.problem and not (tmp_path / "best.pt").exists()


def test_nan_features_name_the_store_and_the_rows(toy):
    err = raises_data_error(translate, **translate_args(toy, "mmt", "nan"))
    assert err.path == str(toy["stores"]["nan"][0]) and "feature row(s) [5] hold NaN or Inf" in err.problem
    assert "re-run feature extraction" in err.fix
    assert not (toy["dir"] / "hyp.txt").exists()


# ------------------------------------------------------------------------------ checkpoints and decoding
def test_checkpoint_with_another_vocabulary_is_refused(toy):
    err = raises_data_error(translate, **translate_args(toy, "mmt", src_vocab=toy["dir"] / "other.json"))
    assert err.path == str(toy["dir"] / "mmt" / "best.pt") and "trained with another src vocabulary" in err.problem
    assert "decode with the vocabulary the model was trained with, or re-train" in err.fix


def test_checkpoint_of_another_model_is_refused(toy):
    # a text-only checkpoint where the system is multimodal (the rule passes image features)
    err = raises_data_error(translate, **translate_args(toy, "nmt", "val"))
    assert err.path == str(toy["dir"] / "nmt" / "best.pt") and "text-only model doubly_attentive.nmt" in err.problem
    assert "re-train this system" in err.fix
    # a multimodal checkpoint decoded without images
    err = raises_data_error(translate, **translate_args(toy, "mmt", None))
    assert "needs grid features" in err.problem


def test_resume_checkpoint_of_another_model_is_ignored_with_a_warning(toy, tmp_path, caplog):
    out = tmp_path / "mmt"
    out.mkdir()
    (out / "last.pt").write_bytes((toy["dir"] / "nmt" / "last.pt").read_bytes())
    with caplog.at_level(logging.WARNING):
        train(training_job(toy["dir"], out, toy["stores"], "doubly_attentive.nmt_src_img",
                           dict(emb_dim=8, enc_dim=8, dec_dim=8, att_dim=8, img_dim=4, img_att_dim=8)))
    assert f"ignoring {out / 'last.pt'}: it was written with another model, configuration or vocabulary" in caplog.text
    assert (out / "best.pt").exists()


def test_decoding_past_max_len_warns_naming_the_config_key(toy, caplog):
    # a model that never ends a sentence: the output bias of <eos> pushed to -1e4
    ckpt = torch.load(toy["dir"] / "mmt" / "best.pt", map_location="cpu", weights_only=False)
    tgt_size = ckpt["vocab"]["tgt_size"]
    (bias,) = [k for k, v in ckpt["weights"].items() if v.dim() == 1 and v.shape[0] == tgt_size]
    ckpt["weights"][bias][Vocab.eos_id] = -1e4
    (toy["dir"] / "endless").mkdir(exist_ok=True)
    torch.save(ckpt, toy["dir"] / "endless" / "best.pt")
    with caplog.at_level(logging.WARNING):
        translate(**translate_args(toy, "endless", decode={"beam_size": 2, "max_len": 3}))
    assert "8 of 8 translations of" in caplog.text
    assert "reached max_len=3 without <eos> and are cut off; raise decode.max_len in the paper's settings" in caplog.text
    assert all(len(line.split()) == 3 for line in (toy["dir"] / "hyp.txt").read_text().splitlines())
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        translate(**translate_args(toy, "mmt", decode={"beam_size": 2, "max_len": 50}))
    assert "max_len" not in caplog.text


# ------------------------------------------------------------------------------ concurrent runs
@pytest.mark.slow
def test_second_run_on_a_locked_directory_is_refused_and_rerun_incomplete_recovers(wf, tmp_path):
    """Run A holds the directory's lock (frozen with SIGSTOP while its tokenize job runs); run B
    on the same directory is refused. A is then killed (SIGKILL, as a crashed node would): its
    stale lock refuses the next run until --unlock, and --rerun-incomplete finishes the work."""
    mirror = shared_multi30k()
    cfg = tmp_path / "mirror.yaml"
    cfg.write_text(f"inputs:\n  mirror: {mirror}\n", encoding="utf-8")
    target = "results/text/multi30k/train.norm.tok.en"
    args = [target, "--directory", str(tmp_path), "--configfile", str(cfg), "--cores", "1"]
    job_log = tmp_path / "results/logs/tokenize/multi30k/train.norm.tok.en.log"

    first = subprocess.Popen([*wf.SNAKEMAKE, "--snakefile", str(wf.REPO / "Snakefile"), *args], cwd=wf.REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not job_log.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert job_log.exists(), f"the tokenize job of the first run did not start (exit {first.poll()})"
        os.killpg(first.pid, signal.SIGSTOP)  # the first run now holds the lock, mid-job
        res = wf.snakemake(*args, timeout=300)
        out = res.stdout + res.stderr
        assert res.returncode != 0 and "Directory cannot be locked" in out, out[-3000:]
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert not (tmp_path / target).exists()  # the killed job wrote nothing that looks finished

    res = wf.snakemake(*args, timeout=300)  # the stale lock of the killed run
    assert res.returncode != 0 and "--unlock" in res.stdout + res.stderr
    assert wf.snakemake(*args, "--unlock", timeout=300).returncode == 0
    res = wf.snakemake(*args, "--rerun-incomplete", timeout=300)
    assert res.returncode == 0, wf.failure_report(res, tmp_path)
    assert len((tmp_path / target).read_text().splitlines()) == SPLIT_SIZES["train"]
