"""The preflight (mmt_repro.plan_tools.preflight; `python -m mmt_repro check`, and the Snakefile before
the DAG): every mistake of a config and its targets in one run, each with its fix, no traceback.
Kinds: wrong types and unknown keys in overrides (torch-free, blamed on the override), unknown
names in tables and targets, inputs the targets need that the mirror, local copies or config
lack. The Snakemake side is tests/workflow/test_unknown_names_workflow.py."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmt_repro.config import deep_update, load_yaml
from mmt_repro.plan_tools.preflight import preflight

REPO = Path(__file__).resolve().parents[2]
TABLE1 = "results/tables/doubly_attentive/table1.tsv"
GROUNDED = "results/tables/doubly_attentive/grounded.tsv"

FIVE = """\
targets:
  - results/tables/doubly_attentive/table9.tsv
  - results/tables/doubly_attentive/table1.tsv
  - results/tables/doubly_attentive/grounded.tsv
inputs:
  mirror: {mirror}
datasets:
  multi30k:
    images: null
papers:
  doubly_attentive:
    overrides:
      systems:
        nmt:
          model_config: {{emb_dim: big}}
    tables:
      grounded: {{features: resnet50-res4F}}
"""


@pytest.fixture(scope="module")
def base():
    return load_yaml(REPO / "config" / "config.yaml")


def check(base, overlay: dict, targets=(GROUNDED,), workdir=None):
    return preflight(deep_update(base, overlay), REPO, list(targets), workdir=workdir)


def test_five_planted_mistakes_are_reported_in_one_run_without_a_traceback(tmp_path):
    """The issue's acceptance check, through the real entry point, from another directory."""
    (tmp_path / "mirror").mkdir()
    config = tmp_path / "five.yaml"
    config.write_text(FIVE.format(mirror=tmp_path / "mirror"), encoding="utf-8")
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "mmt_repro", "check", "--configfile", str(config)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    took = time.perf_counter() - start
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert took < 10, f"{took:.1f} s"
    assert "Traceback" not in text
    assert "5 problems found at planning" in text
    assert "papers.doubly_attentive.overrides.systems.nmt.model_config.emb_dim: 'big' is not of type int" in text
    assert "unknown table 'table9' in paper doubly_attentive" in text and "Did you mean 'table1'?" in text
    assert "unknown feature set 'resnet50-res4F' in papers.doubly_attentive.tables.grounded.features" in text
    assert "the mirror folder set by `inputs.mirror` is empty" in text and "multi30k_task1" in text
    assert "(flickr30k_images) is request-only" in text and "`datasets.multi30k.images` is not set" in text
    assert "forms.illinois.edu" in text  # where to ask


@pytest.mark.parametrize("overlay,message", [
    ({"systems": {"nmt": {"model_config": {"emb_dim": "big"}}}},
     "papers.doubly_attentive.overrides.systems.nmt.model_config.emb_dim: 'big' is not of type int"),
    ({"systems": {"nmt": {"train": {"lr": "fast"}}}},
     "papers.doubly_attentive.overrides.systems.nmt.train.lr: 'fast' is not of type float"),
    ({"decode": {"beam_size": "five"}}, "papers.doubly_attentive.overrides.decode.beam_size: 'five' is not of type int"),
    ({"systems": {"nmt": {"decode": {"beam_size": "five"}}}},
     "papers.doubly_attentive.overrides.systems.nmt.decode.beam_size: 'five' is not of type int"),
    ({"systems": {"nmt_src_img": {"by_pair": {"en-de": {"model_config": {"img_dim": 1.5}}}}}},
     "papers.doubly_attentive.overrides.systems.nmt_src_img.by_pair.en-de.model_config.img_dim: 1.5 is not of type "
     "int"),
])
def test_a_wrong_typed_override_is_named_by_its_key_path(base, overlay, message):
    result = check(base, {"papers": {"doubly_attentive": {"overrides": overlay}}}, targets=[GROUNDED])
    assert any(p.startswith(message) for p in result.problems), result.problems
    assert "not supported between" not in result.report()
    assert len(result.problems) == 1  # the rest of the check still ran, on the config without it


def test_a_model_config_key_typo_is_blamed_on_the_override_not_the_settings_file(base):
    result = check(base, {"papers": {"doubly_attentive": {"overrides": {
        "systems": {"nmt": {"model_config": {"emb_dimm": 256}}}}}}}, targets=[GROUNDED])
    [problem] = result.problems
    assert problem.startswith("papers.doubly_attentive.overrides.systems.nmt.model_config.emb_dimm: unknown key")
    assert "Did you mean 'emb_dim'" in problem and "config/papers/doubly_attentive.yaml" not in problem


def test_the_torch_free_type_table_matches_the_models_dataclasses():
    import dataclasses

    import mmt_repro.models  # noqa: F401
    from mmt_repro.models.registry import _lookup, available
    from mmt_repro.plan_tools.typecheck import model_config_types

    table = model_config_types()
    # the package's own models (other tests register models of their own in the same process)
    own = [k for k in available() if _lookup(k)[0].__module__.startswith("mmt_repro.")]
    assert len(own) >= 10
    for key in own:
        assert table[key].fields == {f.name: f.type for f in dataclasses.fields(_lookup(key)[1])}, key


