"""Scoring protocols: the same hypotheses scored the ways MT papers (and their readers) score them.

A published BLEU moves by points, sometimes tens of points, with the scoring protocol alone:
tokenised or detokenised text, cased or lowercased, Moses ``multi-bleu.perl`` or sacreBLEU's
13a / intl tokenisers, Chinese by character or by word, one reference or several; METEOR with or
without ``-norm`` and in which language. A protocol grid (:mod:`mmt_repro.tables.protocols`)
scores a table's translations under each protocol that makes sense for its target language;
this module names the protocols, picks them for a table and scores them, through the metric
layer (:mod:`.mt`, :mod:`.meteor`, :mod:`.zh_words`): no BLEU of its own.

A protocol id is ``<text>_<bleu>[_lc][_1ref]`` for BLEU and ``meteor_<lang>_<norm|nonorm>`` for
METEOR:

text
    ``tok``: the scoring form the table scores (the recipe's chain, subwords merged back: Moses-
    tokenised and XML-escaped words, merged word pieces, Chinese characters); ``detok``: that
    text Moses-detokenised by sacremoses in the target language, XML escapes undone
    (:func:`mmt_repro.text.moses.detokenize_lines`), what a reader holding the raw output has;
    ``plain`` (Chinese): the characters joined back into running text
    (:func:`mmt_repro.text.zh_segment.join_chars`); ``jieba`` (Chinese): that text cut into jieba
    words, scored by :func:`.zh_words.word_bleu` (``jieba_sacrebleu``, one reference stream).
bleu
    ``multibleu``: Moses multi-bleu.perl (:func:`.mt.multibleu`: whitespace tokens, no
    smoothing); ``sacrebleu``: sacreBLEU on whitespace tokens (``tokenize="none"``, exp
    smoothing); ``13a``, ``intl``, ``zh``, ``char``: sacreBLEU with that tokeniser.
``_lc``
    lowercased hypotheses and references (multi-bleu.perl ``-lc``, sacreBLEU ``lowercase``).
``_1ref``
    against each reference stream alone, averaged (:func:`.mt.bleu_one_reference`), for sets
    with several references; every other protocol scores against all of them.
``meteor_<lang>_<norm|nonorm>``
    Meteor 1.5 (:mod:`.meteor`) with ``-l <lang>``, with or without ``-norm``, on the ``tok`` text.

The protocol of a table's own metric (:func:`table_protocols`): ``bleu`` is
``tok_<scoring bleu>`` (``tok_multibleu`` for ``bleu_compat: multi-bleu``, ``tok_sacrebleu`` for
sacreBLEU on tokenised text, ``tok_13a`` for sacreBLEU's 13a on the scoring form), ``bleu_lc``
the same with ``_lc``, ``bleu_1ref`` with ``_1ref``, ``meteor`` the scoring block's language and
``-norm``. Those cells are the table's own numbers, computed again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

#: BLEU variants of a protocol id and what each runs (the sacreBLEU tokeniser; multibleu: none,
#: without smoothing).
BLEU_VARIANTS = ("multibleu", "sacrebleu", "13a", "intl", "zh", "char")
TEXT_FORMS = ("tok", "detok", "plain", "jieba")
ZH = ("zh", "cmn")


def is_chinese(lang: str) -> bool:
    return lang.lower().split("-")[0].split("_")[0] in ZH


@dataclass(frozen=True)
class Protocol:
    """One way to score: the text form, the metric and its settings (see the module docstring)."""

    id: str
    metric: str  # bleu | meteor
    text: str = "tok"
    bleu: str = ""  # of BLEU_VARIANTS
    lowercase: bool = False
    one_ref: bool = False
    lang: str = ""  # METEOR's -l
    norm: bool = False  # METEOR's -norm

    @property
    def tokenize(self) -> str:
        """The sacreBLEU tokeniser the BLEU variant runs."""
        return "none" if self.bleu in ("multibleu", "sacrebleu") else self.bleu

    @property
    def compat(self) -> str:
        return "multi-bleu" if self.bleu == "multibleu" else "sacrebleu"


def bleu_id(text: str, bleu: str, lowercase: bool = False, one_ref: bool = False) -> str:
    return f"{text}_{bleu}" + ("_lc" if lowercase else "") + ("_1ref" if one_ref else "")


def meteor_id(lang: str, norm: bool) -> str:
    return f"meteor_{lang}_{'norm' if norm else 'nonorm'}"


def parse_protocol(pid: str) -> Protocol:
    """The :class:`Protocol` of an id; ValueError naming the valid parts for anything else."""
    parts = pid.split("_")
    if parts[0] == "meteor":
        if len(parts) != 3 or parts[2] not in ("norm", "nonorm") or not parts[1]:
            raise ValueError(f"METEOR protocol {pid!r} is not meteor_<lang>_<norm|nonorm>")
        return Protocol(pid, "meteor", lang=parts[1], norm=parts[2] == "norm")
    if len(parts) < 2 or parts[0] not in TEXT_FORMS or parts[1] not in BLEU_VARIANTS:
        raise ValueError(f"unknown protocol {pid!r}: <text>_<bleu>[_lc][_1ref] with text in {', '.join(TEXT_FORMS)} "
                         f"and bleu in {', '.join(BLEU_VARIANTS)}, or meteor_<lang>_<norm|nonorm>")
    flags = parts[2:]
    if flags not in ([], ["lc"], ["1ref"], ["lc", "1ref"]):
        raise ValueError(f"protocol {pid!r}: after <text>_<bleu> come _lc, then _1ref (each at most once)")
    return Protocol(pid, "bleu", text=parts[0], bleu=parts[1], lowercase="lc" in flags, one_ref="1ref" in flags)


_TEXT = {
    "tok": "the scoring form (the table's text)",
    "detok": "the Moses-detokenised text (sacremoses)",
    "plain": "the characters joined into running text",
    "jieba": "jieba words",
}
_BLEU = {
    "multibleu": "multi-bleu.perl (whitespace tokens, no smoothing)",
    "sacrebleu": "sacreBLEU on whitespace tokens (exp smoothing)",
    "13a": "sacreBLEU 13a",
    "intl": "sacreBLEU intl",
    "zh": "sacreBLEU zh (a token per CJK character)",
    "char": "sacreBLEU char",
}


def describe(pid: str) -> str:
    """A protocol in words, for the grid's legend."""
    p = parse_protocol(pid)
    if p.metric == "meteor":
        return f"Meteor 1.5 -l {p.lang}" + (" -norm" if p.norm else " without -norm") + ", on the scoring form"
    return (f"{_BLEU[p.bleu]} on {_TEXT[p.text]}" + (", lowercased" if p.lowercase else ", cased")
            + (", one reference at a time (mean)" if p.one_ref else ""))


