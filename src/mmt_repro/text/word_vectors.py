"""Pretrained word vectors for a model vocabulary (Hirasawa et al. 2019, section 3.3).

The paper initialises the encoder and decoder embeddings, and the fixed output table of its
embedding-prediction decoder, from the fastText Common Crawl vectors (Grave et al. 2018; CBOW,
300-d), preprocessed as follows:

* the unknown word's vector is "the average embedding over words that are a part of pretrained
  embeddings but are not included in the vocabularies" (:func:`read_vectors` accumulates it
  while reading, :func:`build_embedding_table` puts it on the ``<unk>`` row);
* "all embeddings are debiased to make the average embedding into a zero vector and the top
  five principal components are subtracted" (Mu & Viswanath 2018, all-but-the-top:
  :func:`debias`).

What the paper leaves open follows the authors' code (``toshohirasawa/nmtpytorch-emb-pred``,
``nmtpytorch/utils/embedding.py``; facts only, no code taken):

* the table is built over the *model's* vocabulary: the rows of ``<eos>`` (fastText's own
  ``</s>`` vector), ``<unk>`` and the words are centred and stripped of their top principal
  components together; ``<pad>`` and ``<bos>`` are zero rows;
* every row is then scaled to unit length (the decoder compares by cosine);
* a vocabulary word is looked up as written, then in its Moses-unescaped form: the Multi30k
  text is tokenised by Moses, which writes ``'`` as ``&apos;`` (``&apos;s``, ``l&apos;``),
  ``"`` as ``&quot;`` and so on, while the fastText vectors were trained on raw text (the
  report counts the words found that way);
* a vocabulary word without a pretrained vector gets the ``<unk>`` vector (the authors read the
  ``.bin`` model, whose sub-word n-grams give every word a vector; the published ``.vec`` files
  we read have none for such words, and the report counts them).

When the official vectors are not at hand (offline runs, CI), :func:`train_word_vectors`
trains fastText CBOW vectors on the text that is available (the ``fasttext`` module of the
``fasttext-numpy2`` package) and writes them in the same ``.vec`` format.

The table is a float32 ``.npy`` of shape ``(len(vocab), dim)``, row ``i`` for token id ``i``,
with a JSON report next to it (coverage, the words averaged into ``<unk>``, the variance the
removed directions carried).
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from mmt_repro.io import DataError, atomic_path, atomic_write, read_lines
from mmt_repro.text.vocab import Vocab

log = logging.getLogger(__name__)

#: fastText's end-of-sentence token (its vector stands for ``<eos>``).
FASTTEXT_EOS = "</s>"


# --------------------------------------------------------------------------- reading


def _open_vec(path: Path):
    return gzip.open(path, "rt", encoding="utf-8", errors="strict") if path.suffix == ".gz" else open(
        path, encoding="utf-8", errors="strict")


def read_vectors(path: str | os.PathLike, words: set[str] | frozenset[str]) -> dict:
    """The vectors of ``words`` from a word-vector file, and the mean of all the others.

    ``path``: a fastText ``.vec`` text file (``.vec.gz`` too: a header line ``count dim``,
    then ``word v_1 ... v_dim`` per line) or a fastText ``.bin`` model. Returns ``{"vectors":
    {word: float64 (dim,)}, "other_mean": (dim,) or None, "n_other": int, "n_total": int,
    "dim": int}``: ``other_mean`` averages every vector whose word is not in ``words`` (the
    paper's unknown-word vector when ``words`` is the vocabulary); None when there is none.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "word-vector file does not exist",
                        "fetch the fastText vectors (manifest input fasttext_cc) or train them (word_vectors.source: trained)")
    if path.suffix == ".bin":
        return _read_bin(path, words)
    found: dict[str, np.ndarray] = {}
    other_sum = None
    n_other = n_total = 0
    dim = None
    try:
        with _open_vec(path) as fh:
            header = fh.readline().split()
            if len(header) != 2 or not all(h.isdigit() for h in header):
                raise DataError(path, f"first line {' '.join(header)!r} is not a '<count> <dim>' header",
                                "give a fastText .vec file (or its .gz)")
            dim = int(header[1])
            for lineno, line in enumerate(fh, start=2):
                cut = line.find(" ")
                if cut <= 0:
                    if line.strip():
                        raise DataError(path, f"line {lineno} has no vector", "re-download or re-train the vectors")
                    continue
                word = line[:cut]
                vec = np.fromstring(line[cut + 1:], dtype=np.float64, sep=" ")
                if vec.shape != (dim,):
                    raise DataError(path, f"line {lineno} ({word!r}) has {vec.size} values, the header says {dim}",
                                    "re-download or re-train the vectors (the file may be truncated)")
                n_total += 1
                if word in words:
                    found.setdefault(word, vec)  # the first (most frequent) spelling wins
                else:
                    other_sum = vec.copy() if other_sum is None else other_sum + vec
                    n_other += 1
    except (UnicodeDecodeError, EOFError, OSError, gzip.BadGzipFile) as err:
        raise DataError(path, f"cannot read the vectors ({err})", "re-download or re-train the vectors") from err
    return {"vectors": found, "other_mean": None if other_sum is None else other_sum / n_other,
            "n_other": n_other, "n_total": n_total, "dim": dim}


