"""mmt_repro.tables.paper_view: long-form result rows laid out as the papers' tables (systems x
metrics, cells ``ours (paper, Δ)``), exported as text, Markdown and LaTeX, and docs/results.md."""

from __future__ import annotations

import pytest
import yaml

from mmt_repro.io import DataError
from mmt_repro.tables.build import COLUMNS
from mmt_repro.tables.paper_view import latex_escape, paper_tables, read_results, render, results_doc, show_paper

CKPT = "results/models/toy/{}/multi30k.en-de.seed{}.best.pt"


def _row(**kw) -> dict:
    row = dict.fromkeys(COLUMNS, "")
    row.update(paper="toy", table="t1", pair="en-de", test_set="test_2016_flickr", condition="congruent", n_seeds="0")
    row.update(kw)
    return row


ROWS = [  # as build.py writes them: sorted by the key columns, numbers as text
    _row(system="nmt", metric="bleu", ours="33.00", ours_std="0.40", paper_value="33.7", delta="-0.70",
         tolerance="0.50", verdict="missed", n_seeds="2", runs=" ".join(CKPT.format("nmt", s) for s in (1, 2))),
    _row(system="nmt", metric="meteor", ours="52.50", paper_value="52.3", delta="0.20", tolerance="0.50",
         verdict="reproduced", n_seeds="2", runs=" ".join(CKPT.format("nmt", s) for s in (1, 2))),
    _row(system="nmt_src_img", metric="bleu", ours="36.25", paper_value="36.5", paper_marks="†", delta="-0.25",
         tolerance="0.50", verdict="reproduced", n_seeds="1", runs=CKPT.format("nmt_src_img", 1)),
    _row(system="nmt_src_img", metric="meteor", ours="55.10", n_seeds="1", runs=CKPT.format("nmt_src_img", 1)),
    _row(system="pbsmt", metric="bleu", paper_value="32.9", note="not reproduced here (no Moses)"),
]


