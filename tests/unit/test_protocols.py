"""Protocol grids (mmt_repro.metrics.protocols, mmt_repro.tables.protocols): the same output scored
under each protocol, against hand computations; the paper's column is the table's own number; the
committed grids are what the grid code builds from the committed translations and references."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mmt_repro.io import DataError
from mmt_repro.metrics import meteor as m
from mmt_repro.metrics.protocols import (
    describe,
    grid_protocols,
    parse_protocol,
    score_protocols,
    table_protocols,
)
from mmt_repro.metrics.score_files import score_files
from mmt_repro.metrics.zh_words import word_bleu
from mmt_repro.tables.build import make_table_from_files, read_table
from mmt_repro.tables.protocols import protocol_grid, read_grid
from mmt_repro.tables.reference import read_record, rebuild_grid, reference_folders

REPO = Path(__file__).resolve().parents[2]
MULTI_BLEU = {"metrics": ["bleu"], "tokenize": "none", "bleu_compat": "multi-bleu"}


def bleu(*precisions: float) -> float:
    """BLEU in percent of four n-gram precisions, brevity penalty 1 (the hand computations)."""
    product = 1.0
    for p in precisions:
        product *= p
    return 100 * product ** 0.25


def scored(hyps, refs, protocols, lang):
    """Every protocol of one run (hypotheses, reference streams)."""
    return {pid: e["value"] for pid, e in score_protocols({"run": (hyps, "test")}, {"test": refs}, protocols,
                                                          lang)["run"].items()}


def test_tokenised_and_detokenised_bleu_differ_by_the_moses_escape():
    """Moses writes "man's" as "man &apos;s": two tokens where the detokenised text has one.
    Tokenised (7 tokens a side, "blue" for "red"): 1- to 4-gram precisions 6/7, 4/6, 3/5, 2/4.
    Detokenised, sacreBLEU 13a (6 tokens: "man's" whole, the full stop split off): 5/6, 3/5,
    2/4, 1/3. sacreBLEU's 13a on the tokenised text splits the escape into "& apos ; s" (10
    tokens): 9/10, 7/9, 6/8, 5/7."""
    hyp, ref = ["the man &apos;s hat is blue ."], [["the man &apos;s hat is red ."]]
    got = scored(hyp, ref, ["tok_multibleu", "detok_13a", "tok_13a"], "en")
    assert got["tok_multibleu"] == pytest.approx(bleu(6 / 7, 4 / 6, 3 / 5, 2 / 4)) == pytest.approx(64.3459, abs=1e-4)
    assert got["detok_13a"] == pytest.approx(bleu(5 / 6, 3 / 5, 2 / 4, 1 / 3)) == pytest.approx(53.7285, abs=1e-4)
    assert got["tok_multibleu"] - got["detok_13a"] == pytest.approx(10.6174, abs=1e-4)
    assert got["tok_13a"] == pytest.approx(bleu(9 / 10, 7 / 9, 6 / 8, 5 / 7))


def test_cased_and_lowercased_bleu():
    """"a" for "A": cased, the hypothesis's two "a" meet one reference "a" (clipped), so 5/6,
    4/5, 3/4, 2/3; lowercased, the sentences are equal."""
    got = scored(["a man rides a horse ."], [["A man rides a horse ."]],
                 ["tok_multibleu", "tok_multibleu_lc", "detok_13a", "detok_13a_lc"], "en")
    assert got["tok_multibleu"] == pytest.approx(bleu(5 / 6, 4 / 5, 3 / 4, 2 / 3)) == pytest.approx(75.9836, abs=1e-4)
    assert got["tok_multibleu_lc"] == got["detok_13a_lc"] == pytest.approx(100.0)
    assert got["detok_13a"] == pytest.approx(got["tok_multibleu"])


def test_chinese_by_character_and_by_word():
    """One character of 13 differs (红 for 蓝): by character 12/13, 10/12, 8/11, 6/10; by jieba
    word (我们 可以 看到 一个 红色 的 圆形: 7 words, one differs) 6/7, 4/6, 2/5, 1/4."""
    hyp, ref = ["我 们 可 以 看 到 一 个 红 色 的 圆 形"], ["我 们 可 以 看 到 一 个 蓝 色 的 圆 形"]
    got = scored(hyp, [ref], ["tok_sacrebleu", "tok_multibleu", "plain_zh", "jieba_sacrebleu"], "zh")
    by_char = bleu(12 / 13, 10 / 12, 8 / 11, 6 / 10)
    assert got["tok_sacrebleu"] == got["tok_multibleu"] == pytest.approx(by_char) == pytest.approx(76.1161, abs=1e-4)
    assert got["plain_zh"] == pytest.approx(by_char)  # sacreBLEU's zh tokeniser: a token per CJK character
    assert got["jieba_sacrebleu"] == pytest.approx(bleu(6 / 7, 4 / 6, 2 / 5, 1 / 4)) == pytest.approx(48.8923, abs=1e-4)
    assert got["jieba_sacrebleu"] == word_bleu(hyp, ref)["value"]


def test_one_reference_against_several():
    """Against both references the hypothesis meets the first whole (100); one at a time it gets
    100 and, against "a cat ...", 6/7, 4/6, 3/5, 2/4: the mean is 82.17."""
    hyp = ["a dog runs on the grass ."]
    refs = [["a dog runs on the grass ."], ["a cat runs on the grass ."]]
    got = scored(hyp, refs, ["tok_multibleu", "tok_multibleu_1ref"], "en")
    assert got["tok_multibleu"] == pytest.approx(100.0)
    one = (100.0 + bleu(6 / 7, 4 / 6, 3 / 5, 2 / 4)) / 2
    assert got["tok_multibleu_1ref"] == pytest.approx(one) == pytest.approx(82.1729, abs=1e-4)


def test_each_table_gets_the_protocols_that_make_sense_for_its_language():
    va = {"metrics": ["bleu", "bleu_lc", "meteor"], "tokenize": "none", "bleu_compat": "multi-bleu"}
    ids = grid_protocols(va, "de")
    assert ids[:6] == ["tok_multibleu", "tok_multibleu_lc", "tok_13a", "detok_13a", "detok_13a_lc", "detok_intl"]
    assert ids[6:] == ["meteor_de_norm", "meteor_de_nonorm"]
    assert table_protocols(va, "de") == {"bleu": "tok_multibleu", "bleu_lc": "tok_multibleu_lc",
                                         "meteor": "meteor_de_norm"}
    # a lowercasing recipe: no lowercased column (it would equal the cased one)
    assert not [p for p in grid_protocols(MULTI_BLEU, "en", lowercased=True) if "_lc" in p]
    # Chinese: by character and by word, nothing detokenised or lowercased
    deepfuse = {"metrics": ["bleu"], "tokenize": "none", "bleu_compat": "sacrebleu"}
    assert grid_protocols(deepfuse, "zh") == ["tok_multibleu", "tok_sacrebleu", "plain_zh", "jieba_sacrebleu"]
    assert table_protocols(deepfuse, "zh") == {"bleu": "tok_sacrebleu"}
    # several references: the paper's BLEU one at a time beside it
    bertgen = {"metrics": ["bleu", "meteor", "bleu_1ref"], "tokenize": "none", "bleu_compat": "multi-bleu",
               "meteor_lang": "en", "meteor_norm": True}
    assert "tok_multibleu_1ref" in grid_protocols(bertgen, "en", n_refs=5)
    assert "tok_multibleu_1ref" not in grid_protocols(bertgen, "en", n_refs=1)
    # METEOR in the scoring block's language (coco-caption: en), both -norm settings, and the
    # target language where Meteor knows it; none without METEOR
    assert [p for p in grid_protocols(bertgen, "de") if p.startswith("meteor")] == [
        "meteor_en_norm", "meteor_en_nonorm", "meteor_de_norm"]
    assert [p for p in grid_protocols({**bertgen, "meteor_lang": None}, "zh") if p.startswith("meteor")] == [
        "meteor_zh_norm", "meteor_zh_nonorm"]
    assert not [p for p in grid_protocols(bertgen, "de", meteor=False) if p.startswith("meteor")]
    # the table's own protocol is always there, e.g. sacreBLEU 13a on the scoring form
    assert grid_protocols({"metrics": ["bleu"], "tokenize": "intl", "bleu_compat": "sacrebleu"}, "de")[0] == "tok_intl"


def test_protocol_ids_parse_and_bad_ones_are_refused():
    p = parse_protocol("detok_13a_lc")
    assert (p.metric, p.text, p.tokenize, p.compat, p.lowercase, p.one_ref) == ("bleu", "detok", "13a", "sacrebleu",
                                                                                True, False)
    assert parse_protocol("meteor_de_nonorm").norm is False
    assert "multi-bleu.perl" in describe("tok_multibleu_1ref") and "one reference at a time" in describe(
        "tok_multibleu_1ref")
    for bad in ("tok_bleu", "raw_13a", "tok_13a_1ref_lc", "meteor_de", "tok_13a_lc_lc"):
        with pytest.raises(ValueError):
            parse_protocol(bad)


def _run(tmp_path, system, seed, lines, refs):
    hyp = tmp_path / f"{system}.{seed}.txt"
    hyp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    score = tmp_path / f"{system}.{seed}.json"
    meta = {"paper": "p", "table": "", "system": system, "pair": "en-de", "test_set": "test", "seed": seed,
            "condition": "congruent"}
    score_files(hyp, refs, score, meta, metrics=("bleu", "bleu_lc"), tokenize="none", bleu_compat="multi-bleu")
    return f"{system}|test|congruent|{seed}", hyp, score


def test_the_papers_column_is_the_tables_own_number(tmp_path):
    """A table (make_table) and its grid from the same score files and translations: each
    marked cell is the table's `ours` of that metric (a mean over two seeds), and a score file
    the grid does not reproduce stops it."""
    ref = tmp_path / "test.de"
    ref.write_text("Ein Mann fährt Rad .\nZwei Hunde spielen im Schnee .\nEine Frau liest ein Buch .\n",
                   encoding="utf-8")
    outputs = {
        ("nmt", 1): ["ein Mann fährt Rad .", "Zwei Hunde spielen im Schnee .", "Eine Frau liest ."],
        ("nmt", 2): ["Ein Mann fährt Fahrrad .", "Zwei Hunde spielen .", "Eine Frau liest ein Buch ."],
        ("mmt", 1): ["Ein Mann fährt Rad .", "zwei Hunde spielen im Schnee .", "Eine Frau liest ein Heft ."],
        ("mmt", 2): ["Ein Mann fährt Rad .", "Zwei Hunde spielen im Schnee .", "Eine Frau liest ein Buch ."],
    }
    runs = [_run(tmp_path, system, seed, lines, [ref]) for (system, seed), lines in outputs.items()]
    published = tmp_path / "published.tsv"
    published.write_text("paper\ttable\tsystem\tpair\ttest_set\tmetric\tvalue\tsource\n", encoding="utf-8")
    table = make_table_from_files([s for _, _, s in runs], "p", "t", published, tmp_path / "t.tsv")
    scoring = {"metrics": ["bleu", "bleu_lc"], "tokenize": "none", "bleu_compat": "multi-bleu"}
    legend = protocol_grid(
        translations={k: str(h) for k, h, _ in runs}, references={"test": [str(ref)]},
        protocols=grid_protocols(scoring, "de"), lang="de", out_tsv=tmp_path / "t.protocols.tsv",
        out_json=tmp_path / "t.protocols.json", table_metrics=table_protocols(scoring, "de"),
        scores={k: str(s) for k, _, s in runs}, meta={"paper": "p", "table": "t"})
    ids, marked, rows = read_grid(tmp_path / "t.protocols.tsv")
    assert [pid for pid in ids if marked[pid]] == ["tok_multibleu", "tok_multibleu_lc"]
    assert [(r["system"], r["n_seeds"]) for r in rows] == [("mmt", "2"), ("nmt", "2")]  # the table's order
    ours = table.set_index(["system", "metric"])["ours"]
    for r in rows:
        assert r["tok_multibleu"] == f"{ours[(r['system'], 'bleu')]:.2f}"
        assert r["tok_multibleu_lc"] == f"{ours[(r['system'], 'bleu_lc')]:.2f}"
    assert r["tok_multibleu"] != r["tok_multibleu_lc"]  # the mmt outputs differ from the reference in case
    assert {p["id"]: p["table_metric"] for p in legend["protocols"]}["tok_multibleu"] == "bleu"
    assert len(legend["runs"]) == 4

    # a score file that says otherwise: the grid stops, naming it
    key, _, score = runs[0]
    data = json.loads(score.read_text(encoding="utf-8"))
    data["scores"]["bleu"]["value"] += 0.5
    score.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match=rf"{score.name}.*protocol tok_multibleu"):
        protocol_grid(translations={k: str(h) for k, h, _ in runs}, references={"test": [str(ref)]},
                      protocols=grid_protocols(scoring, "de"), lang="de", out_tsv=tmp_path / "x.tsv",
                      out_json=tmp_path / "x.json", table_metrics=table_protocols(scoring, "de"),
                      scores={k: str(s) for k, _, s in runs})
    assert not (tmp_path / "x.tsv").exists()


class _FakeMeteor:
    """Stands in for the jar: counts starts, scores a segment by its hypothesis's length."""

    starts: list = []

    def __init__(self, java, jar, args):
        self.cmd = [java, str(jar), *args]
        _FakeMeteor.starts.append(tuple(args))

    def stats(self, hyps, refs_per_seg):
        return [str(len(h.split())) for h in hyps]

    def evaluate(self, stats):
        return [float(s) for s in stats], sum(float(s) for s in stats) / 100

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_every_meteor_variant_of_a_grid_shares_one_jvm_per_language_and_norm(monkeypatch):
    """Two test sets, three runs, three METEOR protocols: three JVM starts (the jar fixes -l and
    -norm when it starts), not one per run."""
    monkeypatch.setattr(m, "_MeteorProcess", _FakeMeteor)
    monkeypatch.setattr(m, "find_java", lambda java=None: "java")
    monkeypatch.setattr(m, "find_meteor_jar", lambda jar=None: (Path("meteor-1.5.jar"), "test"))
    _FakeMeteor.starts = []
    runs = {"a": (["x y", "z"], "t1"), "b": (["x"], "t2"), "c": (["x y z"], "t2")}
    refs = {"t1": [["x y", "z"]], "t2": [["x"]]}
    out = score_protocols(runs, refs, ["meteor_de_norm", "meteor_de_nonorm", "meteor_en_norm", "tok_multibleu"], "de")
    assert len(_FakeMeteor.starts) == 3
    assert out["a"]["meteor_de_norm"]["value"] == pytest.approx(3.0) and out["c"]["meteor_en_norm"]["value"] == 3.0
    assert "lang:de" in out["a"]["meteor_de_nonorm"]["signature"] and "norm:no" in out["a"]["meteor_de_nonorm"][
        "signature"]