def _read_bin(path: Path, words) -> dict:
    """:func:`read_vectors` for a fastText ``.bin`` model: every asked word gets a vector
    (sub-word n-grams for words the model never saw), the others average its dictionary."""
    import fasttext

    model = fasttext.load_model(str(path))
    found = {w: model.get_word_vector(w).astype(np.float64) for w in words}
    others = [w for w in model.get_words() if w not in words]
    mean = np.mean([model.get_word_vector(w) for w in others], axis=0).astype(np.float64) if others else None
    return {"vectors": found, "other_mean": mean, "n_other": len(others), "n_total": len(model.get_words()),
            "dim": model.get_dimension()}


# --------------------------------------------------------------------------- preprocessing


def moses_unescape(token: str) -> str:
    """A Moses-tokenised token as raw text (``&apos;s`` -> ``'s``, ``&quot;`` -> ``"``,
    ``&amp;`` -> ``&``; sacremoses' own table); other tokens are returned unchanged."""
    if "&" not in token:
        return token
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer().unescape_xml(token)


def debias(matrix: np.ndarray, n_components: int = 5, center: bool = True) -> tuple[np.ndarray, dict]:
    """Mu & Viswanath (2018), all-but-the-top: subtract the mean row, then each row's
    projection on the top ``n_components`` principal directions of the centred rows.

    ``matrix (n, dim)``; returns the new float64 matrix and ``{"mean_norm", "removed_variance"}``
    (the share of the variance each removed direction carried). ``center=False`` skips the
    mean (the directions are then those of the uncentred rows; an ablation, not the paper's)."""
    x = np.asarray(matrix, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"debias needs a (n, dim) matrix, got shape {x.shape}")
    mean = x.mean(axis=0) if center else np.zeros(x.shape[1])
    x = x - mean
    k = min(n_components, min(x.shape))
    removed: list[float] = []
    if k > 0:
        _, s, vt = np.linalg.svd(x, full_matrices=False)
        top = vt[:k]  # (k, dim), orthonormal rows
        x = x - (x @ top.T) @ top
        total = float((s**2).sum())
        removed = [float(v) / total if total > 0 else 0.0 for v in (s[:k] ** 2)]
    return x, {"mean_norm": float(np.linalg.norm(mean)), "removed_variance": removed}


