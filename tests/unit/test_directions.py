"""The contract's extensions for jointly trained bidirectional models: a system that decodes
another system's checkpoint backward (``reverse_of``), per-example extras from files
(``extras: [align]``) and per-pair overrides (``by_pair``)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from mmt_repro.config import ConfigError
from mmt_repro.decode.translate import translate
from mmt_repro.io import DataError
from mmt_repro.models import Vocabs, build_model
from mmt_repro.model_configs import check_model_configs
from mmt_repro.settings import load_paper
from mmt_repro.text.vocab import Vocab
from mmt_repro.train.trainer import train
from training_jobs import train_job

TEXT = {"emb_dim": 8, "hidden": 8, "att_dim": 8, "dropout": 0.0}


def _paper(tmp_path, systems, align=True):
    data = {"recipe": {"langs": ["en", "de"], "chain": "tok", "subword": "none"}, "systems": systems}
    if align:
        data["align"] = {}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_reverse_system_takes_the_forward_systems_model(tmp_path):
    path = _paper(tmp_path, {
        "fwd": {"model": "visual_agreement.seq2seq_text", "model_config": TEXT,
                "by_pair": {"en-fr": {"model_config": {"dropout": 0.2}, "train": {"lr": 0.5}}}},
        "bwd": {"reverse_of": "fwd", "decode": {"beam_size": 2}},
    })
    s = load_paper("p", path)
    assert s.system("bwd").model == "visual_agreement.seq2seq_text" and s.system("bwd").reverse_of == "fwd"
    assert s.system("fwd").for_pair("en-fr") == ({**TEXT, "dropout": 0.2}, {"lr": 0.5})
    assert s.system("fwd").for_pair("en-de") == (TEXT, {})
    check_model_configs(s)


@pytest.mark.parametrize("systems,match", [
    ({"bwd": {"reverse_of": "nope"}}, "unknown system 'nope'"),
    ({"a": {"model": "visual_agreement.seq2seq_text"}, "b": {"reverse_of": "a"}, "c": {"reverse_of": "b"}},
     "decodes another system itself"),
    ({"a": {"model": "visual_agreement.seq2seq_text"}, "b": {"reverse_of": "a", "train": {"lr": 1}}},
     "trains nothing"),
    ({"a": {"model": "visual_agreement.seq2seq_text", "extras": ["tags"]}}, "unknown extras"),
    ({"a": {"model": "visual_agreement.seq2seq_text", "by_pair": {"en-fr": {"decode": {}}}}}, "by_pair"),
])
def test_bad_system_settings_name_the_problem(tmp_path, systems, match):
    with pytest.raises(ConfigError, match=match):
        load_paper("p", _paper(tmp_path, systems))


def test_extras_need_the_align_stage_and_reverse_needs_a_backward_model(tmp_path):
    with pytest.raises(ConfigError, match="no `align` block"):
        load_paper("p", _paper(tmp_path, {"a": {"model": "visual_agreement.seq2seq_text", "extras": ["align"]}},
                               align=False))
    s = load_paper("p", _paper(tmp_path, {"a": {"model": "doubly_attentive.nmt"}, "b": {"reverse_of": "a"}}))
    with pytest.raises(ConfigError, match="no backward model"):
        check_model_configs(s)


@pytest.fixture()
def pair_files(tmp_path):
    en = ["a red circle .", "two blue squares .", "a green triangle ."] * 4
    de = ["ein roter kreis .", "zwei blaue quadrate .", "ein grünes dreieck ."] * 4
    files = {}
    for lang, lines in (("en", en), ("de", de)):
        files[lang] = tmp_path / f"train.{lang}"
        files[lang].write_text("\n".join(lines) + "\n")
        Vocab.build([files[lang]]).save(tmp_path / f"vocab.{lang}.json")
        files[f"v{lang}"] = tmp_path / f"vocab.{lang}.json"
    files["align"] = tmp_path / "train.align"
    files["align"].write_text("0-0 1-1 2-2 3-3\n" * 12)
    return files


def test_one_checkpoint_trains_both_directions_and_decodes_each(pair_files, tmp_path):
    f = pair_files
    cfg = {"optimizer": "adam", "lr": 0.03, "batch_size": 4, "max_epochs": 40, "patience": 40, "log_every": 0}
    model = {**TEXT, "emb_dim": 16, "hidden": 16}
    inputs = {"src_vocab": f["ven"], "tgt_vocab": f["vde"], "train_src": f["en"], "train_tgt": f["de"], "val_src": f["en"],
              "val_tgt": f["de"], "val_ref": f["de"]}
    job = train_job(tmp_path, "visual_agreement.seq2seq_text", model, cfg, {k: str(v) for k, v in inputs.items()},
                    extras={"align": f["align"]}, device="auto")
    out = train(dataclasses.replace(job, best=str(tmp_path / "m.best.pt"), last=str(tmp_path / "m.last.pt"),
                                    curve=str(tmp_path / "m.curve.tsv")))
    assert out["best_val_bleu"] > 50
    curve = (tmp_path / "m.curve.tsv").read_text().splitlines()[0].split("\t")
    assert {"train_nll_fwd", "train_nll_bwd"} <= set(curve)
    translate(tmp_path / "m.best.pt", f["en"], tmp_path / "fwd.txt", f["ven"], f["vde"], decode={"beam_size": 1})
    info = translate(tmp_path / "m.best.pt", f["de"], tmp_path / "bwd.txt", f["vde"], f["ven"],
                     decode={"beam_size": 1}, direction="backward", stats_out=tmp_path / "bwd.json")
    assert info["direction"] == "backward"
    assert (tmp_path / "fwd.txt").read_text().splitlines()[:3] == ["ein roter kreis .", "zwei blaue quadrate .",
                                                                   "ein grünes dreieck ."]
    english = set(Vocab.load(f["ven"]).tokens) - {"<unk>"}
    back = (tmp_path / "bwd.txt").read_text().splitlines()
    assert len(back) == 12 and all(line.split() and set(line.split()) <= english for line in back)
    with pytest.raises(DataError, match="another src vocabulary"):  # backward with the forward vocabularies
        translate(tmp_path / "m.best.pt", f["en"], tmp_path / "x.txt", f["ven"], f["vde"], direction="backward")


def test_a_one_way_checkpoint_refuses_backward_decoding(pair_files, tmp_path):
    from mmt_repro.checkpoint import save_checkpoint

    f = pair_files
    sv, tv = Vocab.load(f["ven"]), Vocab.load(f["vde"])
    model = build_model("doubly_attentive.nmt", {"emb_dim": 4, "enc_dim": 4, "dec_dim": 4, "att_dim": 4},
                        Vocabs.of(sv, tv))
    save_checkpoint(tmp_path / "one.pt", model, {"src": sv.fingerprint(), "tgt": tv.fingerprint()})
    with pytest.raises(DataError, match="reverse_of"):
        translate(tmp_path / "one.pt", f["de"], tmp_path / "x.txt", f["vde"], f["ven"], direction="backward")
