"""The plan of the tables and figures: which runs a table needs, its significance tests,
learning curves and figures, and the targets of ``all``."""

from __future__ import annotations

from .base import pattern
from .jobs import CurvesJob, SignificanceJob, TableJob
from .paths import path


class TablePlan:
    def table_kind(self, paper, table) -> str:
        """translation (scores of translations), analysis (a registered analysis per run) or curves."""
        return self.table(paper, table).get("kind", "translation")

    def table_runs(self, paper, table) -> list:
        """(system, test_set, seed, condition) of every run a table needs; the shuffled-image and
        no-image conditions exist only for multimodal systems."""
        t = self.table(paper, table)
        runs = []
        for system in t["systems"]:
            conditions = ["congruent"]
            if t.get("shuffled_images") and self.multimodal(paper, system):
                conditions.append("shuffled")
            if t.get("no_image") and self.multimodal(paper, system):
                conditions.append("no_image")
            for test_set in t["test_sets"]:
                for seed in t["seeds"]:
                    for condition in conditions:
                        runs.append((system, test_set, seed, condition))
        return runs

    def run_file(self, kind, paper, table, system, test_set, seed, condition) -> str:
        """The translation or score file of one run of a table."""
        t = self.table(paper, table)
        return path(kind, paper=paper, system=system, dataset=t["dataset"], split=test_set, pair=t["pair"],
                    seed=seed, condition=condition)

    def table_scores(self, paper, table) -> list:
        """Score files of a table: translation scores, or the analysis's per-run results."""
        t = self.table(paper, table)
        if self.table_kind(paper, table) == "analysis":
            return [
                path("analysis", paper=paper, system=s, dataset=t["dataset"], split=ts, pair=t["pair"], seed=seed,
                     analysis=t["analysis"])
                for s in t["systems"] for ts in t["test_sets"] for seed in t["seeds"]
            ]
        return [self.run_file("score", paper, table, *run) for run in self.table_runs(paper, table)]

    # ------------------------------------------------------------------ targets
    def all_tables(self) -> list:
        return [path("table", paper=p, table=t) for p, t, _ in self.enabled]

    def default_targets(self) -> list:
        """What ``rule all`` builds: the config's ``targets`` when it names some (an overlay config
        such as config/cpu_multi30k.yaml plans only its own tables), else every table, figure,
        statistic and report of the enabled tables."""
        if self.config.get("targets"):
            return list(self.config["targets"])
        return ["results/tables/all.tsv", path("stats"), *self.vocab_report_targets(), *self.recipe_targets(),
                *self.all_figures(), *self.report_pages()]

    def report_pages(self) -> list:
        """The HTML pages of the Snakemake report (workflow/rules/report.smk): every enabled
        table, all.tsv, the data statistics and each paper's vocabulary report."""
        pages = [path("table", paper=p, table=n).removesuffix(".tsv") + ".html" for p, n, _ in self.enabled]
        pages += ["results/tables/all.html", path("stats").removesuffix(".tsv") + ".html"]
        return pages + [t.removesuffix(".tsv") + ".html" for t in self.vocab_report_targets()]

    def all_figures(self) -> list:
        """A scores figure per table, the attention figure of tables with a `figure` block, the
        table's own plot, and the learning curves of tables of kind curves."""
        figs = [path("figure", paper=p, table=n, figure="scores.png") for p, n, _ in self.enabled]
        figs += [path("figure", paper=p, table=n, figure="attention.png") for p, n, t in self.enabled if t.get("figure")]
        figs += [path("figure", paper=p, table=n, figure=f"{t['plot']}.png") for p, n, t in self.enabled if t.get("plot")]
        figs += [path("figure", paper=p, table=n, figure="curves.png") for p, n, t in self.enabled
                 if t.get("kind") == "curves"]
        return figs

    def tables_of_kind(self, kind) -> str:
        """A wildcard pattern matching the enabled tables of one kind (e.g. curves)."""
        return pattern(table for _, table, t in self.enabled if t.get("kind") == kind)

    # ------------------------------------------------------------------ significance
    def significance_metrics(self, wildcards) -> list:
        scoring = self.settings[wildcards.paper].scoring
        return [m for m in scoring.significance_metrics if m in scoring.metrics]

    def significance_translation_map(self, wildcards) -> dict:
        """``"system|test_set|condition|seed"`` -> translation file, for every run of the table."""
        return {
            f"{system}|{test_set}|{condition}|{seed}": self.run_file(
                "translation", wildcards.paper, wildcards.table, system, test_set, seed, condition)
            for system, test_set, seed, condition in self.table_runs(wildcards.paper, wildcards.table)
        }

    def significance_translations(self, wildcards) -> list:
        return sorted(self.significance_translation_map(wildcards).values())

    def significance_reference_map(self, wildcards) -> dict:
        t = self.table_config(wildcards)
        tgt = t["pair"].split("-")[1]
        return {ts: self.reference_file(wildcards.paper, t["dataset"], ts, tgt) for ts in t["test_sets"]}

    def significance_references(self, wildcards) -> list:
        return sorted(self.significance_reference_map(wildcards).values())

    def table_baseline(self, wildcards):
        """One baseline system, or a map system -> baseline (as a plain dict for the script)."""
        t = self.table_config(wildcards)
        baseline = t.get("baseline", t["systems"][0])
        return dict(baseline) if isinstance(baseline, dict) else baseline

    def table_pair(self, wildcards) -> str:
        return self.table_config(wildcards)["pair"]

    def table_target_lang(self, wildcards) -> str:
        """METEOR's language for a table: the scoring block's, else the pair's target."""
        return self.settings[wildcards.paper].scoring.meteor_lang or self.table_config(wildcards)["pair"].split("-")[1]

    def table_reference_subword(self, wildcards) -> str:
        tgt = self.table_config(wildcards)["pair"].split("-")[1]
        return "wordpiece" if self.recipe(wildcards.paper).subword_for(tgt) == "wordpiece" else "none"

    def scoring(self, wildcards) -> dict:
        from ..settings import as_plain

        return as_plain(self.settings[wildcards.paper].scoring)

    def significance_job(self, wildcards) -> SignificanceJob:
        paper, table = wildcards.paper, wildcards.table
        translations = self.significance_translation_map(wildcards)
        references = self.significance_reference_map(wildcards)
        return SignificanceJob(
            paper=paper, table=table, translations=translations, references=references,
            baseline=self.table_baseline(wildcards), pair=self.table_pair(wildcards),
            metrics=self.significance_metrics(wildcards), scoring=self.scoring(wildcards),
            lang=self.table_target_lang(wildcards), meteor_jar=self.config_path("tools", "meteor_jar"),
            ref_subword=self.table_reference_subword(wildcards),
            inputs={"translations": sorted(translations.values()), "references": sorted(references.values())},
            out=path("significance", paper=paper, table=table),
        )

    def significance_inputs(self, wildcards) -> dict:
        return self.significance_job(wildcards).files()

    def significance_params(self, wildcards) -> dict:
        return self.significance_job(wildcards).to_dict()

    # ------------------------------------------------------------------ the table job
    def table_not_comparable(self, paper, table) -> dict:
        """system -> why its rows get no delta: a table marked `comparable: false` (its runs differ
        from the paper's set-up; the table's note says how)."""
        t = self.table(paper, table)
        if t.get("comparable", True) is False:
            return {system: "no delta: not the paper's set-up" for system in t["systems"]}
        return {}

    def table_differences(self, paper, table) -> dict:
        """system -> a declared difference from the paper's setting (word vectors trained here):
        in a comparable table its rows get a delta and a verdict that says so, never
        "reproduced"; in a table marked `comparable: false` the note still says it."""
        return self.word_vector_reason(paper, self.table(paper, table)["systems"])

    def table_job(self, wildcards) -> TableJob:
        paper, table = wildcards.paper, wildcards.table
        t = self.table(paper, table)
        inputs = {"scores": self.table_scores(paper, table), "published": self.published}
        # a paper without significance tests (empty significance_metrics) needs none
        if self.table_kind(paper, table) == "translation" and self.significance_metrics(wildcards):
            inputs["significance"] = path("significance", paper=paper, table=table)
        return TableJob(paper=paper, table=table, note=t.get("note", ""), unavailable=dict(t.get("unavailable", {})),
                        not_comparable=self.table_not_comparable(paper, table), inputs=inputs,
                        out=path("table", paper=paper, table=table),
                        differences=self.table_differences(paper, table))

    def table_inputs(self, wildcards) -> dict:
        return self.table_job(wildcards).files()

    def table_params(self, wildcards) -> dict:
        return self.table_job(wildcards).to_dict()

    def table_note(self, wildcards) -> str:
        return self.table_config(wildcards).get("note", "")

    # ------------------------------------------------------------------ curves and figures
    def curve_specs(self, wildcards) -> dict:
        """system -> {file, y, x} of a curves table: each system's training curve (seed: the
        table's first) and its columns for the table's task: val_bleu against epoch, or, for a
        system trained elsewhere (train_on), the validation curve of its task on the table's
        dataset and pair (val_bleu_<task> against passes_<task>)."""
        paper, t = wildcards.paper, self.table_config(wildcards)
        specs = {}
        for system in t["systems"]:
            m_ds, m_pair = self.model_location(paper, system, t["dataset"], t["pair"])
            model = path("model", paper=paper, system=system, dataset=m_ds, pair=m_pair, seed=t["seeds"][0])
            y, x = "val_bleu", "epoch"
            if (m_ds, m_pair) != (t["dataset"], t["pair"]):
                tasks = [name for name, task in self.system_settings(paper, system).task_settings().items()
                         if task.dataset == t["dataset"] and task.pair == t["pair"] and task.val]
                if not tasks:
                    raise ValueError(
                        f"{paper}.{system} has no task on {t['dataset']} {t['pair']} with `val: true`: "
                        f"table {wildcards.table} has no curve to plot for it"
                    )
                y, x = f"val_bleu_{tasks[0]}", f"passes_{tasks[0]}"
            specs[system] = {"file": f"{model}.curve.tsv", "y": y, "x": x}
        return specs

    def curves_job(self, wildcards) -> CurvesJob:
        paper, table = wildcards.paper, wildcards.table
        specs = self.curve_specs(wildcards)
        stem = path("figure", paper=paper, table=table, figure="curves")
        return CurvesJob(
            paper=paper, table=table, curves=specs, pair=self.table_pair(wildcards),
            test_set=self.curve_test_set(wildcards), note=self.table_note(wildcards),
            inputs={"curves": sorted({spec["file"] for spec in specs.values()})},
            out=path("table", paper=paper, table=table), png=f"{stem}.png", pdf=f"{stem}.pdf",
        )

    def curves_inputs(self, wildcards) -> dict:
        return self.curves_job(wildcards).files()

    def curves_params(self, wildcards) -> dict:
        return self.curves_job(wildcards).to_dict()

    def curve_test_set(self, wildcards) -> str:
        return self.table_config(wildcards)["test_sets"][0]

    def curve_files(self, wildcards) -> list:
        return sorted({spec["file"] for spec in self.curve_specs(wildcards).values()})

    def figure_block(self, wildcards) -> dict:
        """The table's `figure` block: which system, test set, seed and sentence the figure shows."""
        fig = self.table_config(wildcards).get("figure")
        if not fig:
            raise ValueError(
                f"table {wildcards.paper}.{wildcards.table} has no `figure` block (system, test_set, seed, sentence)"
            )
        return fig

    def attention_dump_for_figure(self, wildcards) -> str:
        t, fig = self.table_config(wildcards), self.figure_block(wildcards)
        return path("attention", paper=wildcards.paper, system=fig["system"], dataset=t["dataset"],
                    split=fig["test_set"], pair=t["pair"], seed=fig["seed"])

    def figure_sentence(self, wildcards) -> int:
        return self.figure_block(wildcards).get("sentence", 0)

    def figure_plot(self, wildcards) -> str:
        """What the attention figure draws: `attention` (source and image attention with beta,
        Calixto et al. Fig. 2) or `beta` (beta per generated word, Yang et al. Fig. 4)."""
        return self.figure_block(wildcards).get("plot", "attention")