@pytest.mark.slow  # two JVM starts
def test_the_meteor_columns_are_the_jars_own_scores():
    if shutil.which("java") is None or m.bundled_jar() is None:
        pytest.skip("Meteor needs Java and pycocoevalcap==1.2")
    hyp = ["ein mann fährt rad .", "Zwei Hunde spielen ."]
    ref = ["ein mann fährt fahrrad .", "zwei hunde spielen im schnee ."]
    got = score_protocols({"r": (hyp, "t")}, {"t": [ref]}, ["meteor_de_norm", "meteor_de_nonorm"], "de")["r"]
    for norm in (True, False):
        want = m.meteor_score(hyp, [ref], lang="de", norm=norm)
        entry = got["meteor_de_norm" if norm else "meteor_de_nonorm"]
        assert entry == {"value": want["value"], "signature": want["signature"]}
    assert got["meteor_de_norm"]["value"] > got["meteor_de_nonorm"]["value"]  # -norm lowercases "Zwei Hunde"


# ---------------------------------------------------------------------------- the committed grids

GRIDS = [(folder, job) for folder in reference_folders(REPO / "reference")
         for job in read_record(folder).get("grid_jobs", [])]


def test_the_smoke_reference_has_a_grid_for_every_translation_table():
    record = read_record(REPO / "reference" / "smoke")
    tables = {(t["paper"], t["table"]) for t in record["tables"] if t["kind"] == "translation"}
    assert {(j["paper"], j["table"]) for j in record["grid_jobs"]} == tables