def build_embedding_table(
    vocab: str | os.PathLike,
    vectors: str | os.PathLike,
    out_npy: str | os.PathLike,
    out_report: str | os.PathLike,
    n_components: int = 5,
    center: bool = True,
    normalize: bool = True,
    dim: int | None = None,
) -> dict:
    """The vocabulary-sized table of pretrained vectors (see the module docstring).

    ``vocab``: a :class:`~mmt_repro.text.vocab.Vocab` JSON; ``vectors``: a ``.vec``,
    ``.vec.gz`` or ``.bin`` file. ``center``/``n_components``: the debiasing (the paper: both,
    5); ``normalize``: unit-length rows. ``dim``: the dimension the model expects (checked).
    Writes ``out_npy`` (float32, ``(len(vocab), dim)``) and ``out_report`` (JSON); returns the
    report."""
    voc = Vocab.load(vocab)
    tokens = [None] * len(Vocab.SPECIALS) + voc.tokens[len(Vocab.SPECIALS):]
    words = {t for t in tokens if t is not None}
    raw = {t: moses_unescape(t) for t in words}
    read = read_vectors(vectors, frozenset(words | set(raw.values()) | {FASTTEXT_EOS}))
    if dim is not None and read["dim"] != dim:
        raise DataError(vectors, f"vectors have {read['dim']} dimensions, the model's emb_dim is {dim}",
                        "use vectors of the model's size (word_vectors.dim) or set emb_dim to match")
    d = read["dim"]
    found = dict(read["vectors"])
    unescaped = sorted(t for t in words if t not in found and raw[t] in read["vectors"])
    for t in unescaped:
        found[t] = read["vectors"][raw[t]]
    if read["other_mean"] is not None:
        unk, unk_from = read["other_mean"], f"mean of {read['n_other']} pretrained vectors outside the vocabulary"
    else:
        # Every pretrained word is in the vocabulary (a tiny corpus): the authors' code stops
        # here; we fall back to the mean of all vectors and say so in the report.
        unk = np.mean(list(found.values()), axis=0) if found else np.zeros(d)
        unk_from = "no pretrained word outside the vocabulary: mean of all pretrained vectors"
        log.warning("%s: %s", vectors, unk_from)
    if FASTTEXT_EOS in found and FASTTEXT_EOS not in words:
        eos, eos_from = found[FASTTEXT_EOS], f"pretrained {FASTTEXT_EOS}"
    else:
        eos = np.random.default_rng(0).standard_normal(d) * (np.linalg.norm(unk) / np.sqrt(d) + 1e-3)
        eos_from = f"no {FASTTEXT_EOS} vector: a fixed random vector (seed 0)"
        log.warning("%s: %s", vectors, eos_from)
    missing = [t for t in tokens if t is not None and t not in found]
    rows = [eos, unk] + [found.get(t, unk) for t in tokens[len(Vocab.SPECIALS):]]
    body = np.stack(rows)  # <eos>, <unk>, words
    body, info = debias(body, n_components, center=center)
    table = np.zeros((len(voc), d), dtype=np.float64)
    table[voc.eos_id] = body[0]
    table[voc.unk_id] = body[1]
    table[len(Vocab.SPECIALS):] = body[2:]
    if normalize:
        norms = np.linalg.norm(table, axis=1, keepdims=True)
        table = np.divide(table, norms, out=np.zeros_like(table), where=norms > 0)
    with atomic_path(out_npy) as tmp:
        np.save(tmp, table.astype(np.float32))
    report = {
        "vocab": str(vocab),
        "vectors": str(vectors),
        "rows": len(voc),
        "dim": d,
        "pretrained_vectors_read": read["n_total"],
        "vocab_words": len(words),
        "vocab_words_found": len(words) - len(missing),
        "vocab_words_missing": len(missing),
        "vocab_words_found_unescaped": len(unescaped),
        "unescaped_examples": unescaped[:50],
        "missing_examples": missing[:50],
        "unk": unk_from,
        "eos": eos_from,
        "center": center,
        "n_components": n_components,
        "removed_mean_norm": info["mean_norm"],
        "removed_variance_share": info["removed_variance"],
        "normalize": normalize,
        "zero_rows": ["<pad>", "<bos>"],
    }
    with atomic_write(out_report) as fh:
        json.dump(report, fh, indent=1)
    log.info("embedding table %s: %d rows x %d, %d of %d vocabulary words found; unk = %s",
             out_npy, len(voc), d, report["vocab_words_found"], len(words), unk_from)
    return report


