"""One environment for the whole workflow (issue 27, item 7): no rule names a per-stage conda env
(those drifted: pandas, tokenizers, transformers, jieba, torch and matplotlib were missing where
rules imported them); envs/mmt-repro.yaml lists exactly pyproject.toml's dependencies plus Java;
the container installs the package from its own copy of the repository."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_the_conda_env_is_pyprojects_dependencies_and_java():
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    env = yaml.safe_load((REPO / "envs" / "mmt-repro.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(pip) == sorted(d.split("#")[0].strip() for d in deps)  # same names and pins
    assert {_name(d) for d in deps} >= {"torch", "pandas", "transformers", "jieba", "matplotlib", "pycocoevalcap"}
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert any(d.startswith("openjdk") for d in conda) and "python=3.11" in conda


def test_every_rule_names_the_one_env_and_no_other():
    """No per-stage environments: a rule's `conda:` is ENV (envs/mmt-repro.yaml), nothing else."""
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    named = {m for f in files for m in re.findall(r"^\s*conda:\s*\n\s*(\S+)", f.read_text(), re.M)}
    assert named == {"ENV"}
    assert sorted(p.name for p in (REPO / "envs").iterdir()) == ["mmt-repro-cuda12.yaml", "mmt-repro.def",
                                                                 "mmt-repro.yaml"]


def test_the_cuda12_env_is_the_main_env_with_torch_from_the_cuda_12_index():
    """Older drivers (R525-R579) and V100s (sm_70): the same environment, torch and torchvision
    from PyTorch's CUDA 12.6 index (issue 23); nothing else may drift."""
    main = yaml.safe_load((REPO / "envs" / "mmt-repro.yaml").read_text())
    cu12 = yaml.safe_load((REPO / "envs" / "mmt-repro-cuda12.yaml").read_text())
    pip_main = next(d["pip"] for d in main["dependencies"] if isinstance(d, dict))
    pip_cu12 = next(d["pip"] for d in cu12["dependencies"] if isinstance(d, dict))
    torch_main = {_name(d): d for d in pip_main if _name(d) in ("torch", "torchvision")}
    assert pip_cu12[0] == "--extra-index-url https://download.pytorch.org/whl/cu126"
    assert sorted(pip_cu12[1:]) == sorted([d for d in pip_main if _name(d) not in torch_main]
                                          + [f"{d}+cu126" for d in torch_main.values()])
    assert [d for d in cu12["dependencies"] if isinstance(d, str)] == [
        d for d in main["dependencies"] if isinstance(d, str)]
    assert cu12["name"] == "mmt-repro-cuda12" and main["name"] == "mmt-repro"
    # the container takes the same build by a build argument, pinned like pyproject's torch
    text = (REPO / "envs" / "mmt-repro.def").read_text()
    assert re.search(r"^%arguments\n\s+TORCH_CUDA=\n", text, re.M)
    for pin in torch_main.values():
        assert f'"{pin}+{{{{ TORCH_CUDA }}}}"' in text


def test_the_container_installs_the_package_from_its_own_copy():
    text = (REPO / "envs" / "mmt-repro.def").read_text()
    files = re.search(r"^%files\n(.*?)^%", text, re.M | re.S).group(1).split("\n")
    copied = {line.split()[0] for line in files if line.strip()}
    assert {"pyproject.toml", "src", "README.md", "LICENSE"} <= copied and "." not in copied
    assert "pip install --no-cache-dir /opt/mmt-repro" in text  # not the working directory
    assert "default-jre-headless" in text  # METEOR needs Java


def test_the_quick_start_checks_java_first(tmp_path):
    """Java is a prerequisite of `make smoke` and `make test` (METEOR): without it they stop at
    once with the fix, not hours later inside a scoring job (issue 27, item 9)."""
    import shutil
    import subprocess

    make = shutil.which("make")
    if make is None:
        import pytest

        pytest.skip("make is not installed")
    res = subprocess.run([make, "-s", "-C", str(REPO), "java-check"], env={"PATH": str(tmp_path)},
                         capture_output=True, text=True)
    assert res.returncode != 0
    assert "METEOR needs Java" in res.stdout and "default-jre-headless" in res.stdout
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^smoke: java-check", makefile, re.M) and re.search(r"^test: java-check", makefile, re.M)
