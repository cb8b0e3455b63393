"""The cost plan (:func:`~mmt_repro.plan_tools.cost.cost_plan`) as the table ``python -m
mmt_repro plan`` prints: one line per training job, then per paper and the total, the legend
that says where each figure comes from, and BertGen's levers. Torch-free."""

from __future__ import annotations

from .cost import ASSUMED
from .levers import format_levers


def _num(x, fmt="{:,.1f}", none="?"):
    return none if x is None else fmt.format(x)


def format_cost_plan(report: dict, markdown: bool = False) -> str:
    """The cost plan as a text (or Markdown) table, one line per job, then per paper and total."""
    head = ["paper", "system", "data", "seed", "examples", "updates", "step ms", "train h", "val h", "GPU-h",
            "peak GiB", "mem_mb", "runtime min", "tries"]
    lines = []
    for r in report["rows"]:
        lines.append([
            r["paper"], r["system"], f"{r['dataset']}.{r['pair']}", str(r["seed"]),
            f"{_num(r['examples'], '{:,}')} ({r['size_source']})",
            f"{_num(r['updates'], '{:,}')} ({r['updates_source']})",
            f"{_num(r['step_ms'])} ({r['step_source']}, {r['precision']})",
            _num(r["train_h"], "{:,.2f}"), f"{_num(r['val_h'], '{:,.2f}')} ({r['val_source']})",
            _num(r["gpu_hours"], "{:,.1f}", "-"),
            _num(r["peak_gib"], "{:.2f}"), str(r["mem_mb"]), str(r["runtime"]), str(r["attempts"]),
        ])
    for paper, p in report["papers"].items():
        lines.append([f"**{paper}**" if markdown else f"= {paper}", f"{p['jobs']} jobs", "", "", "", "", "", "", "",
                      _num(p["hours"], "{:,.1f}") + (f" (+{p['unknown']} ?)" if p["unknown"] else ""),
                      _num(p["peak_gib"], "{:.2f}"), "", "", ""])
    lines.append(["**total**" if markdown else "= total", f"{report['jobs']} jobs", "", "", "", "", "", "", "",
                  _num(report["total_hours"], "{:,.1f}"), "", "", "", ""])
    legend = (f"step times: {report['calibration']} ({report['device']}); measured = this system at paper size, "
              "~entry = borrowed from that entry (the same model, else the same model module, else the same "
              "architecture family, from any paper); examples: stats / config / manifest = counted, published = "
              "the corpus's published size (approximate); updates = max_epochs x updates per epoch (an upper "
              "bound: early stopping ends most runs sooner), BertGen's epoch = its reference task's unrolled "
              "examples (sentences + target WordPieces: wordpieces = counted, est = assumed); val h: every "
              "validation set decoded once per epoch at its references' mean length (wordpieces / stats = "
              f"counted, est = assumed {ASSUMED['target_tokens']:.0f} tokens), a batch running to "
              f"{ASSUMED['batch_longest']} x that length, at the calibration's time per decoding step; "
              f"critical path (unlimited GPUs): {report['critical_path_h']:,.1f} h")
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(cells) + " |" for cells in lines]
        return "\n".join(out) + "\n\n" + legend + format_levers(report, markdown=True)
    widths = [max(len(c[i]) for c in [head, *lines]) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [head, *lines]]
    return "\n".join(out) + "\n" + legend + format_levers(report)
