"""Multi30k through the manifest (fetch + sha256) and the prepare step, its integrity checks,
and check_parallel."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

import yaml

from mmt_repro.config import ConfigError
from mmt_repro.corpora.fetch import fetch_input_file
from mmt_repro.corpora.manifest import load_manifest
from mmt_repro.corpora.multi30k import (
    SPLIT_SIZES,
    check_config,
    check_parallel,
    prepare_multi30k,
    prepare_multi30k_comparable,
    prepare_multi30k_image_list,
    release,
)
from mmt_repro.io import DataError, read_lines
from mmt_repro.standins.world import SIZES

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


@pytest.fixture(scope="module")
def mirror():
    if not (DATASETS / "multi30k" / "task1" / "raw").is_dir():
        pytest.skip(f"shared data not found: {DATASETS / 'multi30k'} (expected ../shared/datasets beside the repository)")
    return DATASETS


def _gz_file(path: Path, lines: list[str], encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress("".join(f"{line}\n" for line in lines).encode(encoding)))
    return path


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# --- real data --------------------------------------------------------------------------------


@pytest.mark.parametrize("split", list(SPLIT_SIZES))
def test_fetch_and_prepare_from_shared_mirror_gives_published_counts(mirror, tmp_path, split):
    outs = []
    for lang in ("en", "de", "fr"):
        got = fetch_input_file("multi30k_task1", f"raw/{split}.{lang}.gz", tmp_path / "res" / f"{split}.{lang}.gz",
                               mirror_root=mirror)
        assert got["verified"] and got["lines"] == SPLIT_SIZES[split]  # sha256 from the manifest matched
        outs.append(prepare_multi30k(tmp_path / "res" / f"{split}.{lang}.gz", split, lang, tmp_path / f"{split}.{lang}"))
    fetch_input_file("multi30k_task1", f"image_splits/{split}.txt", tmp_path / "res" / f"{split}.txt", mirror_root=mirror)
    images = prepare_multi30k_image_list(tmp_path / "res" / f"{split}.txt", split, tmp_path / f"{split}.images.txt")
    assert check_parallel([*outs, images], expected=SPLIT_SIZES[split]) == SPLIT_SIZES[split]
    # decompressed text, identical to the gzip's content
    assert outs[0].read_bytes() == gzip.decompress((mirror / "multi30k" / "task1" / "raw" / f"{split}.en.gz").read_bytes())
    assert re.fullmatch(r"\S+\.jpg(#\d+)?", read_lines(images)[0])


def test_published_sizes():
    """The split sizes are read from config/manifest.yaml (`lines`), not written in code."""
    assert SPLIT_SIZES == {"train": 29000, "val": 1014, "test_2016_flickr": 1000, "test_2017_flickr": 1000,
                           "test_2017_mscoco": 461}


def test_release_is_what_the_manifest_declares():
    rel = release()
    assert rel.splits == ["test_2016_flickr", "test_2017_flickr", "test_2017_mscoco", "train", "val"]
    assert rel.langs == ["cs", "de", "en", "fr"]
    assert sorted(rel.text["test_2017_mscoco"]) == ["de", "en", "fr"]  # Czech only for the 2016-era splits
    assert rel.size("test_2017_mscoco") == 461 and rel.image_lists["val"] == 1014


def test_unknown_split_or_language_lists_valid_ones(tmp_path):
    with pytest.raises(DataError, match="valid splits: test_2016_flickr, test_2017_flickr, test_2017_mscoco, train, val"):
        prepare_multi30k(tmp_path / "x.gz", "test_2099", "en", tmp_path / "x")
    with pytest.raises(DataError, match="valid languages: cs, de, en, fr"):
        prepare_multi30k(tmp_path / "x.gz", "val", "xx", tmp_path / "x")
    with pytest.raises(DataError, match="valid languages: de, en, fr\n"):
        prepare_multi30k(tmp_path / "x.gz", "test_2017_mscoco", "cs", tmp_path / "x")
    with pytest.raises(DataError, match="valid splits"):
        prepare_multi30k_image_list(tmp_path / "x.txt", "dev", tmp_path / "x")


# --- splits and languages from the config, checked against the manifest -------------------------

FULL = {"source": "multi30k", "splits": ["train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"],
        "langs": ["en", "de", "fr"], "train": "train", "val": "val"}


def test_check_config_returns_the_configured_splits_and_languages():
    assert check_config("multi30k", FULL) == {"splits": FULL["splits"], "langs": ["en", "de", "fr"]}
    # without `langs`: the languages released for every configured split
    assert check_config("m", {**FULL, "langs": None})["langs"] == ["de", "en", "fr"]
    assert check_config("m", {**FULL, "splits": ["train", "val"], "langs": None})["langs"] == ["cs", "de", "en", "fr"]


def test_check_config_unknown_split_names_the_key_and_the_valid_values():
    with pytest.raises(ConfigError) as info:
        check_config("multi30k", {**FULL, "splits": ["train", "val", "test_2099"]})
    msg = str(info.value)
    assert msg.startswith("datasets.multi30k.splits: unknown Multi30k split(s) test_2099; valid values")
    assert "test_2016_flickr, test_2017_flickr, test_2017_mscoco, train, val" in msg and "inputs.manifest_extra" in msg


def test_check_config_unknown_language_names_the_key_and_the_valid_values():
    with pytest.raises(ConfigError, match=r"^datasets\.multi30k\.langs: unknown Multi30k language 'xx'; "
                                          r"valid values for the configured splits: de, en, fr"):
        check_config("multi30k", {**FULL, "langs": ["en", "xx"]})
    # Czech exists, but not for the 2017 test sets: a dataset of its own is the fix
    with pytest.raises(ConfigError) as info:
        check_config("multi30k", {**FULL, "langs": ["en", "cs"]})
    msg = str(info.value)
    assert "datasets.multi30k.langs: language 'cs' is not released for split(s) test_2017_flickr, test_2017_mscoco" in msg
    assert "valid values for the configured splits: de, en, fr" in msg and "test_2016_flickr, train, val" in msg
    assert check_config("multi30k_cs", {**FULL, "splits": ["train", "val", "test_2016_flickr"], "langs": ["en", "cs"]})


def test_check_config_train_and_val_must_be_configured_splits():
    with pytest.raises(ConfigError, match=r"datasets\.multi30k\.val: 'dev' is not one of datasets\.multi30k\.splits"):
        check_config("multi30k", {**FULL, "val": "dev"})


def _extra_manifest(tmp_path: Path, files: dict) -> Path:
    path = tmp_path / "extra.yaml"
    path.write_text(yaml.safe_dump({"inputs": {"multi30k_task1": {"files": files}}}), encoding="utf-8")
    return path


def test_a_test_set_declared_in_an_extra_manifest(tmp_path):
    """A made-up test set: its files in an extra manifest (config inputs.manifest_extra), its name
    in the config; prepared and checked against the declared line counts, no code involved."""
    extra = _extra_manifest(tmp_path, {
        **{f"raw/test_2018_made_up.{lang}.gz": {"sha256": None, "lines": 3} for lang in ("en", "de", "fr")},
        "image_splits/test_2018_made_up.txt": {"sha256": None, "lines": 3},
    })
    manifest = load_manifest(config={"inputs": {"manifest_extra": [str(extra)]}})
    assert "raw/train.en.gz" in manifest.input("multi30k_task1").files  # merged, not replaced
    assert manifest.input("multi30k_task1").file("raw/test_2018_made_up.en.gz").urls[0].endswith(
        "/data/task1/raw/test_2018_made_up.en.gz")
    layout = check_config("multi30k", {**FULL, "splits": [*FULL["splits"], "test_2018_made_up"]}, manifest)
    assert layout["splits"][-1] == "test_2018_made_up"
    src = _gz_file(tmp_path / "t.en.gz", ["a dog .", "a cat .", "two birds ."])
    out = prepare_multi30k(src, "test_2018_made_up", "en", tmp_path / "out.en", manifest_extra=[extra])
    assert read_lines(out) == ["a dog .", "a cat .", "two birds ."]
    short = _gz_file(tmp_path / "s.de.gz", ["ein hund ."])
    with pytest.raises(DataError, match="expected 3, got 1"):
        prepare_multi30k(short, "test_2018_made_up", "de", tmp_path / "out.de", manifest=manifest)
    with pytest.raises(DataError, match="unknown Multi30k split 'test_2018_made_up'"):  # not without the extra manifest
        prepare_multi30k(src, "test_2018_made_up", "en", tmp_path / "x.en")


def test_inconsistent_line_counts_and_missing_image_list_are_refused(tmp_path):
    extra = _extra_manifest(tmp_path, {"raw/odd.en.gz": {"sha256": None, "lines": 3},
                                       "raw/odd.de.gz": {"sha256": None, "lines": 4}})
    manifest = load_manifest(extra=[extra])
    with pytest.raises(ConfigError, match=r"datasets\.multi30k\.splits: split\(s\) odd have text but no image list"):
        check_config("multi30k", {**FULL, "splits": ["train", "val", "odd"], "langs": ["en", "de"]}, manifest)
    extra = _extra_manifest(tmp_path, {"raw/odd.en.gz": {"sha256": None, "lines": 3},
                                       "raw/odd.de.gz": {"sha256": None, "lines": 4},
                                       "image_splits/odd.txt": {"sha256": None, "lines": 3}})
    with pytest.raises(DataError, match="declare different line counts"):
        check_config("multi30k", {**FULL, "splits": ["train", "val", "odd"], "langs": ["en", "de"]},
                     load_manifest(extra=[extra]))


def test_extra_manifest_errors_name_the_file_or_key(tmp_path):
    with pytest.raises(DataError, match="inputs.manifest_extra"):
        load_manifest(config={"inputs": {"manifest_extra": [str(tmp_path / "nope.yaml")]}})
    bad = tmp_path / "bad.yaml"
    bad.write_text("inputs:\n  multi30k_task1:\n    files: {raw/x.en.gz: {lines: -1}}\n", encoding="utf-8")
    with pytest.raises(DataError, match="invalid manifest") as info:
        load_manifest(extra=[bad])
    assert str(bad) in str(info.value)
    new_input = tmp_path / "new.yaml"
    new_input.write_text("inputs:\n  my_corpus:\n    files: {a.txt: {lines: 1}}\n", encoding="utf-8")
    with pytest.raises(DataError, match="my_corpus: 'title' is a required property"):
        load_manifest(extra=[new_input])


def test_truncated_gzip_names_file(tmp_path):
    full = gzip.compress("".join(f"line {i}\n" for i in range(1014)).encode())
    bad = tmp_path / "val.en.gz"
    bad.write_bytes(full[: len(full) // 2])
    with pytest.raises(DataError, match="truncated or corrupt") as info:
        prepare_multi30k(bad, "val", "en", tmp_path / "out" / "val.en")
    assert info.value.path == str(bad)
    assert _leftovers(tmp_path / "out") == []


def test_non_utf8_names_file(tmp_path):
    bad = _gz_file(tmp_path / "val.fr.gz", ["garçon"] * 1014, encoding="latin-1")
    with pytest.raises(DataError, match="line 1 is not valid UTF-8") as info:
        prepare_multi30k(bad, "val", "fr", tmp_path / "out" / "val.fr")
    assert info.value.path == str(bad)
    assert _leftovers(tmp_path / "out") == []


def test_wrong_line_count_names_file_expected_and_got(tmp_path):
    bad = _gz_file(tmp_path / "test_2017_mscoco.de.gz", ["ein satz"] * 460)
    with pytest.raises(DataError, match="expected 461, got 460") as info:
        prepare_multi30k(bad, "test_2017_mscoco", "de", tmp_path / "out.de")
    assert info.value.path == str(bad) and "fetch it again" in info.value.fix
    assert not (tmp_path / "out.de").exists()


# --- check_parallel ----------------------------------------------------------------------------


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_check_parallel_equal_files(tmp_path):
    a = _write(tmp_path / "a.en", ["one", "two", "three"])
    b = _write(tmp_path / "a.de", ["eins", "zwei", "drei"])
    assert check_parallel([a, b]) == 3
    assert check_parallel([a, b], expected=3) == 3


def test_check_parallel_unequal_lists_every_file(tmp_path):
    a = _write(tmp_path / "a.en", ["one", "two", "three"])
    b = _write(tmp_path / "a.de", ["eins", "zwei"])
    with pytest.raises(DataError, match="different numbers of lines") as info:
        check_parallel([a, b])
    msg = str(info.value)
    assert f"{a}: 3 lines" in msg and f"{b}: 2 lines" in msg


def test_check_parallel_expected_count(tmp_path):
    a = _write(tmp_path / "a.en", ["one", "two"])
    with pytest.raises(DataError, match="expected 1014") as info:
        check_parallel([a], expected=1014)
    assert str(a) in str(info.value)


def test_check_parallel_empty_line_names_file_and_line(tmp_path):
    a = _write(tmp_path / "a.en", ["one", "two", "three"])
    b = _write(tmp_path / "a.de", ["eins", "  ", "drei"])
    with pytest.raises(DataError, match="line 2 is empty") as info:
        check_parallel([a, b])
    assert str(b) in str(info.value)
    assert check_parallel([a, b], allow_empty_lines=True) == 3


def test_check_parallel_non_utf8_names_file(tmp_path):
    a = tmp_path / "a.fr"
    a.write_bytes("garçon\n".encode("latin-1"))
    with pytest.raises(DataError, match="not valid UTF-8") as info:
        check_parallel([a])
    assert str(a) in str(info.value)


def test_comparable_descriptions_from_the_mirror(mirror, tmp_path):
    """Multi30k task 2 (M30k_C): five German descriptions per training image, 29,000 lines each."""
    from mmt_repro.corpora.multi30k import prepare_multi30k_comparable_image_list

    fetch_input_file("multi30k_task2", "raw/train.3.de.gz", tmp_path / "r.gz", mirror_root=mirror)
    lines = read_lines(prepare_multi30k_comparable(tmp_path / "r.gz", 3, "de", tmp_path / "c3.de"))
    assert len(lines) == 29000 and lines[0] == "Zwei Männer gucken sich einen Busch im Garten an."
    fetch_input_file("multi30k_task2", "image_splits/train_images.txt", tmp_path / "i.txt", mirror_root=mirror)
    images = prepare_multi30k_comparable_image_list(tmp_path / "i.txt", tmp_path / "imgs.txt")
    assert read_lines(images)[:2] == ["1000092795.jpg", "10002456.jpg"]
    with pytest.raises(DataError, match="1-5"):
        prepare_multi30k_comparable(tmp_path / "r.gz", 6, "de", tmp_path / "unused")


# ----------------------------------------------------------------------------- stand-in inputs
def test_task1_and_task2_readers_read_their_standins(standin, tmp_path):
    """The stand-in Multi30k files (mmt_repro.standins), fetched from a stand-in mirror with the
    stand-in manifest's line counts, through the readers the prepare rules call."""
    from mmt_repro.corpora.multi30k import prepare_multi30k_comparable_image_list

    t1 = standin("multi30k_task1")
    m = t1["manifest"]
    assert m["multi30k_task1"].file("raw/train.cs.gz").lines == 40  # the stand-in counts replace the real ones
    assert load_manifest()["multi30k_task1"].file("raw/train.cs.gz").lines == 29000  # ... for that run only
    for split, n in (("train", 40), ("val", SIZES["val"]), ("test_2017_mscoco", SIZES["test_2017_mscoco"])):
        for lang in ("en", "de", "fr"):
            out = prepare_multi30k(t1["files"][f"raw/{split}.{lang}.gz"], split, lang, tmp_path / f"{split}.{lang}",
                                   manifest=m)
            assert len(read_lines(out)) == n
        names = read_lines(prepare_multi30k_image_list(t1["files"][f"image_splits/{split}.txt"], split,
                                                       tmp_path / f"{split}.txt", manifest=m))
        assert len(names) == n
    assert all(re.fullmatch(r"COCO_(train|val)2014_\d{12}\.jpg#\d+", x) for x in read_lines(tmp_path / "test_2017_mscoco.txt"))
    t2 = standin("multi30k_task2")
    out = prepare_multi30k_comparable(t2["files"]["raw/val.4.de.gz"], 4, "de", tmp_path / "val.4.de", split="val",
                                      manifest=t2["manifest"])
    assert len(read_lines(out)) == SIZES["val"]
    # as rule prepare_multi30k_comparable(_image_list) calls them: the run's extra manifests merged
    # (the rehearsal's first fault: the stand-in's 40 training lines checked against the real 29,000)
    extra = [str(t2["written"]["manifest"])]
    out = prepare_multi30k_comparable(t2["files"]["raw/train.1.de.gz"], 1, "de", tmp_path / "c1.de", manifest_extra=extra)
    assert len(read_lines(out)) == 40
    names = prepare_multi30k_comparable_image_list(t2["files"]["image_splits/train_images.txt"], tmp_path / "c.txt",
                                                   manifest_extra=extra)
    assert len(read_lines(names)) == 40
    with pytest.raises(DataError, match="expected 29000, got 40"):
        prepare_multi30k_comparable(t2["files"]["raw/train.1.de.gz"], 1, "de", tmp_path / "c1b.de")
    # task 2's image lists are task 1's (as in the release: the same sha256 for train, val, test_2016)
    assert read_lines(t2["files"]["image_splits/train_images.txt"]) == read_lines(t1["files"]["image_splits/train.txt"])
    tok = standin("multi30k_task1_tok")["files"]
    assert len(read_lines(tok["val.lc.norm.tok.fr"])) == SIZES["val"]
