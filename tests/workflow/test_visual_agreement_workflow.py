"""Yang et al. (2020) in the smoke run (the shared session run of config/smoke.yaml): the grounded
checks for the Seq2Seq and the Transformer versions, agreement lowering VAD, the alignment stage
against the generator's gold alignment, both directions of the joint checkpoints, Tables 1-5 and
Figure 4."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mmt_repro.text.align import aer_files

pytestmark = pytest.mark.e2e
PAPER = "visual_agreement"


def _table(workdir, name):
    return pd.read_csv(workdir / "results" / "tables" / PAPER / f"{name}.tsv", sep="\t", keep_default_na=False)


def _ours(df, system, metric="bleu", condition="congruent"):
    row = df[(df.system == system) & (df.metric == metric) & (df.condition == condition) & (df.ours != "")]
    assert len(row) == 1, f"no single row for {system}/{metric}/{condition}"
    return float(row.ours.iloc[0])


@pytest.mark.parametrize("text,image", [("onlytext", "mhca"), ("t_onlytext", "t_mhca")])
def test_grounded_image_beats_text_by_10_bleu_and_shuffling_loses_half_the_gain(smoke_run, text, image):
    df = _table(smoke_run, "grounded")
    gain = _ours(df, image) - _ours(df, text)
    assert gain >= 10.0, f"{image} - {text} = {gain:.2f} BLEU"
    lost = _ours(df, image) - _ours(df, image, condition="shuffled")
    assert lost >= 0.5 * gain, f"shuffled images lose {lost:.2f} of a {gain:.2f} BLEU gain"


@pytest.mark.parametrize("text,image", [("onlytext", "mhca"), ("t_onlytext", "t_mhca")])
def test_grounded_probe_says_the_image_model_uses_the_image(smoke_run, text, image):
    """The grounded check's image-use probe (docs/probes.md): the gain over the text-only model,
    and shuffled images take at least half of it away (no blank decode in the smoke: CI time)."""
    from mmt_repro.tables.probe import read_probe

    rows = {r["system"]: r for r in read_probe(smoke_run / "results" / "tables" / PAPER / "grounded.probe.tsv")}
    row = rows[image]
    assert row["counterpart"] == text and float(row["gain"]) >= 10.0, row
    gain = float(row["gain"])
    assert float(row["use_shuffled"]) >= 0.5 * gain and row["blank_mean"] == "", row
    assert row["verdict"] in ("uses the image", "partly"), row


# VAD (eqs. 21-22) runs on grounded_distinct, where each object word has a region of its own
# (2-3 objects of different colours and shapes, one box per object, no whole-image slot; issue 26).
# Its floor is 0: two attentions that prefer no region (uniform) agree exactly, which is where the
# Seq2Seq sat on the identical-object set (0.08). A drop counts only when the model without
# agreement is clearly off that floor, and then agreement must remove a fifth of it at least.
# Measured on the distinct set (3 epochs, 2026-11-26): mhca 0.196 -> soft_frozen 0.128, t_mhca 0.490
# -> t_hard 0.224 (docs/visual_agreement.md).
VAD_OFF_FLOOR = 0.15
VAD_DROP = 0.8


@pytest.mark.parametrize("without,with_", [("mhca", "soft_frozen"), ("t_mhca", "t_hard")])
def test_agreement_training_lowers_vad(smoke_run, without, with_):
    df = _table(smoke_run, "grounded_vad")
    assert df[df.ours != ""].runs.str.contains("/grounded_distinct.en-de.").all()
    before, after = _ours(df, without, "vad"), _ours(df, with_, "vad")
    assert before >= VAD_OFF_FLOOR, f"{without}: VAD {before:.3f} at its floor (0): no drop can count"
    assert after <= VAD_DROP * before, f"{with_}: VAD {after:.3f} against {before:.3f} without agreement"


def test_alignment_stage_matches_the_gold_alignment_and_logs_the_likelihood(smoke_run):
    out = smoke_run / "results" / "align" / PAPER / "grounded_distinct.en-de"  # the sets with VAD and t_hard
    gold = smoke_run / "results" / "data" / "grounded_distinct" / "align" / "test.en-de.gold"
    assert aer_files(out / "test.align", gold)["aer"] < 0.15
    log = (smoke_run / "results" / "logs" / "learn_alignment" / PAPER / "grounded_distinct.en-de.log").read_text()
    assert "log_e likelihood" in log
    assert "forward_log_likelihood" in (smoke_run / "results" / "logs" / "align" / PAPER / "grounded_distinct.en-de"
                                        / "test.log").read_text()


def test_transformer_alignment_block_is_recorded(smoke_run):
    choice = json.loads((smoke_run / "results" / "align" / PAPER / "grounded_distinct.en-de" / "layer.t_mhca.seed1.json")
                        .read_text())
    for direction in ("forward", "backward"):
        assert 0 <= choice[direction]["layer"] < len(choice[direction]["aer"])
    log = (smoke_run / "results" / "logs" / "train_model" / PAPER / "t_hard" / "grounded_distinct.en-de.seed1.log").read_text()
    assert "alignment layer from" in log


def test_backward_systems_decode_the_joint_checkpoint(smoke_run):
    df = _table(smoke_run, "table1_de_en")
    assert set(df[df.ours != ""].system) == {"onlytext_bwd", "soft_bwd"}
    assert set(df[df.ours != ""].pair) == {"de-en"}
    models = smoke_run / "results" / "models" / PAPER
    assert not (models / "soft_bwd").exists()  # no training of its own
    stats = json.loads((smoke_run / "results" / "translations" / PAPER / "soft_bwd"
                        / "grounded.test.de-en.seed1.congruent.stats.json").read_text())
    assert stats["direction"] == "backward"
    assert _ours(df, "soft_bwd") > 20.0


def test_every_table_and_figure_4(smoke_run):
    # Tables 3 and 4 (+ Image, Frozen-WT) run in the full config only: the smoke's budget (issue 26)
    for name in ("table1_en_de", "table1_de_en", "table2_en_de", "table5_en_de", "figure4"):
        df = _table(smoke_run, name)
        assert (df.ours != "").any(), name
        assert df[df.ours != ""].note.str.contains("smoke").all() or name.startswith("grounded")
    betas = _table(smoke_run, "figure4")
    assert {"beta_visual", "beta_non_visual"} <= set(betas.metric)
    assert (smoke_run / "results" / "figures" / PAPER / "figure4.attention.png").stat().st_size > 0
