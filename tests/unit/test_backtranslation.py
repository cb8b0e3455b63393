"""Back-translation corpus, comparable descriptions, fine-tuning from a pre-trained model."""

import pytest
import torch

from mmt_repro.corpora.backtranslation import assemble_backtranslation
from mmt_repro.grounded.images import generate_comparable, generate_grounded
from mmt_repro.io import DataError, read_lines
from mmt_repro.text.bpe import learn_bpe
from mmt_repro.checkpoint import read_checkpoint
from mmt_repro.train.trainer import train
from training_jobs import corpus_inputs, train_job

MODEL = dict(emb_dim=16, enc_dim=16, dec_dim=24, att_dim=16, img_dim=4, img_att_dim=8,
             dropout_enc=0.1, dropout_dec=0.1, dropout_out=0.1, dropout_img=0.1, init_std=0.1)
TRAIN = dict(optimizer="adam", lr=0.01, batch_size=8, max_epochs=3, patience=5, log_every=0, seed=7)


def test_comparable_descriptions_keep_the_truth_and_vary_the_wording(tmp_path):
    generate_grounded(tmp_path, {"train": 40, "val": 2, "test": 2}, seed=3, image_size=32)
    info = generate_comparable(tmp_path, per_image=2, seed=3)
    assert info == {"split": "train", "per_image": 2, "images": 40, "langs": ["en", "de"]}
    labels = [line.split("\t") for line in read_lines(tmp_path / "labels" / "train.tsv")[1:]]
    de_words = {"red": "rot", "green": "grün", "blue": "blau", "yellow": "gelb"}
    shapes = {"circle": "kreis", "square": "quadrat", "triangle": "dreieck"}
    for k in (1, 2):
        de = read_lines(tmp_path / f"train_c{k}.de")
        assert read_lines(tmp_path / "image_splits" / f"train_c{k}.txt") == [row[0] for row in labels]
        for row, sentence in zip(labels, de):
            assert de_words[row[2]] in sentence and shapes[row[3]] in sentence  # German states colour, shape
    original = read_lines(tmp_path / "train.de")
    assert read_lines(tmp_path / "train_c1.de") != original  # fresh wording, not a copy
    # Deterministic: the same seed gives the same files.
    first = (tmp_path / "train_c2.en").read_bytes()
    generate_comparable(tmp_path, per_image=2, seed=3)
    assert (tmp_path / "train_c2.en").read_bytes() == first


def test_assemble_backtranslation_reapplies_bpe_and_drops_empty_lines(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("lower lower lowest newer newest\n" * 5, encoding="utf-8")
    codes = learn_bpe([corpus], tmp_path / "codes", num_symbols=3, min_frequency=2)
    syn = [tmp_path / "syn1", tmp_path / "syn2"]
    tgt = [tmp_path / "tgt1", tmp_path / "tgt2"]
    img = [tmp_path / "img1", tmp_path / "img2"]
    syn[0].write_text("lowest newest\n\n", encoding="utf-8")
    syn[1].write_text("newer\nlower\n", encoding="utf-8")
    for p, lines in zip(tgt, (["a b", "c"], ["d", "e f"])):
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for p, lines in zip(img, (["1.jpg", "2.jpg"], ["1.jpg", "2.jpg"])):
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = [tmp_path / "out.src", tmp_path / "out.tgt", tmp_path / "out.img"]
    info = assemble_backtranslation(syn, tgt, img, codes, *out)
    assert info == {"sentences": 3, "files": 2, "dropped_empty": 1}
    src = read_lines(out[0])
    assert "@@" in src[0]  # the synthetic source is segmented with the pair's codes
    assert read_lines(out[1]) == ["a b", "d", "e f"]
    assert read_lines(out[2]) == ["1.jpg", "1.jpg", "2.jpg"]
    syn[1].write_text("only one line\n", encoding="utf-8")
    with pytest.raises(DataError, match="back-translations"):
        assemble_backtranslation(syn, tgt, img, codes, *out)


def test_fine_tuning_an_image_model_from_a_text_only_model(toy_corpus, tmp_path):
    d = toy_corpus["dir"]
    text_cfg = {k: v for k, v in MODEL.items() if k not in ("img_dim", "img_att_dim", "dropout_img")}
    train(train_job(tmp_path / "pre", "doubly_attentive.nmt", text_cfg, dict(TRAIN, max_epochs=1), corpus_inputs(d)))
    pre = read_checkpoint(tmp_path / "pre" / "best.pt")["weights"]
    inputs = dict(corpus_inputs(d, toy_corpus["stores"]), init=str(tmp_path / "pre" / "best.pt"))
    train(train_job(tmp_path / "ft", "doubly_attentive.nmt_src_img", MODEL, dict(TRAIN, max_epochs=1, max_steps=1, lr=1e-12),
                    inputs))
    ft = read_checkpoint(tmp_path / "ft" / "best.pt")["weights"]
    # With a vanishing learning rate, shared tensors still hold the pre-trained values...
    assert torch.allclose(ft["src_emb.weight"], pre["src_emb.weight"], atol=1e-6)
    assert torch.allclose(ft["rec2_src.weight"], pre["rec2_src.weight"], atol=1e-6)
    # ...and the image parts exist only in the fine-tuned model.
    assert "att_img.v.weight" in ft and "att_img.v.weight" not in pre


def test_fine_tuning_refuses_other_vocabularies(toy_corpus, tmp_path):
    from mmt_repro.text.vocab import Vocab
    d = toy_corpus["dir"]
    cfg = dict(emb_dim=8, enc_dim=8, dec_dim=8, att_dim=8)
    train(train_job(tmp_path / "pre", "doubly_attentive.nmt", cfg, dict(TRAIN, max_epochs=1), corpus_inputs(d)))
    Vocab(["x", "y"]).save(tmp_path / "other.json")
    inputs = dict(corpus_inputs(d), src_vocab=str(tmp_path / "other.json"), init=str(tmp_path / "pre" / "best.pt"))
    with pytest.raises(DataError, match="pre-trained with vocabularies"):
        train(train_job(tmp_path / "ft", "doubly_attentive.nmt", cfg, dict(TRAIN, max_epochs=1), inputs))
