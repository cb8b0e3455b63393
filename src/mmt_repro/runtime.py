"""What every workflow script does around its one package call: logging to the rule's log
file, torch threads from the rule's ``threads``, and bad input reported as one clear message.

A script is then only::

    from mmt_repro.runtime import run_step
    from mmt_repro.x import f
    run_step(snakemake.log[0], snakemake.threads, f, a=snakemake.input.a, ...)

A torch step (its module imported torch before ``run_step``) that passes ``device=`` gets the
device contract at once (:func:`mmt_repro.device.pick_device`: a job given a GPU that cannot
use it stops here with the driver, CUDA build and architecture in the message, status 1) and
logs one line of torch, CUDA, device and precision. ``gpus=`` (the rule's ``gpu`` resource,
e.g. ``gpus=snakemake.resources.get("gpu", 0)``) tells the job how many GPUs the workflow gave
it; without it SLURM's variables say so.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .config import ConfigError
from .device import GPUS_ENV, DeviceError
from .io import DataError


def setup_logging(log_path: str | Path | None, level: int = logging.INFO) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="a", encoding="utf-8"))
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers, force=True)


def set_threads(threads: int | None) -> None:
    """Use exactly the rule's ``threads``: torch intra-op threads, and one inter-op thread.

    Steps that do not use torch do not import it (importing costs about 3 s a job): torch and
    the BLAS libraries read ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` when a step imports them
    later; where the step's module has imported torch already, it is set directly. The OpenMP
    wait policy (passive) is set when the package is imported (``mmt_repro/__init__.py``)."""
    if not threads:
        return
    threads = int(threads)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
        try:  # only possible before torch's first parallel work; a second call raises
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass


def check_device(device: str, log: logging.Logger) -> None:
    """The device contract before the step's work (a torch step only: torch already imported).
    Raises :class:`~mmt_repro.device.DeviceError`; logs the device line."""
    from .device import describe_device, pick_device

    log.info("device %s: %s", device, describe_device(pick_device(device)))


def run_step(log_path: str | Path | None, threads: int | None, func: Callable[..., Any], gpus: int | None = None,
             **kwargs) -> Any:
    """Call ``func(**kwargs)`` with logging and threads set; on bad input (or a GPU the job was
    given but cannot use) log the message and exit with status 1 (no traceback noise); other
    errors are logged with their traceback (the job's log file) and propagate. ``gpus``: GPUs
    the workflow gave the job (the rule's ``gpu`` resource), for the device contract."""
    setup_logging(log_path)
    set_threads(threads)
    log = logging.getLogger("mmt_repro.step")
    if gpus is not None:
        os.environ[GPUS_ENV] = str(int(gpus))
    shown = {k: (str(v) if isinstance(v, Path) else v) for k, v in kwargs.items()}
    log.info("%s.%s(%s)", func.__module__, func.__name__, json.dumps(shown, default=str)[:2000])
    started = time.monotonic()
    try:
        if kwargs.get("device") is not None and "torch" in sys.modules:
            check_device(kwargs["device"], log)
        result = func(**kwargs)
    except (DataError, ConfigError, DeviceError) as err:
        log.error("%s", err)
        sys.exit(1)
    except Exception:
        # the job's log file is where users look first: the traceback goes there too
        log.exception("%s.%s failed", func.__module__, func.__name__)
        raise
    log.info("done in %.1f s", time.monotonic() - started)
    if _workflow_script():
        end_process()
    return result


def _workflow_script() -> bool:
    """True in the process of a Snakemake ``script:`` job: its main module holds the
    ``snakemake`` object that Snakemake's preamble unpickles (the script's one step is done)."""
    obj = getattr(sys.modules.get("__main__"), "snakemake", None)
    return obj is not None and type(obj).__module__.startswith("snakemake")


def end_process() -> None:
    """End a finished workflow job's process now, status 0: logs and standard streams flushed,
    then ``os._exit``. The interpreter's own exit (module teardown, torch's C++ destructors)
    costs about 0.5 s a job once torch is imported, and nothing of it is the job's work: every
    output is written and closed by the step before it returns (atomic writes; memory-mapped
    stores are the kernel's to write back either way)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)