def load_embedding_table(path: str | os.PathLike, rows: int, dim: int) -> np.ndarray:
    """A table written by :func:`build_embedding_table`, checked against the model's vocabulary
    size and embedding size."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "embedding table does not exist", "run the build_embedding_table rule")
    table = np.load(path)
    if table.shape != (rows, dim):
        raise DataError(path, f"table has shape {table.shape}, the model needs ({rows}, {dim})",
                        "rebuild the table for this vocabulary, or set emb_dim to the vectors' size")
    if not np.isfinite(table).all():
        raise DataError(path, "table holds NaN or Inf", "rebuild it (check the word-vector file)")
    return table


# --------------------------------------------------------------------------- training


def train_word_vectors(
    texts: list[str | os.PathLike],
    out_vec: str | os.PathLike,
    dim: int = 300,
    model: str = "cbow",
    epoch: int = 5,
    min_count: int = 1,
    minn: int = 5,
    maxn: int = 5,
    ws: int = 5,
    neg: int = 10,
    lr: float = 0.05,
    bucket: int = 2_000_000,
    workers: int = 1,
) -> dict:
    """Train fastText vectors on the concatenation of ``texts`` (one sentence a line,
    tokenised) and write every word of the model's dictionary (``</s>`` included) as a
    ``.vec`` file. Returns ``{"words", "dim", "tokens"}``.

    With one worker thread (the default) the output is a function of the inputs and the settings
    (fastText seeds its generator with 0; the Python binding does not expose the seed of
    unsupervised training). Training runs in a fresh child process: fasttext-numpy2 0.10.4
    gives other vectors, and at times "Encountered NaN", when one process trains twice."""
    lines = [line for path in texts for line in read_lines(path)]
    if not any(line.strip() for line in lines):
        raise DataError(texts[0] if texts else None, "no text to train word vectors on",
                        "check the training text of the dataset")
    settings = dict(model=model, dim=dim, epoch=epoch, minCount=min_count, minn=minn, maxn=maxn, ws=ws, neg=neg,
                    lr=lr, bucket=bucket, thread=workers, verbose=0)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with atomic_path(out_vec) as tmp_vec:
            res = subprocess.run([sys.executable, "-c", _TRAIN_SCRIPT, str(corpus), str(tmp_vec), json.dumps(settings)],
                                 capture_output=True, text=True)
            if res.returncode != 0:
                raise DataError(texts[0], f"fastText training failed: {res.stderr.strip()[-2000:]}",
                                "lower word_vectors lr, or check the text")
            n_words = int(res.stdout.split()[-1])
    n_tokens = sum(len(line.split()) for line in lines)
    log.info("fastText %s %d-d on %d lines (%d tokens): %d words -> %s", model, dim, len(lines), n_tokens, n_words,
             out_vec)
    return {"words": n_words, "dim": dim, "tokens": n_tokens}


# Run by train_word_vectors in a fresh interpreter: argv = corpus, out .vec, settings (JSON).
_TRAIN_SCRIPT = """
import json, sys
import fasttext
corpus, out_vec, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
ft = fasttext.train_unsupervised(corpus, **settings)
words = ft.get_words()
with open(out_vec, "w", encoding="utf-8") as fh:
    fh.write(f"{len(words)} {settings['dim']}\\n")
    for word in words:
        fh.write(word + " " + " ".join(f"{v:.6g}" for v in ft.get_word_vector(word)) + "\\n")
print(len(words))
"""
