"""Packed trainings: several small trainings side by side on one GPU allocation (config
``packing``, off by default). Torch-free.

Most trainings of these papers are launch-bound (0.04-5.7 % of an H100's tensor peak,
docs/performance.md): one training leaves the GPU idle most of the time, and several processes
sharing it each step about as fast as alone. A *pack* is one job (a rule ``train_packed_<name>``,
workflow/rules/train.smk) that starts one process per member, each running exactly what a
separate ``train_model`` job runs (:func:`mmt_repro.execute.packed.run_packed`), with its own
log at the path ``train_model`` would write it, and produces the members' outputs (best
checkpoint, curve, job record; ``.last.pt`` beside them) at the same paths: what reads a
checkpoint cannot tell a packed one from a separate one.

The pack's job (its inputs, its one param, its outputs and logs) is built by
:class:`mmt_repro.plan.build.packed.PackedJobs` from the members' ``train_model`` jobs; this
module decides the packs and their cost. A pack is its own rule, not a Snakemake group of ``train_model`` jobs: a group sums its jobs'
``gpu`` resources (three trainings would ask SLURM for three GPUs). Its outputs are named one by
one, so each pack is a rule of its own, made when the workflow is parsed from the config alone
(a SLURM job step re-parses the workflow and must find the same rule): :func:`packs` groups the
trainings of every enabled table (:func:`mmt_repro.plan_tools.walk.training_runs`), whatever
targets a run names, so a pack trains all its members even when a target needs one of them.

Which trainings qualify: those of the papers or systems ``packing.systems`` names (``<paper>``
or ``<paper>.<system>``), never a multi-task run (BertGen's 13-task run: hundreds of GPU-hours
in several attempts, and not launch-bound); ``packing.group``: ``seeds`` packs the seeds of one
system on one dataset and pair, ``paper`` any qualifying trainings of one paper. Trainings that
start from another's checkpoint (``init_from``, back-translation, the alignment-layer choice)
are packed only with trainings at the same depth of that chain, so no pack waits for itself.
Up to ``packing.per_gpu`` members a pack; a training left alone stays a ``train_model`` job.
"""

from __future__ import annotations

import math

from ..config import ConfigError
from ..plan.build.packed import Pack
from .cost import (MEM_BASE_MB, MEM_SAFETY, MIN_PER_JOB, RUNTIME_SAFETY, MiB, attempts_for, cost_gpu, cost_plan,
                   max_runtime_min, train_cost)
from .cost_table import _num, format_cost_plan
from .levers import BERTGEN_K
from .walk import ALL_TABLES, training_runs

__all__ = ["ASSUMED_PACK_STEP", "PACKING_MEASURED", "Pack", "format_packed_cost_plan", "format_packs", "pack_cost",
           "pack_mem_mb", "pack_of", "pack_report", "pack_runtime", "packed_cost_plan", "packing_settings", "packs"]

GROUPS = ("seeds", "paper")
#: Trainings that shared one GPU, measured: (gpu_type, paper, trainings per GPU) -> each
#: training's update time alone and packed (ms, min and max over the trainings) and the
#: aggregate throughput of the pack against one training alone; transcribed in
#: reference/benchmarks/transcribed/gpu_packing.tsv (docs/performance.md, "Packed trainings").
PACKING_MEASURED = {
    ("h100", "emb_pred", 3): {"alone_ms": (44.0, 47.0), "packed_ms": (33.0, 42.0), "throughput": 3.7},
}
#: Where no packing was measured: each member's update time packed / alone (1: as fast as alone,
#: the pack's throughput its number of members), flagged ``assumed``.
ASSUMED_PACK_STEP = 1.0


