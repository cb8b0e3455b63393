"""The source-degradation probe of Caglayan et al. (2019), "Probing the Need for Visual Context in
Multimodal Machine Translation" (NAACL, https://aclanthology.org/N19-1422): colour words of the
source are replaced by one placeholder token, the model translates the degraded source with its
own images and with another sentence's images, and colour accuracy counts how many of the masked
colours the hypothesis still renders. Congruent minus incongruent accuracy is what the image
gives back on exactly the words the text no longer says.

Three parts, each a function of plain values:

* **The word list** of a test split (:func:`word_list`): the colours of a lexicon whose source
  forms occur in the split, each with its source forms (those found) and every target form.
  Two lexicons: :data:`BASIC_COLOUR_TERMS` (below) for real data, and the grounded generator's
  own colour words (:mod:`mmt_repro.corpora.masked_words` derives them from its captions).
* **Masking** (:func:`mask_line`): every source token (a whole word: WordPiece pieces are joined
  first) whose lowercased form is a source form of the list becomes :data:`PLACEHOLDER`, alone;
  every other token is left as it is.
* **Colour accuracy** (:func:`colour_accuracy`): per sentence and colour, with ``k`` masked
  source occurrences of the colour, ``m`` tokens of the reference and ``h`` of the hypothesis
  that are target forms of that colour (lowercased, whitespace tokens of the scoring form):
  ``scorable = min(k, m)`` (an occurrence the reference does not render as that colour is not
  counted) and ``correct = min(scorable, h)`` (clipped, like BLEU's n-gram counts); accuracy is
  100 * sum(correct) / sum(scorable) over the test set. Caglayan et al. count a masked colour as
  translated when the hypothesis carries the colour the reference has; the clipping and the
  exclusion of colours the reference rephrases are our precise reading of that rule.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from mmt_repro.io import DataError, atomic_write, read_lines, write_lines

#: The placeholder of a masked word, the paper's ``[v]`` (its Figure 1: "a lady in a [v] dress").
#: No system has it in its vocabulary: Moses escapes brackets (``&#91;``) in every tokenised
#: training text, so a word-level system reads it as ``<unk>``; it goes in after tokenisation and
#: before BPE, where subword-nmt splits it into ``[@@ v@@ ]`` whose bracket pieces are unknown
#: too (``<unk> v@@ <unk>``, whatever the codes); a WordPiece system reads the one token, absent
#: from vocab.txt, as ``[UNK]``.
PLACEHOLDER = "[v]"

#: The probes a table may ask for (``masked_words``).
WORD_KINDS = ("colours",)

_DE_ADJ = ("", "e", "em", "en", "er", "es")
_FR_ADJ = ("", "e", "s", "es")
_CS_ADJ = ("ý", "á", "é", "ého", "ému", "ém", "ým", "ou", "í", "ých", "ými", "ýma")


def _forms(stems: Iterable[str], endings: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s + e for s in stems for e in endings))


#: Berlin & Kay's (1969) eleven basic colour terms (Basic Color Terms: Their Universality and
#: Evolution) in English, with their German, French and Czech renderings as a bilingual dictionary
#: gives them, each with the inflected forms of standard grammar: German strong, weak and mixed
#: adjective endings (-e, -em, -en, -er, -es) on declinable stems, the indeclinable ``lila`` and
#: ``rosa`` as they are; French gender and number (-e, -s, -es; ``blanche``, ``violette``, the
#: invariable ``marron``); Czech hard-adjective case endings (``černý`` ... ``černými``). Spelling
#: variants a corpus may use are listed (``grey``/``gray``, ``weiß``/``weiss``). Some forms are
#: also nouns (``orange`` the fruit, ``rose`` the flower): the probe masks them too, as the
#: paper's word-list approach does.
BASIC_COLOUR_TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    "black": {"en": ("black",), "de": _forms(["schwarz"], _DE_ADJ), "fr": ("noir", "noire", "noirs", "noires"),
              "cs": _forms(["čern"], _CS_ADJ)},
    "white": {"en": ("white",), "de": _forms(["weiß", "weiss"], _DE_ADJ),
              "fr": ("blanc", "blanche", "blancs", "blanches"), "cs": _forms(["bíl"], _CS_ADJ)},
    "red": {"en": ("red",), "de": _forms(["rot"], _DE_ADJ), "fr": ("rouge", "rouges"),
            "cs": _forms(["červen"], _CS_ADJ)},
    "green": {"en": ("green",), "de": _forms(["grün"], _DE_ADJ), "fr": _forms(["vert"], _FR_ADJ),
              "cs": _forms(["zelen"], _CS_ADJ)},
    "yellow": {"en": ("yellow",), "de": _forms(["gelb"], _DE_ADJ), "fr": ("jaune", "jaunes"),
               "cs": _forms(["žlut"], _CS_ADJ)},
    "blue": {"en": ("blue",), "de": _forms(["blau"], _DE_ADJ), "fr": _forms(["bleu"], _FR_ADJ),
             "cs": _forms(["modr"], _CS_ADJ)},
    "brown": {"en": ("brown",), "de": _forms(["braun"], _DE_ADJ), "fr": _forms(["brun"], _FR_ADJ) + ("marron",),
              "cs": _forms(["hněd"], _CS_ADJ)},
    "purple": {"en": ("purple",), "de": ("lila",) + _forms(["violett"], _DE_ADJ),
               "fr": ("violet", "violette", "violets", "violettes", "pourpre", "pourpres"),
               "cs": _forms(["fialov"], _CS_ADJ)},
    "pink": {"en": ("pink",), "de": ("rosa",) + _forms(["pink", "rosafarben"], _DE_ADJ), "fr": ("rose", "roses"),
             "cs": _forms(["růžov"], _CS_ADJ)},
    "orange": {"en": ("orange",), "de": _forms(["orange"], ("", "n", "ne", "nem", "nen", "ner", "nes"))
               + _forms(["orangefarben"], _DE_ADJ), "fr": ("orange", "oranges"), "cs": _forms(["oranžov"], _CS_ADJ)},
    "grey": {"en": ("grey", "gray"), "de": _forms(["grau"], _DE_ADJ), "fr": ("gris", "grise", "grises"),
             "cs": _forms(["šed", "šediv"], _CS_ADJ)},
}

#: Where each lexicon comes from (the first comment line of a word list).
LEXICON_SOURCES = {
    "basic_colour_terms": "Berlin & Kay (1969), the eleven basic colour terms, with their inflected "
                          "de/fr/cs forms (mmt_repro.metrics.masked_words.BASIC_COLOUR_TERMS)",
    "grounded": "the grounded generator's own colour words, read off its captions "
                "(mmt_repro.corpora.masked_words.grounded_colour_lexicon)",
}

_WORD = re.compile(r"\w+")


def source_vocabulary(lines: Iterable[str]) -> set[str]:
    """The lowercased words (runs of letters and digits) of a text."""
    return {w for line in lines for w in _WORD.findall(line.lower())}


def word_list(lexicon: dict, src_lang: str, tgt_lang: str, source_lines: Iterable[str]) -> list[tuple]:
    """(colour, source forms found in ``source_lines``, every target form) for each colour of
    ``lexicon`` (colour -> language -> forms) with a source form in the text, in lexicon order."""
    missing = sorted({lang for lang in (src_lang, tgt_lang) for forms in lexicon.values() if lang not in forms})
    if missing:
        raise ValueError(f"the colour lexicon has no forms in {', '.join(missing)}; it has "
                         f"{', '.join(sorted(next(iter(lexicon.values()))))}")
    vocab = source_vocabulary(source_lines)
    rows = []
    for colour, forms in lexicon.items():
        found = tuple(f for f in forms[src_lang] if f.lower() in vocab)
        if found:
            rows.append((colour, found, tuple(forms[tgt_lang])))
    return rows


def write_word_list(rows: Sequence[tuple], out: str | Path, words: str, lexicon_name: str) -> Path:
    """The word list as TSV: two comment lines (the probe and its lexicon's source), a header,
    then ``colour<TAB>source forms<TAB>target forms`` (forms comma-separated)."""
    lines = [f"# masked words: {words}; placeholder {PLACEHOLDER}",
             f"# lexicon: {lexicon_name}: {LEXICON_SOURCES[lexicon_name]}",
             "colour\tsource_forms\ttarget_forms"]
    lines += [f"{c}\t{','.join(s)}\t{','.join(t)}" for c, s, t in rows]
    return write_lines(out, lines)


def read_word_list(path: str | Path) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """colour -> (source forms, target forms) of a word list written by :func:`write_word_list`."""
    out = {}
    for line in read_lines(path):
        if line.startswith("#") or line.startswith("colour\t") or not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise DataError(path, f"line {line!r} is not colour, source forms, target forms", "re-run list_masked_words")
        out[parts[0]] = (tuple(parts[1].split(",")), tuple(parts[2].split(",")))
    return out


def _source_index(words: dict) -> dict[str, str]:
    """lowercased source form -> colour."""
    return {form.lower(): colour for colour, (src, _) in words.items() for form in src}


def mask_line(line: str, words: dict, wordpiece: bool = False) -> tuple[str, list[str]]:
    """``line`` with every word whose lowercased form is a source form of ``words`` replaced by
    :data:`PLACEHOLDER`, and the colours masked, in order. ``wordpiece``: the line is WordPiece
    pieces; a word (a piece and its ``##`` continuations) is masked whole, as one placeholder."""
    index = _source_index(words)
    groups: list[list[str]] = []
    for tok in line.split():
        if wordpiece and tok.startswith("##") and len(tok) > 2 and groups:
            groups[-1].append(tok)
        else:
            groups.append([tok])
    out, masked = [], []
    for group in groups:
        word = group[0] + "".join(p[2:] for p in group[1:])
        colour = index.get(word.lower())
        if colour is None:
            out.extend(group)
        else:
            out.append(PLACEHOLDER)
            masked.append(colour)
    return " ".join(out), masked


def mask_file(text: str | Path, words: str | Path, out: str | Path, wordpiece: bool = False) -> dict:
    """Mask a source file in the model's text form (before BPE) with a word list; returns the
    counts (sentences, sentences masked, placeholders)."""
    word_map = read_word_list(words)
    lines, n_masked, n_sent = [], 0, 0
    for line in read_lines(text):
        masked_line, colours = mask_line(line, word_map, wordpiece)
        lines.append(masked_line)
        n_masked += len(colours)
        n_sent += bool(colours)
    write_lines(out, lines)
    return {"sentences": len(lines), "sentences_masked": n_sent, "placeholders": n_masked}


def colour_accuracy(masked: Sequence[Sequence[str]], hyps: Sequence[str], refs: Sequence[str], words: dict) -> dict:
    """Colour accuracy (module docstring) of hypotheses against references, given the colours
    masked in each source sentence. Returns ``value`` (percent; 0.0 when nothing is scorable) and
    the totals ``occurrences``, ``scorable``, ``correct``, and ``sentences``: ``[i, k, scorable,
    correct]`` of every sentence with a masked word."""
    if not len(masked) == len(hyps) == len(refs):
        raise ValueError(f"{len(masked)} masked sources, {len(hyps)} hypotheses, {len(refs)} references: not parallel")
    targets = {colour: {f.lower() for f in tgt} for colour, (_, tgt) in words.items()}
    total = Counter()
    sentences = []
    for i, (colours, hyp, ref) in enumerate(zip(masked, hyps, refs)):
        if not colours:
            continue
        hyp_toks, ref_toks = hyp.lower().split(), ref.lower().split()
        k_all = s_all = c_all = 0
        for colour, k in Counter(colours).items():
            forms = targets[colour]
            m = sum(t in forms for t in ref_toks)
            h = sum(t in forms for t in hyp_toks)
            scorable = min(k, m)
            k_all, s_all, c_all = k_all + k, s_all + scorable, c_all + min(scorable, h)
        sentences.append([i, k_all, s_all, c_all])
        total.update(occurrences=k_all, scorable=s_all, correct=c_all)
    value = 100.0 * total["correct"] / total["scorable"] if total["scorable"] else 0.0
    return {"value": value, "occurrences": total["occurrences"], "scorable": total["scorable"],
            "correct": total["correct"], "sentences": sentences}


def add_colour_accuracy(score_json: str | Path, src: str | Path, words: str | Path, hyp: str | Path,
                        ref: str | Path, words_kind: str = "colours", src_wordpiece: bool = False,
                        ref_wordpiece: bool = False) -> dict:
    """Add ``colour_acc`` to a score JSON (its ``scores``, beside BLEU) and the per-sentence
    counts as ``masked``: ``src`` is the unmasked source in the model's text form before BPE
    (the masked words are found in it as :func:`mask_line` finds them), ``hyp`` the translation of
    the masked source, ``ref`` the reference in the scoring form."""
    import json

    from mmt_repro.text.wordpiece import merge_wordpiece_line

    word_map = read_word_list(words)
    masked = [mask_line(line, word_map, src_wordpiece)[1] for line in read_lines(src)]
    refs = read_lines(ref)
    if ref_wordpiece:
        refs = [merge_wordpiece_line(line) for line in refs]
    result = colour_accuracy(masked, read_lines(hyp), refs, word_map)
    data = json.loads(Path(score_json).read_text(encoding="utf-8"))
    data["scores"]["colour_acc"] = {
        "value": result["value"],
        "signature": f"masked:{words_kind}|placeholder:{PLACEHOLDER}|match:target-forms,lc,clipped"
                     f"|occurrences:{result['occurrences']}|scorable:{result['scorable']}",
    }
    data["masked"] = {"words": words_kind, "placeholder": PLACEHOLDER, "colours": sorted(word_map), **result}
    with atomic_write(score_json) as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return data
