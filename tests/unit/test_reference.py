"""Reference results (reference/<config>/): each committed table is what the table code builds
from the committed score files, the runs a table names have their curve and job record, a run
folder copies to the same reference (the `reference` verb), and a transcription is checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from mmt_repro.cli import main
from mmt_repro.io import DataError
from mmt_repro.plan import load_plan
from mmt_repro.tables.build import read_table
from mmt_repro.tables.reference import (
    TRANSCRIBED_SIGNATURE,
    collect_reference,
    read_record,
    read_transcript,
    rebuild_tables,
    reference_folders,
)

REPO = Path(__file__).resolve().parents[2]
FOLDERS = reference_folders(REPO / "reference")


def _plan(configfiles):
    return load_plan(REPO, [REPO / f for f in configfiles])


def test_the_paper_setting_and_the_smoke_run_have_reference_results():
    names = {f.name for f in FOLDERS}
    assert {"paper_multi30k_fr_en", "smoke"} <= names
    for name in ("paper_multi30k_fr_en", "smoke"):
        assert read_record(REPO / "reference" / name)["tables"], f"{name} holds no table"
    assert read_record(REPO / "reference" / "smoke")["purpose"] == "smoke"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_each_reference_table_is_what_the_table_code_builds_from_its_scores(folder, tmp_path):
    written = rebuild_tables(folder, tmp_path, REPO / "config" / "published_results.tsv")
    assert len(written) == len([t for t in read_record(folder)["tables"] if t["kind"] == "translation"])
    for file in written:
        rel = file.relative_to(tmp_path)
        assert file.read_bytes() == (folder / rel).read_bytes(), f"{folder.name}/{rel} differs from its rebuild"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_each_probe_table_is_what_the_probe_code_builds_from_its_scores(folder, tmp_path):
    """Every committed image-use probe (docs/probes.md), rebuilt from the committed score files."""
    from mmt_repro.tables.probe import make_probe

    jobs = read_record(folder).get("probe_jobs", [])
    for job in jobs:
        out = tmp_path / job["out"]
        make_probe({k: str(folder / v) for k, v in job["scores"].items()}, job["pairs"], out, job["paper"],
                   job["table"], job["pair"], job["metric"], job["note"])
        assert out.read_bytes() == (folder / job["out"]).read_bytes(), f"{folder.name}/{job['out']} differs"
    if folder.name == "smoke":  # every paper's grounded check is probed in the smoke run
        assert sorted(j["paper"] for j in jobs) == sorted(["bertgen", "deepfuse", "doubly_attentive", "emb_pred",
                                                           "visual_agreement"])


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_every_run_a_table_names_has_its_evidence(folder):
    record = read_record(folder)
    for t in record["tables"]:
        if t["kind"] != "translation":
            continue
        table = read_table(folder / "results" / "tables" / t["paper"] / f"{t['table']}.tsv")
        for runs in table["runs"]:
            for ckpt in runs.split():
                stem = ckpt[: -len(".best.pt")]
                if record["evidence"] == "run folder":
                    assert (folder / f"{stem}.curve.tsv").is_file() and (folder / f"{stem}.job.json").is_file()
                assert not (folder / ckpt).exists(), "weights are never committed"
    if record["evidence"] == "transcribed":
        assert record["not_committed"]
        assert (folder / "transcribed" / "scores.tsv").is_file() == bool(record["tables"])
    if record["evidence"] == "transcribed" and record["tables"]:
        scores = list((folder / "results" / "scores").rglob("*.json"))
        assert scores and all(json.loads(s.read_text())["transcribed"] for s in scores)


def test_the_paper_setting_reference_gives_the_table_codes_verdicts():
    folder = REPO / "reference" / "paper_multi30k_fr_en"
    table = read_table(folder / "results" / "tables" / "emb_pred" / "table1.tsv").set_index(
        ["system", "test_set", "metric"])
    nmt = table.loc[("nmt", "test_2016_flickr", "bleu")]
    assert (nmt.ours, nmt.ours_std, nmt.n_seeds, nmt.delta, nmt.verdict) == (51.44, 0.43, 3, 0.44, "reproduced")
    assert table.loc[("nmt_pre", "test_2016_flickr", "bleu")].verdict == "within (differs)"
    assert table.loc[("nmt_pre", "test_2016_flickr", "bleu")].signature == TRANSCRIBED_SIGNATURE
    short = table.loc[("nmt_pre_beam6", "val", "bleu")]  # seed 2's value was never recorded
    assert short.n_seeds == 2 and "2 of 3 seeds in the evidence" in short.note


def test_smoke_reference_rows_get_no_delta():
    folder = REPO / "reference" / "smoke"
    for t in read_record(folder)["tables"]:
        if t["kind"] == "translation":
            df = read_table(folder / "results" / "tables" / t["paper"] / f"{t['table']}.tsv")
            assert df["delta"].isna().all() and (df["verdict"] == "").all(), f"{t['paper']}/{t['table']}"


def test_the_reference_verb_copies_a_run_folder_to_the_same_reference(tmp_path, capsys, monkeypatch):
    """The committed smoke reference is itself a run folder for its tables: copied again, it gives
    the same files (the date aside, which comes from the files' times)."""
    smoke = REPO / "reference" / "smoke"
    record = read_record(smoke)
    monkeypatch.chdir(REPO)
    out = tmp_path / "smoke"
    argv = ["reference", *record["targets"], "--configfile", *record["configfiles"], "--directory", str(smoke),
            "--out", str(out), "--purpose", "smoke"]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: ")
    files = lambda root: sorted(p.relative_to(root) for p in root.rglob("*")  # noqa: E731
                                if p.is_file() and p.relative_to(root).parts[0] != "transcribed")  # kept, not copied
    assert files(out) == files(smoke)
    for rel in files(smoke):
        if rel.name != "reference.json":
            assert (out / rel).read_bytes() == (smoke / rel).read_bytes(), rel
    copied = read_record(out)
    assert {k: v for k, v in copied.items() if k != "built"} == {k: v for k, v in record.items() if k != "built"}


def test_a_missing_evidence_file_is_named_and_nothing_is_written(tmp_path):
    smoke = REPO / "reference" / "smoke"
    record = read_record(smoke)
    run = tmp_path / "run"
    shutil.copytree(smoke / "results", run / "results")
    score = next((run / "results" / "scores").rglob("*.json"))
    score.unlink()
    out = tmp_path / "ref"
    with pytest.raises(DataError, match=score.name):
        collect_reference(_plan(record["configfiles"]), record["targets"], run, out, record["configfiles"])
    assert not out.exists()


def test_a_transcription_with_a_wrong_header_names_its_file(tmp_path):
    bad = tmp_path / "scores.tsv"
    bad.write_text("system\tvalue\nnmt\t51.1\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"scores.tsv: columns \['system', 'value'\]"):
        read_transcript(bad)
    bad.write_text("table\tsystem\ttest_set\tseed\tmetric\tvalue\tsource\ntable1\tnmt\tval\tone\tbleu\t51.1\tx\n",
                   encoding="utf-8")
    with pytest.raises(DataError, match="line 2"):
        read_transcript(bad)


def test_transcribed_score_files_carry_the_score_jobs_meta():
    folder = REPO / "reference" / "paper_multi30k_fr_en"
    plan = _plan(read_record(folder)["configfiles"])
    score = folder / "results/scores/emb_pred/nmt_beam6/multi30k.test_2016_flickr.fr-en.seed2.congruent.json"
    data = json.loads(score.read_text(encoding="utf-8"))
    w = SimpleNamespace(paper="emb_pred", system="nmt_beam6", dataset="multi30k", split="test_2016_flickr",
                        pair="fr-en", seed="2", condition="congruent")
    assert data["meta"] == plan.score_jobs.job(w).meta
    assert data["meta"]["checkpoint"] == "results/models/emb_pred/nmt/multi30k.fr-en.seed2.best.pt"
    assert data["scores"]["bleu"]["value"] == 52.46


def test_the_evidence_names_no_path_of_the_machine_that_ran_it():
    """Absolute paths (the METEOR jar in a score's details) are written relative to the
    repository or the run folder when the evidence is copied."""
    import re

    local = re.compile(r'"/(work|root|home|tmp|scratch)/')
    hits = [str(f.relative_to(REPO)) for folder in FOLDERS for f in folder.rglob("*.json")
            if local.search(f.read_text(encoding="utf-8"))]
    assert hits == []
