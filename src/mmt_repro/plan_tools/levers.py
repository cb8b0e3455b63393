"""BertGen's step levers in the cost plan (:mod:`mmt_repro.plan_tools.cost`): the training
hours of a multi-task BertGen run under each opt-in lever beside the exact run -- ``batch_scale``
(k examples per task a step), the CUDA-graph factor measured at one fixed shape
(:data:`GRAPH_EVIDENCE`) and the bucketed step (``shape_buckets``, not measured) -- and the
buckets the plan suggests for a run. Torch-free (docs/bertgen.md, "Speed levers")."""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

#: k of BertGen's ``batch_scale`` option that the plan prices beside a run configured at k = 1
BERTGEN_K = 8
#: The committed record of the CUDA-graph benchmark (one fixed batch shape, mode reduce-overhead).
GRAPH_EVIDENCE = "reference/benchmarks/transcribed/gpu_compile.tsv"


@lru_cache(maxsize=4)
def graph_factor(repo: str) -> tuple[float, str] | None:
    """(speed-up, what it was measured on) of BertGen's 13-task step replayed as a CUDA graph
    at one fixed batch shape (:data:`GRAPH_EVIDENCE`), None without that record."""
    file = Path(repo) / GRAPH_EVIDENCE
    if not file.exists():
        return None
    lines = file.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    for line in lines[1:]:
        r = dict(zip(head, line.split("\t")))
        if r.get("measure", "").startswith("one fixed batch shape") and r.get("model", "").startswith("bertgen"):
            eager, graph = (r[f"{k} ms (min / median / max)"].split(" / ")[1] for k in ("eager", "compiled"))
            return float(r["speed-up"]), f"{eager} -> {graph} ms median, one fixed shape, {r['GPU']}"
    return None


def suggested_buckets(model_config: dict, train_config: dict, image_tasks: bool, ratio: float = 1.5) -> list[int]:
    """Row widths for BertGen's ``shape_buckets`` from what the plan knows of a run: a row is
    ``[lang] [CLS] x [SEP] y_<t [MASK] [SEP]`` + regions + ``[END]``. The narrowest bucket holds
    an image task's capped row (``image_seq_len`` + 1: every step of a run with an image task
    has such rows, most of them at the cap), the widest the longest MT row (both sides at
    ``max_len``: ``2 max_len + 6``; without the cap, a caption beside ``max_regions`` slots if
    wider); in between, each ``ratio`` times the last (a padded step costs at most ``ratio``
    times its width). Multiples of 8 (the attention kernels' tiles)."""
    def up8(x: float) -> int:
        return int(math.ceil(x / 8) * 8)

    max_len = int(train_config.get("max_len", 80))
    cap = int(model_config.get("image_seq_len") or 0)
    widest = 2 * max_len + 6
    if image_tasks and not cap:
        widest = max(widest, max_len + 5 + int(model_config.get("max_regions", 101)))
    narrowest = cap + 1 if image_tasks and cap else 16
    out = [up8(narrowest)]
    while out[-1] < widest:
        out.append(min(up8(out[-1] * ratio), up8(widest)))
    return out


