"""``python -m mmt_repro <verb>``: every verb run for real on tiny inputs, checking what it prints
or writes (not only its exit code). ``translate --segmented`` decodes with a doubly-attentive model
trained here in ~3 s on the toy copy-with-colour task (tests/conftest.py), and its output is scored by
``score``; raw text through an exported system's recipe: tests/unit/test_system_export.py. ``plan`` (the cost plan) is run by tests/unit/test_cost_plan.py, ``progress`` by
tests/unit/test_progress.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mmt_repro.cli import main

REPO = Path(__file__).resolve().parents[2]

# verb -> the test that runs it; test_every_verb_is_tested fails when a verb joins without a test
TESTED = {
    "show": "test_show_prints_the_table_and_refuses_a_missing_one",
    "results-doc": "test_show_paper_and_results_doc",
    "models": "test_models_lists_the_registered_models",
    "check": "test_check_accepts_the_smoke_overlay_and_names_every_bad_key_from_any_directory",
    "check-config": "test_check_accepts_the_smoke_overlay_and_names_every_bad_key_from_any_directory",
    "translate": "test_translate_decodes_with_a_trained_checkpoint_and_score_scores_it",
    "export": "test_translate_decodes_with_a_trained_checkpoint_and_score_scores_it",
    "list": "test_list_shows_what_each_table_needs_and_its_target",
    "score": "test_score_of_a_hypothesis_equal_to_its_reference",
    "config-docs": "test_config_docs_prints_and_writes_the_reference",
    "plan": "tests/unit/test_cost_plan.py",
    "progress": "tests/unit/test_progress.py",
    "reference": "tests/unit/test_reference.py",
    "docs": "tests/unit/test_docs.py",
    "standins": "test_standins_writes_a_mirror_its_manifest_and_the_overlay",
    "rehearsal-report": "tests/unit/test_rehearsal_report.py",
    "commute": "tests/unit/test_commute_scoring.py",
}


def test_every_verb_is_tested(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    verbs = set(re.search(r"\{([a-z,-]+)\}", capsys.readouterr().out).group(1).split(","))
    assert verbs - set(TESTED) == set(), f"verbs without a test here: {sorted(verbs - set(TESTED))}"
    for verb, test in TESTED.items():
        if test.startswith("tests/"):
            text = (REPO / test).read_text(encoding="utf-8")
            assert verb not in verbs or f"['{verb}'" in text or f'["{verb}"' in text
        else:
            assert callable(globals()[test])


def test_show_prints_the_table_and_refuses_a_missing_one(tmp_path, capsys):
    from mmt_repro.tables.build import COLUMNS

    row = dict.fromkeys(COLUMNS, "")
    row.update(paper="toy", table="t1", system="nmt_src_img", pair="en-de", test_set="test_2016_flickr",
               condition="congruent", metric="bleu", ours="35.125", ours_std="0.5", paper_value="36.5",
               delta="-1.375", n_seeds="3", p_value="0.0123", verdict="below")
    table = tmp_path / "t1.tsv"
    table.write_text("\t".join(COLUMNS) + "\n" + "\t".join(str(row[c]) for c in COLUMNS) + "\n", encoding="utf-8")
    assert main(["show", str(table)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "== toy / t1 / en-de / test_2016_flickr"
    assert lines[1].split() == ["system", "condition", "metric", "ours", "paper", "delta", "verdict", "n", "p", "note"]
    assert lines[2].split() == ["nmt_src_img", "congruent", "bleu", "35.12", "±0.50", "36.5", "-1.38", "below", "3",
                                "0.0123"]
    assert main(["show", str(tmp_path / "missing.tsv")]) == 1
    assert "missing.tsv: table does not exist" in capsys.readouterr().err


def test_show_paper_and_results_doc(tmp_path, capsys):
    """`show --paper` (every paper, one paper, Markdown/LaTeX) and `results-doc`; the layout
    itself is tested in tests/unit/test_paper_view.py."""
    from mmt_repro.tables.build import COLUMNS

    rows = []
    for system, metric, ours, paper, delta, verdict in [("nmt", "bleu", "33.00", "33.7", "-0.70", "missed"),
                                                        ("nmt", "meteor", "52.50", "", "", ""),
                                                        ("pbsmt", "bleu", "", "32.9", "", "")]:
        row = dict.fromkeys(COLUMNS, "")
        row.update(paper="toy", table="t1", system=system, pair="en-de", test_set="test_2016_flickr",
                   condition="congruent", metric=metric, ours=ours, paper_value=paper, delta=delta, verdict=verdict,
                   n_seeds="1" if ours else "0", runs="results/models/toy/nmt/m.en-de.seed1.best.pt" if ours else "")
        rows.append("\t".join(row[c] for c in COLUMNS))
    table = tmp_path / "all.tsv"
    table.write_text("\t".join(COLUMNS) + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert main(["show", "--paper", str(table)]) == 0  # `--paper` right before the table: every paper
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "== toy / t1 (en-de, test_2016_flickr)"
    assert lines[3].split() == ["system", "BLEU", "METEOR", "verdict"]
    assert lines[4].split() == ["nmt", "33.00", "(33.7,", "-0.70)", "52.50", "missed"]
    assert lines[5].split() == ["pbsmt", "(32.9)"]
    assert main(["show", str(table), "--paper", "toy", "--format", "markdown"]) == 0
    assert "| nmt | 33.00 (33.7, -0.70) | 52.50 | missed |" in capsys.readouterr().out
    assert main(["show", str(table), "--paper", "--format", "latex"]) == 0
    assert r"\caption{toy / t1 (en-de, test\_2016\_flickr): ours (paper, $\Delta$)}" in capsys.readouterr().out
    assert main(["show", str(table), "--paper", "nope"]) == 1
    assert "no rows of paper 'nope'" in capsys.readouterr().err
    assert main(["results-doc", str(table), "--out", str(tmp_path / "results.md")]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'results.md'}\n"
    doc = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert "| nmt | 33.00 (33.7, -0.70) | 52.50 | missed |" in doc
    assert "- nmt (1 seed): `results/models/toy/nmt/m.en-de.seed1.best.pt`" in doc
    assert main(["results-doc", str(table)]) == 0
    assert capsys.readouterr().out == doc


def test_models_lists_the_registered_models(capsys):
    from mmt_repro.models import available

    assert main(["models"]) == 0
    listed = capsys.readouterr().out.split()
    assert listed == list(available())
    assert {"doubly_attentive.nmt", "doubly_attentive.nmt_src_img", "transformer.nmt"} <= set(listed)


def test_check_accepts_the_smoke_overlay_and_names_every_bad_key_from_any_directory(tmp_path, capsys, monkeypatch):
    """`check` (alias `check-config`) is the preflight (tests/unit/test_preflight.py); it finds the
    repository from the package, so it works from any directory."""
    monkeypatch.chdir(tmp_path)
    smoke = str(REPO / "config" / "smoke.yaml")
    assert main(["check", "--configfile", smoke]) == 0
    assert capsys.readouterr().out.startswith("ok: no problems")
    assert main(["check-config", str(REPO / "config" / "config.yaml"), smoke, "--repo", str(REPO)]) == 0
    assert capsys.readouterr().out.startswith("ok: no problems")
    bad = tmp_path / "bad.yaml"
    bad.write_text("device: tpu\nthreads: {train: 1, decode: 1, features: 1, gpu: 2}\n", encoding="utf-8")
    assert main(["check-config", smoke, str(bad)]) == 1
    err = capsys.readouterr().err
    assert "config key 'device'" in err and "unknown config key 'threads.gpu'" in err and "Traceback" not in err
    assert main(["check", "--configfile", str(tmp_path / "nope.yaml")]) == 1
    assert "nope.yaml: configuration file does not exist" in capsys.readouterr().err
    assert main(["check", "--repo", str(tmp_path)]) == 1
    assert "not the mmt-repro repository" in capsys.readouterr().err


def test_score_of_a_hypothesis_equal_to_its_reference(tmp_path, capsys):
    ref = tmp_path / "ref.txt"
    ref.write_text("a man rides a red bike .\ntwo dogs play in the snow .\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a man rides a red bike .\ntwo dogs play in snow .\n", encoding="utf-8")
    assert main(["score", str(ref), str(ref)]) == 0
    perfect = json.loads(capsys.readouterr().out)
    assert perfect["bleu"]["value"] == pytest.approx(100.0)
    assert perfect["chrf3"]["value"] == pytest.approx(100.0)
    assert perfect["ter"]["value"] == pytest.approx(0.0)
    assert main(["score", str(hyp), str(ref), "--tokenize", "none"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["ter"]["value"] == pytest.approx(100 / 14)  # one deletion in 14 reference words
    details = scores["bleu"]["details"]  # n-gram matches of the 13-token hypothesis, by hand
    assert details["counts"] == [13, 10, 7, 5] and details["totals"] == [13, 11, 9, 7]
    assert "tok:none" in scores["bleu"]["signature"]


MODEL = dict(emb_dim=16, enc_dim=16, dec_dim=24, att_dim=16, img_dim=4, img_att_dim=8,
             dropout_enc=0.0, dropout_dec=0.0, dropout_out=0.0, dropout_img=0.0, init_std=0.1)


def test_translate_decodes_with_a_trained_checkpoint_and_score_scores_it(toy_corpus, tmp_path, capsys):
    from mmt_repro.decode.translate import translate
    from mmt_repro.features.store import write_index
    from mmt_repro.io import read_lines
    from mmt_repro.train.trainer import train
    from training_jobs import corpus_inputs, train_job

    d = toy_corpus["dir"]
    train(train_job(tmp_path, "doubly_attentive.nmt_src_img", MODEL,
                    dict(optimizer="adam", lr=0.02, batch_size=8, max_epochs=12, patience=50, log_every=0, seed=7),
                    corpus_inputs(d, toy_corpus["stores"])))  # writes best.pt, last.pt, curve.tsv in tmp_path
    feats = np.asarray(toy_corpus["val_features"].arr)  # the image of each validation sentence: its colour
    np.save(tmp_path / "val.npy", feats)
    write_index(tmp_path / "val.index.parquet", [f"{i}.jpg" for i in range(len(feats))],
                {"kind": "grid", "shape": list(feats.shape)})
    files = dict(checkpoint=tmp_path / "best.pt", src=d / "val.src", src_vocab=d / "src.json",
                 tgt_vocab=d / "tgt.json", features_npy=tmp_path / "val.npy",
                 features_index=tmp_path / "val.index.parquet")
    argv = ["translate", "--segmented", "--out", str(tmp_path / "hyp.txt"), "--beam", "2", "--max-len", "20",
            "--device", "cpu"]
    for key, value in files.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    assert main(argv) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sentences"] == 16 and info["beam_size"] == 2 and info["max_len"] == 20
    assert info["empty"] == 0 and info["cut_at_max_len"] == 0 and info["shuffled_images"] is False

    hyps = read_lines(tmp_path / "hyp.txt")
    refs = read_lines(d / "val.tgt")
    # the same decode through the library gives the same lines (the CLI passes its options through)
    translate(out=tmp_path / "lib.txt", decode={"beam_size": 2, "max_len": 20}, device="cpu", **files)
    assert read_lines(tmp_path / "lib.txt") == hyps
    # the model learnt the task: the colour (read off the image only) ends nearly every hypothesis
    colours = sum(h.split()[-1] == r.split()[-1] for h, r in zip(hyps, refs))
    assert len(hyps) == 16 and colours >= 14

    assert main(["score", str(tmp_path / "hyp.txt"), str(d / "val.tgt"), "--tokenize", "none"]) == 0
    bleu = json.loads(capsys.readouterr().out)["bleu"]["value"]
    assert 50 < bleu < 100

    # export: one folder (safetensors, config, vocabularies) that translates the same, no pickle; without a
    # job record there is no text recipe, so the folder takes model-form input (--segmented)
    assert main(["export", str(tmp_path / "best.pt"), str(tmp_path / "system"), "--src-vocab", str(d / "src.json"),
                 "--tgt-vocab", str(d / "tgt.json")]) == 0
    assert "config.json, model.safetensors, src_vocab.json, tgt_vocab.json" in capsys.readouterr().out
    assert main(["translate", "--checkpoint", str(tmp_path / "system"), "--src", str(d / "val.src")]) == 1
    assert "recipe.json: the exported folder has no text recipe" in capsys.readouterr().err
    argv = ["translate", "--segmented", "--checkpoint", str(tmp_path / "system"), "--src", str(d / "val.src"), "--out",
            str(tmp_path / "folder.txt"), "--beam", "2", "--max-len", "20", "--device", "cpu",
            "--features-npy", str(tmp_path / "val.npy"), "--features-index", str(tmp_path / "val.index.parquet")]
    assert main(argv) == 0
    assert read_lines(tmp_path / "folder.txt") == hyps
    assert main(["translate", "--segmented", "--checkpoint", str(tmp_path / "best.pt"), "--src", str(d / "val.src"),
                 "--out", str(tmp_path / "x.txt")]) == 1  # a .pt file needs its vocabularies named
    assert main(["translate", "--checkpoint", str(tmp_path / "best.pt"), "--src", str(d / "val.src")]) == 1
    assert "not an exported system folder" in capsys.readouterr().err  # raw input needs an exported folder


def test_config_docs_prints_and_writes_the_reference(tmp_path, capsys):
    schema = str(REPO / "config" / "schema.yaml")
    assert main(["config-docs", "--schema", schema]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# Configuration reference\n")
    assert "| `device` | one of `auto`, `cpu`, `cuda` | yes |" in text
    assert "## `papers.<paper>.tables.<table>` (table)" in text
    assert main(["config-docs", "--schema", schema, "--out", str(tmp_path / "README.md")]) == 0
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == text


def test_python_dash_m_reports_a_user_error_without_a_traceback(tmp_path):
    """The real entry point (`python -m mmt_repro`): exit status 1 and one message, no traceback."""
    out = subprocess.run([sys.executable, "-m", "mmt_repro", "show", str(tmp_path / "none.tsv")], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.startswith("error: ") and "none.tsv: table does not exist" in out.stderr
    assert "Traceback" not in out.stderr


def test_list_shows_what_each_table_needs_and_its_target(capsys):
    """Issue 27 (3): papers x tables x systems, what each needs, whether it is configured, the
    target path; from any directory, an unknown paper without a traceback."""
    assert main(["list", "emb_pred"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("emb_pred\n")
    assert "  table1           NEEDS INPUT              results/tables/emb_pred/table1.tsv" in out
    assert "needs images: NOT SET (datasets.multi30k.images)" in out
    assert "  retrieval        ready                    results/tables/emb_pred/retrieval.tsv" in out
    assert main(["list", "bertgen"]) == 0
    out = capsys.readouterr().out
    block = re.split(r"\n  \S", out.split("  table2_coco ")[1])[0]
    assert "pretrained features butd-regions: NOT SET" in block and "weights vl_bert_base: NOT SET" in block
    assert "needs images" not in block  # the pretrained regions stand in for the images
    assert main(["list", "--configfile", str(REPO / "config" / "smoke.yaml")]) == 0
    smoke = capsys.readouterr().out
    assert "NEEDS INPUT" not in smoke and "ready" in smoke  # the smoke run needs nothing from outside
    assert main(["list", "nope"]) == 1
    assert "unknown paper 'nope'" in capsys.readouterr().err


def test_standins_writes_a_mirror_its_manifest_and_the_overlay(tmp_path, capsys):
    out = tmp_path / "mirror"
    assert main(["standins", str(out), "--inputs", "wmt_newstest", "setimes2_en_tr", "--no-shared", "--seed", "2"]) == 0
    text = capsys.readouterr().out
    assert "wmt_newstest: 8 file(s)" in text and "setimes2_en_tr: 1 file(s)" in text
    assert sorted(p.name for p in out.iterdir()) == ["setimes2", "standin_config.yaml", "standin_manifest.yaml",
                                                     "wmt-newstest"]
    assert main(["standins", str(out), "--inputs", "no_such_input"]) == 1
    assert "no stand-in writer for no_such_input" in capsys.readouterr().err
