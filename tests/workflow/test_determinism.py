"""Determinism on CPU: the reduced smoke run twice with the same seeds gives byte-identical
tables and translations, and identical model weights."""

from __future__ import annotations

import shutil

import pytest
import torch

pytestmark = pytest.mark.workflow


def test_two_runs_give_byte_identical_results(wf, reduced_local_run, tmp_path):
    second = tmp_path / "second"
    second.mkdir()
    seconds = wf.run_reduced_locally(second)
    print(f"\nsecond reduced smoke run: {seconds:.0f} s")
    first = reduced_local_run
    table = "results/tables/all.tsv"
    assert (first / table).read_bytes() == (second / table).read_bytes(), (
        f"all.tsv differs between two runs:\n{(first / table).read_text()}\n---\n{(second / table).read_text()}"
    )
    hyps = sorted((first / "results" / "translations").rglob("*.txt"))
    assert hyps
    for hyp in hyps:
        assert (second / hyp.relative_to(first)).read_bytes() == hyp.read_bytes(), hyp.relative_to(first)
    models = sorted((first / "results" / "models").rglob("*.best.pt"))
    assert models
    for model in models:
        a = torch.load(model, map_location="cpu", weights_only=False)["weights"]
        b = torch.load(second / model.relative_to(first), map_location="cpu", weights_only=False)["weights"]
        assert all(torch.equal(a[k], b[k]) for k in a), model.relative_to(first)
    shutil.rmtree(second, ignore_errors=True)