def _paper_bleu(scoring: Mapping) -> str:
    """The BLEU variant of a scoring block: multibleu, sacrebleu (tokenize none) or the tokeniser."""
    if scoring.get("bleu_compat", "multi-bleu") == "multi-bleu":
        return "multibleu"
    tokenize = scoring.get("tokenize", "none")
    return "sacrebleu" if tokenize == "none" else tokenize


def table_protocols(scoring: Mapping, tgt: str, n_refs: int = 1, meteor: bool = True) -> dict[str, str]:
    """Table metric -> the protocol that computes it as the score job does (the paper's scoring
    block): ``bleu``, and where the block lists them ``bleu_lc``, ``bleu_1ref`` (several
    references) and ``meteor`` (unless ``meteor`` is off)."""
    metrics = list(scoring.get("metrics") or ["bleu"])
    bleu = _paper_bleu(scoring)
    out = {}
    if "bleu" in metrics:
        out["bleu"] = bleu_id("tok", bleu)
    if "bleu_lc" in metrics:
        out["bleu_lc"] = bleu_id("tok", bleu, lowercase=True)
    if "bleu_1ref" in metrics and n_refs > 1:
        out["bleu_1ref"] = bleu_id("tok", bleu, one_ref=True)
    if meteor and "meteor" in metrics:
        out["meteor"] = meteor_id(scoring.get("meteor_lang") or tgt, bool(scoring.get("meteor_norm", True)))
    return out