def bertgen_levers(row: dict, k: int = BERTGEN_K, graphs: tuple[float, str] | None = None,
                   buckets: list[int] | None = None) -> list[dict]:
    """The training hours of a BertGen run (a :func:`train_cost` row) under each lever, beside
    the exact run: ``exact`` (one example per task a step, the paper's), ``k`` (``batch_scale``
    k: k examples per task a step, ceil(unrolled / k) updates an epoch; the step at k examples is
    not measured, so its time lies between the 1-example step's, a launch-bound step, and k times
    it), ``graphs`` (the exact run at the step time the CUDA-graph benchmark measured at one fixed
    shape) and ``buckets`` (the bucketed, graph-replayed step: not measured, no figure). Train
    hours only (validation: the row's ``val_h``). Empty when the row lacks an unrolled epoch or
    a step time."""
    if row.get("unrolled") is None or row.get("step_ms") is None:
        return []
    base_bs = max(1, row["batch_size"] // max(1, row["batch_scale"]))
    ms, epochs, acc = row["step_ms"], row["epochs"], row["accumulate"]

    def updates(scale: int) -> int:
        return epochs * math.ceil(math.ceil(row["unrolled"] / (base_bs * scale)) / acc)

    exact = updates(1)
    k = row["batch_scale"] if row["batch_scale"] > 1 else int(k)
    out = [{"lever": "exact", "what": f"k=1: {base_bs} example{'s' if base_bs > 1 else ''} per task a step",
            "updates": exact, "step_ms": (ms, ms), "step_source": f"{row['step_source']}, {row['precision']}",
            "train_h": (exact * ms / 3.6e6,) * 2}]
    uk = updates(k)
    out.append({"lever": f"k={k}", "what": f"batch_scale {k}: {base_bs * k} examples per task, lr x {k}, warm-up / {k}",
                "updates": uk, "step_ms": (ms, ms * k),
                "step_source": f"not measured at k: the configured step (launch-bound) to {k} x it",
                "train_h": (uk * ms / 3.6e6, uk * ms * k / 3.6e6)})
    if graphs:
        factor, where = graphs
        out.append({"lever": "graphs", "what": "exact, step replayed as a CUDA graph", "updates": exact,
                    "step_ms": (ms / factor,) * 2, "step_source": f"/ {factor:.2f}, measured: {where}",
                    "train_h": (exact * ms / factor / 3.6e6,) * 2})
    out.append({"lever": "buckets", "what": f"exact, shape_buckets {buckets or '[...]'} + CUDA graphs", "updates": exact,
                "step_ms": None, "step_source": "not measured: no GPU has run the bucketed step", "train_h": None})
    return out


def attach_levers(plan, rows: list[dict], k: int = BERTGEN_K) -> None:
    """Give each multi-task BertGen row of a cost plan its ``levers`` (:func:`bertgen_levers`,
    the option priced at ``k``, the buckets :func:`suggested_buckets` gives its job)."""
    for r in rows:
        if r["model"].startswith("bertgen") and r["multi_task"]:
            keys = ("paper", "system", "dataset", "pair", "seed")
            job = plan.train_jobs.job(SimpleNamespace(**{x: r[x] for x in keys}))
            images = bool(job.inputs.get("train_npy")) or any(t.get("features") for t in job.tasks)
            r["levers"] = bertgen_levers(r, k, graph_factor(str(plan.repo)),
                                         suggested_buckets(job.model_config, job.train_config, images))


def format_levers(report: dict, markdown: bool = False) -> str:
    """The BertGen levers of the report's multi-task BertGen runs (:func:`bertgen_levers`), a
    table to print after the plan's (with its blank line; empty without such a run): the exact
    cost and the optioned ones side by side."""
    head = ["run", "lever", "what", "updates", "step ms", "train h"]
    lines = []
    for r in report["rows"]:
        levers = r.get("levers") or []
        for i, lv in enumerate(levers):
            run = f"{r['paper']} {r['system']} {r['dataset']}.{r['pair']} seed {r['seed']}" if i == 0 else ""
            ms = "-" if lv["step_ms"] is None else _span(lv["step_ms"], "{:,.1f}")
            hours = "?" if lv["train_h"] is None else _span(lv["train_h"], "{:,.1f}")
            lines.append([run, lv["lever"], lv["what"], f"{lv['updates']:,}", f"{ms} ({lv['step_source']})", hours])
    if not lines:
        return ""
    title = ("BertGen step levers (train hours; validation as in the plan): k = the batch_scale option, "
             "graphs = the CUDA-graph factor measured at one fixed shape, buckets = not measured")
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n\n" + title + "\n\n" + "\n".join(out + ["| " + " | ".join(c) + " |" for c in lines])
    widths = [max(len(c[i]) for c in [head, *lines]) for i in range(len(head))]
    return "\n\n" + title + "\n" + "\n".join("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
                                              for cells in [head, *lines])


def _span(pair: tuple[float, float], fmt: str) -> str:
    lo, hi = pair
    return fmt.format(lo) if math.isclose(lo, hi) else f"{fmt.format(lo)} - {fmt.format(hi)}"
