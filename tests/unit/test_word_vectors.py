"""Pretrained word vectors for a vocabulary (Hirasawa et al. 2019, sec. 3.3): debiasing
(Mu & Viswanath 2018), the unknown-word vector, the table's rows, and fastText training."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from mmt_repro.io import DataError
from mmt_repro.text.vocab import Vocab
from mmt_repro.text.word_vectors import (
    build_embedding_table,
    debias,
    load_embedding_table,
    read_vectors,
    train_word_vectors,
)


def _write_vec(path, vectors: dict, gz=False):
    dim = len(next(iter(vectors.values())))
    text = f"{len(vectors)} {dim}\n" + "".join(w + " " + " ".join(repr(float(v)) for v in vec) + "\n"
                                             for w, vec in vectors.items())
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_debias_removes_the_mean_and_the_top_five_directions():
    rng = np.random.default_rng(0)
    n, d = 400, 20
    common = 5.0 * rng.standard_normal(d)  # a shared offset, as real embeddings have
    strong = np.linalg.qr(rng.standard_normal((d, 5)))[0].T  # 5 orthonormal directions
    x = common + rng.standard_normal((n, 5)) * [9, 8, 7, 6, 5] @ strong + 0.5 * rng.standard_normal((n, d))
    out, info = debias(x, 5)
    assert np.allclose(out.mean(axis=0), 0.0, atol=1e-9)  # the mean is gone
    centred = x - x.mean(axis=0)
    top = np.linalg.svd(centred, full_matrices=False)[2][:5]
    assert np.allclose(out @ top.T, 0.0, atol=1e-8)  # nothing left along the top 5 directions
    rest = np.linalg.svd(centred, full_matrices=False)[2][5:]
    assert np.allclose(out @ rest.T, centred @ rest.T)  # the other directions untouched
    # the planted directions are the ones removed: they carried most of the variance
    assert sum(info["removed_variance"]) > 0.9 and info["mean_norm"] == pytest.approx(np.linalg.norm(x.mean(0)))
    # by hand: mean (1, 1); centred rows (2, 0), (-2, 0), (0, .5), (0, -.5): the top direction is x
    out1, _ = debias(np.array([[3.0, 1.0], [-1.0, 1.0], [1.0, 1.5], [1.0, 0.5]]), 1)
    assert np.allclose(out1, [[0.0, 0.0], [0.0, 0.0], [0.0, 0.5], [0.0, -0.5]])


def test_unknown_vector_is_the_mean_of_pretrained_words_outside_the_vocabulary(tmp_path):
    vec = _write_vec(tmp_path / "v.vec", {"</s>": [1, 1], "a": [1, 0], "b": [0, 1], "zz": [4, 2], "yy": [2, 0]})
    read = read_vectors(vec, {"a", "b", "c", "</s>"})
    assert set(read["vectors"]) == {"a", "b", "</s>"}
    assert np.allclose(read["other_mean"], [3.0, 1.0]) and read["n_other"] == 2 and read["n_total"] == 5
    gz = _write_vec(tmp_path / "v.vec.gz", {"a": [1, 0], "q": [3, 3]}, gz=True)
    assert np.allclose(read_vectors(gz, {"a"})["other_mean"], [3, 3])


def test_table_rows_follow_the_vocabulary(tmp_path):
    (tmp_path / "train.txt").write_text("a a a b c\n")
    vocab = Vocab.build([tmp_path / "train.txt"])  # <pad> <bos> <eos> <unk> a b c
    vocab.save(tmp_path / "vocab.json")
    vec = _write_vec(tmp_path / "v.vec", {"</s>": [1, 1, 0], "a": [1, 0, 0], "b": [0, 2, 0], "zz": [0, 0, 3],
                                          "yy": [0, 0, 1]})
    # No preprocessing: rows are the raw vectors; c (not pretrained) gets the unknown vector.
    report = build_embedding_table(tmp_path / "vocab.json", vec, tmp_path / "raw.npy", tmp_path / "raw.json",
                                   n_components=0, center=False, normalize=False)
    raw = np.load(tmp_path / "raw.npy")
    assert raw.dtype == np.float32 and raw.shape == (7, 3)
    assert np.allclose(raw[[0, 1]], 0.0)  # <pad>, <bos>
    assert np.allclose(raw[2], [1, 1, 0])  # <eos>: fastText's </s>
    assert np.allclose(raw[3], [0, 0, 2])  # <unk>: mean of zz and yy
    assert np.allclose(raw[4:], [[1, 0, 0], [0, 2, 0], [0, 0, 2]])  # a, b, c (missing -> <unk>)
    assert report["vocab_words_missing"] == 1 and report["missing_examples"] == ["c"]
    # The paper's preprocessing: centred over <eos>, <unk> and the words, 1 direction removed, unit rows.
    build_embedding_table(tmp_path / "vocab.json", vec, tmp_path / "t.npy", tmp_path / "t.json", n_components=1)
    t = load_embedding_table(tmp_path / "t.npy", 7, 3)
    body, _ = debias(raw[2:].astype(np.float64), 1)
    expect = body / np.linalg.norm(body, axis=1, keepdims=True)
    assert np.allclose(t[2:], expect, atol=1e-6) and np.allclose(t[:2], 0.0)
    assert np.allclose(np.linalg.norm(t[2:], axis=1), 1.0, atol=1e-6)
    assert json.loads((tmp_path / "t.json").read_text())["n_components"] == 1
    with pytest.raises(DataError, match=r"shape \(7, 3\).*needs \(7, 4\)"):
        load_embedding_table(tmp_path / "t.npy", 7, 4)
    with pytest.raises(DataError, match="emb_dim is 8"):
        build_embedding_table(tmp_path / "vocab.json", vec, tmp_path / "x.npy", tmp_path / "x.json", dim=8)


def test_bad_vector_files_name_the_problem(tmp_path):
    (tmp_path / "bad.vec").write_text("a 1 2\n")
    with pytest.raises(DataError, match="not a '<count> <dim>' header"):
        read_vectors(tmp_path / "bad.vec", {"a"})
    (tmp_path / "short.vec").write_text("2 3\na 1 2 3\nb 1 2\n")
    with pytest.raises(DataError, match=r"line 3 \('b'\) has 2 values"):
        read_vectors(tmp_path / "short.vec", {"a"})
    with pytest.raises(DataError, match="does not exist"):
        read_vectors(tmp_path / "none.vec", {"a"})


def test_trained_vectors_are_reproducible_and_readable(tmp_path):
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(30)]
    (tmp_path / "a.txt").write_text("\n".join(" ".join(rng.choice(words, 8)) for _ in range(200)) + "\n")
    kw = dict(dim=8, epoch=2, bucket=1000)
    info = train_word_vectors([tmp_path / "a.txt"], tmp_path / "one.vec", **kw)
    train_word_vectors([tmp_path / "a.txt"], tmp_path / "two.vec", **kw)
    assert (tmp_path / "one.vec").read_bytes() == (tmp_path / "two.vec").read_bytes()
    read = read_vectors(tmp_path / "one.vec", set(words) | {"</s>"})
    assert info["dim"] == 8 and read["dim"] == 8 and set(read["vectors"]) == set(words) | {"</s>"}


def test_moses_escaped_words_find_their_raw_vectors(tmp_path):
    """Issue 24: Multi30k is Moses-tokenised (``&apos;s``, ``l&apos;``, ``&quot;``); fastText's
    vectors were trained on raw text. Such words take the vector of their unescaped form instead
    of the <unk> vector (with which they tied in the fixed output table, so nearest-neighbour
    decoding wrote <unk>)."""
    (tmp_path / "train.txt").write_text("l&apos; homme &apos;s &quot; &amp; x\n")
    vocab = Vocab.build([tmp_path / "train.txt"])
    vocab.save(tmp_path / "vocab.json")
    vec = _write_vec(tmp_path / "v.vec", {"</s>": [1, 1, 0, 0], "l'": [1, 0, 0, 0], "homme": [0, 1, 0, 0],
                                          "'s": [0, 0, 1, 0], '"': [0, 0, 0, 1], "&": [1, 0, 1, 0],
                                          "other": [0, 1, 1, 1]})
    report = build_embedding_table(tmp_path / "vocab.json", vec, tmp_path / "t.npy", tmp_path / "t.json",
                                   n_components=0, center=False, normalize=False)
    table = np.load(tmp_path / "t.npy")
    row = {w: table[vocab.id(w)] if hasattr(vocab, "id") else table[vocab.tokens.index(w)] for w in vocab.tokens}
    assert np.allclose(row["l&apos;"], [1, 0, 0, 0]) and np.allclose(row["&apos;s"], [0, 0, 1, 0])
    assert np.allclose(row["&quot;"], [0, 0, 0, 1]) and np.allclose(row["&amp;"], [1, 0, 1, 0])
    assert report["vocab_words_found_unescaped"] == 4 and report["missing_examples"] == ["x"]
    assert np.allclose(row["x"], row["<unk>"]) and not np.allclose(row["&apos;s"], row["<unk>"])


def test_the_standin_fasttext_files_read_as_the_published_ones(standin):
    """cc.<lang>.300.vec.gz stand-ins (mmt_repro.standins), fetched from a stand-in mirror:
    header '<count> 300', one 300-d vector per word of the stand-in corpora."""
    files = standin("fasttext_cc")["files"]
    with gzip.open(files["cc.de.300.vec.gz"], "rt", encoding="utf-8") as fh:
        count, dim = map(int, fh.readline().split())
        first = fh.readline().split(" ")
    assert dim == 300 and len(first) == 301 and count > 30
    got = read_vectors(files["cc.de.300.vec.gz"], {"mann", "hund", "no-such-word"})
    assert got["dim"] == 300 and set(got["vectors"]) == {"mann", "hund"}
    assert got["n_total"] == count and got["n_other"] == count - 2
