"""The captions of the grounded synthetic dataset (:mod:`mmt_repro.grounded.images`) in English,
German and French, and their gold word alignments.

The German and French captions always state the count, colour and shape, with correct
agreement; the English caption hides the attributes the example says it hides, replacing each
by a vague word (:class:`Example` holds the ground truth, the hidden attributes and the vague
wording drawn for it). Every caption uses one of the sentence frames :data:`FRAMES` and, when
the example says so, a location phrase.

The generator knows which word renders which: each caption word carries the concepts it states
(the count, the colour, the shape, a word of the sentence frame or of the location phrase), and
two words of a pair of captions are linked when they state the same concept: surely when both
words state it themselves (``kreis`` - ``circle``, ``rechts`` - ``right``), possibly when one of
them is only part of a phrase stating it (``on the`` - ``links``, ``there is`` - ``es gibt``).
A vague English word is linked to the word it stands for (``shapes`` - ``kreise``, ``some`` -
``zwei``); a German or French word for a hidden attribute that English leaves out entirely
stays unlinked.
"""

from __future__ import annotations

from dataclasses import dataclass

COLOURS = ("red", "green", "blue", "yellow")
SHAPES = ("circle", "square", "triangle")
COUNTS = (1, 2, 3)
#: The languages the caption grammar below can write (a generator capability, not a dataset's
#: list: a grounded dataset picks its own with ``datasets.<name>.langs``, by default all of these).
SUPPORTED_LANGS = ("en", "de", "fr")

_EN_NUM = {1: "a", 2: "two", 3: "three"}
_EN_PLURAL = {"circle": "circles", "square": "squares", "triangle": "triangles",
              "shape": "shapes", "object": "objects", "thing": "things"}
_EN_VAGUE_NOUNS = ("shape", "object", "thing")

# German: colour stems, nouns with gender, plural and dative plural.
_DE_COLOUR = {"red": "rot", "green": "grün", "blue": "blau", "yellow": "gelb"}
_DE_NOUN = {  # singular, gender, plural (nom/acc), dative plural
    "circle": ("kreis", "m", "kreise", "kreisen"),
    "square": ("quadrat", "n", "quadrate", "quadraten"),
    "triangle": ("dreieck", "n", "dreiecke", "dreiecken"),
}
_DE_NUM = {2: "zwei", 3: "drei"}

# French: all three nouns are masculine; adjectives follow the noun and agree in number.
_FR_COLOUR = {"red": ("rouge", "rouges"), "green": ("vert", "verts"),
              "blue": ("bleu", "bleus"), "yellow": ("jaune", "jaunes")}
_FR_NOUN = {"circle": ("cercle", "cercles"), "square": ("carré", "carrés"),
            "triangle": ("triangle", "triangles")}
_FR_NUM = {1: "un", 2: "deux", 3: "trois"}

# Location: (horizontal, vertical) with None meaning "centre third".
_LOC = {
    "en": {(None, None): "in the middle", ("left", None): "on the left", ("right", None): "on the right",
           (None, "top"): "at the top", (None, "bottom"): "at the bottom",
           ("left", "top"): "at the top left", ("right", "top"): "at the top right",
           ("left", "bottom"): "at the bottom left", ("right", "bottom"): "at the bottom right"},
    "de": {(None, None): "in der mitte", ("left", None): "links", ("right", None): "rechts",
           (None, "top"): "oben", (None, "bottom"): "unten",
           ("left", "top"): "oben links", ("right", "top"): "oben rechts",
           ("left", "bottom"): "unten links", ("right", "bottom"): "unten rechts"},
    "fr": {(None, None): "au centre", ("left", None): "à gauche", ("right", None): "à droite",
           (None, "top"): "en haut", (None, "bottom"): "en bas",
           ("left", "top"): "en haut à gauche", ("right", "top"): "en haut à droite",
           ("left", "bottom"): "en bas à gauche", ("right", "bottom"): "en bas à droite"},
}

# Sentence frames. English verb agreement follows the English noun phrase (which may be
# vague); German and French agreement follow the true count.
FRAMES = ("there_is", "i_see", "picture_shows", "visible", "picture_with", "we_see")


@dataclass(frozen=True)
class Example:
    """One generated example: ground truth plus what the English caption hides."""

    image: str
    count: int
    colour: str
    shape: str
    location: tuple[str | None, str | None]
    frame: str
    with_location: bool
    hide_count: bool
    hide_colour: bool
    hide_shape: bool
    # Choices of vague English wording, drawn independently of the true attributes.
    en_vague_noun: str
    en_vague_det: str
    en_colour_filler: str
    en_singular_article: str
    objects: tuple[tuple[float, float, float], ...]  # (cx, cy, r) in pixels


# --------------------------------------------------------------------------------------
# Captions
# --------------------------------------------------------------------------------------


