"""The curves job (``execute/curves.py``): the learning curve of every system of a table of
kind curves, and which of its columns the table plots."""

from __future__ import annotations

from ..jobs import CurvesJob
from ..paths import path
from . import JobBuilder


class CurvesJobs(JobBuilder):
    def specs(self, wildcards) -> dict:
        """system -> {file, y, x} of a curves table: each system's training curve (seed: the
        table's first) and its columns for the table's task: val_bleu against epoch, or, for a
        system trained elsewhere (train_on), the validation curve of its task on the table's
        dataset and pair (val_bleu_<task> against passes_<task>)."""
        look = self.look
        paper, t = wildcards.paper, look.table_config(wildcards)
        specs = {}
        for system in t["systems"]:
            m_ds, m_pair = look.model_location(paper, system, t["dataset"], t["pair"])
            model = path("model", paper=paper, system=system, dataset=m_ds, pair=m_pair, seed=t["seeds"][0])
            y, x = "val_bleu", "epoch"
            if (m_ds, m_pair) != (t["dataset"], t["pair"]):
                tasks = [name for name, task in look.system_settings(paper, system).task_settings().items()
                         if task.dataset == t["dataset"] and task.pair == t["pair"] and task.val]
                if not tasks:
                    raise ValueError(
                        f"{paper}.{system} has no task on {t['dataset']} {t['pair']} with `val: true`: "
                        f"table {wildcards.table} has no curve to plot for it"
                    )
                y, x = f"val_bleu_{tasks[0]}", f"passes_{tasks[0]}"
            specs[system] = {"file": f"{model}.curve.tsv", "y": y, "x": x}
        return specs

    def build(self, w) -> CurvesJob:
        paper, table = w.paper, w.table
        t = self.look.table_config(w)
        specs = self.specs(w)
        stem = path("figure", paper=paper, table=table, figure="curves")
        return CurvesJob(
            paper=paper, table=table, curves=specs, pair=t["pair"], test_set=t["test_sets"][0],
            note=t.get("note", ""), inputs={"curves": sorted({spec["file"] for spec in specs.values()})},
            out=path("table", paper=paper, table=table), png=f"{stem}.png", pdf=f"{stem}.pdf",
        )
