"""Interim tables (mmt_repro.tables.interim, `python -m mmt_repro progress --scores`): a paper
table from the score files that exist, a verdict only where every planned seed is in, each
other row saying how many seeds it has; means and deltas by hand."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from mmt_repro.config import deep_update, load_yaml
from mmt_repro.plan import Plan
from mmt_repro.plan_tools.progress import target_tables
from mmt_repro.tables.build import NOT_RUN, read_table
from mmt_repro.tables.interim import INTERIM, interim_table, interim_tables, planned_seeds

REPO = Path(__file__).resolve().parents[2]
OVERLAY = REPO / "config" / "paper_multi30k_fr_en.yaml"
BLEU_SIG = "multi-bleu.perl-compatible|nrefs:1|case:mixed|eff:no|tok:none|smooth:none|version:2.6.0"


@pytest.fixture(scope="module")
def plan():
    return Plan(deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(OVERLAY)), REPO)


def _score(folder: Path, plan, system: str, test_set: str, seed: int, bleu: float) -> None:
    rel = plan.run_file("score", "emb_pred", "table1", system, test_set, seed, "congruent")
    meta = {"paper": "emb_pred", "table": "", "system": system, "pair": "fr-en", "test_set": test_set, "seed": seed,
            "condition": "congruent", "dataset": "multi30k",
            "checkpoint": f"results/models/emb_pred/{system}/multi30k.fr-en.seed{seed}.best.pt"}
    file = folder / rel
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"meta": meta, "scores": {"bleu": {"value": bleu, "signature": BLEU_SIG}}}),
                    encoding="utf-8")


def _row(df, system, test_set, metric="bleu"):
    rows = df[(df.system == system) & (df.test_set == test_set) & (df.metric == metric)]
    assert len(rows) == 1, (system, test_set, metric)
    return rows.iloc[0]


def test_the_paper_setting_plans_three_seeds_per_row(plan):
    planned = planned_seeds(plan, "emb_pred", "table1")
    assert planned[("nmt", "test_2016_flickr", "congruent")] == 3
    assert planned[("nmt_pre_beam6", "val", "congruent")] == 3


def test_all_tsv_stands_for_every_enabled_translation_table(plan):
    assert target_tables(plan, ["results/tables/all.tsv"]) == [
        (p, t) for p, t, _ in plan.enabled if plan.table_kind(p, t) == "translation"]
    assert ("emb_pred", "table3") in target_tables(plan, ["results/tables/all.tsv"])


def test_a_row_with_every_seed_gets_its_verdict_and_one_with_fewer_gets_none(plan, tmp_path):
    """nmt: 51.0, 51.2, 51.4 -> 51.20, delta +0.20 against 51.00 ± .37 (tolerance 0.74): reproduced.
    nmt_pre: seeds 1-2 only, 52.00 and 53.00 -> 52.50, delta +0.17 against 52.33, sample sd
    0.71; no verdict, and no verdict reasoning left in its note."""
    for seed, bleu in zip((1, 2, 3), (51.0, 51.2, 51.4)):
        _score(tmp_path, plan, "nmt", "test_2016_flickr", seed, bleu)
    _score(tmp_path, plan, "nmt_pre", "test_2016_flickr", 1, 52.0)
    _score(tmp_path, plan, "nmt_pre", "test_2016_flickr", 2, 53.0)
    df = interim_table(plan, "emb_pred", "table1", tmp_path)

    nmt = _row(df, "nmt", "test_2016_flickr")
    assert (nmt.ours, nmt.n_seeds, nmt.delta, nmt.tolerance, nmt.verdict) == (51.2, 3, 0.2, 0.74, "reproduced")
    assert "interim" not in nmt.note

    pre = _row(df, "nmt_pre", "test_2016_flickr")
    assert (pre.ours, pre.ours_std, pre.n_seeds, pre.delta) == (52.5, 0.71, 2, 0.17)
    assert pre.verdict == "" and math.isnan(pre.tolerance)
    assert pre.note.startswith("interim: 2 of 3 seeds, no verdict; ")
    assert "fastText" in pre.note and "verdict:" not in pre.note  # the declared difference stays

    unscored = _row(df, "nmt", "val")
    assert unscored.n_seeds == 0 and math.isnan(unscored.ours)
    assert unscored.note == "not scored yet (0 of 3 seeds)"
    # a published system this configuration does not plan keeps the table's own note
    assert _row(df, "imag", "test_2016_flickr").note == NOT_RUN


def test_interim_tables_are_written_beside_no_rules_output_and_read_back(plan, tmp_path):
    _score(tmp_path, plan, "nmt", "test_2016_flickr", 2, 50.5)
    tables = target_tables(plan, ["results/tables/emb_pred/table1.tsv", "results/stats/data.tsv"])
    assert tables == [("emb_pred", "table1")]
    written = interim_tables(plan, tables, tmp_path)
    assert written == [tmp_path / INTERIM.format(paper="emb_pred", table="table1")]
    back = read_table(written[0])
    row = _row(back, "nmt", "test_2016_flickr")
    assert (row.ours, row.n_seeds, row.verdict) == (50.5, 1, "")
    assert row.note.startswith("interim: 1 of 3 seeds")
    assert not (tmp_path / "results" / "tables").exists()  # the table rule's output is left alone


def test_the_cli_prints_the_interim_table_after_the_trainings(plan, tmp_path):
    _score(tmp_path, plan, "nmt", "test_2016_flickr", 1, 51.25)
    out = subprocess.run(
        [sys.executable, "-m", "mmt_repro", "progress", "results/tables/emb_pred/table1.tsv",
         "--configfile", str(OVERLAY), "--directory", str(tmp_path), "--scores"],
        capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert "6 not started of 6 trainings" in out  # the trainings first (table 1: three seeds of nmt and nmt_pre)
    line = next(x for x in out.splitlines() if x.startswith("nmt ") and " bleu " in x and "51.25" in x)
    assert "+0.25" in line and "interim: 1 of 3 seeds" in line
