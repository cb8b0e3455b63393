"""Multilingual BERT WordPiece tokeniser (BertGen's text segmentation), loaded from a vocab file.

BertGen (Mitzalis et al. 2021, section 2.1) initialises from M-BERT, "offering a 119K WordPiece
vocabulary", and footnote 1 says: "We adopt the 'BERT-Base, Multilingual Cased' version from
the Transformers toolkit". The released code (ImperialNLP/BertGen,
``LanguageGeneration/data/datasets/multi30k.py``) builds ``BertTokenizer(..., do_lower_case=False)``
on raw (untokenised) captions, and its ``PREPARE_PRETRAINED_MODELS.md`` asks to replace M-BERT's
``vocab.txt`` with the one in the BertGen repository. That file has M-BERT cased's size
(119,547 lines) and layout, with ``[unused1]`` .. ``[unused20]`` renamed to ``[STOP]`` and the
task tokens (``[EN_DE_IMG]``, ``[TO_FR]``...); ``[unused21]`` on, ``[UNK]`` .. ``[MASK]`` and the
pieces follow as in M-BERT. (Not diffed line by line against the Hugging Face file here.)

Only the vocabulary file is needed (no weights), and it must be given as a local path: nothing
here downloads. :data:`WORDPIECE_VOCAB_INPUT` names its manifest entry.

Casing: with ``lowercase=True`` BERT's basic tokeniser lowercases *and strips accents* (the
uncased models' behaviour). For the cased vocabulary keep ``lowercase=False`` and lowercase
beforehand (the ``lc`` step of :mod:`mmt_repro.text.recipes`), as BertGen does: accents
survive (``café`` stays ``café``).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from mmt_repro.io import DataError

#: The manifest input (config/manifest.yaml) holding BertGen's vocabulary: M-BERT cased's
#: 119,547 WordPieces with ``[unused1-20]`` renamed to ``[STOP]`` and the task tokens; its URL,
#: sha256 and line count live there. ``mbert_vocab`` is the original M-BERT cased file.
WORDPIECE_VOCAB_INPUT = "bertgen_vocab"
#: Lines in that file ("a 119K WordPiece vocabulary", BertGen section 2.1).
WORDPIECE_VOCAB_SIZE = 119_547

#: Continuation prefix of a WordPiece that does not start a word.
CONTINUATION = "##"

_REQUIRED = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_FIX = (f"fetch vocab.txt of the manifest input {WORDPIECE_VOCAB_INPUT!r} (rule fetch_input: "
        f"resources/{WORDPIECE_VOCAB_INPUT}/vocab.txt) and give its path")


def _read_vocab(path: Path) -> dict[str, int]:
    # as transformers' bert load_vocab: one token per line, id = line number
    try:
        with open(path, encoding="utf-8") as fh:
            return {line.rstrip("\n"): i for i, line in enumerate(fh)}
    except UnicodeDecodeError as err:
        raise DataError(path, f"WordPiece vocabulary is not valid UTF-8 ({err})", _FIX) from err


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int, lowercase: bool):
    # mtime and size in the key: a rewritten vocab file is read again
    import inspect

    import transformers
    from transformers import BertTokenizer

    vocab = _read_vocab(Path(path))
    if "vocab" in inspect.signature(BertTokenizer.__init__).parameters:
        # transformers >= 5: the tokenizers-backed class takes the token -> id mapping itself
        # (an unknown ``vocab_file=`` keyword would be swallowed, leaving a 5-token vocabulary)
        tok = BertTokenizer(vocab=vocab, do_lower_case=lowercase, tokenize_chinese_chars=True)
    else:  # transformers 4: the Python tokeniser reads the file
        tok = BertTokenizer(vocab_file=path, do_lower_case=lowercase, tokenize_chinese_chars=True)
    if len(tok.get_vocab()) != len(vocab):
        raise RuntimeError(
            f"transformers {transformers.__version__} built a vocabulary of {len(tok.get_vocab())} entries "
            f"from {path}, which has {len(vocab)}; this transformers version is not supported here"
        )
    return tok


def load_wordpiece(vocab_path: str | os.PathLike, lowercase: bool = False):
    """A ``transformers.BertTokenizer`` for the WordPiece vocabulary at ``vocab_path`` (cached).

    ``lowercase`` is BERT's ``do_lower_case`` (lowercase and strip accents); keep it false for
    the cased M-BERT vocabulary BertGen used. Works with transformers 4 (the Python tokeniser
    BertGen's code used) and 5 (tokenizers-backed; same basic tokenisation and greedy
    longest-match WordPiece). Raises :class:`DataError` when the file is missing, empty, not
    UTF-8 or lacks one of BERT's special tokens (``[PAD]``, ``[UNK]``, ``[CLS]``, ``[SEP]``, ``[MASK]``).
    """
    path = Path(vocab_path)
    if not path.is_file():
        raise DataError(path, "WordPiece vocabulary file does not exist", _FIX)
    st = path.stat()
    tokens = _read_vocab(path)
    if not set(tokens) - {""}:
        raise DataError(path, "WordPiece vocabulary file is empty", _FIX)
    missing = [tok for tok in _REQUIRED if tok not in tokens]
    if missing:
        raise DataError(path, f"not a BERT vocabulary: no {', '.join(missing)} line", _FIX)
    return _load(str(path.resolve()), st.st_mtime_ns, st.st_size, bool(lowercase))


def wordpiece_lines(lines: list[str], vocab_path: str | os.PathLike, lowercase: bool = False) -> list[str]:
    """Segment each line into WordPieces, joined by single spaces (``##`` marks continuations)."""
    tok = load_wordpiece(vocab_path, lowercase=lowercase)
    return [" ".join(tok.tokenize(line)) for line in lines]


def merge_wordpiece_line(line: str) -> str:
    """Undo WordPiece: glue every ``##`` piece to the token before it (``play ##ing`` -> ``playing``).

    A continuation piece with nothing before it (a line starting with ``##x``) loses its prefix.
    Other tokens, ``[UNK]`` included, are kept as they are.
    """
    words: list[str] = []
    for piece in line.split():
        if piece.startswith(CONTINUATION) and len(piece) > len(CONTINUATION):
            if words:
                words[-1] += piece[len(CONTINUATION) :]
            else:
                words.append(piece[len(CONTINUATION) :])
        else:
            words.append(piece)
    return " ".join(words)


#: Reserved tokens of a vocabulary learnt here, in BertGen's order (its vocab.txt renames M-BERT's
#: [unused1-20] to [STOP] and task tokens, then keeps [UNK] [CLS] [SEP] [MASK]).
LEARNED_SPECIALS = ("[PAD]", "[STOP]", "[TO_EN]", "[TO_DE]", "[TO_FR]", "[TO_TU]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def learn_wordpiece(inputs: list[str | os.PathLike], out: str | os.PathLike, vocab_size: int,
                    min_frequency: int = 2) -> Path:
    """Learn a small WordPiece ``vocab.txt`` on ``inputs`` (text as the ``lc`` step leaves it),
    with BERT's pre-tokenisation (whitespace and punctuation) and ``##`` continuations; the
    reserved tokens of :data:`LEARNED_SPECIALS` come first. Stands in for M-BERT's 119,547 pieces
    where they cannot be had (offline tests, the smoke run, the CPU run on real text): the same
    ``wp`` step reads it.

    The algorithm is Hugging Face ``tokenizers``' ``WordPieceTrainer`` (a BPE on word counts,
    :func:`_train_pieces`), run here in Python because that trainer is not deterministic: it
    numbers the ``##`` pieces in the iteration order of a randomly seeded Rust hash map, and those
    numbers break ties between pairs of equal count, so two processes on the same text give
    different pieces and a different id order (huggingface/tokenizers#1794; measured here: four
    runs on the smoke's grounded text, four different vocab.txt). The id order is the model's
    embedding layout, so the same seed trained a different model run to run (docs/bertgen.md, deviation 29).
    The same inputs give the same file, byte for byte, in any process and any line order."""
    from collections import Counter

    from tokenizers import pre_tokenizers

    from mmt_repro.io import atomic_write, read_lines

    pre = pre_tokenizers.BertPreTokenizer()
    counts: Counter[str] = Counter()
    for path in inputs:
        for line in read_lines(path):
            counts.update(word for word, _ in pre.pre_tokenize_str(line))
    pieces = _train_pieces(counts, vocab_size, min_frequency, LEARNED_SPECIALS, CONTINUATION)
    with atomic_write(out) as fh:
        fh.write("".join(f"{t}\n" for t in pieces))
    return Path(out)


def _train_pieces(word_counts: dict[str, int], vocab_size: int, min_frequency: int, specials: tuple[str, ...],
                  prefix: str = CONTINUATION, continuation_order: list[str] | None = None) -> list[str]:
    """The pieces, in id order, that ``tokenizers``' BPE trainer learns for WordPiece
    (``tokenizers/src/models/bpe/trainer.rs``, ``do_train``) with every tie broken in a fixed way:
    the specials; the characters of the words, by code point; ``prefix`` + each character seen
    after a word's first one, by code point (the Rust trainer numbers these in hash order); then
    one piece per merge, the merge being the adjacent pair of highest count over all words (ties:
    the lower pair of ids, as the Rust trainer), merged left to right in every word, until there
    are ``vocab_size`` pieces or the best pair occurs fewer than ``min_frequency`` times. The merged
    piece is the left one followed by the right one without its ``prefix``.

    ``continuation_order`` (the ``prefix`` + character pieces in the order to number them) is for
    the test that the Rust trainer, given the numbering it drew, learns exactly these pieces."""
    import heapq
    from collections import defaultdict

    id2w: list[str] = []
    w2id: dict[str, int] = {}

    def add(token: str) -> int:
        if token not in w2id:
            w2id[token] = len(id2w)
            id2w.append(token)
        return w2id[token]

    for token in specials:
        add(token)
    words = sorted(w for w, n in word_counts.items() if w and n > 0)
    for c in sorted({c for w in words for c in w}):
        add(c)
    if continuation_order is None:
        continuation_order = [prefix + c for c in sorted({c for w in words for c in w[1:]})]
    for token in continuation_order:
        add(token)
    seqs = [[w2id[w[0]]] + [w2id[prefix + c] for c in w[1:]] for w in words]
    freq = [int(word_counts[w]) for w in words]

    pair_counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)
    for i, seq in enumerate(seqs):
        for pair in zip(seq, seq[1:]):
            pair_counts[pair] += freq[i]
            where[pair].add(i)
    heap = [(-n, a, b) for (a, b), n in pair_counts.items() if n > 0]
    heapq.heapify(heap)
    while len(id2w) < vocab_size and heap:
        neg, a, b = heapq.heappop(heap)
        if pair_counts.get((a, b), 0) != -neg:
            continue  # stale: the pair's current count has its own entry
        if -neg < max(1, min_frequency):
            break
        right = id2w[b][len(prefix):] if prefix and id2w[b].startswith(prefix) else id2w[b]
        new = add(id2w[a] + right)
        changed: dict[tuple[int, int], int] = defaultdict(int)
        for i in sorted(where.pop((a, b), ())):
            seq = seqs[i]
            merged: list[int] = []
            j = 0
            while j < len(seq):
                if j + 1 < len(seq) and seq[j] == a and seq[j + 1] == b:
                    merged.append(new)
                    j += 2
                else:
                    merged.append(seq[j])
                    j += 1
            if len(merged) == len(seq):
                continue
            for pair in zip(seq, seq[1:]):
                changed[pair] -= freq[i]
            for pair in zip(merged, merged[1:]):
                changed[pair] += freq[i]
                where[pair].add(i)
            seqs[i] = merged
        for pair in sorted(changed):
            if changed[pair]:
                pair_counts[pair] += changed[pair]
                if pair_counts[pair] > 0:
                    heapq.heappush(heap, (-pair_counts[pair], *pair))
    return id2w