def packing_settings(plan) -> dict:
    """The config's ``packing`` block, checked against the plan: ``per_gpu`` (0 or 1: off),
    ``systems`` (papers or ``paper.system`` names), ``group`` (``seeds`` | ``paper``)."""
    block = dict(plan.config.get("packing") or {})
    per_gpu = int(block.get("per_gpu") or 0)
    systems = list(block.get("systems") or [])
    group = block.get("group") or "seeds"
    if group not in GROUPS:
        raise ConfigError(f"packing.group: {group!r} is not one of {', '.join(GROUPS)}")
    for name in systems:
        paper, _, system = str(name).partition(".")
        if paper not in plan.settings:
            raise ConfigError(f"packing.systems: no paper {paper!r} in the config; papers: {', '.join(plan.settings)}")
        if system:
            known = plan.settings[paper].systems
            if system not in known:
                raise ConfigError(f"packing.systems: paper {paper} has no system {system!r}; "
                                  f"its systems: {', '.join(known)}")
            if known[system].tasks:
                raise ConfigError(f"packing.systems: {name} is a multi-task run ({len(known[system].tasks)} extra "
                                  "tasks): it is not small enough to share a GPU; remove it from packing.systems")
    return {"per_gpu": per_gpu, "systems": systems, "group": group}


def _qualifies(plan, systems: list, paper: str, system: str) -> bool:
    if f"{paper}.{system}" not in systems and paper not in systems:
        return False
    return not plan.settings[paper].systems[system].tasks  # a multi-task run never packs


def _levels(deps: dict) -> dict:
    """Key -> its depth in the chain of trainings that start from another's checkpoint (0: from
    none)."""
    done: dict = {}

    def level(key, seen=()):
        if key not in done:
            ups = [d for d in deps.get(key, ()) if d in deps and d not in seen]
            done[key] = 1 + max(level(d, (*seen, key)) for d in ups) if ups else 0
        return done[key]

    for key in deps:
        level(key)
    return done


def packs(plan) -> list[Pack]:
    """The packs of the config (empty when packing is off), made once per plan: the trainings
    every enabled table needs, those that qualify grouped (one system's seeds, or one paper's
    trainings) by depth, and cut in order into packs of ``per_gpu``; a group's last training
    left alone stays a ``train_model`` job."""
    if "_packs" in plan.__dict__:
        return plan.__dict__["_packs"]
    settings = packing_settings(plan)
    out: list[Pack] = []
    if settings["per_gpu"] >= 2 and settings["systems"]:
        runs, deps = training_runs(plan, [ALL_TABLES, *plan.targets.default_targets()])
        keys = [(w.paper, w.system, w.dataset, w.pair, int(w.seed)) for w in runs]
        levels = _levels({k: deps.get(k, set()) for k in keys})
        groups: dict = {}
        for key in sorted(keys):
            if not _qualifies(plan, settings["systems"], key[0], key[1]):
                continue
            head = key[:4] if settings["group"] == "seeds" else key[:1]
            groups.setdefault((head, levels[key]), []).append(key)
        k = settings["per_gpu"]
        counts: dict = {}
        for (head, level), members in sorted(groups.items()):
            for start in range(0, len(members), k):
                chunk = tuple(members[start:start + k])
                if len(chunk) < 2:
                    continue
                if settings["group"] == "seeds":
                    name = f"{'.'.join(head)}.seed{'-'.join(str(m[4]) for m in chunk)}"
                else:
                    counts[head] = counts.get(head, 0) + 1
                    name = f"{head[0]}.pack{counts[head]}"
                out.append(Pack(name=name, members=chunk, level=level))
    plan.__dict__["_packs"] = out
    return out


def pack_of(plan, key: tuple) -> Pack | None:
    """The pack a training (paper, system, dataset, pair, seed) is a member of, or None."""
    key = (*key[:4], int(key[4]))
    return next((p for p in packs(plan) if key in p.members), None)


# ----------------------------------------------------------------------------- the packs' cost
def pack_factor(gpu: str, rows: list[dict]) -> tuple[float, str]:
    """(throughput of the pack against one member alone, ``measured`` or ``assumed``):
    :data:`PACKING_MEASURED` for this GPU type, paper and number of members, else every member
    at :data:`ASSUMED_PACK_STEP`."""
    papers = {r["paper"] for r in rows}
    measured = PACKING_MEASURED.get((gpu, papers.pop(), len(rows))) if len(papers) == 1 else None
    if measured:
        return float(measured["throughput"]), "measured"
    return len(rows) / ASSUMED_PACK_STEP, "assumed"


