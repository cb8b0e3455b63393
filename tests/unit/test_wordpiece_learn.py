"""The learnt WordPiece vocabulary (text/wordpiece.py, rule learn_wordpiece) is the same file in
every process: its line order is the id layout of BertGen's embeddings, so a vocabulary that
changed run to run trained a different model from the same seed (docs/bertgen.md,
deviation 29)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter

from mmt_repro.text.wordpiece import CONTINUATION, LEARNED_SPECIALS, learn_wordpiece

# grounded-like captions: few words, many pairs of equal count (the ties that the Rust trainer
# broke in hash order)
TEXT = ("two red circles are visible .\nthe picture shows a blue triangle .\nzwei rote kreise sind zu sehen .\n"
        "das bild zeigt ein blaues dreieck .\ndeux cercles rouges sont visibles .\n"
        "l' image montre un triangle bleu .\nthree green squares and a yellow star .\n") * 7


def _learn_in_subprocess(text_path, out, hashseed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hashseed, "OMP_NUM_THREADS": "1"}
    code = ("import sys\nfrom mmt_repro.text.wordpiece import learn_wordpiece\n"
            "learn_wordpiece([sys.argv[1]], sys.argv[2], 120, min_frequency=2)\n")
    subprocess.run([sys.executable, "-c", code, str(text_path), str(out)], check=True, env=env)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def test_two_processes_learn_the_same_vocabulary_byte_for_byte(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text(TEXT, encoding="utf-8")
    digests = {_learn_in_subprocess(text, tmp_path / f"vocab{seed}.txt", seed) for seed in ("0", "1", "2")}
    assert len(digests) == 1, "the learnt vocab.txt differs between processes"
    # and the order of the lines does not matter (only the word counts do)
    shuffled = tmp_path / "shuffled.txt"
    shuffled.write_text("\n".join(reversed(TEXT.splitlines())) + "\n", encoding="utf-8")
    learn_wordpiece([shuffled], tmp_path / "again.txt", 120, min_frequency=2)
    assert (tmp_path / "again.txt").read_bytes() == (tmp_path / "vocab0.txt").read_bytes()
    pieces = (tmp_path / "vocab0.txt").read_text(encoding="utf-8").splitlines()
    assert pieces[: len(LEARNED_SPECIALS)] == list(LEARNED_SPECIALS) and len(pieces) == len(set(pieces))


def test_the_algorithm_is_the_tokenizers_trainer_given_its_numbering_of_the_continuations():
    """Hugging Face's WordPieceTrainer, whose only freedom is the order in which it numbers the
    ``##x`` pieces, learns exactly our pieces once given that order: ours is that trainer with
    the order fixed (by code point)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from mmt_repro.text.wordpiece import _train_pieces

    pre = pre_tokenizers.BertPreTokenizer()
    lines = TEXT.splitlines()
    counts = Counter(w for line in lines for w, _ in pre.pre_tokenize_str(line))
    n_alpha = len({c for w in counts for c in w})
    for _ in range(3):
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix=CONTINUATION))
        tok.pre_tokenizer = pre
        trainer = trainers.WordPieceTrainer(vocab_size=120, min_frequency=2, special_tokens=list(LEARNED_SPECIALS),
                                            continuing_subword_prefix=CONTINUATION, show_progress=False)
        tok.train_from_iterator(lines, trainer=trainer)
        theirs = [t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
        drawn = [t for t in theirs[len(LEARNED_SPECIALS) + n_alpha:]
                 if t.startswith(CONTINUATION) and len(t) == len(CONTINUATION) + 1]
        assert _train_pieces(counts, 120, 2, LEARNED_SPECIALS, CONTINUATION, continuation_order=drawn) == theirs