def grid_protocols(scoring: Mapping, tgt: str, lowercased: bool = False, n_refs: int = 1,
                   meteor: bool = True) -> list[str]:
    """The protocols of a table's grid: those that make sense for its target language ``tgt``.

    Chinese: the scoring form (characters) with multi-bleu.perl and sacreBLEU, sacreBLEU's zh
    tokeniser on the joined text (by character), jieba words (by word; one reference). Other
    languages: the scoring form with multi-bleu.perl (cased, ``-lc``) and sacreBLEU 13a
    (tokenised text fed to sacreBLEU), the detokenised text with 13a (cased, lowercased) and
    intl; no ``_lc`` column where the recipe lowercases the text already (``lowercased``).
    Several references: the paper's BLEU one reference at a time beside it. METEOR (where the
    scoring block lists it and ``meteor``): the block's language with and without ``-norm``,
    and the target language where the block scores another one (BertGen's coco-caption runs
    ``-l en`` for every language) and Meteor knows it. The table's own protocols
    (:func:`table_protocols`) are always among them."""
    bleu = _paper_bleu(scoring)
    if is_chinese(tgt):
        ids = [bleu_id("tok", "multibleu"), bleu_id("tok", "sacrebleu"), bleu_id("plain", "zh"),
               *([bleu_id("jieba", "sacrebleu")] if n_refs == 1 else [])]
    else:
        ids = [bleu_id("tok", "multibleu"), *([] if lowercased else [bleu_id("tok", "multibleu", lowercase=True)]),
               bleu_id("tok", "13a"), bleu_id("detok", "13a"),
               *([] if lowercased else [bleu_id("detok", "13a", lowercase=True)]), bleu_id("detok", "intl")]
    if n_refs > 1:
        ids.append(bleu_id("tok", bleu, one_ref=True))
    own = table_protocols(scoring, tgt, n_refs, meteor)
    ids = [*(p for p in own.values() if p not in ids and not p.startswith("meteor_")), *ids]
    if meteor and "meteor" in own:
        from .meteor import LANGUAGES, meteor_language

        paper = parse_protocol(own["meteor"])
        ids += [own["meteor"], meteor_id(paper.lang, not paper.norm)]
        key, spec = meteor_language(tgt)
        if key != paper.lang and spec is not LANGUAGES["other"]:
            ids.append(meteor_id(tgt, paper.norm))
    return ids


# --------------------------------------------------------------------------- text forms


def text_form(lines: Sequence[str], form: str, lang: str) -> list[str]:
    """``lines`` (the scoring form) in another text form (module docstring)."""
    if form == "tok":
        return list(lines)
    if form == "detok":
        from ..text.moses import detokenize_lines

        return detokenize_lines(lines, lang)
    if form == "plain":
        from ..text.zh_segment import join_chars

        return [join_chars(line) for line in lines]
    raise ValueError(f"unknown text form {form!r}; valid: {', '.join(TEXT_FORMS)}")


_SIGNATURE_TEXT = {"detok": "text:detok-sacremoses", "plain": "text:zh-joined"}


def _bleu(p: Protocol, hyps: list[str], refs: list[list[str]], lang: str) -> dict:
    """One BLEU protocol on text already in its form (``jieba``: the scoring form, which
    :func:`.zh_words.word_bleu` joins and cuts into words itself)."""
    from .mt import bleu_one_reference, corpus_scores

    if p.text == "jieba":
        from .zh_words import word_bleu

        if p.bleu != "sacrebleu" or p.lowercase or p.one_ref or len(refs) != 1:
            raise ValueError(f"{p.id}: jieba-word BLEU is zh_words.word_bleu (jieba_sacrebleu, one reference stream)")
        return word_bleu(hyps, refs[0])
    # sacreBLEU warns that tokenised text "looks tokenised": tok_13a feeds it such text on purpose
    quiet = p.text == "tok" and p.tokenize != "none"
    sacre_log = logging.getLogger("sacrebleu")
    level = sacre_log.level
    if quiet:
        sacre_log.setLevel(logging.ERROR)
    try:
        if p.one_ref:
            entry = bleu_one_reference(hyps, refs, p.tokenize, p.lowercase, p.compat)
        else:
            entry = corpus_scores(hyps, refs, metrics=("bleu",), tokenize=p.tokenize, lowercase=p.lowercase,
                                  lang=lang, bleu_compat=p.compat)["bleu"]
    finally:
        sacre_log.setLevel(level)
    signature = entry["signature"]
    if p.text in _SIGNATURE_TEXT:
        signature = f"{_SIGNATURE_TEXT[p.text]}|{signature}"
    return {"value": float(entry["value"]), "signature": signature}