def pack_cost(plan, pack: Pack, gpu: str | None = None, rows: dict | None = None) -> dict:
    """GPU-hours, memory and SLURM resources of one pack, from its members'
    :func:`~mmt_repro.plan_tools.cost.train_cost` (``rows``: key -> row, computed where absent):
    the pack holds its GPU while its longest member runs, each member at members / throughput
    of its update time alone; host memory: each member's model and corpus and one process base
    each, the feature stores once (members that map the same store share its pages)."""
    gpu = gpu or cost_gpu(plan)
    rows = rows or {}
    members = [rows.get((w.paper, w.system, w.dataset, w.pair, int(w.seed)))
               or train_cost(plan, plan.train_jobs.job(w), gpu) for w in pack.wildcards()]
    factor, source = pack_factor(gpu, members)
    slow = len(members) / factor  # a member's update time packed / alone
    alone = [r["hours"] for r in members]
    hours = None if None in alone else max(alone) * slow
    stores = {f: b for r in members for f, b in r["stores"].items()}
    mb = sum(stores.values()) / MiB + sum(r["model_mb"] + r["corpus_mb"] for r in members)
    est_min = None if hours is None else hours * 60 * RUNTIME_SAFETY + MIN_PER_JOB
    cap = max_runtime_min(plan)
    peaks = [r["peak_gib"] for r in members]
    return {
        "pack": pack.name, "rule": pack.rule, "members": _members_text(members),
        "keys": list(pack.members), "papers": sorted({r["paper"] for r in members}),
        "throughput": factor, "throughput_source": source, "member_step": slow,
        "alone_hours": None if None in alone else sum(alone), "hours": hours,
        "gpu_hours": hours if gpu != "cpu" else None, "peak_gib": None if None in peaks else sum(peaks),
        "mem_mb": int(math.ceil((mb * MEM_SAFETY + MEM_BASE_MB * len(members)) / 1000.0) * 1000),
        "estimate_min": est_min, "runtime": cap if est_min is None else int(min(math.ceil(est_min), cap)),
        "attempts": attempts_for(est_min, cap),
    }


def _members_text(rows: list[dict]) -> str:
    """``seeds 1, 2, 3`` for one system's seeds, else each member's system, data and seed."""
    if len({(r["paper"], r["system"], r["dataset"], r["pair"]) for r in rows}) == 1:
        return "seeds " + ", ".join(str(r["seed"]) for r in rows)
    return "; ".join(f"{r['system']} {r['dataset']}.{r['pair']} seed{r['seed']}" for r in rows)


def packed_cost_plan(plan, targets, gpu: str | None = None, bertgen_k: int = BERTGEN_K) -> dict:
    """The cost plan (:func:`~mmt_repro.plan_tools.cost.cost_plan`, BertGen's levers at k =
    ``bertgen_k``) of ``targets`` and, with packing on, what :func:`pack_report` adds; with
    packing off the cost plan as it is."""
    report = cost_plan(plan, targets, gpu, bertgen_k)
    by_key = {(r["paper"], r["system"], r["dataset"], r["pair"], int(r["seed"])): r for r in report["rows"]}
    return {**report, **pack_report(plan, by_key, report["papers"], gpu)}


def format_packed_cost_plan(report: dict, markdown: bool = False) -> str:
    """:func:`~mmt_repro.plan_tools.cost_table.format_cost_plan`, then the packs (:func:`format_packs`)
    when there are some (``python -m mmt_repro plan``)."""
    text = format_cost_plan(report, markdown)
    return text + ("\n\n" + format_packs(report, markdown) if report.get("packs") else "")


