"""Per-paper text recipes: named chains of preprocessing steps, subword choice, filters, scoring.

A *chain* is a dot-joined list of step names applied left to right; it is also the suffix the
files carry (``train.lc.norm.tok.en``), so a file name says how its text was made:

========  ===================================================================================
``lc``    lowercase (``str.lower``, as Moses ``lowercase.perl``)
``norm``  Moses punctuation normalisation (``normalize-punctuation.perl -l LANG``)
``tok``   Moses tokenisation (``tokenizer.perl -l LANG``: XML escaping on, hyphens not split)
``wp``    M-BERT WordPiece from a ``vocab.txt`` (pieces joined by spaces, ``##`` continuations)
``char``  Chinese: one token per character, separated by spaces (``zh`` only)
``jieba`` Chinese: jieba words (``jieba.cut``, default dictionary), separated by spaces (``zh`` only)
========  ===================================================================================

Grammar: ``[lc.][norm.][tok | wp | char | jieba]``, at least one step, in that order. The order is
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

:class:`Recipe` is the ``recipe`` block of ``config/papers/<paper>.yaml`` (one place per paper),
each value with the sentence of the paper it follows (``source``) and, where the paper is silent,
what we chose (``notes``); :meth:`Recipe.from_dict` checks it and names unknown keys.
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
    "jieba": "Chinese word segmentation with jieba (zh only)",
}
_RANK = {"lc": 0, "norm": 1, "tok": 2, "wp": 2, "char": 2, "jieba": 2}
_SEGMENTERS = ("tok", "wp", "char", "jieba")
ZH_LANGS = frozenset({"zh"})

Subword = Literal["bpe", "wordpiece", "char", "none"]
SUBWORDS: tuple[str, ...] = ("bpe", "wordpiece", "char", "none")


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
        for zh_step, what in (("char", "Chinese character segmentation"), ("jieba", "Chinese word segmentation")):
            if zh_step in steps and lang not in ZH_LANGS:
                raise ValueError(f"step '{zh_step}' ({what}) is for zh only, not {lang!r} (chain {chain!r})")
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
    if "jieba" in steps:
        from mmt_repro.text.zh_segment import jieba_words

        out = [jieba_words(line) for line in out]
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
    """Undo ``subword`` segmentation before scoring (``bpe``: ``@@`` joins; ``wordpiece``: ``##``
    joins; ``char`` and ``none``: nothing, characters are scored as characters)."""
    if subword == "bpe":
        return [merge_bpe(line) for line in lines]
    if subword == "wordpiece":
        return merge_wordpiece(lines)
    if subword in ("none", "char"):
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
            ``"wordpiece"`` (the ``wp`` step, fixed M-BERT vocabulary), ``"char"`` (the ``char``
            step on the target side; scored as characters) or ``"none"`` (words).
        joint_bpe: one set of BPE codes learnt on both sides (True) or one per language.
        joint_vocab: one vocabulary shared by both sides (True) or one per side.
        min_freq: vocabulary entries seen fewer times than this in training are dropped.
        bpe_symbols: BPE merge operations; None when no BPE.
        bpe_langs: the languages BPE is applied to; None = all of ``langs``.
        vocab_size: most frequent tokens kept per side; None = keep all (for WordPiece: the
            pre-trained vocabulary as it is).
        max_len: training pairs with a side longer than this many tokens are dropped
            (:func:`filter_parallel`); None = no filter (the paper states none).
        lowercase: whether ``chain`` lowercases (it must then start with ``lc``).
        zh_segmentation: step segmenting Chinese (``"char"`` or ``"jieba"``), None for papers without Chinese.
        published_vocab: the vocabulary sizes the paper reports, ``(lang, size)`` pairs (a
            mapping in YAML), shown beside ours in ``results/data/vocab/<paper>.tsv``.
        vocabulary_corpora: the corpora the paper's own codes and vocabulary were learnt on,
            named as a system's ``corpus`` (``train``, ``backtranslated`` or a dataset such as
            ``wmt15``); a comparable table whose planned systems learn them without one of
            these declares the difference (``vocabulary: ...``) beside its rows. Empty: not
            checked (the paper's vocabulary comes from the table's own training text).
        wordpiece_vocab: the ``vocab.txt`` the ``wp`` step reads (repository-relative): the
            manifest input's (M-BERT's pieces, BertGen's task tokens), or one learnt by the rule
            ``learn_wordpiece`` (``results/text/wordpiece/<corpus>.<size>/vocab.txt``: ``size``
            pieces learnt on the lowercased training split of ``corpus``; offline runs).
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
    joint_bpe: bool = True
    joint_vocab: bool = False
    min_freq: int = 1
    vocab_size: int | None = None
    max_len: int | None = None
    lowercase: bool = False
    zh_segmentation: str | None = None
    published_vocab: tuple[tuple[str, int], ...] = ()
    vocabulary_corpora: tuple[str, ...] = ()
    wordpiece_vocab: str = f"resources/{WORDPIECE_VOCAB_INPUT}/vocab.txt"
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
        if self.subword == "char" and not any(parse_chain(self.chain_for(lang))[-1] == "char" for lang in self.langs):
            raise ValueError(f"{where}: subword 'char' needs a language whose chain ends with the char step")
        zh = [lang for lang in self.langs if lang in ZH_LANGS]
        if zh and (self.zh_segmentation is None or parse_chain(self.chain_for(zh[0]))[-1] != self.zh_segmentation):
            raise ValueError(f"{where}: the zh chain must end with zh_segmentation={self.zh_segmentation!r}")

    @classmethod
    def from_dict(cls, paper: str, values: dict) -> Recipe:
        """A recipe from a YAML ``recipe`` block (lists become tuples, ``chains`` a mapping)."""
        import dataclasses

        values = dict(values or {})
        fields = {f.name for f in dataclasses.fields(cls)} - {"paper"}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ValueError(f"unknown recipe key(s) {unknown}; valid keys: {', '.join(sorted(fields))}")
        for key in ("langs", "bpe_langs", "vocabulary_corpora"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        values["chains"] = tuple(sorted((values.get("chains") or {}).items()))
        values["published_vocab"] = tuple(sorted((values.get("published_vocab") or {}).items()))
        try:
            return cls(paper=paper, **values)
        except TypeError as err:
            raise ValueError(str(err)) from err

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


#: Where the repository keeps ``<paper>.yaml`` (an editable install, as the README sets up).
PAPERS_DIR = Path(__file__).resolve().parents[3] / "config" / "papers"


def recipe_for(paper: str, papers_dir: str | os.PathLike = PAPERS_DIR) -> Recipe:
    """The :class:`Recipe` of ``paper``, read from the ``recipe`` block of
    ``<papers_dir>/<paper>.yaml``; :class:`ValueError` listing the papers there otherwise."""
    import yaml

    path = Path(papers_dir) / f"{paper}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in Path(papers_dir).glob("*.yaml"))
        raise ValueError(f"unknown paper {paper!r}: no {path}; valid: {', '.join(known)}")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if "recipe" not in data:
        raise ValueError(f"{path} has no 'recipe' block")
    return Recipe.from_dict(paper, data["recipe"])


def chain_for(paper: str, lang: str) -> str:
    """The step chain ``paper`` applies to ``lang``, e.g. ``chain_for("emb_pred", "en") == "lc.norm.tok"``."""
    return recipe_for(paper).chain_for(lang)


def merge_for_scoring(lines: Iterable[str], paper: str, lang: str) -> list[str]:
    """Undo ``paper``'s subword segmentation of ``lang`` (what its ``scoring`` says), e.g. BertGen's ``##``."""
    return merge_subwords(lines, recipe_for(paper).subword_for(lang))
