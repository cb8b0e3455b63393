"""The word lists of the source-degradation probe (rule list_masked_words): per dataset, pair
and test split, the colours to mask with their target forms (:mod:`mmt_repro.metrics.masked_words`).

A grounded set's list comes from its generator: :func:`grounded_colour_lexicon` reads the colour
words off the generator's own captions (two captions that differ in the colour alone differ in
exactly the colour's word), so the list is what the captions say, inflections included. Any other
dataset's comes from Berlin & Kay's basic colour terms
(:data:`mmt_repro.metrics.masked_words.BASIC_COLOUR_TERMS`). Either is cut to the colours whose
source forms occur in the split."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from mmt_repro.grounded import captions as grounded_captions
from mmt_repro.io import read_lines
from mmt_repro.metrics.masked_words import BASIC_COLOUR_TERMS, word_list, write_word_list

#: The lexicon of each dataset source; sources not named use the basic colour terms.
LEXICON_OF_SOURCE = {"grounded": "grounded"}


@lru_cache(maxsize=1)
def grounded_colour_lexicon() -> dict[str, dict[str, tuple[str, ...]]]:
    """colour -> language -> the forms the grounded captions use for it, for every colour of
    :data:`mmt_repro.grounded.captions.COLOURS` and language the captions are written in: for
    each caption setting (frame, count, shape; nothing hidden), the captions of two colours are
    compared token by token and the differing tokens are the colours' words."""
    colours = grounded_captions.COLOURS
    forms: dict[str, dict[str, list]] = {c: {lang: [] for lang in grounded_captions.SUPPORTED_LANGS} for c in colours}
    for frame in grounded_captions.FRAMES:
        for count in grounded_captions.COUNTS:
            for shape in grounded_captions.SHAPES:
                for lang in grounded_captions.SUPPORTED_LANGS:
                    texts = {c: grounded_captions.caption(_example(c, shape, count, frame), lang).split()
                             for c in colours}
                    for c in colours:
                        other = texts[colours[0] if c != colours[0] else colours[1]]
                        diff = [a for a, b in zip(texts[c], other) if a != b]
                        if len(texts[c]) != len(other) or len(diff) != 1:
                            raise ValueError(f"grounded {lang} captions of {c} and another colour differ in "
                                             f"{diff or 'length'}, not in one colour word: {' '.join(texts[c])}")
                        if diff[0] not in forms[c][lang]:
                            forms[c][lang].append(diff[0])
    return {c: {lang: tuple(sorted(f)) for lang, f in by_lang.items()} for c, by_lang in forms.items()}


def _example(colour: str, shape: str, count: int, frame: str):
    return grounded_captions.Example(
        image="probe", count=count, colour=colour, shape=shape, location=(None, None), frame=frame,
        with_location=False, hide_count=False, hide_colour=False, hide_shape=False, en_vague_noun="shape",
        en_vague_det="some", en_colour_filler="", en_singular_article="a", objects=())


def lexicon(name: str) -> dict:
    """A lexicon by name: ``grounded`` or ``basic_colour_terms``."""
    if name == "grounded":
        return grounded_colour_lexicon()
    if name == "basic_colour_terms":
        return BASIC_COLOUR_TERMS
    raise ValueError(f"unknown colour lexicon {name!r}; valid: grounded, basic_colour_terms")


def list_masked_words(source: str | Path, out: str | Path, src_lang: str, tgt_lang: str, lexicon_name: str,
                      words: str = "colours") -> Path:
    """Write the word list of one test split: the lexicon's colours whose source forms occur in
    ``source`` (the split's prepared source text), with every target form."""
    if words != "colours":
        raise ValueError(f"masked_words {words!r}: only colours have a lexicon")
    rows = word_list(lexicon(lexicon_name), src_lang, tgt_lang, read_lines(source))
    return write_word_list(rows, out, words, lexicon_name)