def pack_report(plan, by_key: dict, papers: dict, gpu: str | None = None) -> dict:
    """What the cost plan gains with packing on (nothing when it is off): ``packs`` (:func:`pack_cost` of every pack holding one of the trainings ``by_key``,
    key -> its cost row), ``packed_jobs`` and ``packed_total_hours`` (the trainings left alone
    plus the packs), and each paper's ``packed_hours`` (in ``papers``)."""
    chosen = [p for p in packs(plan) if any(key in by_key for key in p.members)]
    if not chosen:
        return {}
    costs = [pack_cost(plan, p, gpu, by_key) for p in chosen]
    packed = {key for p in chosen for key in p.members}
    alone = [r for key, r in by_key.items() if key not in packed]
    for name, p in papers.items():
        p["packed_hours"] = (sum(r["hours"] or 0.0 for r in alone if r["paper"] == name)
                             + sum(q["hours"] or 0.0 for q in costs if q["papers"] == [name]))
    return {"packs": costs, "packed_jobs": len(alone) + len(chosen),
            "packed_total_hours": sum(r["hours"] or 0.0 for r in alone) + sum(q["hours"] or 0.0 for q in costs)}


def pack_mem_mb(plan, pack: Pack) -> int:
    """A packed rule's mem_mb (:func:`pack_cost`)."""
    return _pack_resources(plan, pack)["mem_mb"]


def pack_runtime(plan, pack: Pack) -> int:
    """A packed rule's runtime in minutes (:func:`pack_cost`)."""
    return _pack_resources(plan, pack)["runtime"]


def _pack_resources(plan, pack: Pack) -> dict:
    cache = plan.__dict__.setdefault("_cost_packs", {})
    if pack.name not in cache:
        cache[pack.name] = pack_cost(plan, pack)
    return cache[pack.name]


def format_packs(report: dict, markdown: bool = False) -> str:
    """The packs of a cost plan as a table: members, throughput (measured or assumed), GPU-hours
    against the members' alone, peak GPU memory, resources; then the GPU-hours with the packs."""
    head = ["pack", "members", "throughput", "member step", "GPU-h", "alone GPU-h", "peak GiB", "mem_mb",
            "runtime min", "tries"]
    lines = [[p["pack"], p["members"], f"x{p['throughput']:.2f} ({p['throughput_source']})",
              f"x{p['member_step']:.2f}", _num(p["gpu_hours"], "{:,.1f}", "-"), _num(p["alone_hours"], "{:,.1f}"),
              _num(p["peak_gib"], "{:.2f}"), str(p["mem_mb"]), str(p["runtime"]), str(p["attempts"])]
             for p in report["packs"]]
    for paper, p in report["papers"].items():
        lines.append([f"**{paper}**" if markdown else f"= {paper}", "", "", "",
                      _num(p.get("packed_hours"), "{:,.1f}"), _num(p["hours"], "{:,.1f}"), "", "", "", ""])
    lines.append(["**total**" if markdown else "= total", f"{report['packed_jobs']} GPU jobs", "", "",
                  _num(report["packed_total_hours"], "{:,.1f}"), _num(report["total_hours"], "{:,.1f}"),
                  "", "", "", ""])
    measured = "; ".join(
        f"{paper} x{k} on {gpu}: {m['alone_ms'][0]:g}-{m['alone_ms'][1]:g} ms an update alone, "
        f"{m['packed_ms'][0]:g}-{m['packed_ms'][1]:g} ms each packed, x{m['throughput']:g} in all"
        for (gpu, paper, k), m in PACKING_MEASURED.items())
    legend = ("packed trainings (config packing): one job per pack on one GPU (rule train_packed_<pack>, every "
              "character other than a letter, digit or _ as _), each member its own process; throughput = the "
              f"pack's updates per second against one member alone: measured = {measured} "
              "(reference/benchmarks/transcribed/gpu_packing.tsv); assumed = every member as fast as alone "
              "(x members); member step = a member's update time packed / alone; GPU-h = the longest member's "
              "hours x member step (the pack holds its GPU until its last member ends); alone GPU-h = the members "
              "as separate jobs; total: trainings left alone plus packs")
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(out + ["| " + " | ".join(cells) + " |" for cells in lines]) + "\n\n" + legend
    widths = [max(len(c[i]) for c in [head, *lines]) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [head, *lines]]
    return "\n".join(out) + "\n" + legend