def _write(path, rows):
    path.write_text("\t".join(COLUMNS) + "\n" + "".join("\t".join(r[c] for c in COLUMNS) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture
def results(tmp_path):
    """A hand-made all.tsv and a config/ folder: the config lists nmt, nmt_src_img; the published
    file lists pbsmt first, and METEOR before BLEU for nothing (the paper prints BLEU first)."""
    config = tmp_path / "config"
    config.mkdir()
    tables = {"t1": {"systems": ["nmt", "nmt_src_img"], "test_sets": ["test_2016_flickr"]}}
    (config / "config.yaml").write_text(yaml.safe_dump({"papers": {"toy": {"tables": tables}}}), encoding="utf-8")
    pub = ["paper\ttable\tsystem\tpair\ttest_set\tmetric\tvalue\tsource\tmarks"]
    pub += [f"toy\tt1\t{s}\ten-de\ttest_2016_flickr\t{m}\t{v}\tToy, Table 1\t{k}"
            for s, m, v, k in [("pbsmt", "bleu", "32.9", ""), ("nmt", "bleu", "33.7", ""), ("nmt", "meteor", "52.3", ""),
                               ("nmt_src_img", "bleu", "36.5", "†")]]
    (config / "published_results.tsv").write_text("\n".join(pub) + "\n", encoding="utf-8")
    return _write(tmp_path / "all.tsv", ROWS), config


def test_markdown_is_the_paper_shaped_table(results):
    tsv, config = results
    assert show_paper(tsv, fmt="markdown", config_dir=config) == "\n".join([
        "_cells: ours (paper, Δ); ours is the mean over seeds, Δ = ours - paper_",
        "",
        "### toy / t1 (en-de, test_2016_flickr)",
        "",
        "| system | BLEU | METEOR | verdict |",
        "|---|---|---|---|",
        "| nmt | 33.00 (33.7, -0.70) | 52.50 (52.3, +0.20) | 1 reproduced, 1 missed |",
        "| nmt_src_img | 36.25 (36.5†, -0.25) | 55.10 | reproduced |",  # no paper value: ours only
        "| pbsmt | (32.9) |  |  |",  # not run here: the paper's value only, no verdict
    ])


def test_system_order_config_then_published_then_the_table(results):
    tsv, config = results
    df = read_results(tsv)
    [with_config] = paper_tables(df, config=yaml.safe_load((config / "config.yaml").read_text()))
    assert list(with_config.grid.index) == ["nmt", "nmt_src_img", "pbsmt"]
    import pandas as pd

    pub = pd.read_csv(config / "published_results.tsv", sep="\t", dtype=str, keep_default_na=False)
    pub["condition"] = "congruent"
    [published_only] = paper_tables(df, published=pub)
    assert list(published_only.grid.index) == ["pbsmt", "nmt", "nmt_src_img"]
    with pytest.raises(DataError, match="(?s)no rows of paper 'nope'.*give one of: toy"):
        paper_tables(df, paper="nope")


def test_several_test_sets_and_conditions_become_column_levels(tmp_path):
    rows = [_row(system="nmt_src_img", test_set=t, condition=c, metric="bleu", ours=o, n_seeds="1")
            for t, c, o in [("test_2016_flickr", "congruent", "36.00"), ("test_2016_flickr", "shuffled", "30.00"),
                            ("test_2017_flickr", "congruent", "29.00")]]
    [t] = paper_tables(read_results(_write(tmp_path / "t.tsv", rows)))
    assert t.caption == "toy / t1 (en-de)"
    assert list(t.grid.columns) == ["test_2016_flickr / congruent / BLEU", "test_2016_flickr / shuffled / BLEU",
                                    "test_2017_flickr / congruent / BLEU"]
    assert list(t.grid.loc["nmt_src_img"]) == ["36.00", "30.00", "29.00"]  # no verdicts: no verdict column
    assert render([t], "text").splitlines()[0] == "== toy / t1 (en-de)"


def test_latex_escapes_underscore_and_percent(results):
    tsv, config = results
    rows = [dict(r, system="img_50%") if r["system"] == "nmt_src_img" else r for r in ROWS]
    [t] = paper_tables(read_results(_write(tsv, rows)))
    latex = render([t], "latex")
    assert r"img\_50\% & 36.25 (36.5†, -0.25) & 55.10 & reproduced \\" in latex
    assert r"\caption{toy / t1 (en-de, test\_2016\_flickr): ours (paper, $\Delta$)}" in latex
    assert r"nmt\_src\_img" not in latex and "img_50%" not in latex
    assert latex.startswith("\\begin{table}[t]\n\\centering\n\\begin{tabular}{llll}\n\\hline\nsystem & BLEU & METEOR")
    assert latex_escape(r"a_b %c &d #e $f {g} ~ ^ \h") == (r"a\_b \%c \&d \#e \$f \{g\} \textasciitilde{} "
                                                           r"\textasciicircum{} \textbackslash{}h")


def test_results_doc_has_the_tables_notes_and_checkpoints(results):
    tsv, config = results
    doc = results_doc(tsv, config_dir=config, source="results/tables/all.tsv")
    assert doc.startswith("# Results\n\nGenerated from `results/tables/all.tsv` by `python -m mmt_repro results-doc")
    assert "\n## toy\n\n### toy / t1 (en-de, test_2016_flickr)\n\n| system | BLEU | METEOR | verdict |\n" in doc
    assert "- pbsmt: not reproduced here (no Moses)\n" in doc
    assert (f"- nmt (2 seeds): `{CKPT.format('nmt', 1)}`, `{CKPT.format('nmt', 2)}`\n"
            f"- nmt_src_img (1 seed): `{CKPT.format('nmt_src_img', 1)}`\n") in doc


def test_an_older_table_without_verdict_columns_reads(tmp_path):
    old = [c for c in COLUMNS if c not in ("tolerance", "verdict")]
    (tmp_path / "old.tsv").write_text("\t".join(old) + "\n" + "\t".join(ROWS[0][c] for c in old) + "\n",
                                      encoding="utf-8")
    [t] = paper_tables(read_results(tmp_path / "old.tsv"))
    assert list(t.grid.columns) == ["BLEU"] and t.grid.loc["nmt", "BLEU"] == "33.00 (33.7, -0.70)"
