"""Tables and data reports as HTML pages for the Snakemake report (issue 27, item 2): the report
shows HTML inline (a TSV only as a download)."""

from __future__ import annotations

import pandas as pd

from mmt_repro.tables.build import COLUMNS
from mmt_repro.tables.html import table_html, tsv_html


def test_a_results_table_as_html(tmp_path):
    row = dict.fromkeys(COLUMNS, "")
    row.update(paper="emb_pred", table="table1", system="nmt", pair="fr-en", test_set="test_2016_flickr",
               condition="congruent", metric="bleu", ours="50.71", ours_std="0.30", paper_value="51.0",
               delta="-0.29", tolerance="0.74", verdict="reproduced", n_seeds="3", note="a <note> & more",
               runs="results/models/emb_pred/nmt/multi30k.fr-en.seed1.best.pt", signature="nrefs:1|case:mixed")
    row["note"] = "cpu run; a <note> & more"
    other = dict(row, system="nmt_pre", ours="49.00", delta="-3.33", verdict="outside (differs)", note="cpu run")
    pd.DataFrame([row, other]).to_csv(tmp_path / "t.tsv", sep="\t", index=False)
    html = table_html(tmp_path / "t.tsv", tmp_path / "t.html", title="emb_pred / table1").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<h1>emb_pred / table1</h1>" in html
    assert "<h2>emb_pred / table1 / fr-en / test_2016_flickr</h2>" in html
    assert "<td class='num'>50.71 ± 0.30</td><td class='num'>51</td><td class='num'>-0.29</td>" in html
    assert "<td class='reproduced'>reproduced (±0.74)</td>" in html
    assert "<td class='differs'>outside (differs) (±0.74)</td>" in html
    assert "a &lt;note&gt; &amp; more" in html and "<note>" not in html
    assert html.count("cpu run") == 1 and "Every row we produced: cpu run" in html  # said once
    # first the table as the paper lays it out: systems as rows, each cell ours (paper, delta)
    assert "as the paper lays it out" in html and "50.71 (51.0, -0.29)" in html
    assert "<code>results/models/emb_pred/nmt/multi30k.fr-en.seed1.best.pt</code>" in html
    assert "<script" not in html


def test_a_data_report_as_html(tmp_path):
    pd.DataFrame({"dataset": ["multi30k", "grounded"], "sentences": [29000, 3000]}).to_csv(
        tmp_path / "stats.tsv", sep="\t", index=False)
    html = tsv_html(tmp_path / "stats.tsv", tmp_path / "stats.html", title="Corpora").read_text()
    assert "<th>dataset</th><th>sentences</th>" in html
    assert "<td class=''>multi30k</td><td class='num'>29000</td>" in html
