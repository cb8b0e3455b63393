"""Grounded synthetic smoke dataset: a translation task that only the image can complete.

Each example is a small picture of 1-3 identical shapes (same colour, same shape, varied sizes
and positions, never overlapping) on a plain light background, with one caption per language.
The German and French captions always state the count, colour and shape, with correct
agreement (``ein roter kreis`` / ``zwei rote kreise`` / ``ein blaues dreieck``; ``un cercle
rouge`` / ``deux cercles rouges``). The English caption (the translation *source*) hides each
of the three attributes independently with probability ``hide_prob`` (0.5 by default, so on
average half of them), replacing it by a vague word chosen independently of the true value
(``some shapes``, ``a thing``, ``something blue``, ``two objects``). A hidden attribute can
therefore only be recovered from the image: a text-only model must guess it, a model that reads
the image can get it right. That gap is the standing check that the visual path of a
multimodal model carries information.

Every caption also uses one of several sentence frames (``there is/are ...``, ``i can see
...``, ``the picture shows ...``) and, half of the time, a location phrase (``on the left``,
``at the top right``, ``in the middle``) computed from the objects' mean position; the location
is stated in every language, so it is learnable from the text. The location cell (mean position
below 40 % / above 60 % of the side) is drawn uniformly and independently of the count, colour
and shape, and the objects are then placed so that their mean falls in it: no English token
says anything about a hidden attribute (with freely placed objects and image thirds, a corner
meant one object 80-100 % of the time).

Output of :func:`generate_grounded` under ``out_dir``::

    {split}.{lang}             one caption per line (lowercase, tokens separated by one space,
                               ending " .")
    image_splits/{split}.txt   one image file name per line (e.g. ``train_00000.png``)
    images/{split}_{i:05d}.png the pictures (RGB, image_size x image_size)
    labels/{split}.tsv         ground truth per line: image, count, colour, shape, location and
                               which attributes the English hides (for probes and tests)
    boxes/{split}.json         ``{image: [[x1, y1, x2, y2], ...]}``: each object's tight box in
                               pixels, for region features of the known objects
                               (``boxes: given`` in a regions feature set)
    align/{split}.{a}-{b}.gold gold word alignment of the ``a`` and ``b`` captions (every pair
                               of languages in ``langs`` order, e.g. en-de, en-fr, de-fr): one
                               line per caption, ``i-j`` a sure link and ``i?j`` a possible one
                               (Och and Ney 2003), word ``i`` of ``a`` and ``j`` of ``b``
                               (:func:`gold_alignment`; scored by :func:`mmt_repro.text.align.aer`)
    README.txt                 what the generator does, with the settings and statistics

The generator knows which word renders which: each caption word carries the concepts it states
(the count, the colour, the shape, a word of the sentence frame or of the location phrase), and
two words of a pair of captions are linked when they state the same concept: surely when both
words state it themselves (``kreis`` - ``circle``, ``rechts`` - ``right``), possibly when one of
them is only part of a phrase stating it (``on the`` - ``links``, ``there is`` - ``es gibt``).
A vague English word is linked to the word it stands for (``shapes`` - ``kreise``, ``some`` -
``zwei``); a German or French word for a hidden attribute that English leaves out entirely
stays unlinked.

The output is a pure function of ``(sizes, seed, image_size, langs, hide_prob)``: the same
arguments give byte-identical files (the gold alignments were added later; every file that
existed before is byte-identical to what it was). Each split draws from its own random stream (seeded by
the seed and the split name), so changing one split's size leaves the other splits unchanged.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from mmt_repro.io import DataError, atomic_path, atomic_write, read_lines, write_lines

COLOURS = ("red", "green", "blue", "yellow")
SHAPES = ("circle", "square", "triangle")
COUNTS = (1, 2, 3)
#: The languages the caption grammar below can write (a generator capability, not a dataset's
#: list: a grounded dataset picks its own with ``datasets.<name>.langs``, by default all of these).
SUPPORTED_LANGS = ("en", "de", "fr")

# Base RGB values; each image jitters them a little. Yellow is kept fairly saturated so that
# it stands out from the light background.
_RGB = {
    "red": (210, 35, 35),
    "green": (30, 160, 50),
    "blue": (35, 70, 215),
    "yellow": (225, 195, 10),
}

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
_RADIUS = (0.11, 0.20)  # object bounding-circle radius as a fraction of the image side

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
    src, tgt = tagged_caption(ex, src_lang), tagged_caption(ex, tgt_lang)
    links = []
    for i, (_, a) in enumerate(src):
        for j, (_, b) in enumerate(tgt):
            shared = a.keys() & b.keys()
            if shared:
                sure = any(a[c] == _S and b[c] == _S for c in shared)
                links.append(f"{i}{'-' if sure else '?'}{j}")
    return " ".join(links)


# --------------------------------------------------------------------------------------
# Sampling and drawing
# --------------------------------------------------------------------------------------


def _split_rng(seed: int, split: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(split.encode("utf-8"))])


def _crop_margin(size: int) -> float:
    """Pixels at each edge that the ImageNet resize-and-centre-crop (224 of 256) cuts, plus one."""
    return size * (1.0 - 224.0 / 256.0) / 2.0 + 1.0


def _place_objects(rng: np.random.Generator, count: int, size: int) -> list[tuple[float, float, float]]:
    """Non-overlapping (cx, cy, r) circles bounding each object.

    Objects stay inside the central ``224/256`` of the picture, the part that survives the
    standard ImageNet resize-and-centre-crop preprocessing, so no object is cut by the crop.
    """
    margin = _crop_margin(size)
    r_lo, r_hi = _RADIUS[0] * size, _RADIUS[1] * size
    for attempt in range(200):
        shrink = 1.0 - 0.003 * attempt  # very rarely needed; keeps the loop bounded
        objs: list[tuple[float, float, float]] = []
        for _ in range(count):
            r = float(rng.uniform(r_lo, r_hi)) * shrink
            for _try in range(50):
                cx = float(rng.uniform(r + margin, size - r - margin))
                cy = float(rng.uniform(r + margin, size - r - margin))
                if all((cx - ox) ** 2 + (cy - oy) ** 2 >= (r + orr + 2.0) ** 2 for ox, oy, orr in objs):
                    objs.append((cx, cy, r))
                    break
            else:
                break
        if len(objs) == count:
            return objs
    raise RuntimeError(f"could not place {count} objects in a {size}px image")  # pragma: no cover


# Location bands of the objects' mean position, as fractions of the side: below _NEAR is
# left/top, above _FAR right/bottom. Thirds made a corner unreachable for three objects of the
# generator's sizes (the location then told the count); every count reaches every cell at 0.4/0.6.
_NEAR, _FAR = 0.4, 0.6
_CELLS = ((None, "left", "right"), (None, "top", "bottom"))  # horizontal, vertical bands


def _place_objects_in_cell(rng: np.random.Generator, count: int, size: int,
                           cell: tuple[str | None, str | None]) -> list[tuple[float, float, float]]:
    """Objects as :func:`_place_objects`, translated as a group so that their mean position lies
    in ``cell`` (:func:`_location`'s bands). Translation keeps sizes, gaps and the crop margin;
    a configuration that cannot reach the cell is drawn again."""
    margin = _crop_margin(size)
    eps = 1e-3 * size
    near, far = _NEAR * size, _FAR * size
    bands = {None: (near + eps, far - eps), "left": (0.0, near - eps), "top": (0.0, near - eps),
             "right": (far + eps, float(size)), "bottom": (far + eps, float(size))}
    for _ in range(2000):
        objs = _place_objects(rng, count, size)
        shift = []
        for axis, want in enumerate(cell):
            mean = sum(o[axis] for o in objs) / count
            lo = max(max(margin + o[2] - o[axis] for o in objs), bands[want][0] - mean)
            hi = min(min(size - margin - o[2] - o[axis] for o in objs), bands[want][1] - mean)
            if lo > hi:
                break
            shift.append(float(rng.uniform(lo, hi)))
        else:
            moved = [(cx + shift[0], cy + shift[1], r) for cx, cy, r in objs]
            if _location(moved, size) == cell:
                return moved
    raise RuntimeError(f"could not place {count} objects in cell {cell} of a {size}px image")  # pragma: no cover


def _location(objs, size: int) -> tuple[str | None, str | None]:
    mx = sum(o[0] for o in objs) / len(objs) / size
    my = sum(o[1] for o in objs) / len(objs) / size
    h = "left" if mx < _NEAR else ("right" if mx > _FAR else None)
    v = "top" if my < _NEAR else ("bottom" if my > _FAR else None)
    return h, v


def _sample_example(rng: np.random.Generator, name: str, size: int, hide_prob: float) -> Example:
    count = int(COUNTS[rng.integers(len(COUNTS))])
    colour = COLOURS[rng.integers(len(COLOURS))]
    shape = SHAPES[rng.integers(len(SHAPES))]
    cell = (_CELLS[0][rng.integers(3)], _CELLS[1][rng.integers(3)])  # independent of the attributes
    objs = _place_objects_in_cell(rng, count, size, cell)
    hides = rng.random(3) < hide_prob
    frame = FRAMES[rng.integers(len(FRAMES))]
    with_location = bool(rng.random() < 0.5)
    vague_noun = _EN_VAGUE_NOUNS[rng.integers(len(_EN_VAGUE_NOUNS))]
    vague_det = ("some", "one or more", "", "something")[rng.integers(4)]
    colour_filler = "coloured" if rng.random() < 0.3 else ""
    article = "one" if rng.random() < 0.2 else "a"
    return Example(
        image=name, count=count, colour=colour, shape=shape, location=_location(objs, size),
        frame=frame, with_location=with_location,
        hide_count=bool(hides[0]), hide_colour=bool(hides[1]), hide_shape=bool(hides[2]),
        en_vague_noun=vague_noun, en_vague_det=vague_det, en_colour_filler=colour_filler,
        en_singular_article=article, objects=tuple(objs),
    )


def _render(ex: Example, rng: np.random.Generator, size: int) -> Image.Image:
    """Draw at 2x and downsample (anti-aliased edges); colours jittered slightly per image."""
    ss = 2
    bg_level = int(rng.integers(220, 251))
    tint = rng.integers(-6, 7, size=3)
    bg = tuple(int(np.clip(bg_level + t, 0, 255)) for t in tint)
    base = np.array(_RGB[ex.colour])
    fill = tuple(int(v) for v in np.clip(base + rng.integers(-18, 19, size=3), 0, 255))
    img = Image.new("RGB", (size * ss, size * ss), bg)
    draw = ImageDraw.Draw(img)
    for cx, cy, r in ex.objects:
        cx, cy, r = cx * ss, cy * ss, r * ss
        if ex.shape == "circle":
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
        elif ex.shape == "square":
            h = r * 0.7071  # half side: the square is inscribed in the bounding circle
            draw.rectangle([cx - h, cy - h, cx + h, cy + h], fill=fill)
        else:  # upright equilateral triangle inscribed in the bounding circle
            pts = [(cx, cy - r), (cx - r * 0.866, cy + r * 0.5), (cx + r * 0.866, cy + r * 0.5)]
            draw.polygon(pts, fill=fill)
    return img.resize((size, size), Image.Resampling.BOX)


def object_box(shape: str, cx: float, cy: float, r: float) -> list[float]:
    """The tight box ``[x1, y1, x2, y2]`` of one drawn object (as :func:`_render` draws it)."""
    if shape == "square":
        h = r * 0.7071
        return [cx - h, cy - h, cx + h, cy + h]
    if shape == "triangle":
        return [cx - r * 0.866, cy - r, cx + r * 0.866, cy + r * 0.5]
    return [cx - r, cy - r, cx + r, cy + r]


# --------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------


def _check_args(sizes: dict, image_size: int, langs, hide_prob: float) -> None:
    if not sizes:
        raise DataError(None, "grounded dataset: no splits requested", "pass sizes such as {'train': 3000, 'val': 200}")
    for split, n in sizes.items():
        if not split or not str(split).replace("_", "").replace("-", "").isalnum():
            raise DataError(None, f"grounded dataset: bad split name {split!r}", "use letters, digits, '-' or '_'")
        if int(n) < 0:
            raise DataError(None, f"grounded dataset: split {split!r} has negative size {n}", "use a size >= 0")
    bad = [lang for lang in langs if lang not in SUPPORTED_LANGS]
    if bad:
        raise DataError(None, f"grounded dataset: unsupported language(s) {bad}", f"choose from {SUPPORTED_LANGS}")
    if image_size < 32:
        raise DataError(None, f"grounded dataset: image_size {image_size} is too small", "use image_size >= 32")
    if not 0.0 <= hide_prob <= 1.0:
        raise DataError(None, f"grounded dataset: hide_prob {hide_prob} outside [0, 1]", "use a probability")


def check_config(name: str, settings: dict) -> dict[str, list[str]]:
    """The splits (the keys of ``datasets.<name>.sizes``) and languages (``datasets.<name>.langs``,
    by default :data:`SUPPORTED_LANGS`) of a grounded dataset, checked at planning; an unknown
    language, or ``train``/``val`` naming no split, is a :class:`~mmt_repro.config.ConfigError`
    naming the key and the valid values."""
    from mmt_repro.config import ConfigError

    key = f"datasets.{name}"
    splits = list(settings.get("sizes") or {})
    if not splits:
        raise ConfigError(f"{key}.sizes: no splits; give split -> size, e.g. {{train: 3000, val: 200, test: 300}}")
    langs = list(settings.get("langs") or SUPPORTED_LANGS)
    bad = [lang for lang in langs if lang not in SUPPORTED_LANGS]
    if bad:
        raise ConfigError(f"{key}.langs: unsupported language(s) {', '.join(bad)} for the grounded generator; "
                          f"valid values: {', '.join(SUPPORTED_LANGS)}")
    if len(set(langs)) != len(langs):
        raise ConfigError(f"{key}.langs: a language is listed twice ({', '.join(langs)})")
    for role in ("train", "val"):
        if settings.get(role) is not None and settings[role] not in splits:
            raise ConfigError(f"{key}.{role}: {settings[role]!r} is not a split of {key}.sizes; valid values: "
                              f"{', '.join(splits)}")
    return {"splits": splits, "langs": langs}


def gold_pairs(langs) -> list[tuple[str, str]]:
    """The language pairs the generator writes gold alignments for: each pair in ``langs`` order."""
    langs = list(langs)
    return [(a, b) for k, a in enumerate(langs) for b in langs[k + 1 :]]


def generate_grounded(
    out_dir: Path,
    sizes: dict[str, int],
    seed: int,
    image_size: int = 64,
    langs=SUPPORTED_LANGS,
    hide_prob: float = 0.5,
) -> dict:
    """Write the grounded smoke dataset under ``out_dir`` and return a summary dict.

    ``sizes`` maps split name to number of examples (e.g. ``{"train": 3000, "val": 200,
    "test": 300}``). ``hide_prob`` is the probability that the English source hides each of
    count, colour and shape (independently). See the module docstring for the file layout.
    """
    out_dir = Path(out_dir)
    langs = tuple(langs)
    _check_args(sizes, image_size, langs, hide_prob)
    (out_dir / "images").mkdir(parents=True, exist_ok=True)

    summary: dict = {
        "seed": int(seed), "image_size": int(image_size), "langs": list(langs), "hide_prob": hide_prob,
        "splits": {}, "vocab": {}, "vocab_size": {}, "hidden_rate": {}, "frames": list(FRAMES),
    }
    vocab: dict[str, Counter] = {lang: Counter() for lang in langs}
    hidden = Counter()
    total = 0
    for split, n in sizes.items():
        n = int(n)
        rng = _split_rng(seed, split)
        examples = []
        for i in range(n):
            ex = _sample_example(rng, f"{split}_{i:05d}.png", image_size, hide_prob)
            img = _render(ex, rng, image_size)
            with atomic_path(out_dir / "images" / ex.image) as tmp:
                img.save(tmp, format="PNG", optimize=False, compress_level=6)
            examples.append(ex)
        for lang in langs:
            lines = [caption(ex, lang) for ex in examples]
            for line in lines:
                vocab[lang].update(line.split())
            write_lines(out_dir / f"{split}.{lang}", lines)
        write_lines(out_dir / "image_splits" / f"{split}.txt", [ex.image for ex in examples])
        label_lines = ["\t".join(["image", "count", "colour", "shape", "horiz", "vert", "frame", "with_location",
                                   "hide_count", "hide_colour", "hide_shape"])]
        for ex in examples:
            label_lines.append("\t".join([
                ex.image, str(ex.count), ex.colour, ex.shape, ex.location[0] or "centre",
                ex.location[1] or "middle", ex.frame, str(int(ex.with_location)),
                str(int(ex.hide_count)), str(int(ex.hide_colour)), str(int(ex.hide_shape)),
            ]))
        write_lines(out_dir / "labels" / f"{split}.tsv", label_lines)
        boxes = {ex.image: [[round(v, 2) for v in object_box(ex.shape, *obj)] for obj in ex.objects]
                 for ex in examples}
        with atomic_write(out_dir / "boxes" / f"{split}.json") as fh:
            json.dump(boxes, fh)
        for a, b in gold_pairs(langs):
            write_lines(out_dir / "align" / f"{split}.{a}-{b}.gold", [gold_alignment(ex, a, b) for ex in examples])
        hidden.update({"count": sum(e.hide_count for e in examples),
                       "colour": sum(e.hide_colour for e in examples),
                       "shape": sum(e.hide_shape for e in examples)})
        summary["splits"][split] = n
        total += n

    for lang in langs:
        summary["vocab"][lang] = sorted(vocab[lang])
        summary["vocab_size"][lang] = len(vocab[lang])
    for attr in ("count", "colour", "shape"):
        summary["hidden_rate"][attr] = hidden[attr] / total if total else 0.0
    summary["mean_hidden_attributes"] = sum(hidden.values()) / total if total else 0.0
    summary["images"] = total
    _write_readme(out_dir / "README.txt", summary)
    return summary


def _write_readme(path: Path, summary: dict) -> None:
    splits = ", ".join(f"{k}={v}" for k, v in summary["splits"].items())
    rates = ", ".join(f"{k} {v:.3f}" for k, v in summary["hidden_rate"].items())
    vs = ", ".join(f"{k} {v}" for k, v in summary["vocab_size"].items())
    text = f"""Grounded synthetic smoke dataset (mmt_repro.data.grounded.generate_grounded)

Purpose: check that the visual path of a multimodal translation model carries information.
Each picture shows 1-3 identical shapes (same colour and shape; sizes and positions vary;
objects never overlap) on a plain light background. Colours: {", ".join(COLOURS)}.
Shapes: {", ".join(SHAPES)}. Counts: {", ".join(map(str, COUNTS))}. Object bounding-circle radius
{_RADIUS[0]:.2f}-{_RADIUS[1]:.2f} of the image side; objects stay inside the central 224/256 of
the picture, the part kept by the usual ImageNet resize + centre-crop preprocessing.

The German and French captions always state count, colour and shape with correct agreement
("ein roter kreis", "zwei rote kreise", "ein blaues dreieck"; "un cercle rouge", "deux cercles
rouges"). The English caption (the source) hides each attribute independently with probability
{summary["hide_prob"]}, using vague words chosen independently of the true value ("some shapes",
"a thing", "something blue", "two objects"): hidden attributes can only be recovered from the
image. Captions use one of {len(summary["frames"])} sentence frames and, half of the time, a
location phrase computed from the mean object position (below 40 % / above 60 % of the side;
the cell is drawn uniformly, independently of count, colour and shape, and the objects placed
to fit it), stated in every language.

Settings: seed={summary["seed"]}, image_size={summary["image_size"]}, langs={",".join(summary["langs"])}.
Splits: {splits}.
Observed hiding rate in English: {rates}; mean hidden attributes per caption
{summary["mean_hidden_attributes"]:.3f} of 3.
Vocabulary sizes: {vs}.

Files:
  {{split}}.{{lang}}             one caption per line, lowercase, tokens separated by one space, ending " ."
  image_splits/{{split}}.txt   image file name per line, aligned with the caption files
  images/{{split}}_NNNNN.png   RGB pictures, {summary["image_size"]}x{summary["image_size"]}
  labels/{{split}}.tsv         ground truth (count, colour, shape, location, frame, hidden flags)

The files are a pure function of the settings above: the same settings give byte-identical files.
"""
    with atomic_write(path) as fh:
        fh.write(text)


def generate_comparable(
    data_dir: Path,
    split: str = "train",
    per_image: int = 5,
    seed: int = 1,
    langs=("en", "de"),
    hide_prob: float = 0.5,
) -> dict:
    """Comparable descriptions of an existing split, in the layout of Multi30k task 2 (M30k_C).

    For every image of ``data_dir/labels/{split}.tsv`` and each ``k`` in ``1..per_image``, one new
    caption per language is drawn independently (fresh sentence frame, location phrase and,
    for English, fresh hiding), so the k-th English and German files describe the same images
    but are not translations of each other. Writes ``{split}_c{k}.{lang}`` and
    ``image_splits/{split}_c{k}.txt`` under ``data_dir``; deterministic from ``seed``."""
    data_dir = Path(data_dir)
    labels_path = data_dir / "labels" / f"{split}.tsv"
    rows = [line.split("\t") for line in read_lines(labels_path)]
    if not rows or rows[0][:4] != ["image", "count", "colour", "shape"]:
        raise DataError(labels_path, "not a grounded label file", "re-run generate_grounded")
    header, rows = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    for lang in langs:
        if lang not in SUPPORTED_LANGS:
            raise ValueError(f"unsupported language {lang!r}; supported: {', '.join(SUPPORTED_LANGS)}")
    for k in range(1, per_image + 1):
        rng = np.random.default_rng([int(seed), k, zlib.crc32(f"comparable:{split}".encode("utf-8"))])
        captions: dict[str, list[str]] = {lang: [] for lang in langs}
        for row in rows:
            horiz = None if row[col["horiz"]] == "centre" else row[col["horiz"]]
            vert = None if row[col["vert"]] == "middle" else row[col["vert"]]
            per_lang = {}
            for lang in langs:  # independent draws per language: comparable, not parallel
                hides = rng.random(3) < hide_prob
                ex = Example(
                    image=row[col["image"]], count=int(row[col["count"]]), colour=row[col["colour"]],
                    shape=row[col["shape"]], location=(horiz, vert),
                    frame=FRAMES[rng.integers(len(FRAMES))], with_location=bool(rng.random() < 0.5),
                    hide_count=bool(hides[0]), hide_colour=bool(hides[1]), hide_shape=bool(hides[2]),
                    en_vague_noun=_EN_VAGUE_NOUNS[rng.integers(len(_EN_VAGUE_NOUNS))],
                    en_vague_det=("some", "one or more", "", "something")[rng.integers(4)],
                    en_colour_filler="coloured" if rng.random() < 0.3 else "",
                    en_singular_article="one" if rng.random() < 0.2 else "a",
                    objects=(),
                )
                per_lang[lang] = caption(ex, lang)
            for lang in langs:
                captions[lang].append(per_lang[lang])
        for lang in langs:
            write_lines(data_dir / f"{split}_c{k}.{lang}", captions[lang])
        write_lines(data_dir / "image_splits" / f"{split}_c{k}.txt", [row[col["image"]] for row in rows])
    return {"split": split, "per_image": per_image, "images": len(rows), "langs": list(langs)}
