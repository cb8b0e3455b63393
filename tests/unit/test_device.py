"""The device contract (mmt_repro.device): a job given a GPU that cannot use it stops at once
with the driver, the torch CUDA build, the GPU architecture and what to install; ``auto``
without a GPU request falls back to the CPU with a warning; TF32 on a GPU; the one-line
description. GPUs are simulated: nothing here needs one."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from mmt_repro import device as dev
from mmt_repro.device import DeviceError, arch_supported, describe_device, granted_gpus, pick_device

REPO = Path(__file__).resolve().parents[2]
CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


@pytest.fixture
def clean_env(monkeypatch):
    for var in (*dev.SLURM_GPU_VARS, dev.GPUS_ENV, "SLURM_JOB_ID", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(dev, "_announced", set())


@pytest.mark.parametrize("env, n", [
    ({}, 0),
    ({"SLURM_GPUS": "1"}, 1),
    ({"SLURM_GPUS": "a100:2"}, 2),
    ({"SLURM_GPUS_PER_NODE": "gpu:h100:1(IDX:0)"}, 1),
    ({"SLURM_JOB_GPUS": "0,1,2"}, 3),
    ({"SLURM_GPUS_ON_NODE": "0"}, 0),
    ({"CUDA_VISIBLE_DEVICES": "0"}, 0),  # a workstation's own setting, no scheduler: not a grant
    ({"SLURM_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "0"}, 1),
    ({"SLURM_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": ""}, 0),
    ({"MMT_REPRO_GPUS": "0", "SLURM_GPUS": "1"}, 0),  # the workflow's word wins
])
def test_gpus_granted_by_slurm_or_the_workflow(env, n):
    assert granted_gpus(environ=env)[0] == n
    assert granted_gpus(2, environ=env) == (2, "the rule's gpu resource: 2")


def test_architecture_lists():
    assert not arch_supported((7, 0), CU130)  # V100 under a CUDA 13 build
    assert arch_supported((7, 0), ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"])  # cu126
    assert arch_supported((8, 6), ["sm_80"]) and arch_supported((8, 9), ["sm_86"])  # same major, lower minor
    assert not arch_supported((8, 0), ["sm_86", "sm_90"])
    assert arch_supported((9, 0), CU130) and arch_supported((10, 3), ["sm_100a"])
    assert arch_supported((12, 1), ["sm_90", "compute_120"]) and not arch_supported((8, 0), ["compute_90"])


def test_driver_version_from_proc(tmp_path):
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
                    "GCC version:  gcc version 11.4.0\n")
    assert dev.driver_version(str(proc)) == "535.104.05"
    proc.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build\n")
    assert dev.driver_version(str(proc)) == "580.65.06"


def _run_job(env: dict, code: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != dev.GPUS_ENV}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=full, timeout=300)


STEP = """
import torch
from mmt_repro.runtime import run_step
def train(device):
    print("TRAINED ON", device)
