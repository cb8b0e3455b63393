"""Batches collated by a background thread (issue 23, "Feeding the GPU"): the same updates bit for
bit, errors raised where they belong, the thread stopped when a loop ends early."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from mmt_repro.checkpoint import read_checkpoint
from mmt_repro.train.prefetch import Prefetcher, prefetch_depth

from test_trainer import run  # tests/unit is on sys.path (pytest rootdir-less modules)


def _collate(ids):
    return {"x": torch.tensor(ids), "n": len(ids)}


def test_groups_come_in_order_collated_as_on_the_caller_thread():
    groups = [[[1, 2], [3]], [[4]], [[5, 6, 7]]]
    plain = list(Prefetcher(_collate, groups, depth=0))
    with Prefetcher(_collate, groups, depth=2) as pf:
        ahead = list(pf)
    assert [[b["x"].tolist() for b in g] for g in ahead] == [[[1, 2], [3]], [[4]], [[5, 6, 7]]]
    assert [[b["x"].tolist() for b in g] for g in plain] == [[b["x"].tolist() for b in g] for g in ahead]


def test_an_error_in_the_thread_is_raised_in_the_loop_and_an_early_exit_stops_the_thread():
    def bad(ids):
        if ids == [3]:
            raise ValueError("row 3 is broken")
        return _collate(ids)

    seen = []
    with pytest.raises(ValueError, match="row 3 is broken"):
        with Prefetcher(bad, [[[1]], [[2]], [[3]], [[4]]], depth=1) as pf:
            for group in pf:
                seen.append(group[0]["x"].tolist())
    assert seen == [[1], [2]]
    slow_groups = [[[i]] for i in range(1000)]
    pf = Prefetcher(_collate, slow_groups, depth=2)
    with pf:
        for i, _ in enumerate(pf):
            if i == 3:
                break
    time.sleep(0.3)
    assert not any(t.name == "mmt-prefetch" and t.is_alive() for t in threading.enumerate())


def test_depth_from_the_environment(monkeypatch):
    monkeypatch.delenv("MMT_PREFETCH", raising=False)
    assert prefetch_depth(torch.device("cpu")) == 0 and prefetch_depth(torch.device("cuda")) == 2
    monkeypatch.setenv("MMT_PREFETCH", "3")
    assert prefetch_depth(torch.device("cpu")) == 3
    monkeypatch.setenv("MMT_PREFETCH", "two")
    with pytest.raises(ValueError, match="MMT_PREFETCH"):
        prefetch_depth(torch.device("cpu"))


def test_training_with_prefetching_makes_the_same_updates(toy_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("MMT_PREFETCH", "0")
    run(toy_corpus, tmp_path / "plain", accumulate=2)
    monkeypatch.setenv("MMT_PREFETCH", "2")
    run(toy_corpus, tmp_path / "ahead", accumulate=2)
    a = read_checkpoint(tmp_path / "plain" / "last.pt")["weights"]
    b = read_checkpoint(tmp_path / "ahead" / "last.pt")["weights"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (tmp_path / "plain" / "curve.tsv").read_text().split("\n")[1].split("\t")[:4] == \
        (tmp_path / "ahead" / "curve.tsv").read_text().split("\n")[1].split("\t")[:4]
