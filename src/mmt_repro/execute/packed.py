"""A packed training job (rules ``train_packed_<pack>``, config ``packing``): several trainings
side by side on one GPU allocation, each in its own process.

Each member process runs exactly what a separate ``train_model`` job runs: its job (the
``train_model`` job's ``to_dict()``) through :func:`mmt_repro.execute.run_job` under
:func:`mmt_repro.runtime.run_step`, with the same code version and the rule name
``train_model``, so it writes the same best and last checkpoints, curve and job record. Its
standard streams go to its own log, where a separate job writes it
(``results/logs/train_model/...``): the log lines, and anything the process prints before its
logging starts or as it dies.

The members run to their own end: one that fails does not stop the others. When every member
has ended, the job fails if one did, naming each failed member's log; the members that finished
wrote their outputs and a ``.last.pt`` that says so (Snakemake deletes a failed job's declared
outputs; the retry restores a finished member's from its ``.last.pt`` and best copy in seconds,
without training, and resumes the failed one from its own ``.last.pt``). SIGTERM, SIGUSR1 and
SIGINT reach every member (SLURM's time limit: each saves its ``.last.pt`` and exits with
:data:`INTERRUPTED`); the job then exits with that status too.

``python -m mmt_repro.execute.packed`` is the member process: it reads ``{"job", "code",
"threads"}`` as JSON on its standard input.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..io import DataError

log = logging.getLogger(__name__)

INTERRUPTED = 75  # the trainer's exit status after a signal (mmt_repro.train.trainer.INTERRUPTED_EXIT_CODE)
FORWARDED = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)
POLL_S = 0.2  # how often the job looks whether a member has ended

__all__ = ["INTERRUPTED", "member_main", "run_packed"]


def _start(member: dict, threads: int) -> subprocess.Popen:
    """The member's process: ``python -m mmt_repro.execute.packed`` with its job on stdin, its
    stdout and stderr appended to its log."""
    path = Path(member["log"])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as out:
        # its own session: a terminal's Ctrl-C reaches the members as the job forwards it (SIGTERM:
        # save, then stop), not as a KeyboardInterrupt mid-update
        proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    spec = {"job": member["job"], "code": member.get("code"), "threads": threads}
    proc.stdin.write(json.dumps(spec).encode("utf-8"))
    proc.stdin.close()
    return proc


def _name(member: dict) -> str:
    job = member["job"]
    return f"{job['paper']}.{job['system']} {job['dataset']}.{job['pair']} seed{job['seed']}"


def run_packed(members: list[dict], cores: int = 1) -> None:
    """Train ``members`` (each ``{"job": a train job's to_dict(), "code": its code version, "log":
    its log file}``) side by side, each in its own process with ``cores // len(members)``
    torch threads (at least one); wait for all of them. Raises :class:`~mmt_repro.io.DataError`
    naming the log of every member that failed, or exits with :data:`INTERRUPTED` when a signal
    stopped them (each saved its ``.last.pt``)."""
    if not members:
        raise ValueError("a packed training job needs at least one member")
    each = max(1, int(cores or 1) // len(members))
    procs: list[subprocess.Popen] = []
    received: list[int] = []

    def forward(signum, frame):  # noqa: ARG001
        received.append(signum)
        for proc in procs:
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGTERM if signum == signal.SIGINT else signum)
                except OSError:
                    pass

    old = {}
    for sig in FORWARDED:
        try:
            old[sig] = signal.signal(sig, forward)
        except ValueError:  # not the main thread (a test): signals stay as they are
            pass
    started = time.monotonic()
    try:
        for member in members:
            procs.append(_start(member, each))
            log.info("started %s (pid %d, %d threads), log %s", _name(member), procs[-1].pid, each, member["log"])
        status: dict[int, int] = {}
        while len(status) < len(procs):
            for i, proc in enumerate(procs):
                if i not in status and proc.poll() is not None:
                    status[i] = proc.returncode
                    level = logging.INFO if proc.returncode == 0 else logging.ERROR
                    log.log(level, "%s ended with status %d after %.1f s (log %s)", _name(members[i]),
                            proc.returncode, time.monotonic() - started, members[i]["log"])
            if len(status) < len(procs):
                time.sleep(POLL_S)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    failed = [(members[i], code) for i, code in sorted(status.items()) if code != 0]
    if not failed:
        return
    if received and all(code in (INTERRUPTED, -signal.SIGTERM) for _, code in failed):
        log.warning("signal %d: %d member(s) saved their .last.pt; re-run to resume them", received[0], len(failed))
        raise SystemExit(INTERRUPTED)
    done = len(members) - len(failed)
    lines = "; ".join(f"{_name(m)} (status {code}): see {m['log']}" for m, code in failed)
    raise DataError(failed[0][0]["log"], f"{len(failed)} of {len(members)} packed trainings failed: {lines}",
                    f"read the log; the {done} that finished keep their .last.pt and are restored, not retrained, "
                    "when the job runs again, and a failed one resumes from its own .last.pt")


def member_main() -> None:
    """One member process: its job from stdin, run as a separate ``train_model`` job runs it
    (workflow/scripts/run_job.py): :func:`~mmt_repro.runtime.run_step` of
    :func:`~mmt_repro.execute.run_job` with the job's code version; the log is this process's
    standard error, which the packed job sends to the member's log file."""
    from ..runtime import run_step
    from . import run_job

    spec = json.loads(sys.stdin.read())
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    run_step(None, spec.get("threads"), run_job, job=spec["job"], rule="train_model", code=spec.get("code"))


if __name__ == "__main__":
    member_main()
