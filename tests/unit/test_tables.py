"""Tests for mmt_repro.tables.build on hand-made score JSONs, and for the published values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from mmt_repro.io import DataError
from mmt_repro.tables.build import (
    COLUMNS,
    NOT_RUN,
    format_table,
    gather_tables,
    make_table,
    read_published,
    read_table,
)

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = REPO / "config" / "published_results.tsv"
SIG = "nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.6.0"


def _score_json(tmp: Path, system: str, seed: int, scores: dict, condition="congruent", paper="toy", table="t1"):
    data = {
        "meta": {
            "paper": paper,
            "table": table,
            "system": system,
            "pair": "en-de",
            "test_set": "test_2016_flickr",
            "seed": seed,
            "condition": condition,
        },
        "scores": {m: {"value": v, "signature": SIG} for m, v in scores.items()},
        "n_sentences": 1000,
    }
    path = tmp / f"{paper}.{system}.{condition}.{seed}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def published(tmp_path):
    path = tmp_path / "published.tsv"
    rows = [
        ["paper", "table", "system", "pair", "test_set", "metric", "value", "source"],
        ["toy", "t1", "nmt", "en-de", "test_2016_flickr", "bleu", "33.7", "Toy 2017, Table 1"],
        ["toy", "t1", "nmt", "en-de", "test_2016_flickr", "ter", "46.7", "Toy 2017, Table 1"],
        ["toy", "t1", "nmt", "en-de", "test_2016_flickr", "meteor", "52.3", "Toy 2017, Table 1"],
        ["toy", "t1", "mmt", "en-de", "test_2016_flickr", "bleu", "36.5", "Toy 2017, Table 1"],
        ["toy", "t1", "pbsmt", "en-de", "test_2016_flickr", "bleu", "32.9", "Toy 2017, Table 1"],
        ["other", "t1", "nmt", "en-de", "test_2016_flickr", "bleu", "1.0", "Other, Table 1"],
    ]
    path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(df, system, metric, condition="congruent"):
    sel = df[(df.system == system) & (df.metric == metric) & (df.condition == condition)]
    assert len(sel) == 1, sel
    return sel.iloc[0]


def test_make_table_means_deltas_and_flags(tmp_path, published):
    jsons = [
        _score_json(tmp_path, "nmt", 1, {"bleu": 34.0, "ter": 45.0}),
        _score_json(tmp_path, "nmt", 2, {"bleu": 35.0, "ter": 46.0}),
        _score_json(tmp_path, "mmt", 1, {"bleu": 35.123}),
        _score_json(tmp_path, "mmt", 1, {"bleu": 30.0}, condition="shuffled"),
    ]
    unavailable = [
        {
            "system": "nmt",
            "pair": "en-de",
            "test_set": "test_2016_flickr",
            "metric": "meteor",
            "reason": "METEOR-de needs the full Meteor 1.5 release",
        }
    ]
    out = tmp_path / "tables" / "t1.tsv"
    df = make_table(
        jsons,
        "toy",
        "t1",
        published,
        out,
        unavailable=unavailable,
        significance={("mmt", "en-de", "test_2016_flickr", "congruent", "bleu"): 0.004},
    )
    assert list(df.columns) == COLUMNS

    bleu = _row(df, "nmt", "bleu")
    assert bleu.ours == 34.5 and bleu.n_seeds == 2
    assert bleu.ours_std == pytest.approx(round(math.sqrt(0.5), 2))
    assert bleu.paper_value == 33.7 and bleu.delta == pytest.approx(0.8)  # ours above paper: positive
    assert bleu.signature == SIG and bleu.note == ""

    ter = _row(df, "nmt", "ter")
    assert ter.ours == 45.5 and ter.delta == pytest.approx(-1.2)  # ours below paper: negative

    mmt = _row(df, "mmt", "bleu")
    assert mmt.ours == 35.12 and mmt.n_seeds == 1 and math.isnan(mmt.ours_std)
    assert mmt.delta == pytest.approx(-1.38) and mmt.p_value == 0.004

    # no paper value for non-congruent conditions, so no delta
    shuf = _row(df, "mmt", "bleu", condition="shuffled")
    assert shuf.ours == 30.0 and math.isnan(shuf.paper_value) and math.isnan(shuf.delta)

    # unavailable: ours stays empty even though the paper has a value, reason in note
    met = _row(df, "nmt", "meteor")
    assert math.isnan(met.ours) and met.paper_value == 52.3 and math.isnan(met.delta)
    assert met.note.startswith("METEOR-de needs") and met.n_seeds == 0

    # published-only row
    pb = _row(df, "pbsmt", "bleu")
    assert math.isnan(pb.ours) and pb.paper_value == 32.9 and pb.note == NOT_RUN

    # other papers' published rows stay out
    assert set(df.paper) == {"toy"} and len(df) == 6

    # the file has the same columns, empty cells for missing numbers, fixed formats
    text = out.read_text(encoding="utf-8").splitlines()
    assert text[0].split("\t") == COLUMNS
    by_sys_metric = {tuple(line.split("\t")[i] for i in (2, 5, 6)): line.split("\t") for line in text[1:]}
    assert by_sys_metric[("nmt", "congruent", "bleu")][7:12] == ["34.50", "0.71", "33.7", "", "0.80"]  # ours, std, paper, marks, delta
    assert by_sys_metric[("nmt", "congruent", "meteor")][7] == ""
    # deterministic: same inputs in another order give identical bytes
    out2 = tmp_path / "tables" / "t1b.tsv"
    make_table(
        list(reversed(jsons)),
        "toy",
        "t1",
        published,
        out2,
        unavailable=unavailable,
        significance={"mmt|en-de|test_2016_flickr|congruent|bleu": 0.004},
    )
    assert out2.read_bytes() == out.read_bytes()
    # rows sorted by their keys
    keys = list(zip(df.system, df.pair, df.test_set, df.condition, df.metric))
    assert keys == sorted(keys)


def test_make_table_rejects_inconsistent_inputs(tmp_path, published):
    a = _score_json(tmp_path, "nmt", 1, {"bleu": 34.0})
    with pytest.raises(DataError, match="appears in several"):
        make_table([a, a], "toy", "t1", published, tmp_path / "x.tsv")
    wrong = _score_json(tmp_path, "nmt", 1, {"bleu": 34.0}, paper="other")
    with pytest.raises(DataError, match="belongs to other/t1"):
        make_table([wrong], "toy", "t1", published, tmp_path / "x.tsv")
    clash = [{"system": "nmt", "pair": "en-de", "test_set": "test_2016_flickr", "metric": "bleu", "reason": "x"}]
    with pytest.raises(ValueError, match="unavailable but has scores"):
        make_table([a], "toy", "t1", published, tmp_path / "x.tsv", unavailable=clash)
    assert not (tmp_path / "x.tsv").exists()


def test_gather_tables_column_order_and_sorting(tmp_path, published):
    t_toy = tmp_path / "toy.tsv"
    t_other = tmp_path / "other.tsv"
    make_table([_score_json(tmp_path, "nmt", 1, {"bleu": 34.0})], "toy", "t1", published, t_toy)
    make_table(
        [_score_json(tmp_path, "nmt", 1, {"bleu": 2.0}, paper="other")], "other", "t1", published, t_other
    )
    out = tmp_path / "all.tsv"
    pq = tmp_path / "all.parquet"
    df = gather_tables([t_toy, t_other], out, pq)
    assert list(df.columns) == COLUMNS
    assert out.read_text(encoding="utf-8").splitlines()[0].split("\t") == COLUMNS
    assert list(df.paper) == sorted(df.paper) and df.paper.iloc[0] == "other"
    back = read_table(out)
    pd.testing.assert_frame_equal(back, df)
    pd.testing.assert_frame_equal(pd.read_parquet(pq), df)
    # same bytes whatever the input order
    out2 = tmp_path / "all2.tsv"
    gather_tables([t_other, t_toy], out2)
    assert out2.read_bytes() == out.read_bytes()
    text = format_table(df)
    assert "== toy / t1 / en-de / test_2016_flickr" in text and NOT_RUN in text


# --------------------------------------------------------------------------- published values


def test_published_calixto_table1_consistent_with_printed_differences():
    """The 'Improvements' rows of Calixto et al. (2017) Table 1 re-derived from our transcription."""
    if not PUBLISHED.exists():
        pytest.skip(f"missing {PUBLISHED}")
    pub = read_published(PUBLISHED)
    pub = pub[(pub.paper == "doubly_attentive") & (pub.table == "table1")]
    assert set(pub.pair) == {"en-de"} and set(pub.test_set) == {"test_2016_flickr"}
    metrics = ["bleu", "meteor", "ter", "chrf3", "chrf3_prec", "chrf3_rec"]
    systems = [
        "pbsmt", "nmt", "nmt_src_img",
        "pbsmt_lm_bt", "nmt_bt", "nmt_src_img_bt",
        "pbsmt_concat_wmt", "pbsmt_lm_wmt", "nmt_wmt", "nmt_src_img_wmt",
    ]  # fmt: skip
    huang = pub[pub.system.str.startswith("huang2016")]  # Huang et al. 2016: BLEU and METEOR only
    assert sorted(zip(huang.system, huang.metric, huang.value)) == [
        ("huang2016", "bleu", 35.1), ("huang2016", "meteor", 52.2),
        ("huang2016_rcnn", "bleu", 36.5), ("huang2016_rcnn", "meteor", 54.1)]  # fmt: skip
    pub = pub[~pub.system.str.startswith("huang2016")]
    assert len(pub) == len(systems) * len(metrics)
    v = {(r.system, r.metric): r.value for r in pub.itertuples()}
    # "NMT_SRC+IMG vs. Huang": +1.4 BLEU, +2.8 METEOR; vs. Huang (+RCNN): 0.0, +0.9
    assert [round(v[("nmt_src_img", m)] - h, 1) for m, h in (("bleu", 35.1), ("meteor", 52.2))] == [1.4, 2.8]
    assert [round(v[("nmt_src_img", m)] - h, 1) for m, h in (("bleu", 36.5), ("meteor", 54.1))] == [0.0, 0.9]

    def diff(a, b):
        return [round(v[(a, m)] - v[(b, m)], 1) for m in metrics]

    # printed as arrows in the paper: (BLEU, METEOR, TER, chrF3, prec, rec)
    assert diff("nmt_src_img", "nmt") == [2.8, 2.7, -3.0, 2.1, -0.9, 2.4]
    assert diff("nmt_src_img", "pbsmt") == [3.6, 0.7, -1.4, -0.1, 0.3, -0.1]
    assert diff("nmt_src_img_bt", "pbsmt_lm_bt") == [3.1, -0.5, -1.9, -1.4, 0.4, -1.6]
    assert diff("nmt_src_img_bt", "nmt_bt") == [1.6, 1.1, -0.5, 1.4, -0.5, 1.5]
    assert diff("nmt_src_img_wmt", "nmt_wmt") == [1.2, 0.1, -0.4, 0.4, -0.1, 0.5]
    # "vs. best PBSMT" with WMT pre-training takes the best PBSMT per metric
    best = {m: (min if m == "ter" else max)(v[("pbsmt_concat_wmt", m)], v[("pbsmt_lm_wmt", m)]) for m in metrics}
    assert [round(v[("nmt_src_img_wmt", m)] - best[m], 1) for m in metrics] == [6.4, 2.7, -5.4, 2.3, 3.3, 2.2]


def test_degenerate_output_counts_and_warns_above_five_percent():
    from mmt_repro.metrics.score_files import DEGENERATE_SHARE, degenerate_output

    hyps = ["ein hund", "", "zwei kinder", "", *["ein mann"] * 16]  # 2 of 20 empty = 10 %
    got = degenerate_output(hyps, {"cut_at_max_len": 1, "max_len": 80})  # 1 of 20 cut = 5 %: not above
    assert DEGENERATE_SHARE == 0.05
    assert got == {"n": 20, "empty": 2, "cut_at_max_len": 1, "warning": "10.0% of hypotheses are empty"}
    got = degenerate_output(["a"] * 10, {"cut_at_max_len": 4, "max_len": 80})
    assert got["warning"] == "40.0% of hypotheses reached their length bound (max_len=80) without <eos>"
    got = degenerate_output(["a"] * 10, {"cut_at_max_len": 4, "max_len": 80, "max_len_a": 2.0, "max_len_b": 10})
    assert got["warning"] == "40.0% of hypotheses reached their length bound (max_len=80, 2 n + 10) without <eos>"
    assert degenerate_output(["a"] * 10, {"cut_at_max_len": 0})["warning"] == ""


def test_degenerate_seeds_are_named_in_the_row_note(tmp_path, published):
    paths = [_score_json(tmp_path, "nmt", seed, {"bleu": b}) for seed, b in ((1, 30.0), (2, 32.0))]
    data = json.loads(paths[1].read_text())
    data["degenerate"] = {"n": 1000, "empty": 0, "cut_at_max_len": 310, "warning": "31.0% of hypotheses reached max_len=80 without <eos>"}
    paths[1].write_text(json.dumps(data), encoding="utf-8")
    df = make_table(paths, "toy", "t1", published, tmp_path / "t.tsv", note="scaled down")
    row = df[(df.system == "nmt") & (df.metric == "bleu")].iloc[0]
    assert row["ours"] == 31.0
    assert row["note"] == "scaled down; seed 2: 31.0% of hypotheses reached max_len=80 without <eos>"


def test_paper_significance_marks_carried_as_printed(tmp_path):
    from mmt_repro.tables.build import format_table, read_table

    pub = tmp_path / "pub.tsv"
    pub.write_text(
        "paper\ttable\tsystem\tpair\ttest_set\tmetric\tvalue\tsource\tmarks\n"
        "toy\tt1\tmmt\ten-de\ttest_2016_flickr\tbleu\t36.5\tToy, Table 1 († better than nmt)\t†‡\n"
        "toy\tt1\tnmt\ten-de\ttest_2016_flickr\tbleu\t33.7\tToy, Table 1\t\n", encoding="utf-8")
    out = tmp_path / "t1.tsv"
    df = make_table([_score_json(tmp_path, "mmt", 1, {"bleu": 35.0})], "toy", "t1", pub, out)
    assert _row(df, "mmt", "bleu").paper_marks == "†‡" and _row(df, "nmt", "bleu").paper_marks == ""
    back = read_table(out)
    assert list(back.paper_marks) == list(df.paper_marks)
    assert "36.5†‡" in format_table(back)
    # the real transcription: Calixto et al. Table 1 marks NMT_SRC+IMG's BLEU and TER, nothing else
    real = read_published(PUBLISHED)
    marked = real[real.marks != ""]
    assert sorted(zip(marked.system, marked.metric, marked.marks)) == [("nmt_src_img", "bleu", "†‡"),
                                                                      ("nmt_src_img", "ter", "†‡")]


def test_no_delta_where_the_score_is_not_the_papers_tool(tmp_path, published):
    """METEOR without the official paraphrase table (de offline) is not the paper's METEOR:
    no delta, and the note says why."""
    sig = "meteor-1.5|lang:de|modules:exact,stem|paraphrase:missing|norm:no|nrefs:1|official:no"
    path = _score_json(tmp_path, "nmt", 1, {"meteor": 50.0})
    data = json.loads(path.read_text())
    data["scores"]["meteor"]["signature"] = sig
    path.write_text(json.dumps(data))
    df = make_table([path], "toy", "t1", published, tmp_path / "t.tsv")
    row = _row(df, "nmt", "meteor")
    assert row.ours == 50.0 and row.paper_value == 52.3 and math.isnan(row.delta)
    assert "no delta: METEOR without this language's official paraphrase table" in row.note