# --------------------------------------------------------------------------- scoring


def score_protocols(
    runs: Mapping[Hashable, tuple[Sequence[str], Hashable]],
    references: Mapping[Hashable, Sequence[Sequence[str]]],
    protocols: Sequence[str],
    lang: str,
    meteor_jar: str | os.PathLike | None = None,
    java: str | os.PathLike | None = None,
) -> dict[Hashable, dict[str, dict]]:
    """Every run scored under every protocol: ``{run: {protocol: {"value", "signature"}}}``.

    ``runs``: run -> (hypotheses in the scoring form, its test set); ``references``: test set ->
    reference streams in the scoring form (line-parallel to the hypotheses). ``lang``: the
    target language (the detokeniser's, and Chinese BLEU's guard). Each test set's references
    are put in each text form once. METEOR runs one JVM per (language, ``-norm``) for every run
    and test set of the grid (the jar fixes both when it starts; its start and the paraphrase
    table's load cost seconds), each run's statistics and corpus score as
    :func:`mmt_repro.metrics.meteor.meteor_scores` computes them."""
    parsed = [parse_protocol(p) for p in protocols]
    unknown = sorted({str(ts) for _, ts in runs.values()} - {str(ts) for ts in references})
    if unknown:
        raise ValueError(f"runs name test sets without references: {unknown}")
    out: dict[Hashable, dict[str, dict]] = {run: {} for run in runs}
    forms: dict[tuple, list] = {}

    def form(key: tuple, lines, text: str) -> list:
        if (key, text) not in forms:
            forms[key, text] = text_form(lines, text, lang)
        return forms[key, text]

    for p in (p for p in parsed if p.metric == "bleu"):
        text = "tok" if p.text == "jieba" else p.text  # word_bleu segments the scoring form itself
        for run, (hyps, test_set) in runs.items():
            refs = [form(("ref", test_set, i), stream, text) for i, stream in enumerate(references[test_set])]
            out[run][p.id] = _bleu(p, form(("hyp", run), hyps, text), refs, lang)
    groups: dict[tuple[str, bool], list[Protocol]] = {}
    for p in (p for p in parsed if p.metric == "meteor"):
        groups.setdefault((p.lang, p.norm), []).append(p)
    for (meteor_lang, norm), members in groups.items():
        scores = _meteor_group(runs, references, meteor_lang, norm, meteor_jar, java)
        for p in members:
            for run in runs:
                out[run][p.id] = scores[run]
    return out


def _meteor_group(runs, references, lang: str, norm: bool, jar, java) -> dict:
    """METEOR of every run in one JVM (``-l lang``, ``-norm`` or not)."""
    from ..io import DataError
    from .meteor import _clean, _MeteorProcess, _plan, _refs_per_segment, _signature, find_java, find_meteor_jar

    java_exe = find_java(java)
    jar_path, _ = find_meteor_jar(jar)
    plan = _plan(lang, norm, jar_path, ())
    out = {}
    with _MeteorProcess(java_exe, jar_path, plan["args"]) as proc:
        for run, (hyps, test_set) in runs.items():
            refs = references[test_set]
            if len(hyps) == 0:
                raise DataError(None, f"run {run!r} has no hypotheses", "check the decode output")
            seg_refs = [[_clean(r)[0] for r in seg] for seg in _refs_per_segment(list(hyps), refs)]
            stats = proc.stats([_clean(h)[0] for h in hyps], seg_refs)
            _, final = proc.evaluate(stats)
            out[run] = {"value": 100.0 * final, "signature": _signature(plan, lang, len(refs))}
    return out
