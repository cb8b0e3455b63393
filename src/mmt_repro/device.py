"""Where torch work runs (the config's ``device``: auto | cpu | cuda), and the device contract.

One helper for the whole package: :func:`pick_device` turns the configured name into a
``torch.device`` and, on a GPU, sets the precision once (TF32 for fp32 matmuls).

The contract:

- ``device: cpu``: the CPU, nothing checked.
- ``device: cuda`` (or ``cuda:N``), or ``auto`` in a job that was *given* a GPU: the GPU must
  work, else :class:`DeviceError` at once, whose message names the NVIDIA driver version, the
  torch build's CUDA version and GPU architectures, the GPU's compute capability and what to
  install. A job is given a GPU when the workflow says so (``pick_device(..., gpus=N)``, or
  ``MMT_REPRO_GPUS=N``, which :func:`mmt_repro.runtime.run_step` sets from the rule's ``gpu``
  resource when the script passes it) or, without that, when SLURM allocated one
  (``SLURM_GPUS*``, ``SLURM_JOB_GPUS``, ``SLURM_STEP_GPUS``, or ``CUDA_VISIBLE_DEVICES`` inside a
  SLURM job). Training on the CPU by accident costs the whole time limit and its retries.
- ``device: auto`` with no GPU given (a workstation): the GPU when it works, else the CPU with
  a logged warning that says why.

The check runs a small kernel on the GPU, so a driver older than the torch build's CUDA and a
GPU older than the build's kernels (a V100, sm_70, under a CUDA 13 build that starts at sm_75)
both fail here rather than at the first training step.

Importing this module does not import torch (``runtime.py`` imports it in every job).
"""

from __future__ import annotations

import logging
import os
import platform
import re
import shutil
import subprocess
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import torch

log = logging.getLogger(__name__)

__all__ = ["DeviceError", "cuda_problem", "describe_device", "driver_version", "granted_gpus", "pick_device"]

#: Environment variable the workflow (``run_step(gpus=...)``) sets: GPUs the job was given.
GPUS_ENV = "MMT_REPRO_GPUS"
#: SLURM's variables that say the job holds GPUs (counts, typed counts or id lists).
SLURM_GPU_VARS = ("SLURM_GPUS", "SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_TASK",
                  "SLURM_JOB_GPUS", "SLURM_STEP_GPUS")
_ID_LISTS = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES")
#: Oldest driver branch each CUDA major version runs on (NVIDIA's minor-version compatibility).
MIN_DRIVER = {13: 580, 12: 525, 11: 450}
NVIDIA_PROC = "/proc/driver/nvidia/version"
TORCH_WHEELS = "https://download.pytorch.org/whl"
#: The project's environment for drivers R525-R579 and V100s (torch from the CUDA 12.6 index).
CUDA12_ENV = "envs/mmt-repro-cuda12.yaml"

_announced: set = set()


class DeviceError(RuntimeError):
    """A job that was given a GPU cannot use it (the message says why and what to install)."""


# ----------------------------------------------------------------------------- what the job was given


def _count(var: str, value: str) -> int:
    value = value.strip()
    if not value or value.lower() in ("-1", "none", "nodevfiles", "n/a"):
        return 0
    items = [x for x in re.split(r"[,\s]+", value) if x]
    if var in _ID_LISTS:  # "0,1", "GPU-3f2a...", "0(IDX:0)"
        return len(items)
    total = 0
    for item in items:  # "1", "a100:2", "gpu:a100:1(IDX:0)"
        m = re.search(r"(\d+)(?:\([^)]*\))?$", item)
        total += int(m.group(1)) if m else 1
    return total


def granted_gpus(gpus: int | None = None, environ: dict | None = None) -> tuple[int, str]:
    """``(n, why)``: how many GPUs the workflow or the scheduler gave this job (0: none) and
    where that comes from. An explicit ``gpus`` (the rule's ``gpu`` resource) wins, then
    ``MMT_REPRO_GPUS``, then SLURM's variables."""
    env = os.environ if environ is None else environ
    if gpus is not None:
        return int(gpus), f"the rule's gpu resource: {int(gpus)}"
    value = env.get(GPUS_ENV, "").strip()
    if value:
        try:
            return int(value), f"{GPUS_ENV}={value}"
        except ValueError:
            pass
    for var in SLURM_GPU_VARS:
        n = _count(var, env.get(var, ""))
        if n > 0:
            return n, f"SLURM: {var}={env[var]}"
    if env.get("SLURM_JOB_ID") and env.get("CUDA_VISIBLE_DEVICES") is not None:
        n = _count("CUDA_VISIBLE_DEVICES", env["CUDA_VISIBLE_DEVICES"])
        if n > 0:
            return n, f"SLURM job {env['SLURM_JOB_ID']}: CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']}"
    return 0, ""


