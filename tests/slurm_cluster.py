"""A throw-away single-node SLURM cluster for the workflow tests (Debian slurm-wlm, no systemd).

:func:`start_cluster` installs ``slurmctld slurmd slurm-client munge`` with apt-get when they
are missing, writes a ``slurm.conf`` into a fresh state folder, starts ``munged`` (as user
``munge``, on a private socket), ``slurmctld`` and ``slurmd -N localhost`` in the foreground as
children of this process, and waits until ``sinfo`` shows the node idle. :meth:`SlurmCluster.stop`
cancels the cluster's jobs and ends exactly the daemons it started, then removes the state.

Clients (``sbatch``, ``squeue``, ``scancel``, and Snakemake's SLURM executor) find the cluster
through :attr:`SlurmCluster.env` (``SLURM_CONF``); jobs inherit it (``sbatch --export=ALL``).

The settings are the ones that worked on Debian 12 / slurm-wlm 22.05 (see ../shared/FACTS.md):
``proctrack/linuxproc`` and ``task/none`` (no cgroups or systemd), ``select/cons_tres`` with
``CR_Core_Memory``, ``RealMemory`` at most what ``slurmd -C`` reports (more drains the node),
two job slots per core (``CPUs`` twice the cores, with ``SlurmdParameters=config_overrides``, which
keeps slurmd from draining the node for it: a test job mostly waits on Snakemake starting), no
accounting (so Snakemake must poll with ``squeue``; ``MinJobAge=300`` keeps finished jobs in
``squeue`` long enough). ``env`` also puts a small ``srun`` wrapper first on PATH: Snakemake's
job step drops SLURM_CONF before its nested srun (see :meth:`SlurmCluster._write_srun_wrapper`).

Only :class:`SlurmUnavailable` means "cannot run here" (packages cannot be installed, or not
root); every other failure raises with the daemons' log tails.

By hand::

    python tests/slurm_cluster.py      # start, print the environment, wait for Ctrl-C
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel", "scontrol", "munged")
PARTITION = "test"


class SlurmUnavailable(RuntimeError):
    """SLURM cannot run on this machine (the reason says why); tests skip on this only."""


def _missing_binaries() -> list[str]:
    # munged lives in /usr/sbin, which is not on every PATH
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [b for b in BINARIES if shutil.which(b, path=path) is None]


def ensure_packages() -> float:
    """Install the SLURM and munge packages when missing; returns the seconds it took (0 when
    they were there). Raises :class:`SlurmUnavailable` when they cannot be installed."""
    if not _missing_binaries():
        return 0.0
    if os.geteuid() != 0:
        raise SlurmUnavailable(f"{', '.join(_missing_binaries())} not installed and not root: "
                               f"run `apt-get install {' '.join(PACKAGES)}` as root")
    if shutil.which("apt-get") is None:
        raise SlurmUnavailable(f"{', '.join(_missing_binaries())} not installed and no apt-get to install "
                               f"{' '.join(PACKAGES)}")
    started = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES]
    res = subprocess.run(install, env=env, capture_output=True, text=True)
    if res.returncode != 0:  # package lists may be missing on a fresh image
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, text=True)
        res = subprocess.run(install, env=env, capture_output=True, text=True)
    if res.returncode != 0 or _missing_binaries():
        raise SlurmUnavailable(f"`{' '.join(install)}` failed (exit {res.returncode}): "
                               f"{(res.stderr or res.stdout)[-800:]}")
    return time.monotonic() - started


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _slurmd_hardware() -> tuple[int, int]:
    """(CPUs, RealMemory in MB) as ``slurmd -C`` reports them (the node drains if slurm.conf
    claims more)."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True).stdout
    cpus, mem = re.search(r"CPUs=(\d+)", out), re.search(r"RealMemory=(\d+)", out)
    nproc = len(os.sched_getaffinity(0))
    return (min(nproc, int(cpus.group(1))) if cpus else nproc), (int(mem.group(1)) if mem else 1024)


