"""Dataset splits and languages are data: a new Multi30k test set is added through config
files alone (its files in an extra manifest, `inputs.manifest_extra`; its name in
`datasets.multi30k.splits`), and an unknown split or language stops planning with a message
that names the config key and lists the valid values (docs/data.md, "Adding a test set or a
language pair through config alone")."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
import yaml

SPLIT = "test_2018_made_up"
SENTENCES = {
    "en": ["A dog runs on the grass.", "Two children play with a red ball.", "A man, wearing a hat, reads."],
    "de": ["Ein Hund rennt über das Gras.", "Zwei Kinder spielen mit einem roten Ball.", "Ein Mann mit Hut liest."],
    "fr": ["Un chien court sur l'herbe.", "Deux enfants jouent avec un ballon rouge.", "Un homme, avec un chapeau, lit."],
}
IMAGES = ["made_up_1.jpg", "made_up_2.jpg", "made_up_3.jpg"]
M30K_SPLITS = ["train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"]
MISSING_INPUT = "MissingInputException"


def _write(path: Path, data: bytes) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "lines": 3}


@pytest.fixture
def made_up(tmp_path) -> dict:
    """A local copy holding only the made-up split, an extra manifest declaring its files (with
    sha256 and line counts) and a config file adding the split: nothing in the repository."""
    copy = tmp_path / "copy" / "multi30k_task1"
    files = {f"raw/{SPLIT}.{lang}.gz": _write(copy / "raw" / f"{SPLIT}.{lang}.gz",
                                              gzip.compress("".join(f"{s}\n" for s in lines).encode()))
             for lang, lines in SENTENCES.items()}
    files[f"image_splits/{SPLIT}.txt"] = _write(copy / "image_splits" / f"{SPLIT}.txt",
                                                "".join(f"{name}\n" for name in IMAGES).encode())
    extra = tmp_path / "extra_manifest.yaml"
    extra.write_text(yaml.safe_dump({"inputs": {"multi30k_task1": {"files": files}}}), encoding="utf-8")
    config = tmp_path / "made_up.yaml"
    config.write_text(yaml.safe_dump({
        "inputs": {"local": {"multi30k_task1": str(copy)}, "manifest_extra": [str(extra)]},
        "datasets": {"multi30k": {"splits": [*M30K_SPLITS, SPLIT]}},
        "papers": {"doubly_attentive": {"tables": {"table1": {"test_sets": ["test_2016_flickr", SPLIT]}}}},
    }), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    return {"config": config, "work": work, "extra": extra}


def _bad_config(tmp_path: Path, override: dict) -> list[str]:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(override), encoding="utf-8")
    return ["-n", "--directory", str(tmp_path), "--configfile", str(path)]


@pytest.mark.slow
def test_made_up_test_set_through_config_alone_plans_and_runs(wf, made_up):
    args = ["--directory", str(made_up["work"]), "--configfile", str(made_up["config"])]
    target = f"results/text/multi30k/{SPLIT}.norm.tok.en"
    score = f"results/scores/doubly_attentive/nmt/multi30k.{SPLIT}.en-de.seed1.congruent.json"
    # planning: the split reaches the stats (every configured split x language) and Table 1
    res = wf.snakemake("-n", target, "results/data/stats/multi30k.tsv", "results/tables/doubly_attentive/table1.tsv",
                       *args, "--cores", "1", timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    for lang in SENTENCES:
        assert f"results/data/multi30k/{SPLIT}.{lang}" in out and f"resources/multi30k_task1/raw/{SPLIT}.{lang}.gz" in out
    assert f"results/data/multi30k/image_splits/{SPLIT}.txt" in out and score in out, out[-4000:]

    # a real run: fetched from the local copy (sha256 and lines from the extra manifest),
    # prepared (line count checked), tokenised
    res = wf.snakemake(target, *args, "--cores", "1", timeout=300)
    assert res.returncode == 0, wf.failure_report(res, made_up["work"])
    work = made_up["work"]
    assert (work / f"results/data/multi30k/{SPLIT}.en").read_text(encoding="utf-8").splitlines() == SENTENCES["en"]
    tok = (work / target).read_text(encoding="utf-8").splitlines()
    assert tok == ["A dog runs on the grass .", "Two children play with a red ball .", "A man , wearing a hat , reads ."]
    fetch_log = (work / f"results/logs/fetch_input/multi30k_task1/raw/{SPLIT}.en.gz.log").read_text()
    assert "verified" in fetch_log, fetch_log


@pytest.mark.slow  # over 10 s idle: `make test` runs it, `make test-fast` leaves it out
def test_wrong_line_count_in_the_copy_is_refused(wf, made_up):
    """The extra manifest's `lines` are checked like the repository's: a copy that lost a
    sentence stops the fetch, naming the file."""
    extra = yaml.safe_load(made_up["extra"].read_text())
    for spec in extra["inputs"]["multi30k_task1"]["files"].values():  # consistent, but not the copy's
        spec.update(sha256=None, lines=4)
    made_up["extra"].write_text(yaml.safe_dump(extra), encoding="utf-8")
    res = wf.snakemake(f"results/data/multi30k/{SPLIT}.de", "--directory", str(made_up["work"]),
                       "--configfile", str(made_up["config"]), "--cores", "1", timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    log = (made_up["work"] / f"results/logs/fetch_input/multi30k_task1/raw/{SPLIT}.de.gz.log").read_text()
    assert f"raw/{SPLIT}.de.gz has 3 lines, the manifest expects 4" in log, out[-3000:] + log


def test_inconsistent_line_counts_in_the_extra_manifest_stop_planning(wf, made_up):
    """A split whose declared files disagree on the number of lines is refused when the
    workflow is planned, naming both manifests and every count."""
    extra = yaml.safe_load(made_up["extra"].read_text())
    extra["inputs"]["multi30k_task1"]["files"][f"raw/{SPLIT}.de.gz"] = {"sha256": None, "lines": 4}
    made_up["extra"].write_text(yaml.safe_dump(extra), encoding="utf-8")
    res = wf.snakemake("-n", f"results/data/multi30k/{SPLIT}.de", "--directory", str(made_up["work"]),
                       "--configfile", str(made_up["config"]))
    out = res.stdout + res.stderr
    assert res.returncode != 0 and MISSING_INPUT not in out
    assert f"{made_up['extra']}: the files of Multi30k split {SPLIT!r}" in out, out[-3000:]
    assert f"raw/{SPLIT}.de.gz: 4, raw/{SPLIT}.en.gz: 3" in out and "correct `lines` in the manifest" in out


def test_unknown_split_stops_planning_naming_the_key_and_the_valid_values(wf, tmp_path):
    res = wf.snakemake(*_bad_config(tmp_path, {"datasets": {"multi30k": {"splits": [*M30K_SPLITS, "test_2099"]}}}))
    out = res.stdout + res.stderr
    assert res.returncode != 0 and MISSING_INPUT not in out
    assert ("datasets.multi30k.splits: unknown Multi30k split(s) test_2099; valid values (declared by manifest input "
            "'multi30k_task1'): test_2016_flickr, test_2017_flickr, test_2017_mscoco, train, val") in out, out[-3000:]
    assert "inputs.manifest_extra" in out


@pytest.mark.slow  # over 10 s idle: `make test` runs it, `make test-fast` leaves it out
def test_unknown_language_stops_planning_naming_the_key_and_the_valid_values(wf, tmp_path):
    res = wf.snakemake(*_bad_config(tmp_path, {"datasets": {"multi30k": {"langs": ["en", "de", "xx"]}}}))
    out = res.stdout + res.stderr
    assert res.returncode != 0 and MISSING_INPUT not in out
    assert ("datasets.multi30k.langs: unknown Multi30k language 'xx'; valid values for the configured splits: "
            "de, en, fr") in out, out[-3000:]
    # Czech is released, but only for train, val and test_2016_flickr
    res = wf.snakemake(*_bad_config(tmp_path, {"datasets": {"multi30k": {"langs": ["en", "cs"]}}}))
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "datasets.multi30k.langs: language 'cs' is not released for split(s) test_2017_flickr, test_2017_mscoco" in out
    # grounded: the generator's languages
    res = wf.snakemake(*_bad_config(tmp_path, {"datasets": {"grounded": {"langs": ["en", "tr"]}}}))
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "datasets.grounded.langs: unsupported language(s) tr for the grounded generator; valid values: en, de, fr" in out


@pytest.mark.slow  # over 10 s idle: `make test` runs it, `make test-fast` leaves it out
def test_tables_and_targets_must_name_configured_splits_and_languages(wf, tmp_path):
    bad = {"papers": {"doubly_attentive": {"tables": {"table1": {"test_sets": ["test_2016_flickr", "test_2099"]}}}}}
    res = wf.snakemake(*_bad_config(tmp_path, bad))
    out = res.stdout + res.stderr
    assert res.returncode != 0 and MISSING_INPUT not in out
    assert ("papers.doubly_attentive.tables.table1.test_sets: 'test_2099' is not a split of datasets.multi30k "
            "(datasets.multi30k.splits); valid values: train, val, test_2016_flickr") in out, out[-3000:]
    res = wf.snakemake(*_bad_config(tmp_path, {"papers": {"doubly_attentive": {"tables": {"table1": {"pair": "en-cs"}}}}}))
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "papers.doubly_attentive.tables.table1.pair: language 'cs' of 'en-cs' is not one of datasets.multi30k.langs" in out
    # a file of an unconfigured split asked for directly: the key, not a missing input
    res = wf.snakemake("-n", "results/text/multi30k/test_2099.norm.tok.en", "--directory", str(tmp_path))
    out = res.stdout + res.stderr
    assert res.returncode != 0 and MISSING_INPUT not in out
    assert "datasets.multi30k.splits: split 'test_2099' is not configured; valid values: train, val" in out, out[-3000:]
