"""The cross-paper table (docs/scoring.md): its planning (the full config's row per Multi30k En-De and
En-Fr system of every paper and test set, on the runs the papers' tables plan already; the smoke's
one job over the grounded runs), and the table's BLEU and probe figures from translation,
reference and probe files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sacrebleu

from mmt_repro.config import deep_update, load_yaml
from mmt_repro.io import DataError, UnknownNameError
from mmt_repro.plan import Plan
from mmt_repro.plan_tools.walk import training_runs
from mmt_repro.tables.cross_paper import COLUMNS, NOT_SCORED, NOT_TRANSLATED, make_cross_paper, read_cross_paper
from mmt_repro.tables.probe import make_probe

REPO = Path(__file__).resolve().parents[2]
TABLE = "results/tables/cross_paper.tsv"
MULTI30K_TESTS = ["test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"]


def _config(*overlays):
    config = load_yaml(REPO / "config" / "config.yaml")
    for o in overlays:
        config = deep_update(config, o if isinstance(o, dict) else load_yaml(REPO / "config" / o))
    return config


@pytest.fixture(scope="module")
def full():
    return Plan(_config(), REPO)


@pytest.fixture(scope="module")
def smoke():
    return Plan(_config("smoke.yaml"), REPO)


def _planned_translations(plan) -> set:
    return {plan.run_file("translation", p, t, s, ts, seed, c) for p, t, table in plan.enabled
            if plan.table_kind(p, t) == "translation" for s, ts, seed, c in plan.table_runs(p, t)}


def test_the_full_config_has_a_row_per_multi30k_system_and_test_set(full):
    job = full.cross_paper_jobs.build()
    assert (job.dataset, job.bleu, job.meteor) == ("multi30k", "detok_13a_lc", True)
    assert job.out == TABLE and TABLE in full.targets.default_targets()
    expected = {(p, s, table["pair"]) for p, t, table in full.enabled
                if full.table_kind(p, t) == "translation" and table["dataset"] == "multi30k"
                and table["pair"] in ("en-de", "en-fr", "fr-en") for s in table["systems"]}
    rows = {(r["paper"], r["system"], r["pair"]): [] for r in job.rows}
    for r in job.rows:
        rows[r["paper"], r["system"], r["pair"]].append(r["test_set"])
    assert set(rows) == expected
    assert all(tests == MULTI30K_TESTS for tests in rows.values())
    papers = {p for p, _, _ in rows}
    assert papers == {"doubly_attentive", "emb_pred", "visual_agreement", "bertgen"}  # DeepFuse: VATEX En-Zh
    # every row reads every seed the paper's tables train; a test set they leave out is decoded here
    da = {r["test_set"]: r for r in job.rows if (r["paper"], r["system"]) == ("doubly_attentive", "nmt_src_img")}
    assert sorted(da["test_2016_flickr"]["translations"]) == ["1", "2", "3"] and not da["test_2016_flickr"]["reason"]
    assert da["test_2016_flickr"]["probe"] == {"table": "image_use",
                                               "file": "results/tables/doubly_attentive/image_use.probe.tsv"}
    assert not da["test_2016_flickr"]["decoded_here"]
    for test_set in ("test_2017_flickr", "test_2017_mscoco"):
        row = da[test_set]
        assert row["decoded_here"] and not row["reason"] and row["references"]
        assert row["translations"] == {str(seed): f"results/translations/doubly_attentive/nmt_src_img/multi30k."
                                                  f"{test_set}.en-de.seed{seed}.congruent.txt" for seed in (1, 2, 3)}
        assert not set(row["translations"].values()) & _planned_translations(full)
    assert all(r["translations"] and not r["reason"] for r in job.rows)
    va = {(r["system"], r["test_set"]): r for r in job.rows if r["paper"] == "visual_agreement" and r["pair"] == "en-de"}
    assert va["onlytext", "test_2017_flickr"]["translations"] and va["onlytext", "test_2017_flickr"]["probe_reason"] \
        == "text-only"
    assert va["soft", "test_2016_flickr"]["probe"]["table"] == "image_use"
    assert va["soft", "test_2017_flickr"]["probe"] is None and va["soft", "test_2017_flickr"]["probe_reason"] == "no probe"


def test_the_table_reads_only_runs_the_papers_tables_plan_and_adds_no_training(full):
    job = full.cross_paper_jobs.build()
    own = {f for r in job.rows if r["decoded_here"] for f in r["translations"].values()}
    assert own and set(job.inputs["translations"]) - own <= _planned_translations(full)
    kept = Plan(_config({"cross_paper": {"decode_missing": False}}), REPO).cross_paper_jobs.build()
    assert set(kept.inputs["translations"]) <= _planned_translations(full)
    missing = [r for r in kept.rows if not r["translations"]]
    assert missing and all(r["reason"].startswith("not translated") for r in missing)
    assert set(job.inputs["probes"]) <= set(full.targets.all_probes())
    off = Plan(_config({"cross_paper": {"all": False}}), REPO)
    with_block, without = full.targets.default_targets(), off.targets.default_targets()
    assert [t for t in with_block if t not in without] == [TABLE] and TABLE not in without
    assert len(with_block) == len(without) + 1
    trained = {tuple(vars(w).values()) for w in training_runs(full, [TABLE])[0]}
    assert trained and trained <= {tuple(vars(w).values()) for w in training_runs(off, without)[0]}


def test_the_smoke_plans_one_job_over_the_grounded_runs(smoke):
    job = smoke.cross_paper_jobs.build()
    assert (job.dataset, job.meteor) == ("grounded", False)
    assert smoke.targets.default_targets().count(TABLE) == 1
    assert {r["test_set"] for r in job.rows} == {"test"}
    assert all(r["translations"] and not r["reason"] for r in job.rows)
    assert set(job.inputs["translations"]) <= _planned_translations(smoke)
    assert set(job.inputs["probes"]) <= set(smoke.targets.all_probes())
    probed = {(r["paper"], r["system"]): r["probe"]["table"] for r in job.rows if r["probe"]}
    assert probed == {("doubly_attentive", "nmt_src_img"): "grounded", ("visual_agreement", "mhca"): "grounded",
                      ("visual_agreement", "t_mhca"): "grounded", ("bertgen", "grounded"): "grounded",
                      ("emb_pred", "ours"): "table3"}
    assert {r["paper"] for r in job.rows} == {"doubly_attentive", "visual_agreement", "bertgen", "emb_pred"}
    for r in job.rows:
        if r["probe"] is None:
            assert r["probe_reason"] == ("no probe" if smoke.multimodal(r["paper"], r["system"]) else "text-only")
    with_block = training_runs(smoke, smoke.targets.default_targets())[0]
    off = Plan(_config("smoke.yaml", {"cross_paper": {"all": False}}), REPO)
    assert len(with_block) == len(training_runs(off, off.targets.default_targets())[0])


def test_bad_settings_are_refused(full):
    with pytest.raises(UnknownNameError, match="paper"):
        Plan(_config({"cross_paper": {"papers": ["nope"]}}), REPO).cross_paper_jobs.build()
    with pytest.raises(ValueError, match="not a BLEU protocol"):
        Plan(_config({"cross_paper": {"bleu": "meteor_de_norm"}}), REPO).cross_paper_jobs.build()
    with pytest.raises(ValueError, match="no enabled translation table"):
        Plan(_config({"cross_paper": {"pairs": ["en-cs"]}}), REPO).cross_paper_jobs.build()
    assert Plan(_config({"cross_paper": {"pairs": ["en-cs"]}}), REPO).targets.all_cross_paper() == []


# --------------------------------------------------------------------------- building

REFS = ["a man rides a red bike", "two dogs play in the snow", "a woman is reading a book outside",
        "the children run across the green field"]
HYPS = {  # (paper, system, seed) -> hypotheses (no tokenisation artefacts: detokenising changes nothing)
    ("p1", "mmt", "1"): ["A man rides a red bike", "two dogs play in snow", "a woman reads a book outside",
                         "the children run across the field"],
    ("p1", "mmt", "2"): ["a man rides a bike", "Two dogs play in the snow", "a woman is reading outside",
                         "children run across the green field"],
    ("p1", "nmt", "1"): ["a man rides a bike", "two dogs are in the snow", "a woman is reading",
                         "the kids run across the field"],
    ("p2", "mmt", "1"): ["a man on a red bike", "two dogs play in the snow", "a woman is reading a book",
                         "the children run across a green field"],
}


def _write(path: Path, lines) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _score(path: Path, bleu: float) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"scores": {"bleu": {"value": bleu}}}), encoding="utf-8")
    return str(path)


def _inputs(tmp_path):
    ref = _write(tmp_path / "ref.de", REFS)
    files = {k: _write(tmp_path / f"{k[0]}.{k[1]}.seed{k[2]}.txt", v) for k, v in HYPS.items()}
    scores = {"mmt|test|congruent|1": _score(tmp_path / "s/c.json", 40.0),
              "mmt|test|shuffled|1": _score(tmp_path / "s/s.json", 31.5),
              "mmt|test|blank_mean|1": _score(tmp_path / "s/b.json", 35.0),
              "nmt|test|congruent|1": _score(tmp_path / "s/n.json", 30.0)}
    probe = tmp_path / "probe.tsv"
    make_probe(scores, {"mmt": "nmt"}, probe, paper="p1", table="grounded", pair="en-de")
    row = {"pair": "en-de", "test_set": "test", "references": [ref], "ref_subword": "none", "probe_reason": "",
           "reason": ""}
    rows = [
        {**row, "paper": "p1", "system": "mmt", "translations": {"1": files["p1", "mmt", "1"],
                                                                  "2": files["p1", "mmt", "2"]},
         "probe": {"table": "grounded", "file": str(probe)}},
        {**row, "paper": "p1", "system": "nmt", "translations": {"1": files["p1", "nmt", "1"]}, "probe": None,
         "probe_reason": "text-only"},
        {**row, "paper": "p2", "system": "mmt", "translations": {"1": files["p2", "mmt", "1"]}, "probe": None,
         "probe_reason": "no probe"},
        {**row, "paper": "p2", "system": "mmt", "test_set": "test_2017", "translations": {}, "references": [],
         "probe": None, "probe_reason": "no probe", "reason": "not translated: p2's tables translate test"},
    ]
    return rows, probe


def _expected(*keys) -> str:
    values = [sacrebleu.corpus_bleu(HYPS[k], [REFS], tokenize="13a", lowercase=True).score for k in keys]
    return f"{round(sum(values) / len(values), 2):.2f}"


def test_the_table_has_each_systems_bleu_under_one_protocol_beside_its_probe(tmp_path):
    rows, _ = _inputs(tmp_path)
    out = make_cross_paper(rows, "detok_13a_lc", False, tmp_path / "cross_paper.tsv", tmp_path / "cross_paper.json")
    table = read_cross_paper(tmp_path / "cross_paper.tsv")
    assert list(table[0]) == COLUMNS and len(table) == len(out) == 4
    mmt, nmt, other, missing = table
    assert mmt["bleu"] == _expected(("p1", "mmt", "1"), ("p1", "mmt", "2")) and mmt["n_seeds"] == "2"
    assert nmt["bleu"] == _expected(("p1", "nmt", "1")) and other["bleu"] == _expected(("p2", "mmt", "1"))
    assert mmt["bleu"] != nmt["bleu"]
    # the probe's figures: congruent 40 against shuffled 31.5, blank_mean 35, text-only 30
    assert (mmt["gain"], mmt["use_shuffled"], mmt["use_blank_mean"]) == ("10.00", "8.50", "5.00")
    assert mmt["use_blank_zero"] == "not run" and mmt["probe_table"] == "grounded" and mmt["verdict"] == "partly"
    assert {nmt[c] for c in ("gain", "use_shuffled", "use_blank_zero", "use_blank_mean", "verdict")} == {"text-only"}
    assert other["use_shuffled"] == "no probe"
    assert mmt["meteor"] == NOT_SCORED and "meteor: false" in mmt["note"]
    assert missing["bleu"] == missing["meteor"] == NOT_TRANSLATED and "not translated" in missing["note"]
    legend = json.loads((tmp_path / "cross_paper.json").read_text())
    assert legend["bleu"]["id"] == "detok_13a_lc" and "13a" in legend["bleu"]["signatures"][0]
    assert "lc" in legend["bleu"]["signatures"][0]
    first = legend["rows"][0]
    assert first["translations"] == rows[0]["translations"] and first["references"] == rows[0]["references"]
    assert first["values"]["1"]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(HYPS["p1", "mmt", "1"], [REFS], lowercase=True).score)


def test_a_missing_probe_table_or_an_unknown_system_is_a_clear_error(tmp_path):
    rows, probe = _inputs(tmp_path)
    unknown = [{**rows[0], "system": "nope"}]
    with pytest.raises(DataError, match="no row for system 'nope'.*it has: mmt on test"):
        make_cross_paper(unknown, "detok_13a_lc", False, tmp_path / "a.tsv", tmp_path / "a.json")
    probe.unlink()
    with pytest.raises(DataError, match="probe table does not exist"):
        make_cross_paper(rows, "detok_13a_lc", False, tmp_path / "b.tsv", tmp_path / "b.json")
    assert not (tmp_path / "a.tsv").exists() and not (tmp_path / "b.tsv").exists()


def test_the_results_page_shows_the_table_when_the_reference_has_it(tmp_path):
    from mmt_repro.tables.pages import _cross_paper_section

    assert _cross_paper_section(tmp_path, {}, "../..") == []  # a reference made before the table existed
    record = {"cross_paper": {"out": TABLE, "legend": "results/tables/cross_paper.json"}}
    assert _cross_paper_section(tmp_path, record, "../..") == []  # named but not copied
    rows, _ = _inputs(tmp_path)
    make_cross_paper(rows, "detok_13a_lc", False, tmp_path / TABLE, tmp_path / "results/tables/cross_paper.json")
    lines = _cross_paper_section(tmp_path, record, "../..")
    assert lines[1] == "## Cross-paper" and f"(../../{TABLE})" in lines[3]
    body = [line for line in lines if line.startswith("| p") and not line.startswith("| paper")]
    assert len(body) == 4 and body[0].startswith("| p1 | mmt | en-de | test | 2 | ")


def test_meteor_runs_with_norm_in_each_target_language(tmp_path, monkeypatch):
    import mmt_repro.metrics.protocols as protocols

    calls = []

    def fake_group(runs, references, lang, norm, jar, java):
        calls.append((lang, norm, len(runs)))
        return {run: {"value": 50.0 + len(calls) + int(run[1]), "signature": f"meteor-1.5|lang:{lang}|norm:yes"}
                for run in runs}

    monkeypatch.setattr(protocols, "_meteor_group", fake_group)
    rows, _ = _inputs(tmp_path)
    table = make_cross_paper(rows, "detok_13a_lc", True, tmp_path / "m.tsv", tmp_path / "m.json")
    assert calls == [("de", True, 4)]  # one JVM for the target language, every run and seed
    assert table[0]["meteor"] == "52.50" and table[1]["meteor"] == "52.00"  # the mean over seeds 1 and 2
    assert table[3]["meteor"] == NOT_TRANSLATED and "METEOR" not in table[0]["note"]
    legend = json.loads((tmp_path / "m.json").read_text())
    assert legend["meteor"]["ids"] == ["meteor_de_norm"] and legend["meteor"]["signatures"] == \
        ["meteor-1.5|lang:de|norm:yes"]


def test_each_committed_cross_paper_table_is_what_the_table_code_builds_from_the_committed_outputs(tmp_path,
                                                                                                    monkeypatch):
    from mmt_repro.tables.reference import read_record, reference_folders

    for folder in reference_folders(REPO / "reference"):
        cross = read_record(folder).get("cross_paper")
        if not cross:
            continue  # a reference made without the table (or before it existed)
        legend = json.loads((folder / cross["legend"]).read_text(encoding="utf-8"))
        job = legend["provenance"]["job"]
        monkeypatch.chdir(folder)
        make_cross_paper(job["rows"], job["bleu"], job["meteor"], tmp_path / "t.tsv", tmp_path / "t.json")
        assert (tmp_path / "t.tsv").read_text() == (folder / cross["out"]).read_text(), folder.name
