"""`python -m mmt_repro progress` (mmt_repro.plan_tools.progress): where each training of a plan stands
in a run folder, read from its curve, .last.pt and job record, torch-free; the stopping rule's
latest epoch and the time it leaves, by hand."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import deep_update, load_yaml
from mmt_repro.plan import Plan
from mmt_repro.plan_tools.progress import format_progress, progress, run_progress

REPO = Path(__file__).resolve().parents[2]
OVERLAY = REPO / "config" / "paper_multi30k_fr_en.yaml"
TARGETS = ["results/tables/emb_pred/table1.tsv", "results/tables/emb_pred/table3.tsv"]
HEAD = "epoch\tstep\ttrain_loss\tval_bleu\tlr\ttokens_per_s\telapsed_s\n"


@pytest.fixture(scope="module")
def plan():
    return Plan(deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(OVERLAY)), REPO)


def _model(folder: Path, system: str, seed: int) -> Path:
    stem = folder / "results" / "models" / "emb_pred" / system / f"multi30k.fr-en.seed{seed}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    return stem


def _curve(stem: Path, bleu: list[float], elapsed: list[float]) -> None:
    rows = "".join(f"{i}\t{i * 454}\t0.5\t{b}\t0.0004\t1000\t{e}\n" for i, (b, e) in enumerate(zip(bleu, elapsed), 1))
    Path(f"{stem}.curve.tsv").write_text(HEAD + rows, encoding="utf-8")


def test_a_begun_run_reports_its_best_epoch_and_the_stopping_rules_bound(plan, tmp_path):
    """Validation 10, 20, 30, 29, 30: the best is epoch 3 (the trainer keeps the first of equal
    scores), 2 epochs since, patience 10 (the paper-setting config): the rule ends the run by
    epoch 13 at the latest, 8 epochs more at the median epoch of 100 s (100, 110, 90, 120, 80)."""
    stem = _model(tmp_path, "nmt_pre", 1)
    _curve(stem, [10, 20, 30, 29, 30], [100, 210, 300, 420, 500])
    Path(f"{stem}.last.pt").write_bytes(b"")
    row = run_progress(plan, W(paper="emb_pred", system="nmt_pre", dataset="multi30k", pair="fr-en", seed="1"),
                       tmp_path)
    assert row["state"] == "begun" and row["patience"] == 10
    assert (row["epochs"], row["best"], row["best_epoch"], row["since_best"]) == (5, 30.0, 3, 2)
    assert (row["stop_by"], row["elapsed_s"], row["epoch_s"], row["left_s"]) == (13, 500.0, 100.0, 800.0)


def test_every_run_of_the_targets_gets_a_row_and_a_state(plan, tmp_path):
    _curve(_model(tmp_path, "nmt_pre", 1), [10, 20, 30, 29, 30], [100, 210, 300, 420, 500])
    done = _model(tmp_path, "nmt", 2)
    _curve(done, [40, 50, 49], [60, 120, 180])
    Path(f"{done}.job.json").write_text("{}", encoding="utf-8")
    Path(f"{_model(tmp_path, 'ours_text', 3)}.last.pt").write_bytes(b"")  # stopped in its first epoch
    rows = progress(plan, TARGETS, tmp_path)
    by = {(r["system"], r["seed"]): r for r in rows}
    assert sorted(by) == [(s, k) for s in ("nmt", "nmt_pre", "ours_text") for k in (1, 2, 3)]
    assert by["nmt", 2]["state"] == "finished" and by["nmt", 2]["stop_by"] is None
    assert (by["nmt", 2]["best"], by["nmt", 2]["elapsed_s"]) == (50.0, 180.0)
    assert by["ours_text", 3]["state"] == "begun" and by["ours_text", 3]["epochs"] == 0
    assert by["nmt_pre", 1]["left_s"] == 800.0 and by["nmt", 1]["state"] == "not started"
    text = format_progress(rows)
    assert text.splitlines()[-1] == "1 finished, 2 begun, 6 not started of 9 trainings"
    row = r"emb_pred/nmt_pre/multi30k\.fr-en\.seed1 +begun +5 +30\.00 \(3\) +2 / 10 +13 +0\.14 h +100 +0\.22 h"
    assert re.search(row, text)


def test_the_cli_reads_a_run_folder_without_torch(tmp_path):
    """`python -m mmt_repro progress` from the repository, torch never imported."""
    _curve(_model(tmp_path, "ours_text", 1), [5.94, 12.83], [243.7, 536.5])
    code = ("import sys; from mmt_repro.cli import main; "
            f"main(['progress', *{TARGETS!r}, '--configfile', {str(OVERLAY)!r}, '--directory', {str(tmp_path)!r}]); "
            "print('torch imported:', 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "12.83 (2)" in out and "0 finished, 1 begun, 8 not started of 9 trainings" in out
    assert out.strip().endswith("torch imported: False")