@pytest.mark.parametrize("folder,job", GRIDS, ids=[f"{f.name}/{j['paper']}/{j['table']}" for f, j in GRIDS])
def test_each_committed_grid_is_what_the_grid_code_builds_from_the_committed_outputs(folder, job, tmp_path):
    """Rebuilt from the committed translations and references (and checked against the committed
    score files), byte for byte; its marked columns are the committed table's `ours`."""
    tsv, legend = rebuild_grid(folder, job, tmp_path)
    assert tsv.read_bytes() == (folder / job["out"]).read_bytes()
    committed = json.loads((folder / job["legend"]).read_text(encoding="utf-8"))
    committed.pop("provenance")
    assert json.loads(legend.read_text(encoding="utf-8")) == committed
    ids, marked, rows = read_grid(folder / job["out"])
    table = read_table(folder / "results" / "tables" / job["paper"] / f"{job['table']}.tsv")
    ours = table.set_index(["system", "test_set", "condition", "metric"])["ours"]
    metric_of = {pid: metric for metric, pid in job["table_metrics"].items()}
    assert [pid for pid in ids if marked[pid]] == list(job["table_metrics"].values())
    for r in rows:
        for pid in (p for p in ids if marked[p]):
            assert r[pid] == f"{ours[(r['system'], r['test_set'], r['condition'], metric_of[pid])]:.2f}", (r, pid)