# ----------------------------------------------------------------------------- what the node has


def driver_version(proc_path: str = NVIDIA_PROC) -> str | None:
    """The NVIDIA kernel driver's version (``/proc/driver/nvidia/version``, else nvidia-smi), or None."""
    try:
        with open(proc_path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        m = (re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
             or re.search(r"\b(\d{3}\.\d+(?:\.\d+)?)\b", text))
        if m:
            return m.group(1)
    except OSError:
        pass
    rows = nvidia_smi()
    return rows[0].get("driver_version") if rows else None


def nvidia_smi(timeout: float = 15.0) -> list[dict]:
    """One dict per GPU from ``nvidia-smi --query-gpu`` (driver_version, name, compute_cap,
    memory.total), or [] when nvidia-smi is absent or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    for fields in (("driver_version", "name", "compute_cap", "memory.total"), ("driver_version", "name", "memory.total")):
        try:
            out = subprocess.run([exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError):
            return []
        if out.returncode == 0 and out.stdout.strip():
            return [dict(zip(fields, (x.strip() for x in line.split(",")))) for line in out.stdout.strip().splitlines()]
    return []


def _driver_major(version: str | None) -> int | None:
    try:
        return int(version.split(".")[0]) if version else None
    except ValueError:
        return None


def arch_supported(capability: tuple[int, int], arch_list: list[str]) -> bool:
    """Whether a build with kernels for ``arch_list`` (``sm_XY`` binaries, ``compute_XY`` PTX)
    runs on a GPU of ``capability``: a binary of the same major version and a minor version not
    above the GPU's, or PTX of an architecture not above it (compiled at load time)."""
    major, minor = capability
    for arch in arch_list:
        m = re.fullmatch(r"(sm|compute)_(\d+)(\d)[af]?", arch)
        if not m:
            continue
        a_major, a_minor = int(m.group(2)), int(m.group(3))
        if m.group(1) == "sm" and a_major == major and a_minor <= minor:
            return True
        if m.group(1) == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


def _sm(capability: tuple[int, int] | None) -> str:
    return "unknown" if capability is None else f"sm_{capability[0]}{capability[1]}"


_checked: dict[int, None] = {}  # GPUs that passed cuda_problem in this process


def cuda_problem(index: int | None = None) -> str | None:
    """Why CUDA device ``index`` (default: the current one) cannot run this torch's kernels, or
    None when it can (checked by running one small kernel, once per process and GPU)."""
    import torch

    if index is not None and index in _checked:
        return None
    problem = _cuda_problem(index)
    if problem is None and index is not None:
        _checked[index] = None
    return problem


def _cuda_problem(index: int | None) -> str | None:
    import torch

    if torch.version.cuda is None:
        return f"this torch ({torch.__version__}) is a CPU-only build"
    available, said = _cuda_available()
    if not available:
        return "torch.cuda.is_available() is False" + (f" ({said})" if said else "")
    count = torch.cuda.device_count()
    index = torch.cuda.current_device() if index is None else index
    if index >= count:
        return f"cuda:{index} was asked for, {count} GPU(s) are visible"
    cap = torch.cuda.get_device_capability(index)
    arch = torch.cuda.get_arch_list()
    if arch and not arch_supported(cap, arch):
        return (f"GPU {index} ({torch.cuda.get_device_name(index)}) is {_sm(cap)}, and this torch build has "
                f"kernels only for {', '.join(arch)}")
    try:
        x = torch.arange(16, dtype=torch.float32, device=f"cuda:{index}").reshape(4, 4)
        value = float((x @ x).sum())  # a matmul (cuBLAS) and a reduction, read back
        expected = float((x.cpu() @ x.cpu()).sum())  # 3920: small integers, exact in TF32 too
        if value != expected:
            return f"a test matmul on cuda:{index} gave {value}, not {expected:g}"
    except Exception as err:  # noqa: BLE001 - any failure here is the message
        return f"a test kernel failed on cuda:{index}: {' '.join(str(err).split())[:400]}"
    return None


def _cuda_available() -> tuple[bool, str]:
    """``torch.cuda.is_available()`` and what torch warned while answering (e.g. "The NVIDIA
    driver on your system is too old"), kept for the message instead of printed."""
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
    return available, "; ".join(" ".join(str(w.message).split()) for w in caught)


def _advice(problem: str, driver: str | None, capability: tuple[int, int] | None) -> str:
    import torch

    cuda = torch.version.cuda
    req = MIN_DRIVER.get(int(cuda.split(".")[0])) if cuda else None
    drv = _driver_major(driver)
    if driver is None and not os.path.exists("/dev/nvidiactl"):
        return ("no NVIDIA driver is loaded on this node: the job ran on a node without a usable GPU; check the "
                "partition and the GPU request (the SLURM profile's slurm_partition, gpu/gpu_model), or run with "
                "device: cpu")
    if cuda is None:
        return (f"a CUDA build of torch: e.g. `pip install torch --index-url {TORCH_WHEELS}/cu126` (CUDA 12.6, "
                "driver R525 or newer, kernels sm_50-sm_90 incl. V100 sm_70) or .../cu130 (driver R580+, sm_75+)")
    if req and drv is not None and drv < req:
        if drv >= MIN_DRIVER[12]:
            fit = (f"the project's CUDA 12 environment, `conda env create -f {CUDA12_ENV}` (or `pip install "
                   f"torch --index-url {TORCH_WHEELS}/cu126`; CUDA 12.6: R525+, sm_50-sm_90)")
        elif drv >= MIN_DRIVER[11]:
            fit = (f"a CUDA 11.8 build, `pip install torch==<version> --index-url {TORCH_WHEELS}/cu118` (R450+; only "
                   "older torch releases ship one: https://pytorch.org/get-started/previous-versions/)")
        else:
            fit = "nothing current: the driver predates CUDA 11"
        return (f"the driver R{drv} is older than this torch's CUDA {cuda} needs (R{req} or newer): upgrade the "
                f"driver, or install a torch built for a CUDA this driver runs: {fit}")
    if capability is not None and "kernels only for" in problem:
        return (f"a torch build with {_sm(capability)} kernels: CUDA 13 builds start at sm_75, so a V100 (sm_70) "
                f"needs a CUDA 12 build: the project's `conda env create -f {CUDA12_ENV}` (or `pip install torch "
                f"--index-url {TORCH_WHEELS}/cu126`; sm_50-sm_90; "
                "check with `python -c 'import torch; print(torch.cuda.get_arch_list())'`), or ask for a newer GPU "
                "(the SLURM profile's gpu_model)")
    return ("check that `nvidia-smi` works on the node and that this torch's CUDA matches the driver "
            f"(driver {driver or 'unknown'}, torch CUDA {cuda}); a CUDA 12.6 build ({TORCH_WHEELS}/cu126) runs on "
            "drivers R525+ and GPUs sm_50-sm_90")


def _error_message(problem: str, why: str, asked: str) -> str:
    import torch

    driver = driver_version()
    smi = nvidia_smi()
    capability, name = None, None
    try:
        if _cuda_available()[0] and torch.cuda.device_count():
            capability = torch.cuda.get_device_capability(0)
            name = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001
        pass
    if capability is None and smi and re.fullmatch(r"\d+\.\d+", smi[0].get("compute_cap", "")):
        capability = tuple(int(x) for x in smi[0]["compute_cap"].split("."))
    if name is None and smi:
        name = smi[0].get("name")
    arch = ", ".join(torch.cuda.get_arch_list()) or "none"
    cc = ".".join(map(str, capability)) if capability else "unknown"
    gpu = f"{name or 'unknown GPU'}, compute capability {cc} ({_sm(capability)})"
    return "\n".join([
        f"device {asked!r}: this job {why} but cannot use it: {problem}.",
        f"  NVIDIA driver: {driver or f'none found (no {NVIDIA_PROC}, no nvidia-smi)'}",
        f"  torch {torch.__version__}: CUDA build {torch.version.cuda or 'none (CPU-only build)'}, kernels for {arch}",
        f"  GPU: {gpu}",
        f"  To fix: {_advice(problem, driver, capability)}.",
        "  (device: cpu runs on the CPU on purpose; device: auto without a GPU request falls back with a warning.)",
    ])


# ----------------------------------------------------------------------------- picking and describing


def enable_tf32(on: bool = True) -> None:
    """TF32 for fp32 matrix products and convolutions on the GPU (fp32 range and accumulation,
    10-bit mantissa inputs: about 8x an fp32 H100's IEEE rate). Set through the legacy flags,
    which keep the new ``fp32_precision`` settings consistent and leave CPU (oneDNN) matmuls alone."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def pick_device(device: str = "auto", gpus: int | None = None, *, tf32: bool = True) -> torch.device:
    """The ``torch.device`` for the configured ``device`` (module docstring: the contract).
    ``gpus``: GPUs the workflow gave the job (None: read ``MMT_REPRO_GPUS`` and SLURM's
    variables). On a GPU, TF32 is switched on for fp32 matmuls unless ``tf32`` is False."""
    import torch

    name = str(device or "auto").strip().lower()
    if name == "cpu":
        return torch.device("cpu")
    if name != "auto" and not name.startswith("cuda"):
        return torch.device(name)  # e.g. mps: no contract here
    granted, why = granted_gpus(gpus)
    if name == "auto" and granted <= 0:
        available = _cuda_available()[0]
        problem = cuda_problem() if available else None
        if available and problem is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        else:
            dev = torch.device("cpu")
            if problem is None:
                driver = driver_version()
                problem = ("torch has no CUDA (CPU-only build)" if torch.version.cuda is None
                           else "no usable CUDA GPU" + (f" (NVIDIA driver {driver})" if driver else ""))
            _once(("fallback", problem), logging.WARNING,
                  "device auto: %s; running on the CPU (set device: cpu to say so, or device: cuda to require a GPU)",
                  problem)
            return dev
    else:
        dev = torch.device("cuda" if name == "auto" else name)
        if dev.index is None:
            dev = torch.device("cuda", 0)
        problem = cuda_problem(dev.index)
        if problem is not None:
            said = f"was given a GPU ({why})" if granted > 0 else f"is configured for a GPU (device: {name})"
            raise DeviceError(_error_message(problem, said, name))
    torch.cuda.set_device(dev)
    enable_tf32(tf32)  # the job's line (describe_device) says so: run_step and the trainer log it
    return dev


def _once(key, level: int, msg: str, *args) -> None:
    """Log a device decision once per process (the step runner and the job's function both pick)."""
    if key in _announced:
        log.debug(msg, *args)
        return
    _announced.add(key)
    log.log(level, msg, *args)


def describe_device(device=None, amp: bool = False) -> str:
    """One line for the job's log: torch version and CUDA build, the device (name, compute
    capability, memory, driver) or the CPU (threads), and the precision of fp32 matmuls and of
    autocast (``amp``: bf16 autocast in training)."""
    import torch

    dev = torch.device("cpu") if device is None else torch.device(device)
    build = f"torch {torch.__version__} (CUDA build {torch.version.cuda or 'none'}"
    if dev.type == "cuda" and torch.backends.cudnn.is_available():  # loading cuDNN costs time: GPU jobs only
        build += f", cuDNN {torch.backends.cudnn.version()}"
    build += ")"
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        where = (f"cuda:{index} {props.name}, {_sm((props.major, props.minor))}, {props.total_memory / 2**30:.1f} GiB, "
                 f"driver {driver_version() or 'unknown'}")
        tf32 = torch.backends.cuda.matmul.allow_tf32
        precision = f"fp32 params, {'TF32' if tf32 else 'IEEE fp32'} matmuls"
        if amp:
            bf16 = (props.major, props.minor) >= (8, 0)
            precision += ", bf16 autocast" + ("" if bf16 else " (emulated below sm_80: slow)")
    else:
        where = f"{dev} ({torch.get_num_threads()} threads, {platform.machine() or 'unknown'})"
        precision = "fp32" + (" (amp is GPU-only: off here)" if amp else "")
    return f"{build} | {where} | precision: {precision}"
