"""What every workflow script does around its one package call: logging to the rule's log
file, torch threads from the rule's ``threads``, and bad input reported as one clear message.

A script is then only::

    from mmt_repro.runtime import run_step
    from mmt_repro.x import f
    run_step(snakemake.log[0], snakemake.threads, f, a=snakemake.input.a, ...)
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


def run_step(log_path: str | Path | None, threads: int | None, func: Callable[..., Any], **kwargs) -> Any:
    """Call ``func(**kwargs)`` with logging and threads set; on bad input log the message and
    exit with status 1 (no traceback noise); other errors are logged with their traceback (the
    job's log file) and propagate."""
    setup_logging(log_path)
    set_threads(threads)
    log = logging.getLogger("mmt_repro.step")
    shown = {k: (str(v) if isinstance(v, Path) else v) for k, v in kwargs.items()}
    log.info("%s.%s(%s)", func.__module__, func.__name__, json.dumps(shown, default=str)[:2000])
    started = time.monotonic()
    try:
        result = func(**kwargs)
    except (DataError, ConfigError) as err:
        log.error("%s", err)
        sys.exit(1)
    except Exception:
        # the job's log file is where users look first: the traceback goes there too
        log.exception("%s.%s failed", func.__module__, func.__name__)
        raise
    log.info("done in %.1f s", time.monotonic() - started)
    return result
