"""The SLURM profile (workflow/profiles/slurm/config.yaml) and the resources the rules ask of it:
CPU-only rules on the CPU partition, the rules that ask for a GPU on the GPU one, and every rule
that reads or writes a whole feature store sized from that store (mmt_repro.plan_tools.cost)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import load_yaml
from mmt_repro.plan import Plan
from mmt_repro.plan_tools import cost
from mmt_repro.plan_tools.cost import store_mem_mb, store_runtime

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "workflow" / "profiles" / "slurm" / "config.yaml"
STORE_RULES = {"import_features", "import_regions", "constant_features", "standardize_features",
               "standardize_regions", "center_features"}


def rule_blocks() -> dict[str, str]:
    """rule name -> its text, over every workflow/rules/*.smk."""
    blocks = {}
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        parts = re.split(r"^rule (\w+):\n", smk.read_text(), flags=re.M)
        blocks.update({name: body.split("\n\n\n")[0] for name, body in zip(parts[1::2], parts[2::2])})
    return blocks


@pytest.fixture()
def plan(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no results/ here: store sizes estimated from the config
    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


def test_cpu_rules_go_to_the_cpu_partition_and_gpu_rules_to_the_gpu_one():
    profile = load_yaml(PROFILE)
    cpu = profile["default-resources"]["slurm_partition"]
    assert cpu == "cpu"
    overrides = profile["set-resources"]
    gpu_rules = {name for name, body in rule_blocks().items() if re.search(r"^\s+gpu=", body, flags=re.M)}
    assert gpu_rules == {"train_model", "translate", "dump_attention", "select_alignment_layer", "extract_features",
                         "extract_regions", "extract_video"}
    assert set(overrides) == gpu_rules  # each GPU rule, and no CPU rule, is sent elsewhere
    assert {o["slurm_partition"] for o in overrides.values()} == {"gpu"}
    # the test cluster's profile keeps one partition for everything
    assert load_yaml(REPO / "tests" / "slurm_profile" / "config.yaml")["default-resources"]["slurm_partition"] == "test"


def test_every_rule_on_a_whole_store_declares_its_resources():
    blocks = rule_blocks()
    on_stores = {name for name, body in blocks.items()
                 if "results/features/" in body and ".npy" in body or "PATHS['features']}.npy" in body}
    assert STORE_RULES <= on_stores
    for name in STORE_RULES:
        fit = ", fit=True" if name.startswith(("standardize", "center")) else ""
        assert f"mem_mb=lambda wildcards: store_mem_mb(PLAN, wildcards{fit})" in blocks[name], name
        assert f"runtime=lambda wildcards: store_runtime(PLAN, wildcards{fit})" in blocks[name], name
    for name in on_stores - STORE_RULES:  # the rest: a model's jobs, sized by the rule or the cost plan
        assert "mem_mb=" in blocks[name] or name in {"train_model"}, name


def test_store_resources_are_the_store_size(plan, monkeypatch):
    """Multi30k's BUTD train store: 29,000 images x 101 slots x 2048 x 2 bytes = 12.0 GB;
    mem_mb = (MB x 1.25 + 4000) rounded up to 1000; runtime = read + write at 20 MB/s x 1.25
    + 10 min, at least 60. Standardising the val split also reads the train store it fits on."""
    train = W(dataset="multi30k", feature_set="butd-regions", split="train")
    mb = 29000 * 101 * 2048 * 2 / 2**20
    assert 11_000 < mb < 12_000
    assert store_mem_mb(plan, train) == math.ceil((mb * 1.25 + 4000) / 1000) * 1000 == 19_000
    assert math.ceil(2 * mb / 20 / 60 * 1.25 + 10) == 34 and store_runtime(plan, train) == 60  # the hour's floor
    monkeypatch.setattr(cost, "STORE_MB_PER_S", 2.0)  # a slow shared disk: 10x the time
    assert store_runtime(plan, train) == math.ceil(2 * mb / 2 / 60 * 1.25 + 10) == 249
    val = W(dataset="multi30k", feature_set="butd-regions", split="val")
    val_mb = 1014 * 101 * 2048 * 2 / 2**20
    assert store_mem_mb(plan, val) == math.ceil((val_mb * 1.25 + 4000) / 1000) * 1000 == 5000
    assert store_mem_mb(plan, val, fit=True) == math.ceil(((mb + val_mb) * 1.25 + 4000) / 1000) * 1000
    assert store_runtime(plan, val) == 60  # at least the profile's default hour
