"""The rehearsal report: every job of a run on stand-in inputs (``config/rehearsal.yaml``, ``make
rehearsal``), its measured wall time and peak memory (the Snakemake ``benchmark:`` files under
``results/benchmarks/<rule>/...``: ``s``, ``max_rss``) against the ``mem_mb`` and ``runtime`` that
the SLURM profile requests for the same job at full size: :func:`.cost.train_mem_mb` /
:func:`.cost.train_runtime` for ``train_model``, :func:`.cost.store_mem_mb` /
:func:`.cost.store_runtime` for the feature-store rules, a rule's own literal resources, else the
profile's ``default-resources``. A job whose measured peak already exceeds its full-size request
would fail on the cluster whatever its input size."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import yaml

PROFILE = "workflow/profiles/slurm/config.yaml"

_RULE = re.compile(r"^(?:local)?rule (\w+):", re.M)
_BENCH = re.compile(r"benchmark:\s*\n\s*f?\"(results/benchmarks/[^\"]+)\"")


@dataclass
class Job:
    rule: str
    benchmark: str  # path of the benchmark file, relative to results/benchmarks
    seconds: float
    max_rss_mb: float | None  # None: the benchmark has no figure ("-")
    mem_mb: int | None  # the full-size request (None: unknown)
    runtime_min: int | None
    request_from: str  # "train cost" | "store cost" | "rule" | "profile default" | why unknown
    ended: float | None = None  # when the job ended (its benchmark file's mtime, epoch seconds)

    @property
    def over_memory(self) -> bool:
        return self.max_rss_mb is not None and self.mem_mb is not None and self.max_rss_mb > self.mem_mb

    @property
    def over_runtime(self) -> bool:
        return self.runtime_min is not None and self.seconds > 60 * self.runtime_min


def rule_resources(repo: str | Path) -> dict[str, dict]:
    """rule -> {"benchmark": its pattern, "mem_mb"/"runtime": an int, "train", "store" or
    "store_fit"} from ``workflow/rules/*.smk`` (only the keys a rule declares)."""
    out = {}
    for smk in sorted((Path(repo) / "workflow" / "rules").glob("*.smk")):
        text = smk.read_text()
        starts = [(m.start(), m.group(1)) for m in _RULE.finditer(text)]
        for i, (at, name) in enumerate(starts):
            block = text[at:starts[i + 1][0] if i + 1 < len(starts) else len(text)]
            info = {}
            bench = _BENCH.search(block)
            if bench:
                info["benchmark"] = bench.group(1)
            for key in ("mem_mb", "runtime"):
                m = re.search(rf"\b{key}=(.+?),?\n", block)
                if not m:
                    continue
                value = m.group(1).strip()
                if value.isdigit():
                    info[key] = int(value)
                elif "train_" in value:
                    info[key] = "train"
                elif "store_" in value:
                    info[key] = "store_fit" if "fit=True" in value else "store"
            out[name] = info
    return out


def _wildcards(pattern: str, path: str) -> SimpleNamespace | None:
    """The wildcards of ``path`` (relative to the run folder) under a benchmark ``pattern``."""
    parts = re.split(r"\{(\w+)\}", pattern)
    regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+?)" for i, p in enumerate(parts))
    m = re.fullmatch(regex, path)
    return SimpleNamespace(**m.groupdict()) if m else None


def profile_defaults(repo: str | Path) -> tuple[dict, dict]:
    """(default-resources, config) of the SLURM profile."""
    data = yaml.safe_load((Path(repo) / PROFILE).read_text()) or {}
    return data.get("default-resources") or {}, data.get("config") or {}


def full_plan(repo: str | Path, configfiles=()):
    """The plan of the full configuration as the SLURM profile runs it (its ``config:`` block, e.g.
    ``gpu_type``, merged on top), with ``configfiles`` (a site overlay) in between."""
    from ..config import deep_update, load_yaml
    from ..plan import Plan

    config = load_yaml(Path(repo) / "config" / "config.yaml")
    for f in configfiles:
        config = deep_update(config, load_yaml(Path(f)))
    return Plan(deep_update(config, profile_defaults(repo)[1]), Path(repo))


def _number(value: str) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def read_benchmark(path: str | Path) -> dict:
    """The first row of a Snakemake benchmark file (``s``, ``max_rss`` ... as numbers or None)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return {k: _number(v) for k, v in rows[0].items()} if rows else {}


def rehearsal_jobs(run_dir: str | Path, repo: str | Path, plan=None) -> list[Job]:
    """Every benchmarked job of the run in ``run_dir`` with its full-size request; ``plan``: the
    full configuration's (:func:`full_plan`; None: the requests that need it are unknown)."""
    from .cost import store_mem_mb, store_runtime, train_mem_mb, train_runtime

    run_dir, rules = Path(run_dir), rule_resources(repo)
    defaults, _ = profile_defaults(repo)
    jobs = []
    root = run_dir / "results" / "benchmarks"
    for file in sorted(root.rglob("*.tsv")):
        rel = file.relative_to(run_dir).as_posix()
        rule = file.relative_to(root).parts[0]
        info = rules.get(rule, {})
        bench = read_benchmark(file)
        mem, runtime, source = defaults.get("mem_mb"), defaults.get("runtime"), "profile default"
        kinds = {info.get("mem_mb"), info.get("runtime")}
        if isinstance(info.get("mem_mb"), int):
            mem, source = info["mem_mb"], "rule"
        if isinstance(info.get("runtime"), int):
            runtime, source = info["runtime"], "rule"
        if kinds & {"train", "store", "store_fit"}:
            w = _wildcards(info.get("benchmark", ""), rel)
            if w is None or plan is None:
                mem = runtime = None
                source = "unknown: no full-size plan" if plan is None else "unknown: path not the rule's pattern"
            else:
                try:
                    if "train" in kinds:
                        mem, runtime, source = train_mem_mb(plan, w), train_runtime(plan, w), "train cost"
                    else:
                        fit = "store_fit" in kinds
                        mem, runtime = store_mem_mb(plan, w, fit=fit), store_runtime(plan, w, fit=fit)
                        source = "store cost"
                except Exception as err:  # a job of the rehearsal the full plan does not have
                    mem = runtime = None
                    source = f"unknown: {type(err).__name__}: {err}"[:160]
        jobs.append(Job(rule, rel.removeprefix("results/benchmarks/"), bench.get("s") or 0.0,
                        bench.get("max_rss"), mem, runtime, source, file.stat().st_mtime))
    return jobs


def span_seconds(jobs: list[Job]) -> float | None:
    """Wall time from the first job's start (its end less its wall time) to the last job's end."""
    timed = [j for j in jobs if j.ended is not None]
    if not timed:
        return None
    return max(j.ended for j in timed) - min(j.ended - j.seconds for j in timed)


def busy_seconds(jobs: list[Job]) -> float | None:
    """Seconds in which at least one job ran (the union of the jobs' intervals): the run's wall
    time without the gaps between Snakemake invocations (a run resumed after a fix)."""
    spans = sorted((j.ended - j.seconds, j.ended) for j in jobs if j.ended is not None)
    if not spans:
        return None
    total, (lo, hi) = 0.0, spans[0]
    for a, b in spans[1:]:
        if a > hi:
            total, lo, hi = total + hi - lo, a, b
        else:
            hi = max(hi, b)
    return total + hi - lo


_STEPS = re.compile(r"^(\d+) of (\d+) steps \(\d+%\) done$", re.M)


def snakemake_steps(run_dir: str | Path) -> list[dict]:
    """Each Snakemake invocation of the run, oldest first: its log's name and the last ``N of M
    steps`` line (``done``, ``planned``); an invocation that ran no job is left out."""
    out = []
    for log in sorted((Path(run_dir) / ".snakemake" / "log").glob("*.snakemake.log")):
        found = _STEPS.findall(log.read_text(encoding="utf-8", errors="replace"))
        if found:
            out.append({"log": log.name, "done": int(found[-1][0]), "planned": int(found[-1][1])})
    return out


def by_rule(jobs: list[Job]) -> list[tuple[str, int, float, float]]:
    """(rule, jobs, job-seconds, slowest job's seconds), most job-seconds first."""
    out: dict[str, list[float]] = {}
    for j in jobs:
        out.setdefault(j.rule, []).append(j.seconds)
    return sorted(((r, len(v), sum(v), max(v)) for r, v in out.items()), key=lambda t: -t[2])


def run_meta(run_dir: str | Path, repo: str | Path) -> dict:
    """What the evidence says of the run besides its jobs: the code's commit, the machine (CPU
    model, cores), torch's version and each Snakemake invocation's steps done of planned."""
    import os
    import subprocess
    from importlib import metadata

    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    cpu = None
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), None)
    except OSError:
        pass
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = None
    return {"commit": commit, "cpu": cpu, "cores": os.cpu_count(), "torch": torch,
            "invocations": snakemake_steps(run_dir)}


#: Columns of the evidence file ``report.tsv`` (:func:`write_evidence`).
COLUMNS = ("rule", "job", "wall_s", "peak_mb", "mem_mb", "runtime_min", "request_from", "ended")


def write_evidence(jobs: list[Job], out: str | Path, meta: dict) -> Path:
    """``out/report.tsv`` (every job, :data:`COLUMNS`) and ``out/summary.json`` (``meta`` plus the
    totals): the committed evidence a docs block (``rehearsal FOLDER``) is generated from."""
    import datetime as dt
    import json

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "report.tsv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(COLUMNS)
        for j in sorted(jobs, key=lambda j: j.benchmark):
            ended = "" if j.ended is None else dt.datetime.fromtimestamp(j.ended, dt.timezone.utc).isoformat(
                timespec="milliseconds")
            w.writerow([j.rule, j.benchmark, f"{j.seconds:.2f}", "" if j.max_rss_mb is None else f"{j.max_rss_mb:.1f}",
                        "" if j.mem_mb is None else j.mem_mb, "" if j.runtime_min is None else j.runtime_min,
                        j.request_from, ended])
    span, busy = span_seconds(jobs), busy_seconds(jobs)
    summary = {**meta, "jobs": len(jobs), "job_seconds": round(sum(j.seconds for j in jobs), 1),
               "span_s": None if span is None else round(span, 1),
               "busy_s": None if busy is None else round(busy, 1),
               "peak_mb": max((j.max_rss_mb or 0 for j in jobs), default=0),
               "over_request": [j.benchmark for j in jobs if j.over_memory or j.over_runtime],
               "unknown_request": sum(j.mem_mb is None for j in jobs)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


def read_evidence(folder: str | Path) -> tuple[dict, list[Job]]:
    """(summary, jobs) of a folder :func:`write_evidence` wrote."""
    import datetime as dt
    import json

    folder = Path(folder)
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    jobs = []
    with open(folder / "report.tsv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            num = {k: _number(row[k]) for k in ("peak_mb", "mem_mb", "runtime_min")}
            jobs.append(Job(row["rule"], row["job"], float(row["wall_s"]), num["peak_mb"],
                            None if num["mem_mb"] is None else int(num["mem_mb"]),
                            None if num["runtime_min"] is None else int(num["runtime_min"]), row["request_from"],
                            dt.datetime.fromisoformat(row["ended"]).timestamp() if row["ended"] else None))
    return summary, jobs


def format_report(jobs: list[Job], slowest: int = 15) -> str:
    """The report: totals, every job over its full-size request, the slowest jobs, then every job."""
    def row(j: Job) -> str:
        rss = "-" if j.max_rss_mb is None else f"{j.max_rss_mb:.0f}"
        mem = "?" if j.mem_mb is None else str(j.mem_mb)
        rt = "?" if j.runtime_min is None else str(j.runtime_min)
        return f"{j.seconds:9.1f}  {rss:>8}  {mem:>8}  {rt:>7}  {j.benchmark}  ({j.request_from})"

    head = f"{'wall s':>9}  {'peak MB':>8}  {'mem_mb':>8}  {'min':>7}  job (benchmark)  (request from)"
    over = [j for j in jobs if j.over_memory or j.over_runtime]
    unknown = [j for j in jobs if j.mem_mb is None]
    span = span_seconds(jobs)
    lines = [f"rehearsal: {len(jobs)} jobs, {sum(j.seconds for j in jobs):.0f} job-seconds, "
             f"peak {max((j.max_rss_mb or 0 for j in jobs), default=0):.0f} MB; "
             f"{len(over)} over their full-size request, {len(unknown)} without a known request"]
    if span is not None:
        busy = busy_seconds(jobs)
        lines.append(f"wall time: {span:.0f} s ({span / 60:.1f} min) from the first job's start to the last job's end; "
                     f"{busy:.0f} s ({busy / 60:.1f} min) with a job running")
    lines += ["", "job-seconds by rule:"] + [f"{n:6d} jobs {s:9.0f} s (slowest {m:.0f} s)  {r}"
                                              for r, n, s, m in by_rule(jobs)] + [""]
    lines += [f"over the request at full size ({len(over)}):", head] + [row(j) for j in over] + [""]
    by_time = sorted(jobs, key=lambda j: -j.seconds)[:slowest]
    lines += [f"slowest {len(by_time)}:", head] + [row(j) for j in by_time] + [""]
    lines += ["every job:", head] + [row(j) for j in sorted(jobs, key=lambda j: j.benchmark)]
    return "\n".join(lines)


def img_dim_mismatches(plan, targets) -> list[tuple[str, str, str, str, int, int]]:
    """(paper, system, dataset, feature set, model img_dim, the feature set's dimension) of each
    training of ``targets`` whose model's ``img_dim`` is not the dimension of the features it
    reads (:func:`mmt_repro.plan.features.feature_shape`): such a training would stop at its
    first batch. The training job takes ``img_dim`` from its features, so the list is empty; the
    rehearsal first found DeepFuse's grounded check training its 1024-d VATEX model on 2048-d
    I3D-R50 features, when the job copied the system's configured width."""
    from ..plan.features import feature_shape
    from .walk import training_runs

    runs, _ = training_runs(plan, targets)
    out = []
    for w in runs:
        job = plan.train_jobs.job(w).to_dict()
        dim = job["model_config"].get("img_dim")
        if not dim:
            continue
        for path in job["inputs"].values():
            m = re.match(r"results/features/([^/]+)/([^/]+)/", str(path))
            if not m:
                continue
            dataset, fs = m.group(1), m.group(2).split(".")[0]
            have = feature_shape(fs, plan.feature_set_config(dataset, fs))[1]
            row = (w.paper, w.system, dataset, fs, int(dim), int(have))
            if have != dim and row not in out:
                out.append(row)
    return out
