"""Packing small trainings on one GPU allocation (config ``packing``; mmt_repro.plan_tools.packing
and the packs' cost): off by default, leaving the plan as it was; on, which trainings share a
job, what the job asks of SLURM and what the cost plan says of it. Torch-free."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from mmt_repro.config import ConfigError, deep_update, load_yaml
from mmt_repro.plan import Plan
from mmt_repro.plan_tools.cost import MEM_BASE_MB, cost_plan
from mmt_repro.plan_tools.cost_table import format_cost_plan
from mmt_repro.plan_tools.packing import (PACKING_MEASURED, format_packed_cost_plan, pack_cost, pack_mem_mb, pack_of,
                                          pack_runtime, packed_cost_plan, packs)
from mmt_repro.plan_tools.walk import ALL_TABLES, training_runs

REPO = Path(__file__).resolve().parents[2]


def _plan(packing=None) -> Plan:
    config = load_yaml(REPO / "config" / "config.yaml")
    if packing is not None:
        config = deep_update(config, {"packing": packing})
    return Plan(config, REPO)


@pytest.fixture(autouse=True)
def _no_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no results/ here: sizes from the manifest and the config


@pytest.fixture(scope="module")
def default():
    return _plan()


@pytest.fixture(scope="module")
def emb_pred():
    return _plan({"per_gpu": 3, "systems": ["emb_pred"]})


def test_packing_is_off_by_default_and_leaves_the_cost_plan_as_it_was(default):
    assert default.config["packing"] == {"per_gpu": 0, "systems": []}
    assert packs(default) == []
    report = cost_plan(default, default.targets.default_targets())
    assert packed_cost_plan(default, default.targets.default_targets()) == report and report["jobs"] == 126
    assert format_packed_cost_plan(report) == format_cost_plan(report)
    # per_gpu 1, or no systems named, is off too: the same report, word for word
    for off in ({"per_gpu": 1, "systems": ["emb_pred"]}, {"per_gpu": 3, "systems": []}):
        plan = _plan(off)
        assert packs(plan) == []
        assert format_packed_cost_plan(packed_cost_plan(plan, plan.targets.default_targets())) == \
            format_cost_plan(report)


def test_each_emb_pred_systems_seeds_go_three_to_a_gpu(emb_pred):
    runs, _ = training_runs(emb_pred, [ALL_TABLES])
    keys = {(w.paper, w.system, w.dataset, w.pair, int(w.seed)) for w in runs}
    got = packs(emb_pred)
    packed = [key for p in got for key in p.members]
    assert len(packed) == len(set(packed)) and set(packed) <= keys
    for p in got:
        assert 2 <= len(p.members) <= 3
        assert len({m[:4] for m in p.members}) == 1 and p.members[0][0] == "emb_pred"  # one system's seeds
    # every emb_pred system with three seeds or more is packed; no other paper's training
    seeds = {}
    for key in keys:
        seeds.setdefault(key[:4], []).append(key[4])
    for run, found in seeds.items():
        inside = [s for s in found if pack_of(emb_pred, (*run, s))]
        expect = 3 * (len(found) // 3) if run[0] == "emb_pred" else 0
        assert len(inside) == expect, run
    # 4 seeds: seeds 1-3 in one pack, seed 4 stays a train_model job
    ours = pack_of(emb_pred, ("emb_pred", "ours", "multi30k", "fr-en", 1))
    assert ours.name == "emb_pred.ours.multi30k.fr-en.seed1-2-3"
    assert ours.rule == "train_packed_emb_pred_ours_multi30k_fr_en_seed1_2_3"
    assert pack_of(emb_pred, ("emb_pred", "ours", "multi30k", "fr-en", 4)) is None
    assert len(got) == 12 and len(packed) == 36


def test_a_pack_writes_its_members_train_model_outputs_with_their_jobs_and_logs(emb_pred, default):
    ours = pack_of(emb_pred, ("emb_pred", "ours", "multi30k", "fr-en", 1))
    stem = "results/models/emb_pred/ours/multi30k.fr-en.seed"
    assert ours.outputs() == {f"m{s}_{kind}": f"{stem}{s}.{ext}" for s in (1, 2, 3)
                              for kind, ext in (("best", "best.pt"), ("curve", "curve.tsv"), ("record", "job.json"))}
    assert ours.member_logs()["m2"] == "results/logs/train_model/emb_pred/ours/multi30k.fr-en.seed2.log"
    assert ours.log == "results/logs/train_packed/emb_pred.ours.multi30k.fr-en.seed1-2-3.log"
    members = emb_pred.packed_jobs.params(ours, lambda w: f"train:{w.system}{w.seed}")
    for i, (w, member) in enumerate(zip(ours.wildcards(), members), 1):
        # exactly the job and code a separate train_model job gets (the plan without packing)
        assert member["job"] == default.train_jobs.params(w) and member["code"] == f"train:ours{i}"
        assert member["log"] == ours.member_logs()[f"m{i}"]
    # the seeds read the same files: the pack's inputs are each member's, named once
    w = ours.wildcards()[0]
    assert emb_pred.packed_jobs.inputs(ours) == {f"m1_{role}": f for role, f in default.train_jobs.inputs(w).items()}
    assert emb_pred.packed_jobs.priority(ours) == -2
    # a paper-wide pack: every member's inputs, each file once
    plan = _plan({"per_gpu": 3, "systems": ["emb_pred"], "group": "paper"})
    mixed = next(p for p in packs(plan) if len({m[1] for m in p.members}) > 1)
    flat = lambda v: v if isinstance(v, list) else [v]  # noqa: E731
    by_member = {}
    for role, v in plan.packed_jobs.inputs(mixed).items():
        by_member.setdefault(role.split("_")[0], set()).update(flat(v))
    wanted = {f for w in mixed.wildcards() for v in plan.train_jobs.inputs(w).values() for f in flat(v)}
    assert set().union(*by_member.values()) == wanted
    assert sum(map(len, by_member.values())) == len(wanted)  # no file under two members


def test_the_cost_plan_shows_the_packs_gpu_hours_with_the_measured_throughput(emb_pred, default):
    targets = emb_pred.targets.default_targets()
    report, alone = packed_cost_plan(emb_pred, targets), cost_plan(default, targets)
    assert report["rows"] == alone["rows"] and report["total_hours"] == alone["total_hours"]
    measured = PACKING_MEASURED[("h100", "emb_pred", 3)]
    rows = {(r["paper"], r["system"], r["dataset"], r["pair"], r["seed"]): r for r in alone["rows"]}
    for p in report["packs"]:
        members = [rows[key] for key in p["keys"]]
        assert p["throughput_source"] == "measured" and p["throughput"] == measured["throughput"] == 3.7
        # the pack holds its GPU while its longest member runs, each member at 3 / 3.7 of its step time
        assert p["gpu_hours"] == pytest.approx(max(r["hours"] for r in members) * 3 / 3.7)
        assert p["alone_hours"] == pytest.approx(sum(r["hours"] for r in members))
        assert p["peak_gib"] == pytest.approx(sum(r["peak_gib"] for r in members))
        # host memory: three processes, the feature stores they share once
        stores = {f: b for r in members for f, b in r["stores"].items()}
        assert p["mem_mb"] >= 3 * MEM_BASE_MB + sum(stores.values()) / 2**20
        assert p["mem_mb"] < sum(r["mem_mb"] for r in members)
        assert p["runtime"] == math.ceil(p["hours"] * 60 * 1.25 + 10)
    packed = {key for p in report["packs"] for key in p["keys"]}
    rest = sum(r["hours"] for key, r in rows.items() if key not in packed)
    assert report["packed_total_hours"] == pytest.approx(rest + sum(p["hours"] for p in report["packs"]))
    assert report["packed_jobs"] == 126 - 36 + 12
    papers = report["papers"]
    assert papers["emb_pred"]["packed_hours"] < papers["emb_pred"]["hours"] / 3
    assert all(p["packed_hours"] == pytest.approx(p["hours"]) for name, p in papers.items() if name != "emb_pred")
    text = format_packed_cost_plan(report)
    assert text.startswith(format_cost_plan(alone)) and "x3.70 (measured)" in text and "reference/benchmarks/transcribed/gpu_packing.tsv" in text
    assert f"{report['packed_total_hours']:,.1f}" in text.split("packed trainings (config packing)")[0]


def test_packs_of_systems_never_measured_are_marked_assumed():
    plan = _plan({"per_gpu": 2, "systems": ["emb_pred.ours", "doubly_attentive.nmt"]})
    report = packed_cost_plan(plan, plan.targets.default_targets())
    rows = {(r["paper"], r["system"], r["dataset"], r["pair"], r["seed"]): r for r in report["rows"]}
    assert {p.members[0][1] for p in packs(plan)} == {"ours", "nmt"}
    # emb_pred was measured three to a GPU, not two; doubly_attentive never: every member as fast as alone
    for p in report["packs"]:
        assert p["throughput_source"] == "assumed" and p["throughput"] == 2 and p["member_step"] == 1
        assert p["hours"] == pytest.approx(max(rows[key]["hours"] for key in p["keys"]))
    assert "x2.00 (assumed)" in format_packed_cost_plan(report)


def test_a_paper_wide_pack_never_holds_a_training_and_the_one_it_starts_from():
    plan = _plan({"per_gpu": 4, "systems": ["doubly_attentive"], "group": "paper"})
    runs, deps = training_runs(plan, [ALL_TABLES])
    got = packs(plan)
    where = {key: i for i, p in enumerate(got) for key in p.members}
    assert len(where) == sum(len(p.members) for p in got) >= 25
    for key, ups in deps.items():
        for up in ups:
            if key in where and up in where:  # the pack it starts from runs at a lower depth
                assert got[where[up]].level < got[where[key]].level, (key, up)
    assert {p.name for p in got} >= {"doubly_attentive.pack1", "doubly_attentive.pack2"}
    assert all(len({m[0] for m in p.members}) == 1 for p in got)


def test_bertgens_multi_task_run_never_packs():
    with pytest.raises(ConfigError, match="bertgen.bertgen is a multi-task run"):
        packs(_plan({"per_gpu": 3, "systems": ["bertgen.bertgen"]}))
    plan = _plan({"per_gpu": 3, "systems": ["bertgen"], "group": "paper"})
    systems = {m[1] for p in packs(plan) for m in p.members}
    assert "fairseq" in systems and "bertgen" not in systems
    with pytest.raises(ConfigError, match="paper emb_pred has no system 'our'; its systems: .*ours"):
        packs(_plan({"per_gpu": 3, "systems": ["emb_pred.our"]}))
    with pytest.raises(ConfigError, match="no paper 'emb'"):
        packs(_plan({"per_gpu": 3, "systems": ["emb"]}))


def test_the_pack_resources_are_those_of_its_cost(emb_pred):
    p = packs(emb_pred)[0]
    cost = pack_cost(emb_pred, p)
    assert pack_mem_mb(emb_pred, p) == cost["mem_mb"] and pack_runtime(emb_pred, p) == cost["runtime"]


def test_the_plan_verb_prints_the_packs_without_torch(tmp_path):
    cfg = tmp_path / "packing.yaml"
    cfg.write_text("packing: {per_gpu: 3, systems: [emb_pred]}\n", encoding="utf-8")
    code = ("import sys; from mmt_repro.cli import main; "
            f"main(['plan', '--configfile', {str(cfg)!r}, 'results/tables/emb_pred/table1.tsv']); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.split()[-1] == "False"
    assert "emb_pred.ours.multi30k.fr-en.seed1-2-3" in out and "x3.70 (measured)" in out