run_step(None, 1, train, {gpus}device={device!r})
"""


@pytest.mark.parametrize("env, gpus, device", [
    ({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0"}, "", "auto"),  # SLURM gave a GPU
    ({}, "gpus=1, ", "auto"),  # the rule's gpu resource
    ({}, "", "cuda"),  # asked for by the config
])
def test_a_job_given_a_gpu_without_usable_cuda_exits_with_the_message(env, gpus, device):
    # CUDA_VISIBLE_DEVICES="" hides every GPU: the same on machines with and without one
    out = _run_job({**env, "CUDA_VISIBLE_DEVICES": ""}, STEP.format(gpus=gpus, device=device))
    assert out.returncode == 1, out.stderr[-3000:]
    assert "TRAINED ON" not in out.stdout
    err = out.stderr
    assert "cannot use it" in err and "NVIDIA driver:" in err and "To fix:" in err
    assert f"CUDA build {torch.version.cuda or 'none'}" in err
    assert "kernels for" in err and "GPU:" in err
    assert "Traceback" not in err


def test_auto_without_a_gpu_request_falls_back_to_the_cpu_with_a_warning(clean_env, monkeypatch, caplog):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with caplog.at_level(logging.WARNING, logger="mmt_repro.device"):
        assert pick_device("auto") == torch.device("cpu")
    assert "running on the CPU" in caplog.text
    out = _run_job({"CUDA_VISIBLE_DEVICES": ""}, STEP.format(gpus="", device="auto"))
    assert out.returncode == 0 and "TRAINED ON auto" in out.stdout
    assert "running on the CPU" in out.stderr and "device auto: torch" in out.stderr  # the job's device line


def test_cpu_is_the_cpu(clean_env, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_GPUS", "0")  # a GPU job told device: cpu runs on the CPU on purpose
    monkeypatch.setattr(torch.cuda, "is_available", lambda: pytest.fail("device: cpu must not look at CUDA"))
    assert pick_device("cpu") == torch.device("cpu")


def _fake_gpu(monkeypatch, capability=(7, 0), name="Tesla V100-SXM2-32GB", arch=CU130, cuda="13.0",
              driver="535.104.05", available=True, warning=None):
    def is_available():
        if warning:
            warnings.warn(warning)
        return available

    monkeypatch.setattr(torch.cuda, "is_available", is_available)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1 if available else 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=0: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: name)
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: list(arch))
    monkeypatch.setattr(torch.version, "cuda", cuda)
    monkeypatch.setattr(dev, "driver_version", lambda *a: driver)
    monkeypatch.setattr(dev, "nvidia_smi", lambda *a, **k: [])
    monkeypatch.setattr(dev.os.path, "exists", lambda p: True)  # a node with /dev/nvidiactl


def test_v100_under_a_build_without_sm_70_names_the_build_to_install(clean_env, monkeypatch):
    _fake_gpu(monkeypatch)
    with pytest.raises(DeviceError) as err:
        pick_device("cuda")
    msg = str(err.value)
    assert "Tesla V100-SXM2-32GB" in msg and "sm_70" in msg and "compute capability 7.0" in msg
    assert "535.104.05" in msg and "CUDA build 13.0" in msg and "sm_75, sm_80" in msg
    assert "cu126" in msg and "conda env create -f envs/mmt-repro-cuda12.yaml" in msg
    assert (Path(__file__).resolve().parents[2] / dev.CUDA12_ENV).is_file()


def test_a_driver_older_than_the_cuda_build_names_the_driver_and_a_fitting_build(clean_env, monkeypatch):
    _fake_gpu(monkeypatch, available=False, driver="470.82.01",
              warning="CUDA initialization: The NVIDIA driver on your system is too old (found version 11040).")
    monkeypatch.setenv("SLURM_GPUS_ON_NODE", "1")
    with pytest.raises(DeviceError) as err:
        pick_device("auto")
    msg = str(err.value)
    assert "SLURM_GPUS_ON_NODE=1" in msg and "too old (found version 11040)" in msg
    assert "R470 is older than" in msg and "R580" in msg and "cu118" in msg
    _fake_gpu(monkeypatch, available=False, driver="550.54.15", warning="driver too old")
    with pytest.raises(DeviceError, match=r"R550 is older.*envs/mmt-repro-cuda12.yaml.*cu126"):
        pick_device("cuda:0")


def test_a_cpu_only_torch_build_asked_for_a_gpu(clean_env, monkeypatch):
    _fake_gpu(monkeypatch, cuda=None, available=False, driver="580.65.06")
    with pytest.raises(DeviceError, match=r"(?s)CPU-only build.*a CUDA build of torch"):
        pick_device("cuda")


def test_a_usable_gpu_gets_tf32_and_a_device_line(clean_env, monkeypatch):
    _fake_gpu(monkeypatch, capability=(9, 0), name="NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(dev, "cuda_problem", lambda index=None: None)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(dev, "describe_device", lambda d, amp=False: f"described {d}")
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        assert pick_device("cuda", gpus=1) == torch.device("cuda", 0)
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        assert torch.get_float32_matmul_precision() == "high"  # the same setting, as the newer API reads it
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def test_describe_the_cpu():
    line = describe_device("cpu", amp=True)
    assert line.startswith(f"torch {torch.__version__} (CUDA build ") and "cpu (" in line
    assert "precision: fp32" in line and "GPU-only" in line and "\n" not in line


def test_importing_the_device_helper_does_not_import_torch():
    code = "import sys, mmt_repro.device, mmt_repro.runtime; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"
