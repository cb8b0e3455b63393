"""Vocab: fixed specials, deterministic ids, unk, decode, persistence, fingerprint."""

from __future__ import annotations

import json

import pytest

from mmt_repro.io import DataError
from mmt_repro.text.vocab import Vocab


@pytest.fixture
def corpus(tmp_path):
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    # counts: the 4, a 2, cat 2, dog 2, runs 1, sits 1
    a.write_text("the dog runs\nthe cat sits\n", encoding="utf-8")
    b.write_text("a dog the cat\nthe a\n", encoding="utf-8")
    return [a, b]


def test_specials_are_fixed():
    v = Vocab(["x", "y"])
    assert (Vocab.pad_id, Vocab.bos_id, Vocab.eos_id, Vocab.unk_id) == (0, 1, 2, 3)
    assert v.tokens[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert (Vocab.PAD, Vocab.BOS, Vocab.EOS, Vocab.UNK) == ("<pad>", "<bos>", "<eos>", "<unk>")
    assert v.encode(["x", "y"]) == [4, 5]
    assert len(v) == 6


def test_build_orders_by_frequency_then_token(corpus):
    v = Vocab.build(corpus)
    # ties (a/cat/dog 2, runs/sits 1) are broken alphabetically
    assert v.tokens[4:] == ["the", "a", "cat", "dog", "runs", "sits"]
    assert Vocab.build(list(reversed(corpus))) == v  # file order does not matter
    assert Vocab.build(corpus, min_freq=2).tokens[4:] == ["the", "a", "cat", "dog"]
    assert Vocab.build(corpus, max_size=3).tokens[4:] == ["the", "a", "cat"]
    assert len(Vocab.build(corpus, max_size=0)) == 4


def test_build_skips_specials_in_text(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("<unk> x <pad> x\n", encoding="utf-8")
    assert Vocab.build([f]).tokens == ["<pad>", "<bos>", "<eos>", "<unk>", "x"]


def test_encode_unknown_gives_unk(corpus):
    v = Vocab.build(corpus)
    assert v.encode(["the", "zebra", "dog"]) == [4, Vocab.unk_id, 7]
    assert v.encode([]) == []


def test_decode_stops_at_eos_and_skips_pad_bos(corpus):
    v = Vocab.build(corpus)
    ids = [Vocab.bos_id, 4, 7, Vocab.pad_id, 8, Vocab.eos_id, 5, 5]
    assert v.decode(ids) == ["the", "dog", "runs"]
    assert v.decode([4, Vocab.unk_id]) == ["the", "<unk>"]
    assert v.decode([Vocab.eos_id, 4]) == []
    with pytest.raises(ValueError, match="outside"):
        v.decode([99])


def test_invalid_tokens_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        Vocab(["a", "b", "a"])
    with pytest.raises(ValueError, match="special"):
        Vocab(["<eos>"])
    with pytest.raises(ValueError, match="whitespace"):
        Vocab(["a b"])


def test_save_load_round_trip(corpus, tmp_path):
    v = Vocab(["ü", "straße", "&apos;s"])
    path = v.save(tmp_path / "sub" / "vocab.json")
    w = Vocab.load(path)
    assert w == v
    assert w.tokens == v.tokens
    assert w.fingerprint() == v.fingerprint()
    assert w.encode(["straße"]) == [5]
    assert [p.name for p in path.parent.iterdir()] == ["vocab.json"]  # no temp files left


@pytest.mark.parametrize(
    "content, problem",
    [
        ("{not json", "not valid UTF-8 JSON"),
        ("[1, 2]", "not a vocabulary file"),
        (json.dumps({"format": "mmt_repro.vocab", "version": 1, "tokens": ["a", "b"]}), "special symbols"),
        (json.dumps({"format": "mmt_repro.vocab", "version": 1, "tokens": ["<pad>", "<bos>", "<eos>", "<unk>", "a", "a"]}), "duplicate"),
        (json.dumps({"format": "mmt_repro.vocab", "version": 7, "tokens": []}), "version"),
    ],
)
def test_load_malformed_raises_data_error(tmp_path, content, problem):
    path = tmp_path / "bad_vocab.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=problem) as info:
        Vocab.load(path)
    assert "bad_vocab.json" in str(info.value)


def test_load_detects_edited_file(tmp_path):
    path = Vocab(["a", "b"]).save(tmp_path / "v.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tokens"][4], data["tokens"][5] = "b", "a"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match="fingerprint"):
        Vocab.load(path)


def test_load_missing_file(tmp_path):
    with pytest.raises(DataError, match="missing.json"):
        Vocab.load(tmp_path / "missing.json")


def test_fingerprint_changes_with_tokens():
    base = Vocab(["a", "b", "c"])
    fp = base.fingerprint()
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert Vocab(["a", "b", "c"]).fingerprint() == fp
    assert Vocab(["a", "c", "b"]).fingerprint() != fp  # same tokens, other ids
    assert Vocab(["a", "b"]).fingerprint() != fp
    assert Vocab(["a", "b", "d"]).fingerprint() != fp
    assert Vocab(["a", "b", "c"]) == base
    assert Vocab(["a", "c", "b"]) != base
    assert hash(Vocab(["a", "b", "c"])) == hash(base)


def test_coverage_counts_unknown_tokens_and_long_sentences(tmp_path):
    from mmt_repro.text.vocab import coverage

    vocab = Vocab(["a", "b", "c@@", "d"])
    (tmp_path / "t.txt").write_text("a b c@@ d\na x y\nb b b b b\n", encoding="utf-8")
    (tmp_path / "w.txt").write_text("a b cd\na x y\nb b b b b\n", encoding="utf-8")
    cov = coverage(tmp_path / "t.txt", vocab, max_len=4, words=tmp_path / "w.txt")
    assert cov == {"sentences": 3, "tokens": 12, "unk_tokens": 2, "unk_rate": round(2 / 12, 6),
                   "sentences_with_unk": 1, "sentences_over_max_len": 1, "tokens_per_word": round(12 / 11, 4)}


def test_vocab_report_rows(tmp_path):
    from mmt_repro.text.vocab import vocab_report

    Vocab(["a", "b"]).save(tmp_path / "v.json")
    (tmp_path / "codes").write_text("#version: 0.2\na b\nab c\n", encoding="utf-8")
    (tmp_path / "t.txt").write_text("a b z\n", encoding="utf-8")
    row = dict(dataset="d", pair="en-de", lang="en", vocab=str(tmp_path / "v.json"), published_size=7,
               codes=str(tmp_path / "codes"), corpus="train", split="train", text=str(tmp_path / "t.txt"))
    out = vocab_report([row], tmp_path / "r.tsv", max_len=80)
    header, line = out.read_text().splitlines()
    values = dict(zip(header.split("\t"), line.split("\t")))
    assert values["vocab_size"] == "2" and values["published_size"] == "7" and values["merges"] == "2"
    assert values["unk_tokens"] == "1" and values["sentences_with_unk"] == "1" and values["vocab"] == "v.json"