@pytest.mark.parametrize("overlay,targets,start", [
    ({}, ["results/tables/doubly_attentive/table9.tsv"], "unknown table 'table9'"),
    ({}, ["results/tables/doubly_atentive/table1.tsv"], "unknown paper 'doubly_atentive'"),
    ({"papers": {"doubly_attentive": {"tables": {"grounded": {"systems": ["nmt", "nmt_srcimg"]}}}}}, [GROUNDED],
     "unknown system 'nmt_srcimg' in papers.doubly_attentive.tables.grounded.systems"),
    ({"papers": {"doubly_attentive": {"tables": {"grounded": {"test_sets": ["tset"]}}}}}, [GROUNDED],
     "papers.doubly_attentive.tables.grounded.test_sets: 'tset' is not a split of datasets.grounded"),
    ({"papers": {"doubly_attentive": {"overrides": {"systems": {"nmtt": {"train": {"lr": 1.0}}}}}}}, [GROUNDED],
     "unknown system 'nmtt' in papers.doubly_attentive.overrides.systems"),
    ({"papers": {"doubly_attentive": {"overrides": {"systems": {"nmt2": {"variant_of": "nmtt"}}}}}}, [GROUNDED],
     "unknown system 'nmtt' in papers.doubly_attentive.overrides.systems.nmt2.variant_of"),
    ({"device": "tpu"}, [GROUNDED], "config key 'device'"),
])
def test_every_unknown_name_is_reported(base, overlay, targets, start):
    result = check(base, overlay, targets)
    assert [p for p in result.problems if p.startswith(start)], result.problems


def test_an_absent_mirror_and_a_mirror_lacking_files_are_named(base, tmp_path):
    result = check(base, {"inputs": {"mirror": str(tmp_path / "none")}}, [TABLE1])
    assert any("the mirror folder set by `inputs.mirror` does not exist" in p for p in result.missing_inputs)
    (tmp_path / "m" / "multi30k" / "task1" / "raw").mkdir(parents=True)
    (tmp_path / "m" / "multi30k" / "task1" / "raw" / "train.en.gz").write_bytes(b"")
    result = check(base, {"inputs": {"mirror": str(tmp_path / "m")}}, [TABLE1])
    [task1] = [p for p in result.problems if "input 'multi30k_task1'" in p]
    assert "8 of the 9 file(s) of input 'multi30k_task1' that the requested targets need are missing" in task1
    assert "raw/train.en.gz" not in task1.split("\n")[0]


def test_a_request_only_input_is_listed_once_with_where_to_ask(base):
    result = check(base, {}, [TABLE1, "results/tables/doubly_attentive/figure2.tsv"])
    asks = [p for p in result.problems if "flickr30k_images" in p]
    assert len(asks) == 1 and "forms.illinois.edu" in asks[0]
    images = deep_update(base, {"datasets": {"multi30k": {"images": str(REPO)}}})
    assert not [p for p in preflight(images, REPO, [TABLE1]).problems if "flickr30k_images" in p]


def test_files_already_in_the_working_directory_are_not_needed_again(base, tmp_path):
    """A prepared corpus in the working directory: its raw inputs are not asked of the mirror."""
    work = tmp_path / "work"
    for split in ("train", "val", "test_2016_flickr"):
        for lang in ("en", "de"):
            f = work / "results" / "data" / "multi30k" / f"{split}.{lang}"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text("x\n", encoding="utf-8")
        (work / "results" / "data" / "multi30k" / "image_splits").mkdir(exist_ok=True)
        (work / "results" / "data" / "multi30k" / "image_splits" / f"{split}.txt").write_text("1.jpg\n")
    jar = work / "resources" / "meteor" / "meteor-1.5" / "meteor-1.5.jar"  # the Meteor release, unpacked
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    overlay = {"inputs": {"mirror": str(tmp_path / "none")}, "datasets": {"multi30k": {"images": str(REPO)}},
               "papers": {"doubly_attentive": {"tables": {"table1": {"systems": ["nmt", "nmt_src_img"],
                                                                     "baseline": "nmt"},
                                                          # its probe plans Table 1's WMT'15 systems too
                                                          "image_use": {"enabled": False}}}}}
    result = check(base, overlay, [TABLE1], workdir=work)
    assert result.problems == [], result.problems


@pytest.mark.parametrize("overlay", ["smoke.yaml", "cpu_multi30k.yaml", "shared_mirror.yaml", "cpu_vatex.yaml"])
def test_the_repositorys_runnable_configs_pass(base, overlay):
    config = deep_update(base, load_yaml(REPO / "config" / overlay))
    result = preflight(config, REPO)
    assert result.problems == [] and result.plan is not None and result.targets


def test_the_preflight_never_imports_torch(tmp_path):
    code = ("import sys; from mmt_repro.plan_tools.preflight import check_configs;"
            f"r = check_configs('{REPO}', ['{REPO}/config/smoke.yaml']);"
            "print(bool(r.problems), 'torch' in sys.modules, 'snakemake' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]