def _en_np(ex: Example) -> tuple[str, bool]:
    """English noun phrase and whether it is grammatically plural."""
    colour = None if ex.hide_colour else ex.colour
    if ex.hide_colour and ex.en_colour_filler == "coloured":
        colour = "coloured"
    noun = ex.en_vague_noun if ex.hide_shape else ex.shape
    if not ex.hide_count:
        plural = ex.count > 1
        words = []
        if ex.count == 1:
            first = colour or noun
            art = ex.en_singular_article  # "a" or "one"
            if art == "a" and first[0] in "aeiou":
                art = "an"
            words.append(art)
        else:
            words.append(_EN_NUM[ex.count])
        if colour:
            words.append(colour)
        words.append(_EN_PLURAL[noun] if plural else noun)
        return " ".join(words), plural
    # Count hidden: the determiner is drawn independently of the true count.
    det = ex.en_vague_det
    if det == "something" and ex.hide_shape:
        # "something", "something red", "something coloured"
        return ("something " + colour) if colour else "something", False
    if det == "something":  # shape is stated: fall back to "some"
        det = "some"
    words = [] if det == "" else det.split()
    if colour:
        words.append(colour)
    words.append(_EN_PLURAL[noun])
    return " ".join(words), True


def _de_np(ex: Example, case: str) -> str:
    """German noun phrase in case ``nom``, ``acc`` or ``dat`` with full agreement."""
    stem = _DE_COLOUR[ex.colour]
    sing, gender, plur, dat_plur = _DE_NOUN[ex.shape]
    if ex.count == 1:
        if case == "dat":
            return f"einem {stem}en {sing}"
        if gender == "m":
            return f"ein {stem}er {sing}" if case == "nom" else f"einen {stem}en {sing}"
        return f"ein {stem}es {sing}"  # neuter nominative/accusative
    num = _DE_NUM[ex.count]
    if case == "dat":
        return f"{num} {stem}en {dat_plur}"
    return f"{num} {stem}e {plur}"


def _fr_np(ex: Example) -> str:
    sing, plur = _FR_NOUN[ex.shape]
    adj_s, adj_p = _FR_COLOUR[ex.colour]
    if ex.count == 1:
        return f"un {sing} {adj_s}"
    return f"{_FR_NUM[ex.count]} {plur} {adj_p}"


def caption(ex: Example, lang: str) -> str:
    """The caption of ``ex`` in ``lang`` (lowercase, space-separated tokens, ending " .")."""
    loc = (" " + _LOC[lang][ex.location]) if ex.with_location else ""
    f = ex.frame
    if lang == "en":
        np_, plural = _en_np(ex)
        be = "are" if plural else "is"
        text = {
            "there_is": f"there {be} {np_}{loc}",
            "i_see": f"i can see {np_}{loc}",
            "picture_shows": f"the picture shows {np_}{loc}",
            "visible": f"{np_} {be} visible{loc}",
            "picture_with": f"here is a picture of {np_}{loc}",
            "we_see": f"we see {np_}{loc}",
        }[f]
    elif lang == "de":
        verb = "sind" if ex.count > 1 else "ist"
        text = {
            "there_is": f"es gibt {_de_np(ex, 'acc')}{loc}",
            "i_see": f"ich sehe {_de_np(ex, 'acc')}{loc}",
            "picture_shows": f"das bild zeigt {_de_np(ex, 'acc')}{loc}",
            "visible": f"{_de_np(ex, 'nom')} {verb}{loc} zu sehen",
            "picture_with": f"hier ist ein bild mit {_de_np(ex, 'dat')}{loc}",
            "we_see": f"wir sehen {_de_np(ex, 'acc')}{loc}",
        }[f]
    elif lang == "fr":
        plural = ex.count > 1
        est = "sont visibles" if plural else "est visible"
        text = {
            "there_is": f"il y a {_fr_np(ex)}{loc}",
            "i_see": f"je vois {_fr_np(ex)}{loc}",
            "picture_shows": f"la photo montre {_fr_np(ex)}{loc}",
            "visible": f"{_fr_np(ex)} {est}{loc}",
            "picture_with": f"voici une photo avec {_fr_np(ex)}{loc}",
            "we_see": f"on voit {_fr_np(ex)}{loc}",
        }[f]
    else:
        raise ValueError(f"unsupported language {lang!r}; supported: {', '.join(SUPPORTED_LANGS)}")
    return text + " ."


# --------------------------------------------------------------------------------------
# Gold word alignment
# --------------------------------------------------------------------------------------