@dataclass
class SlurmCluster:
    """A running single-node cluster; use :attr:`env` for every SLURM client call."""

    state: Path
    partition: str = PARTITION
    cpus: int = 1
    memory_mb: int = 1024
    oversubscribe: int = 2  # job slots per core (see _write_conf)
    install_seconds: float = 0.0
    setup_seconds: float = 0.0
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def slots(self) -> int:
        """The CPUs the node offers to jobs: ``oversubscribe`` per core."""
        return self.cpus * self.oversubscribe

    @property
    def conf(self) -> Path:
        return self.state / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """The environment for SLURM clients: SLURM_CONF, and the srun wrapper first on PATH."""
        path = f"{self.state / 'bin'}:{os.environ.get('PATH', '')}"
        return dict(os.environ, SLURM_CONF=str(self.conf), PATH=path)

    def _write_srun_wrapper(self) -> None:
        """Snakemake's job step (snakemake-executor-plugin-slurm-jobstep 0.6) starts the rule
        with a nested ``srun`` after removing every ``SLURM_*`` variable but the job's identity,
        SLURM_CONF included, so srun finds no configuration outside /etc/slurm. The jobs inherit
        PATH (``sbatch --export=ALL``), so an ``srun`` first on it puts SLURM_CONF back."""
        real = shutil.which("srun")
        if real is None:
            raise RuntimeError("srun not found although slurm-client is installed")
        wrapper = self.state / "bin" / "srun"
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text(f'#!/bin/sh\nexport SLURM_CONF="{self.conf}"\nexec {real} "$@"\n', encoding="utf-8")
        wrapper.chmod(0o755)

    def run(self, *cmd: str, check: bool = True, timeout: float = 30) -> str:
        res = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr}{res.stdout}")
        return res.stdout

    def jobs(self) -> list[dict[str, str]]:
        """Jobs squeue knows (finished ones stay MinJobAge seconds): id, name, state."""
        out = self.run("squeue", "--states=all", "--noheader", "--format=%i|%j|%T", check=False)
        rows = [line.split("|") for line in out.splitlines() if line.count("|") == 2]
        return [{"id": r[0], "name": r[1], "state": r[2]} for r in rows]

    def logs(self) -> str:
        """Tails of the daemons' logs, for failure messages."""
        parts = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log"):
            path = self.state / name
            if path.exists():
                parts.append(f"--- {path} (tail)\n" + "\n".join(path.read_text(errors="replace").splitlines()[-30:]))
        return "\n".join(parts)

    # ------------------------------------------------------------------------- life cycle
    def _write_conf(self, ctld_port: int, d_port: int) -> None:
        s = self.state
        self.conf.write_text(
            "\n".join([
                "# Single-node test cluster written by tests/slurm_cluster.py",
                "ClusterName=mmtrepro",
                "SlurmctldHost=localhost",
                f"SlurmctldPort={ctld_port}",
                f"SlurmdPort={d_port}",
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={s}/munge/munge.socket",
                f"StateSaveLocation={s}/ctld",
                f"SlurmdSpoolDir={s}/spool",
                f"SlurmctldPidFile={s}/slurmctld.pid",
                f"SlurmdPidFile={s}/slurmd.pid",
                f"SlurmctldLogFile={s}/slurmctld.log",
                f"SlurmdLogFile={s}/slurmd.log",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core_Memory",
                "MpiDefault=none",
                "SchedulerType=sched/backfill",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none",
                "ReturnToService=2",
                "MinJobAge=300",  # finished jobs stay visible to squeue (Snakemake polls it)
                "KillWait=10",  # SIGTERM -> SIGKILL grace after scancel or a time limit
                "SlurmctldTimeout=30",
                "SlurmdTimeout=60",
                # The node offers twice its cores (config_overrides: slurmd keeps the configured
                # count): a test job spends most of its time starting Snakemake twice (its step
                # and the nested srun) and waiting, not computing, so two a core keep the cores
                # busy. Each job still gets its threads' --cpus-per-task.
                "SlurmdParameters=config_overrides",
                f"NodeName=localhost CPUs={self.slots} RealMemory={self.memory_mb} State=UNKNOWN",
                f"PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                "",
            ]),
            encoding="utf-8",
        )

    def _spawn(self, name: str, cmd: list[str], user: str | None = None) -> None:
        log = open(self.state / f"{name}.out", "wb")  # noqa: SIM115 - closed with the process
        self.procs[name] = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                            user=user, start_new_session=True)

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                out = (self.state / f"{name}.out").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{out}\n{self.logs()}")

    def _wait(self, what: str, ready, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"SLURM test cluster: {what} not ready after {timeout:.0f} s\n{self.logs()}")

    def start(self, timeout: float = 60) -> SlurmCluster:
        started = time.monotonic()
        for sub in ("ctld", "spool", "munge"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o755)  # munged (user munge) must reach its socket folder
        munge = pwd.getpwnam("munge")
        os.chown(self.state / "munge", munge.pw_uid, munge.pw_gid)
        (self.state / "munge").chmod(0o755)
        self._write_conf(_free_port(), _free_port())
        self._write_srun_wrapper()
        sock = self.state / "munge" / "munge.socket"
        munged = shutil.which("munged", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
        self._spawn("munged", [munged, "--foreground", f"--socket={sock}",
                               f"--pid-file={self.state}/munge/munged.pid",
                               f"--log-file={self.state}/munge/munged.log",
                               f"--seed-file={self.state}/munge/munged.seed"], user="munge")
        self._wait("munged", sock.exists, 20)
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait("slurmctld", lambda: subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True,
                                                       text=True).stdout.count("UP") > 0, timeout)
        self._spawn("slurmd", ["slurmd", "-D", "-N", "localhost", "-f", str(self.conf)])
        self._wait("node localhost idle", self._node_idle, timeout)
        self.setup_seconds = time.monotonic() - started
        return self

    def _node_idle(self) -> bool:
        out = subprocess.run(["sinfo", "--noheader", "--format=%T", "--nodes=localhost"], env=self.env,
                             capture_output=True, text=True).stdout.strip()
        if "drain" in out:  # e.g. RealMemory above the real value
            raise RuntimeError(f"node localhost is {out}: {self.run('scontrol', 'show', 'node', 'localhost', check=False)}")
        return out == "idle"

    def stop(self) -> None:
        """Cancel this cluster's jobs, end the daemons this object started, remove the state."""
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(Exception):
                self.run("scancel", f"--partition={self.partition}", check=False, timeout=10)
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and any(
                    j["state"] in ("RUNNING", "COMPLETING", "PENDING") for j in self.jobs()
                ):
                    time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs.clear()
        shutil.rmtree(self.state, ignore_errors=True)


def start_cluster(partition: str = PARTITION) -> SlurmCluster:
    """Install (when needed) and start a single-node cluster; see the module docstring."""
    install_seconds = ensure_packages()
    if os.geteuid() != 0:
        raise SlurmUnavailable("starting munged (as user munge) and slurmd needs root")
    started = time.monotonic()
    cpus, memory_mb = _slurmd_hardware()
    cluster = SlurmCluster(
        state=Path(tempfile.mkdtemp(prefix="mmt-slurm-")),
        partition=partition,
        cpus=cpus,
        memory_mb=max(256, memory_mb - 512),  # a margin below what slurmd -C reports
        install_seconds=install_seconds,
    )
    atexit.register(cluster.stop)  # also when a test session ends without its teardown
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    cluster.setup_seconds = time.monotonic() - started
    return cluster


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    c = start_cluster()
    print(f"SLURM up in {c.setup_seconds:.1f} s (install {c.install_seconds:.1f} s): export SLURM_CONF={c.conf}")
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()
