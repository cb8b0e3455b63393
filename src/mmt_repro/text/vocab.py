"""Token vocabulary with fixed special symbols, deterministic construction and a fingerprint.

Ids 0-3 are always ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``; the corpus tokens follow in
order of frequency (descending), ties broken by the token itself, so the same files always
give the same ids. The fingerprint lets a checkpoint record which vocabulary it was trained with.

A pre-trained WordPiece vocabulary (BertGen's M-BERT ``vocab.txt``) becomes a vocabulary with
:meth:`Vocab.from_wordpiece`: the four specials, then every line of the file in file order, so
that id ``4 + i`` is line ``i`` and a model can take its pre-trained rows in order.

*Reserved tokens* are the BERT-style bracketed upper-case names such as ``[MASK]``, ``[SEP]``,
``[TO_DE]`` (:data:`RESERVED`; ``[unused17]`` is not one). Corpus text never holds them as one
token (Moses escapes brackets, WordPiece splits them off), so :meth:`Vocab.reserved` can hand a
model their ids by name (:class:`mmt_repro.models.base.VocabSpec`), and :attr:`Vocab.mask_id`
is the id of ``[MASK]`` where the vocabulary has it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from mmt_repro.io import DataError, atomic_write, read_lines

FORMAT = "mmt_repro.vocab"
FORMAT_VERSION = 1
#: A reserved token: ``[NAME]`` with NAME in upper case, digits and underscores (BERT style).
RESERVED = re.compile(r"^\[[A-Z][A-Z0-9_]*\]$")
MASK = "[MASK]"


class Vocab:
    """Mapping between tokens and ids; the four specials come first."""

    PAD = "<pad>"
    BOS = "<bos>"
    EOS = "<eos>"
    UNK = "<unk>"
    SPECIALS = (PAD, BOS, EOS, UNK)
    pad_id = 0
    bos_id = 1
    eos_id = 2
    unk_id = 3

    def __init__(self, tokens: Iterable[str]):
        tokens = list(tokens)
        for tok in tokens:
            if not isinstance(tok, str) or not tok or tok.split() != [tok]:
                raise ValueError(f"vocabulary tokens must be non-empty strings without whitespace, got {tok!r}")
            if tok in self.SPECIALS:
                raise ValueError(f"{tok!r} is a special symbol; it is added automatically")
        self._itos: list[str] = [*self.SPECIALS, *tokens]
        self._stoi: dict[str, int] = {}
        for i, tok in enumerate(self._itos):
            if tok in self._stoi:
                raise ValueError(f"duplicate vocabulary token {tok!r}")
            self._stoi[tok] = i

    @classmethod
    def build(cls, paths: list[Path], max_size: int | None = None, min_freq: int = 1) -> Vocab:
        """Vocabulary of the whitespace tokens in ``paths``.

        Tokens occurring fewer than ``min_freq`` times are dropped; ``max_size`` (not counting
        the four specials) keeps the most frequent ones. Order: frequency descending, then the
        token ascending. Tokens spelled like a special symbol are skipped.
        """
        if max_size is not None and max_size < 0:
            raise ValueError(f"max_size must be >= 0, got {max_size}")
        counts: Counter[str] = Counter()
        for path in paths:
            for line in read_lines(path):
                counts.update(line.split())
        for special in cls.SPECIALS:
            counts.pop(special, None)
        ranked = sorted((item for item in counts.items() if item[1] >= min_freq), key=lambda kv: (-kv[1], kv[0]))
        if max_size is not None:
            ranked = ranked[:max_size]
        return cls(tok for tok, _ in ranked)

    @classmethod
    def from_wordpiece(cls, vocab_txt: str | os.PathLike) -> Vocab:
        """The specials, then every line of a WordPiece ``vocab.txt`` in file order (id ``4 + i`` =
        line ``i``). Lines that are empty, hold whitespace or spell one of our specials are
        refused: the id layout must stay ``4 + line`` for a model to map pre-trained rows."""
        path = Path(vocab_txt)
        lines = read_lines(path)
        bad = [(i + 1, t) for i, t in enumerate(lines) if not t or t.split() != [t] or t in cls.SPECIALS]
        if bad:
            raise DataError(path, f"line(s) {bad[:5]} are empty, hold whitespace or spell a special symbol",
                            "use a BERT vocab.txt (one token per line)")
        try:
            return cls(lines)
        except ValueError as err:
            raise DataError(path, f"not a usable WordPiece vocabulary: {err}", "use a BERT vocab.txt") from err

    @property
    def mask_id(self) -> int | None:
        """Id of ``[MASK]`` (masked-LM vocabularies), None when the vocabulary has none."""
        return self._stoi.get(MASK)

    def reserved(self) -> dict[str, int]:
        """Ids of the reserved tokens (``[SEP]``, ``[MASK]``, ``[TO_DE]``...), see the module docstring."""
        return {tok: i for i, tok in enumerate(self._itos) if RESERVED.match(tok)}

    # --- persistence -------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> Path:
        """Write the vocabulary as JSON (atomic)."""
        data = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "fingerprint": self.fingerprint(),
            "tokens": self._itos,
        }
        with atomic_write(path) as fh:
            json.dump(data, fh, ensure_ascii=False, indent=0)
            fh.write("\n")
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocab:
        """Read a vocabulary written by :meth:`save`; :class:`DataError` if it is malformed."""
        path = Path(path)
        fix = "delete the file and re-run the rule that builds the vocabulary"
        if not path.is_file():
            raise DataError(path, "vocabulary file does not exist", "build the vocabulary first or fix the path in the config")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise DataError(path, f"vocabulary file is not valid UTF-8 JSON ({err})", fix) from err
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise DataError(path, f"not a vocabulary file (expected a JSON object with format {FORMAT!r})", fix)
        if data.get("version") != FORMAT_VERSION:
            raise DataError(path, f"unsupported vocabulary format version {data.get('version')!r} (expected {FORMAT_VERSION})", fix)
        tokens = data.get("tokens")
        if not isinstance(tokens, list) or tuple(tokens[: len(cls.SPECIALS)]) != cls.SPECIALS:
            raise DataError(path, f"'tokens' must be a list starting with the special symbols {list(cls.SPECIALS)}", fix)
        try:
            vocab = cls(tokens[len(cls.SPECIALS) :])
        except ValueError as err:
            raise DataError(path, f"bad vocabulary entry: {err}", fix) from err
        if "fingerprint" in data and data["fingerprint"] != vocab.fingerprint():
            raise DataError(path, "fingerprint does not match the token list (the file was edited or damaged)", fix)
        return vocab

    # --- mapping -----------------------------------------------------------------------------

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Ids of ``tokens``; unknown tokens map to :attr:`unk_id`. No bos/eos is added."""
        unk = self.unk_id
        return [self._stoi.get(tok, unk) for tok in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of ``ids`` up to (not including) the first eos; pad and bos are skipped."""
        out: list[str] = []
        n = len(self._itos)
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.bos_id):
                continue
            if not 0 <= i < n:
                raise ValueError(f"id {i} is outside the vocabulary (size {n})")
            out.append(self._itos[i])
        return out

    def token_to_id(self, token: str) -> int:
        return self._stoi.get(token, self.unk_id)

    def id_to_token(self, idx: int) -> str:
        return self._itos[idx]

    @property
    def tokens(self) -> list[str]:
        """All tokens by id, specials included (a copy)."""
        return list(self._itos)

    def fingerprint(self) -> str:
        """First 16 hex digits of the SHA-256 of the token list (specials included)."""
        blob = "\n".join(self._itos).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:16]

    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        return self._itos == other._itos

    def __hash__(self) -> int:
        return hash(tuple(self._itos))

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, fingerprint={self.fingerprint()})"


def build_vocab_file(inputs: list[Path], out: Path, max_size: int | None = None, min_freq: int = 1,
                     wordpiece: bool = False) -> Path:
    """Build a vocabulary from ``inputs`` and save it to ``out`` (the build_vocab rule). With
    ``wordpiece`` (a recipe with the ``wp`` step) ``inputs`` is the WordPiece ``vocab.txt`` and
    the vocabulary is that file as it is (:meth:`Vocab.from_wordpiece`; the pre-trained model's
    rows), so ``max_size`` and ``min_freq`` are not used."""
    if wordpiece:
        if len(inputs) != 1:
            raise ValueError(f"a WordPiece vocabulary is built from its one vocab.txt, got {inputs}")
        return Vocab.from_wordpiece(inputs[0]).save(out)
    vocab = Vocab.build([Path(p) for p in inputs], max_size=max_size, min_freq=min_freq)
    return vocab.save(out)


# --- how well a vocabulary covers the text it serves --------------------------------------------

REPORT_COLUMNS = ["dataset", "pair", "lang", "vocab", "vocab_size", "published_size", "merges", "corpus",
                  "split", "sentences", "tokens", "unk_tokens", "unk_rate", "sentences_with_unk",
                  "sentences_over_max_len", "tokens_per_word"]


def coverage(text: Path, vocab: Vocab, max_len: int | None = None, words: Path | None = None) -> dict:
    """``<unk>`` tokens, sentences holding one, and sentences over ``max_len`` tokens, of a text
    file as a model reads it (subwords segmented) under ``vocab``; with ``words`` (the same
    text before subword segmentation) also the mean tokens per word."""
    lines = read_lines(text)
    n_tok = n_unk = with_unk = over = 0
    for line in lines:
        toks = line.split()
        unk = sum(1 for t in toks if t not in vocab)
        n_tok += len(toks)
        n_unk += unk
        with_unk += unk > 0
        over += max_len is not None and len(toks) > max_len
    out = {"sentences": len(lines), "tokens": n_tok, "unk_tokens": n_unk,
           "unk_rate": round(n_unk / max(n_tok, 1), 6), "sentences_with_unk": with_unk,
           "sentences_over_max_len": over if max_len is not None else ""}
    if words is not None:
        n_words = sum(len(line.split()) for line in read_lines(words))
        out["tokens_per_word"] = round(n_tok / max(n_words, 1), 4)
    return out


def vocab_report(rows: list[dict], out: Path, max_len: int | None = None) -> Path:
    """One TSV row per (vocabulary, corpus it serves): the vocabulary's size beside the
    paper's (``published_size``), the BPE merges learnt (lines of the codes file, without its
    version header), and :func:`coverage` of the corpus. Each row of ``rows`` gives
    ``dataset, pair, lang, vocab (path), published_size, codes (path or None), corpus, split,
    text (path)`` and optionally ``words`` (path)."""
    vocabs: dict[str, Vocab] = {}
    lines = ["\t".join(REPORT_COLUMNS)]
    for row in rows:
        vocab = vocabs.setdefault(row["vocab"], Vocab.load(row["vocab"]))
        merges = ""
        if row.get("codes"):
            merges = sum(1 for line in read_lines(row["codes"]) if line and not line.startswith("#version"))
        cov = coverage(Path(row["text"]), vocab, max_len, Path(row["words"]) if row.get("words") else None)
        values = {**row, **cov, "vocab": Path(row["vocab"]).name, "vocab_size": len(vocab) - len(Vocab.SPECIALS),
                  "merges": merges, "published_size": row.get("published_size") or ""}
        lines.append("\t".join(str(values.get(c, "")) for c in REPORT_COLUMNS))
    with atomic_write(out) as fh:
        fh.write("\n".join(lines) + "\n")
    return Path(out)