# Each caption word carries {concept: "S" | "P"}: S when the word itself states the concept,
# P when it is only part of a phrase that does. Words of two captions sharing a concept are
# linked, surely when both are S for it (see gold_alignment).
_S, _P = "S", "P"
_FRAME_TAGS = {  # frame -> language -> tags of the frame's words before the noun phrase (or after it)
    "there_is": {"en": [{"there": _P}, {"there": _P}], "de": [{"there": _P}, {"there": _P}],
                 "fr": [{"there": _P}, {"there": _P}, {"there": _P}]},
    "i_see": {"en": [{"subj": _S}, {"see": _P}, {"see": _S}], "de": [{"subj": _S}, {"see": _S}],
              "fr": [{"subj": _S}, {"see": _S}]},
    "picture_shows": {lang: [{"the": _S}, {"picture": _S}, {"shows": _S}] for lang in SUPPORTED_LANGS},
    "picture_with": {"en": [{"here": _S}, {"be": _S}, {"det": _S}, {"picture": _S}, {"with": _P}],
                     "de": [{"here": _S}, {"be": _S}, {"det": _S}, {"picture": _S}, {"with": _P}],
                     "fr": [{"here": _S, "be": _P}, {"det": _S}, {"picture": _S}, {"with": _P}]},
    "we_see": {lang: [{"subj": _S}, {"see": _S}] for lang in SUPPORTED_LANGS},
}


def _loc_tags(loc: tuple[str | None, str | None], lang: str) -> list[dict]:
    """Tags of the words of the location phrase ``_LOC[lang][loc]``."""
    h, v = loc
    if h is None and v is None:
        return {"en": [{"in": _S}, {"the_loc": _S}, {"mid": _S}], "de": [{"in": _S}, {"the_loc": _S}, {"mid": _S}],
                "fr": [{"in": _P, "the_loc": _P}, {"mid": _S}]}[lang]
    if lang == "en":  # "on the left", "at the top", "at the top left"
        head = v or h
        return [{head: _P}, {head: _P}, {head: _S}] + ([{h: _S}] if h and v else [])
    if lang == "de":  # "links", "oben", "oben links"
        return [{w: _S} for w in (v, h) if w]
    return [t for w in (v, h) if w for t in ({w: _P}, {w: _S})]  # "à gauche", "en haut à gauche"


def _np_tags(ex: Example, lang: str) -> list[dict]:
    """Tags of the words of the noun phrase (English: as :func:`_en_np` writes it)."""
    if lang == "de":  # count, colour, shape
        return [{"count": _S}, {"colour": _S}, {"shape": _S}]
    if lang == "fr":  # count, shape, colour
        return [{"count": _S}, {"shape": _S}, {"colour": _S}]
    colour = not ex.hide_colour or ex.en_colour_filler == "coloured"
    if not ex.hide_count:
        return [{"count": _S}] + ([{"colour": _S}] if colour else []) + [{"shape": _S}]
    det = ex.en_vague_det
    if det == "something" and ex.hide_shape:
        return [{"count": _S, "shape": _S}] + ([{"colour": _S}] if colour else [])
    det_tags = {"": [], "some": [{"count": _S}], "something": [{"count": _S}],
                "one or more": [{"count": _S}, {"count": _P}, {"count": _P}]}[det]
    return det_tags + ([{"colour": _S}] if colour else []) + [{"shape": _S}]


def tagged_caption(ex: Example, lang: str) -> list[tuple[str, dict]]:
    """The words of ``caption(ex, lang)`` with the concepts each states (see ``_FRAME_TAGS``)."""
    words = caption(ex, lang).split()
    np_tags = _np_tags(ex, lang)
    loc = _loc_tags(ex.location, lang) if ex.with_location else []
    if ex.frame == "visible":
        be = [{"be": _S}] if lang == "en" or lang == "de" else [{"be": _S}, {"visible": _S}]
        if lang == "en":
            tags = np_tags + be + [{"visible": _S}] + loc
        elif lang == "de":  # "{np} ist{loc} zu sehen"
            tags = np_tags + be + loc + [{"visible": _P}, {"visible": _S}]
        else:  # "{np} est visible{loc}"
            tags = np_tags + be + loc
    else:
        tags = _FRAME_TAGS[ex.frame][lang] + np_tags + loc
    tags = tags + [{"stop": _S}]
    if len(tags) != len(words):  # the tags mirror the grammar above; a mismatch is a bug here
        raise AssertionError(f"{len(tags)} tags for the {len(words)} words of {lang} caption {' '.join(words)!r}")
    return list(zip(words, tags))


def gold_alignment(ex: Example, src_lang: str, tgt_lang: str) -> str:
    """Pharaoh line of the gold alignment of the two captions of ``ex``: ``i-j`` (sure) and
    ``i?j`` (possible) for word ``i`` of the ``src_lang`` and ``j`` of the ``tgt_lang`` caption."""
    return pharaoh_links(tagged_caption(ex, src_lang), tagged_caption(ex, tgt_lang))


def pharaoh_links(src: list, tgt: list) -> str:
    """Pharaoh line linking two tagged captions (``(word, {concept: strength})`` per word):
    ``i-j`` where both words state a shared concept surely, ``i?j`` where one only possibly."""
    links = []
    for i, (_, a) in enumerate(src):
        for j, (_, b) in enumerate(tgt):
            shared = a.keys() & b.keys()
            if shared:
                sure = any(a[c] == _S and b[c] == _S for c in shared)
                links.append(f"{i}{'-' if sure else '?'}{j}")
    return " ".join(links)
