"""The core serves more than one paper: a stand-in second paper (tests/standin: a word-level GRU
with a label-smoothed loss, its own recipe, decode and scoring blocks and an analysis, all from
a module outside the package) trains, decodes and makes its tables through the same rules as
Calixto et al., with nothing of it in the trainer, the decoder or common.smk."""

from __future__ import annotations

import os

import pandas as pd
import pytest

STANDIN = """\
datasets:
  grounded:
    sizes: {{train: 300, val: 30, test: 30}}
data:
  corpora: [grounded]
papers:
  standin:
    settings: {settings}
    tables:
      words:
        dataset: grounded
        pair: en-de
        test_sets: [test]
        systems: [word_gru, word_gru_greedy]
        seeds: [1]
      lengths:
        kind: analysis
        analysis: length_ratio
        inputs: translation
        dataset: grounded
        pair: en-de
        test_sets: [test]
        systems: [word_gru]
        seeds: [1]
"""


def standin_config(wf) -> str:
    """STANDIN with every table of the project's own papers disabled (however many papers the
    smoke configuration holds), so that the run builds the stand-in's tables only."""
    import yaml

    from mmt_repro.config import deep_update, load_yaml

    config = deep_update(load_yaml(wf.REPO / "config" / "config.yaml"), load_yaml(wf.SMOKE))
    off = {"papers": {paper: {"tables": {name: {"enabled": False} for name in block.get("tables") or {}}}
                      for paper, block in config["papers"].items()}}
    standin = yaml.safe_load(STANDIN.format(settings=wf.REPO / "tests" / "standin" / "standin.yaml"))
    return yaml.safe_dump(deep_update(off, standin), sort_keys=True)


@pytest.fixture(scope="module")
def standin_run(wf, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("standin")
    cfg = workdir / "standin.yaml"
    cfg.write_text(standin_config(wf), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(wf.REPO / "tests" / "standin"))
    res = wf.snakemake("results/tables/all.tsv", "--directory", str(workdir), "--configfile", str(wf.SMOKE), str(cfg),
                       "--cores", str(wf.THREADS), env=env)
    if res.returncode != 0:
        pytest.fail(f"stand-in paper run failed:\n{wf.failure_report(res, workdir)}")
    return workdir


@pytest.mark.e2e
def test_second_paper_trains_decodes_and_makes_its_tables(standin_run):
    table = pd.read_csv(standin_run / "results" / "tables" / "all.tsv", sep="\t")
    assert set(table.paper) == {"standin"}
    words = table[(table.table == "words") & (table.metric == "bleu")].set_index("system")
    assert set(words.index) == {"word_gru", "word_gru_greedy"}
    assert (words.ours > 0).all()
    assert set(table[table.table == "words"].metric) == {"bleu", "chrf3", "chrf3_prec", "chrf3_rec"}  # its own scoring (no METEOR, TER)
    lengths = table[table.table == "lengths"]
    assert list(lengths.metric) == ["length_ratio"] and 20 < float(lengths.ours.iloc[0]) < 300


@pytest.mark.e2e
def test_second_paper_uses_its_own_recipe_decode_and_loss(standin_run):
    results = standin_run / "results"
    # Word level, joint vocabulary, lowercased: no BPE files, one vocabulary for both sides.
    assert not (results / "text" / "standin").exists()
    assert (results / "vocab" / "standin" / "grounded.en-de.joint.json").is_file()
    hyps = (results / "translations" / "standin" / "word_gru" / "grounded.test.en-de.seed1.congruent.txt").read_text()
    assert len(hyps.splitlines()) == 30 and hyps == hyps.lower() and "@@" not in hyps
    # Its decode blocks: beam 3 for the paper, greedy for the system that overrides it.
    logs = results / "logs" / "translate" / "standin"
    assert "'beam_size': 3" in (logs / "word_gru" / "grounded.test.en-de.seed1.congruent.log").read_text()
    assert "'beam_size': 1" in (logs / "word_gru_greedy" / "grounded.test.en-de.seed1.congruent.log").read_text()
    # The label-smoothed loss has no nll_sum; its extra `nll` is logged in the curve.
    curve = pd.read_csv(results / "models" / "standin" / "word_gru" / "grounded.en-de.seed1.curve.tsv", sep="\t")
    assert {"train_loss", "train_nll", "val_bleu"} <= set(curve.columns) and len(curve) == 3
    assert curve.train_nll.iloc[-1] < curve.train_nll.iloc[0]
