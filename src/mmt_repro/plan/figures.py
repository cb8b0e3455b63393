"""The inputs of a table's attention figure (rule plot_attention): which run's attention dump,
which sentence, and what the figure draws (the table's ``figure`` block)."""

from __future__ import annotations

from .lookup import Lookup
from .paths import path


class FigureInputs:
    def __init__(self, look: Lookup):
        self.look = look

    def block(self, wildcards) -> dict:
        """The table's `figure` block: which system, test set, seed and sentence the figure shows."""
        fig = self.look.table_config(wildcards).get("figure")
        if not fig:
            raise ValueError(
                f"table {wildcards.paper}.{wildcards.table} has no `figure` block (system, test_set, seed, sentence)"
            )
        return fig

    def attention_dump(self, wildcards) -> str:
        t, fig = self.look.table_config(wildcards), self.block(wildcards)
        return path("attention", paper=wildcards.paper, system=fig["system"], dataset=t["dataset"],
                    split=fig["test_set"], pair=t["pair"], seed=fig["seed"])

    def sentence(self, wildcards) -> int:
        return self.block(wildcards).get("sentence", 0)

    def plot(self, wildcards) -> str:
        """What the attention figure draws: `attention` (source and image attention with beta,
        Calixto et al. Fig. 2) or `beta` (beta per generated word, Yang et al. Fig. 4)."""
        return self.block(wildcards).get("plot", "attention")
