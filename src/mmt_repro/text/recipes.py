"""Per-paper text recipes: named chains of preprocessing steps, subword choice, filters, scoring.

A *chain* is a dot-joined list of step names applied left to right; it is also the suffix the
files carry (``train.lc.norm.tok.en``), so a file name says how its text was made:

========  ===================================================================================
``lc``    lowercase (``str.lower``, as Moses ``lowercase.perl``)
``norm``  Moses punctuation normalisation (``normalize-punctuation.perl -l LANG``)
``tok``   Moses tokenisation (``tokenizer.perl -l LANG``: XML escaping on, hyphens not split)
``wp``    M-BERT WordPiece from a ``vocab.txt`` (pieces joined by spaces, ``##`` continuations)
``char``  Chinese: one token per character, separated by spaces (``zh`` only)
========  ===================================================================================

Grammar: ``[lc.][norm.][tok | wp | char]``, at least one step, in that order. The order is
fixed so that one processing has one name, and it is the order of the official Multi30k files
(``lowercase.perl | normalize-punctuation.perl | tokenizer.perl``); ``lc``, ``norm`` and
``tok`` go through :func:`mmt_repro.text.moses.preprocess_lines`, which reproduces those files
line for line. ``tok``, ``wp`` and ``char`` each segment the text, so a chain has at most one of
them: WordPiece after Moses would split its XML escapes (``&apos;s`` -> ``& apo ##s ; s`` with M-BERT), and
BertGen feeds untokenised captions to the M-BERT tokeniser. Moses does not segment Chinese,
hence no ``tok`` for ``zh``.

BPE is not a chain step: it needs codes learnt per paper (:mod:`mmt_repro.text.bpe`), and
``apply_bpe`` appends ``.bpe`` to the name (``train.norm.tok.bpe.en``); :meth:`Recipe.suffix_for`
gives the whole suffix.

:data:`RECIPES` holds one :class:`Recipe` per paper key, each value with the sentence of the
paper it follows (``source``) and, where the paper is silent, what we chose (``notes``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mmt_repro.io import DataError, read_lines, write_lines
from mmt_repro.text.bpe import merge_bpe
from mmt_repro.text.moses import preprocess_lines
from mmt_repro.text.wordpiece import WORDPIECE_VOCAB_INPUT, merge_wordpiece_line, wordpiece_lines

#: Step name -> what it does, in the only order a chain may use them.
STEPS: dict[str, str] = {
    "lc": "lowercase",
    "norm": "Moses punctuation normalisation (language-aware)",
    "tok": "Moses tokenisation (XML escaping, no aggressive hyphen splitting)",
    "wp": "M-BERT WordPiece from wordpiece_vocab ('##' continuation pieces)",
    "char": "Chinese single-character segmentation (zh only)",
}
_RANK = {"lc": 0, "norm": 1, "tok": 2, "wp": 2, "char": 2}
_SEGMENTERS = ("tok", "wp", "char")
ZH_LANGS = frozenset({"zh"})

Subword = Literal["bpe", "wordpiece", "none"]
SUBWORDS: tuple[str, ...] = ("bpe", "wordpiece", "none")


# --- chain grammar ----------------------------------------------------------------------------


def parse_chain(chain: str, lang: str | None = None) -> tuple[str, ...]:
    """The steps of ``chain`` (``"lc.norm.tok"`` -> ``("lc", "norm", "tok")``), checked.

    Raises :class:`ValueError` naming the problem for an empty chain or step, an unknown or
    repeated step, steps out of the order ``lc, norm, tok|wp|char``, two segmenting steps, and
    (when ``lang`` is given) ``char`` for a language other than Chinese or ``tok`` for Chinese.
    """
    valid = ", ".join(STEPS)
    if not isinstance(chain, str) or not chain.strip():
        raise ValueError(f"empty step chain {chain!r}; a chain is dot-joined steps from: {valid}")
    steps = tuple(chain.split("."))
    for step in steps:
        if not step:
            raise ValueError(f"chain {chain!r} has an empty step (two dots, or a dot at an end); valid steps: {valid}")
        if step not in STEPS:
            raise ValueError(f"unknown step {step!r} in chain {chain!r}; valid steps: {valid}")
    repeated = sorted({s for s in steps if steps.count(s) > 1})
    if repeated:
        raise ValueError(f"chain {chain!r} repeats step(s) {', '.join(repeated)}; each step may appear once")
    segmenters = [s for s in steps if s in _SEGMENTERS]
    if len(segmenters) > 1:
        raise ValueError(
            f"chain {chain!r} has more than one segmenting step ({', '.join(segmenters)}); use one of tok, wp, char "
            "(wp works on untokenised text: after tok it would split Moses' XML escapes such as &apos;)"
        )
    ranks = [_RANK[s] for s in steps]
    if ranks != sorted(ranks):
        raise ValueError(
            f"chain {chain!r} is out of order; steps go lc, norm, then one of tok|wp|char "
            "(one name per processing, the order of the official Multi30k files)"
        )
    if lang is not None:
        if "char" in steps and lang not in ZH_LANGS:
            raise ValueError(f"step 'char' (Chinese character segmentation) is for zh only, not {lang!r} (chain {chain!r})")
        if "tok" in steps and lang in ZH_LANGS:
            raise ValueError(f"step 'tok' (Moses) does not segment Chinese; use 'char' for {lang!r} (chain {chain!r})")
    return steps


def segment_chars(line: str, keep_latin_runs: bool = False) -> str:
    """Chinese character segmentation: every non-space character becomes a token.

    This is the convention of the real VATEX data (``val.zh`` of ZhishenYang/eval_on_vatex_dataset):
    Latin letters and digits are single tokens too (``C P U``, ``2 0 0 0``). That file also
    starts each line with a space and shows an original space as three; both vanish here, the
    tokens are the same. ``keep_latin_runs=True`` instead keeps runs of ASCII letters and digits
    together (``CPU``, ``2000``); no paper of ours asks for it.
    """
    if keep_latin_runs:
        return " ".join(_LATIN_RUN_OR_CHAR.findall(line))
    return " ".join(ch for ch in line if not ch.isspace())


_LATIN_RUN_OR_CHAR = re.compile(r"[A-Za-z0-9]+|\S")


def apply_chain(
    lines: Iterable[str],
    chain: str,
    lang: str,
    wordpiece_vocab: str | os.PathLike | None = None,
) -> list[str]:
    """Run the steps of ``chain`` over ``lines`` (one sentence each, no line breaks).

    ``lc``/``norm``/``tok`` use :func:`mmt_repro.text.moses.preprocess_lines` (parity with the
    official Multi30k ``*.lc.norm.tok.*`` files); ``wp`` needs ``wordpiece_vocab`` (BertGen's
    M-BERT cased ``vocab.txt``) and runs BERT's tokeniser without its own lowercasing, so casing
    is the ``lc`` step's job and accents survive; ``char`` is :func:`segment_chars`.
    """
    steps = parse_chain(chain, lang)
    if "wp" in steps and wordpiece_vocab is None:
        raise ValueError(f"chain {chain!r} has the wp step but no wordpiece_vocab was given; fetch resources/{WORDPIECE_VOCAB_INPUT}/vocab.txt (manifest input {WORDPIECE_VOCAB_INPUT})")
    out = list(lines)
    moses = {"lc", "norm", "tok"} & set(steps)
    if moses:
        out = preprocess_lines(out, lang, lowercase="lc" in moses, normalize="norm" in moses, tokenize="tok" in moses)
    if "wp" in steps:
        out = wordpiece_lines(out, wordpiece_vocab, lowercase=False)
    if "char" in steps:
        out = [segment_chars(line) for line in out]
    return out


def prepare_text(
    in_path: str | os.PathLike,
    out_path: str | os.PathLike,
    chain: str,
    lang: str,
    wordpiece_vocab: str | os.PathLike | None = None,
) -> Path:
    """Apply :func:`apply_chain` to a text file (``.gz`` allowed); atomic write of ``out_path``.

    The chain is checked before anything is read, so a bad chain fails at once.
    """
    parse_chain(chain, lang)
    return write_lines(out_path, apply_chain(read_lines(in_path), chain, lang, wordpiece_vocab=wordpiece_vocab))


# --- undoing subwords before scoring ---------------------------------------------------------


def merge_wordpiece(lines: Iterable[str]) -> list[str]:
    """Undo WordPiece: ``"a play ##ing child"`` -> ``"a playing child"``.

    BertGen section 3: "We use greedy search for all systems that we trained and merge back the
    word pieces before evaluation." The result is M-BERT-tokenised words (punctuation split off).
    """
    return [merge_wordpiece_line(line) for line in lines]


def merge_subwords(lines: Iterable[str], subword: str) -> list[str]:
    """Undo ``subword`` segmentation (``bpe``: ``@@`` joins; ``wordpiece``: ``##`` joins; ``none``)."""
    if subword == "bpe":
        return [merge_bpe(line) for line in lines]
    if subword == "wordpiece":
        return merge_wordpiece(lines)
    if subword == "none":
        return list(lines)
    raise ValueError(f"unknown subword kind {subword!r}; valid: {', '.join(SUBWORDS)}")


# --- length filter ----------------------------------------------------------------------------


def filter_pairs_by_length(
    src_lines: list[str], tgt_lines: list[str], max_len: int, min_len: int = 1
) -> tuple[list[str], list[str], list[int]]:
    """Keep the pairs whose two sides both have ``min_len`` to ``max_len`` whitespace tokens.

    Calixto et al. (2017) section 4: "If sentences in English or German are longer than 80
    tokens, they are discarded" (so 80 tokens is kept, 81 is not). Meant for training pairs
    only; test sets are never filtered. Returns the kept source and target lines and the
    0-based indices of the kept pairs (to filter image lists or feature rows in step).
    """
    if len(src_lines) != len(tgt_lines):
        raise ValueError(f"source has {len(src_lines)} lines, target {len(tgt_lines)}; the sides must be parallel")
    if min_len < 0 or max_len < min_len:
        raise ValueError(f"need 0 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    kept = [
        i
        for i, (s, t) in enumerate(zip(src_lines, tgt_lines))
        if min_len <= len(s.split()) <= max_len and min_len <= len(t.split()) <= max_len
    ]
    return [src_lines[i] for i in kept], [tgt_lines[i] for i in kept], kept


def filter_parallel(
    src_in: str | os.PathLike,
    tgt_in: str | os.PathLike,
    src_out: str | os.PathLike,
    tgt_out: str | os.PathLike,
    max_len: int,
    image_list_in: str | os.PathLike | None = None,
    image_list_out: str | os.PathLike | None = None,
    min_len: int = 1,
) -> dict[str, int]:
    """File version of :func:`filter_pairs_by_length`, filtering an image list in step.

    Line ``i`` of ``image_list_in`` names the image of pair ``i``. Every output is written
    atomically. Returns ``{"pairs": lines read, "kept": lines written}``. :class:`DataError`
    when the files are not parallel.
    """
    if (image_list_in is None) != (image_list_out is None):
        raise ValueError("give both image_list_in and image_list_out, or neither")
    src, tgt = read_lines(src_in), read_lines(tgt_in)
    fix = "the files must be parallel (one line per pair); re-run the rules that make them"
    if len(src) != len(tgt):
        raise DataError(tgt_in, f"has {len(tgt)} lines but the source {src_in} has {len(src)}", fix)
    images: list[str] | None = None
    if image_list_in is not None:
        images = read_lines(image_list_in)
        if len(images) != len(src):
            raise DataError(image_list_in, f"lists {len(images)} images but {src_in} has {len(src)} sentences", fix)
    src_kept, tgt_kept, kept = filter_pairs_by_length(src, tgt, max_len, min_len=min_len)
    write_lines(src_out, src_kept)
    write_lines(tgt_out, tgt_kept)
    if images is not None and image_list_out is not None:
        write_lines(image_list_out, [images[i] for i in kept])
    return {"pairs": len(src), "kept": len(kept)}


# --- per-paper recipes ------------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """How one paper prepares its text.

    Attributes:
        paper: the paper key.
        langs: the languages of the paper's data; :func:`chain_for` refuses others.
        chain: step chain for every language not in ``chains`` (see :func:`parse_chain`).
        chains: per-language overrides as ``(lang, chain)`` pairs (DeepFuse's ``zh``).
        subword: ``"bpe"`` (subword-nmt codes learnt per paper, ``.bpe`` suffix),
            ``"wordpiece"`` (the ``wp`` step, fixed M-BERT vocabulary) or ``"none"`` (words).
        bpe_symbols: BPE merge operations; None when no BPE.
        bpe_langs: the languages BPE is applied to; None = all of ``langs``.
        vocab_size: most frequent tokens kept per side; None = keep all (for WordPiece: the
            pre-trained vocabulary as it is).
        max_len: training pairs with a side longer than this many tokens are dropped
            (:func:`filter_parallel`); None = no filter (the paper states none).
        lowercase: whether ``chain`` lowercases (it must then start with ``lc``).
        zh_segmentation: step segmenting Chinese (``"char"``), None for papers without Chinese.
        scoring: what is undone before scoring and how the paper scores.
        source: the sentence(s) of the paper these values follow.
        notes: where the paper is silent or ambiguous, what we chose and why.
    """

    paper: str
    langs: tuple[str, ...]
    chain: str
    chains: tuple[tuple[str, str], ...] = ()
    subword: Subword = "none"
    bpe_symbols: int | None = None
    bpe_langs: tuple[str, ...] | None = None
    vocab_size: int | None = None
    max_len: int | None = None
    lowercase: bool = False
    zh_segmentation: str | None = None
    scoring: str = ""
    source: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        where = f"recipe {self.paper!r}"
        if self.subword not in SUBWORDS:
            raise ValueError(f"{where}: subword {self.subword!r} is not one of {', '.join(SUBWORDS)}")
        if (self.subword == "bpe") != (self.bpe_symbols is not None):
            raise ValueError(f"{where}: bpe_symbols must be set exactly when subword is 'bpe'")
        for lang in self.langs:
            parse_chain(self.chain_for(lang), lang)
        steps = parse_chain(self.chain)
        if self.lowercase != ("lc" in steps):
            raise ValueError(f"{where}: lowercase={self.lowercase} but chain {self.chain!r}")
        if (self.subword == "wordpiece") != ("wp" in steps):
            raise ValueError(f"{where}: subword {self.subword!r} but chain {self.chain!r}")
        zh = [lang for lang in self.langs if lang in ZH_LANGS]
        if zh and (self.zh_segmentation is None or parse_chain(self.chain_for(zh[0]))[-1] != self.zh_segmentation):
            raise ValueError(f"{where}: the zh chain must end with zh_segmentation={self.zh_segmentation!r}")

    def chain_for(self, lang: str) -> str:
        """The step chain for ``lang`` (as in file names, without ``.bpe``)."""
        if lang not in self.langs:
            raise ValueError(f"recipe {self.paper!r} has no language {lang!r}; its languages: {', '.join(self.langs)}")
        return dict(self.chains).get(lang, self.chain)

    def subword_for(self, lang: str) -> str:
        """The subword kind used on ``lang`` (``"none"`` where BPE skips that language)."""
        self.chain_for(lang)
        if self.subword == "bpe" and self.bpe_langs is not None and lang not in self.bpe_langs:
            return "none"
        return self.subword

    def suffix_for(self, lang: str) -> str:
        """The whole processing suffix of ``lang``'s files, e.g. ``norm.tok.bpe``."""
        chain = self.chain_for(lang)
        return f"{chain}.bpe" if self.subword_for(lang) == "bpe" else chain


RECIPES: dict[str, Recipe] = {
    "doubly_attentive": Recipe(
        paper="doubly_attentive",
        langs=("en", "de"),
        chain="norm.tok",
        subword="bpe",
        bpe_symbols=90_000,
        vocab_size=None,
        max_len=80,
        lowercase=False,
        scoring="BPE merged back (merge_bpe); cased, tokenised text: 'report evaluation of cased, tokenized sentences "
        "with punctuation' (BLEU4, METEOR, TER, chrF3).",
        source="Calixto et al. 2017, sec. 4: 'We use the scripts in the Moses SMT Toolkit [...] to normalise and tokenize "
        "English and German descriptions, and we also convert space-separated tokens into subwords [...]. If sentences "
        "in English or German are longer than 80 tokens, they are discarded.'",
        notes="No lowercasing (cased evaluation). The number of BPE merges is not given: all models use a common "
        "vocabulary of 83,093 English and 91,141 German subword tokens; 90,000 merges is our choice (as in "
        "config/papers/doubly_attentive.yaml). Whether the 80 counts words or subwords is not said; the filter counts "
        "the tokens of the training files it is given.",
    ),
    "emb_pred": Recipe(
        paper="emb_pred",
        langs=("fr", "en"),
        chain="lc.norm.tok",
        subword="none",
        vocab_size=10_000,
        max_len=None,
        lowercase=True,
        scoring="Word level, nothing to merge; lowercased tokenised BLEU and METEOR.",
        source="Hirasawa et al. 2019, sec. 3.1: 'The vocabulary size of both the source and the target languages is "
        "10,000. Following Kumar and Tsvetkov (2019), byte pair encoding (Sennrich et al., 2016) is not applied. The "
        "source and target sentences are preprocessed with lower-casing, tokenizing and normalizing the punctuation.'",
        notes="The paper lists 'lower-casing, tokenizing and normalizing'; we apply the official WMT17 Multi30k order "
        "lc.norm.tok (the dataset the paper names), whose files this chain reproduces exactly. No length filter stated.",
    ),
    "visual_agreement": Recipe(
        paper="visual_agreement",
        langs=("en", "de", "fr"),
        chain="norm.tok",
        subword="none",
        vocab_size=10_000,
        max_len=None,
        lowercase=False,
        scoring="Word level, nothing to merge; BLEU with Moses multi-bleu.perl on tokenised text, METEOR.",
        source="Yang et al. 2020, Dataset: 'We use Moses SMT Toolkit to normalize and tokenize all sentences.' "
        "Settings: 'For both source and target language, we limit the vocabulary size to 10,000.'",
        notes="The paper is silent on lowercasing: it names only normalisation and tokenisation, and it follows "
        "Calixto et al. (2017), who keep case; so no lc. No BPE is mentioned (word-level 10k vocabularies, "
        "embeddings learnt from scratch). No length filter stated.",
    ),
    "bertgen": Recipe(
        paper="bertgen",
        langs=("en", "de", "fr", "tr"),
        chain="lc.wp",
        subword="wordpiece",
        vocab_size=None,
        max_len=None,
        lowercase=True,
        scoring="Word pieces merged back (merge_wordpiece) before scoring: 'merge back the word pieces before "
        "evaluation'; tokenised BLEU, METEOR, CIDEr with coco-caption. References go through the same lc.wp and merge "
        "('pre-processed with M-Bert tokeniser to ensure comparability'), so both sides are M-BERT-tokenised words.",
        source="Mitzalis et al. 2021, sec. 3: 'We train BertGen on lowercased sentences [...] merge back the word "
        "pieces before evaluation'; sec. 2.1, footnote 1: 'We adopt the ‘BERT-Base, Multilingual Cased’ version "
        "from the Transformers toolkit' ('a 119K WordPiece vocabulary').",
        notes="M-BERT *cased* vocabulary on lowercased text, so BERT's own lowercasing (which also strips accents) is "
        "off. No Moses step: the released code tokenises raw captions with BertTokenizer(do_lower_case=False). Its "
        "vocab.txt (manifest input bertgen_vocab) renames [unused1-20] to task tokens; text pieces are M-BERT's. "
        "No length filter stated (the released dataset code has a seq_len of 64, a model setting).",
    ),
    "deepfuse": Recipe(
        paper="deepfuse",
        langs=("en", "zh"),
        chain="lc.norm.tok",
        chains=(("zh", "char"),),
        subword="bpe",
        bpe_symbols=20_000,
        bpe_langs=("en",),
        vocab_size=None,
        max_len=None,
        lowercase=True,
        zh_segmentation="char",
        scoring="English (source) BPE is never scored; the Chinese output is characters, scored as is (BLEU-4 on "
        "characters). The paper does not say how its Chinese BLEU is tokenised.",
        source="Wu et al. 2020, sec. 4: 'We adopt the byte pair encoding algorithm to encode the source sentence and "
        "cap the size of English to 20,000.'",
        notes="Silent on English tokenisation and casing: we use lc.norm.tok (the public VATEX English text is "
        "lowercased and tokenised). Silent on Chinese segmentation: characters, the convention of the public VATEX "
        "Chinese text; another segmentation would be a new step. '20,000' caps the English vocabulary; we learn "
        "20,000 merges (the vocabulary is about that size plus the character inventory).",
    ),
}


def recipe_for(paper: str) -> Recipe:
    """The :class:`Recipe` of ``paper``; :class:`ValueError` listing the valid keys otherwise."""
    try:
        return RECIPES[paper]
    except KeyError:
        raise ValueError(f"unknown paper {paper!r}; valid: {', '.join(RECIPES)}") from None


def chain_for(paper: str, lang: str) -> str:
    """The step chain ``paper`` applies to ``lang``, e.g. ``chain_for("emb_pred", "en") == "lc.norm.tok"``."""
    return recipe_for(paper).chain_for(lang)


def merge_for_scoring(lines: Iterable[str], paper: str, lang: str) -> list[str]:
    """Undo ``paper``'s subword segmentation of ``lang`` (what its ``scoring`` says), e.g. BertGen's ``##``."""
    return merge_subwords(lines, recipe_for(paper).subword_for(lang))
