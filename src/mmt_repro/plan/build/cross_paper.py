"""The cross-paper job (``execute/cross_paper.py``): every system of every paper whose runs
translate the config's test sets of one dataset and pair (the config's ``cross_paper`` block),
its translations scored under one protocol (:mod:`mmt_repro.tables.cross_paper`), beside the
image-use figures of its paper's probe table (:mod:`mmt_repro.tables.probe`).

It trains nothing of its own: a row reads the congruent translations of the papers' enabled
translation tables (every seed a table gives; the same file when several tables share a run),
each paper's references in its scoring form (as the protocol grid does), and the probe table
of the paper's table that probes the system on that test set. A test set that none of the
paper's tables translates is decoded for this table (``decode_missing``, the default): the same
checkpoints, decode block and congruent images as the table's other test sets, one translate
job per seed (the path is the run's, so a table that later translates it reads the same file);
with ``decode_missing: false`` its row says it was not translated. A text-only system's probe
cells say ``text-only``; a multimodal system that no probe table covers, ``no probe``."""

from __future__ import annotations

from ...io import unknown_name
from ...metrics.protocols import parse_protocol
from ..jobs import CrossPaperJob
from ..paths import path
from . import JobBuilder
from .probe import ProbeJobs

DEFAULTS = {"all": True, "bleu": "detok_13a_lc", "meteor": True, "papers": None, "decode_missing": True}
TEXT_ONLY = "text-only"
SEEDS = "__seeds__"  # in :meth:`CrossPaperJobs.systems`' entries: every seed the tables train
NO_PROBE = "no probe"


class CrossPaperJobs(JobBuilder):
    def __init__(self, look, probe: ProbeJobs):
        super().__init__(look)
        self.probe = probe  # the probe tables a row reads

    def settings(self) -> dict:
        """The config's ``cross_paper`` block with its defaults; ValueError when there is none."""
        block = self.look.config.get("cross_paper")
        if not block:
            raise ValueError("the config has no cross_paper block: no cross-paper table (docs/scoring.md)")
        return {**DEFAULTS, **block}

    def planned(self) -> bool:
        """Whether rule all builds the table: a block with ``all`` (the default) and some row."""
        block = self.look.config.get("cross_paper")
        return bool(block) and bool(block.get("all", True)) and bool(self.systems())

    def papers(self) -> list:
        """The papers the table reads (``cross_paper.papers``, checked; default every paper)."""
        names = self.settings()["papers"] or list(self.look.config["papers"])
        for name in names:
            if name not in self.look.config["papers"]:
                raise unknown_name("paper", name, self.look.config["papers"], "cross_paper.papers (papers of the config)")
        return list(names)

    def systems(self) -> dict:
        """(paper, system, pair) -> test set -> seed -> translation file, over the enabled
        translation tables of the block's dataset and pairs, in the papers', the pairs' and the
        tables' order (a test set no table of the paper translates: absent), and under
        :data:`SEEDS` every seed the tables give the system (str -> int)."""
        s = self.settings()
        look = self.look
        look.dataset_config(s["dataset"])
        papers = self.papers()
        found: dict = {}
        for paper, name, t in look.enabled:
            if (paper not in papers or t.get("kind", "translation") != "translation" or t["dataset"] != s["dataset"]
                    or t["pair"] not in s["pairs"]):
                continue
            for system in t["systems"]:
                entry = found.setdefault((paper, system, t["pair"]), {})
                seeds = entry.setdefault(SEEDS, {})
                for seed in t["seeds"]:
                    seeds.setdefault(str(seed), seed)
                for test_set in (ts for ts in t["test_sets"] if ts in s["test_sets"]):
                    for seed in t["seeds"]:
                        entry.setdefault(test_set, {})[str(seed)] = look.run_file(
                            "translation", paper, name, system, test_set, seed, "congruent")
        order = {(p, pair): (papers.index(p), s["pairs"].index(pair)) for p in papers for pair in s["pairs"]}
        return dict(sorted(found.items(), key=lambda kv: order[kv[0][0], kv[0][2]]))

    def probe_of(self, paper: str, system: str, pair: str, test_set: str) -> tuple[dict | None, str]:
        """``({table, file}, "")`` of the paper's probe table that probes ``system`` on
        ``test_set``, or ``(None, why)``: ``text-only`` or ``no probe``."""
        look = self.look
        dataset = self.settings()["dataset"]
        for p, name, t in look.enabled:
            if (p == paper and t.get("probe") and t.get("kind", "translation") == "translation"
                    and t["dataset"] == dataset and t["pair"] == pair and test_set in t["test_sets"]
                    and system in self.probe.pairs(paper, name)):
                return {"table": name, "file": path("probe", paper=paper, table=name)}, ""
        return None, (NO_PROBE if look.multimodal(paper, system) else TEXT_ONLY)

    def rows(self) -> list:
        """One row per (paper, system, pair) of :meth:`systems` and test set of the block."""
        look = self.look
        s = self.settings()
        rows = []
        for (paper, system, pair), runs in self.systems().items():
            tgt = pair.split("-")[1]
            translated = [ts for ts in s["test_sets"] if ts in runs and ts != SEEDS]
            for test_set in s["test_sets"]:
                probe, why = self.probe_of(paper, system, pair, test_set)
                row = {"paper": paper, "system": system, "pair": pair, "test_set": test_set,
                       "translations": dict(runs.get(test_set, {})), "references": [], "ref_subword": "none",
                       "probe": probe, "probe_reason": why, "reason": "", "decoded_here": False}
                if test_set not in runs and s["decode_missing"]:
                    row["translations"] = {
                        key: path("translation", paper=paper, system=system, dataset=s["dataset"], split=test_set,
                                  pair=pair, seed=seed, condition="congruent")
                        for key, seed in runs[SEEDS].items()}
                    row["decoded_here"] = True
                if row["translations"]:
                    row["references"] = look.reference_files(paper, s["dataset"], test_set, tgt)
                    row["ref_subword"] = "wordpiece" if look.recipe(paper).subword_for(tgt) == "wordpiece" else "none"
                else:
                    row["reason"] = (f"not translated: {paper}'s tables translate "
                                     f"{', '.join(translated) or 'none of the test sets'} of {s['dataset']} {pair}")
                rows.append(row)
        return rows

    def build(self, w=None) -> CrossPaperJob:
        s = self.settings()
        if parse_protocol(s["bleu"]).metric != "bleu":
            raise ValueError(f"cross_paper.bleu: {s['bleu']!r} is not a BLEU protocol (e.g. detok_13a_lc)")
        rows = self.rows()
        if not rows:
            raise ValueError(f"cross_paper: no enabled translation table of dataset {s['dataset']} with a pair in "
                             f"{', '.join(s['pairs'])}: the table would be empty")
        return CrossPaperJob(
            dataset=s["dataset"], bleu=s["bleu"], meteor=bool(s["meteor"]), rows=rows,
            meteor_jar=self.look.meteor_jar(),
            inputs={"translations": sorted({f for r in rows for f in r["translations"].values()}),
                    "references": sorted({f for r in rows for f in r["references"]}),
                    "probes": sorted({r["probe"]["file"] for r in rows if r["probe"]}),
                    **self.look.meteor_inputs(bool(s["meteor"]))},
            out=path("cross_paper"), legend=path("cross_paper_legend"),
        )
