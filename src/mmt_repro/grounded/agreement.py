"""Grounded synthetic set with **distinct objects** (``datasets.<name>.objects: distinct``): each
source word that names an object has a region of its own, so visual agreement (Yang et al. 2020,
eqs. 12-22) is testable on it.

The default grounded set (:mod:`mmt_repro.grounded.images`) draws 1-3 *identical* objects per
image and its region features add a whole-image slot: any region serves every word, uniform image
attention is optimal, and VAD (eqs. 21-22) sits at its floor with and without agreement (issue
26). Here each picture holds 2 or 3 objects of **different colours and different shapes**
(non-overlapping, on the grounded set's light background, within the ImageNet crop), and the
captions name every object::

    en  there is a circle and a blue square .           (the circle's colour is hidden)
    de  es gibt einen roten kreis und ein blaues quadrat .
    fr  il y a un cercle rouge et un carré bleu .

German and French always state each object's colour and shape; the English source hides, per
object independently, its colour (probability ``hide_prob / 2``) or its shape (``hide_prob /
2``; replaced by ``shape``, ``object`` or ``thing``), never both. A hidden colour can only be
read from the region of the object the English names by its shape, a hidden shape from the
region of the object it names by its colour: a word that points at the right region is what the
forward model needs, and the region is known.

The region order is not the caption order: ``boxes/{split}.json`` lists the objects left to
right (a reading order a detector could give, independent of the order the caption mentions
them), so a model must match a word to a region by what the region shows. No whole-image box is
written; a feature set ``boxes: given`` with ``full_image: false`` then gives exactly one region
per object. ``regions/{split}.{lang}`` records the known link: per caption, one integer per
word, the box index (in ``boxes`` order) of the object the word belongs to (its article, colour
or shape word), ``-1`` for the frame, the conjunctions and the full stop
(:func:`word_regions`).

Output (the layout of :func:`mmt_repro.grounded.images.generate_grounded`, so the same workflow
rule, features and alignment stage serve it): ``{split}.{lang}``, ``image_splits/{split}.txt``,
``images/``, ``labels/{split}.tsv`` (image, objects, colours, shapes and what the English
hides, in caption order, and ``region_of``, each caption object's box index),
``boxes/{split}.json``, ``align/{split}.{a}-{b}.gold`` (gold word alignment, sure ``i-j`` /
possible ``i?j``), ``regions/{split}.{lang}``, ``README.txt``. A pure function of the arguments;
each split draws from its own random stream.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from .images import (
    SUPERSAMPLE,
    _check_args,
    _place_objects,
    _split_rng,
    canvas,
    draw_object,
    generate_grounded,
    gold_pairs,
    jittered,
    object_box,
)
from .captions import _DE_COLOUR, _DE_NOUN, _FR_COLOUR, _FR_NOUN, _FRAME_TAGS, COLOURS, SHAPES, pharaoh_links
from ..io import atomic_path, atomic_write, write_lines

#: ``datasets.<name>.objects``: same (1-3 identical objects, the default set) | distinct (this module)
OBJECT_KINDS = ("same", "distinct")
COUNTS = (2, 3)
FRAMES = ("there_is", "i_see", "picture_shows", "we_see")
_VAGUE = ("shape", "object", "thing")
_HIDES = ("none", "colour", "shape")
_AND = {"en": "and", "de": "und", "fr": "et"}
_FRAME_WORDS = {
    "there_is": {"en": "there is", "de": "es gibt", "fr": "il y a"},
    "i_see": {"en": "i can see", "de": "ich sehe", "fr": "je vois"},
    "picture_shows": {"en": "the picture shows", "de": "das bild zeigt", "fr": "la photo montre"},
    "we_see": {"en": "we see", "de": "wir sehen", "fr": "on voit"},
}
_S, _P = "S", "P"


@dataclass(frozen=True)
class Scene:
    """One example: the objects in caption order and what the English hides of each."""

    image: str
    colours: tuple[str, ...]
    shapes: tuple[str, ...]
    hides: tuple[str, ...]  # per object: none | colour | shape
    vague: tuple[str, ...]  # per object: the English noun standing for a hidden shape
    frame: str
    objects: tuple[tuple[float, float, float], ...]  # (cx, cy, r) in pixels, caption order
    region_of: tuple[int, ...]  # per object: its index in the boxes (left to right)


# ----------------------------------------------------------------------------- captions
def _object_words(scene: Scene, k: int, lang: str) -> list[tuple[str, dict]]:
    colour, shape, hide = scene.colours[k], scene.shapes[k], scene.hides[k]
    det, col, shp = {f"det{k}": _S}, {f"colour{k}": _S}, {f"shape{k}": _S}
    if lang == "en":
        words = [("a", det)]
        if hide != "colour":
            words.append((colour, col))
        words.append((scene.vague[k] if hide == "shape" else shape, shp))
        return words
    if lang == "de":  # accusative singular: einen roten kreis / ein blaues quadrat
        sing, gender, _, _ = _DE_NOUN[shape]
        stem = _DE_COLOUR[colour]
        art, adj = ("einen", f"{stem}en") if gender == "m" else ("ein", f"{stem}es")
        return [(art, det), (adj, col), (sing, shp)]
    return [("un", det), (_FR_NOUN[shape][0], shp), (_FR_COLOUR[colour][0], col)]


def tagged_caption(scene: Scene, lang: str) -> list[tuple[str, dict]]:
    """The words of the caption of ``scene`` in ``lang`` with the concepts each states."""
    frame = _FRAME_WORDS[scene.frame][lang].split()
    tags = _FRAME_TAGS[scene.frame][lang]
    words = list(zip(frame, tags))
    n = len(scene.colours)
    for k in range(n):
        if k and k < n - 1:
            words.append((",", {"comma": _S}))
        elif k:
            words.append((_AND[lang], {"and": _S}))
        words.extend(_object_words(scene, k, lang))
    return words + [(".", {"stop": _S})]


def caption(scene: Scene, lang: str) -> str:
    """The caption (lowercase, space-separated tokens, ending " .")."""
    return " ".join(w for w, _ in tagged_caption(scene, lang))


def gold_alignment(scene: Scene, src_lang: str, tgt_lang: str) -> str:
    """Pharaoh line of the gold alignment: ``i-j`` sure (both words state a shared concept),
    ``i?j`` possible (one of them only as part of a phrase), as in
    :func:`mmt_repro.grounded.captions.gold_alignment`. A German or French colour word whose
    colour the English hides stays unlinked."""
    return pharaoh_links(tagged_caption(scene, src_lang), tagged_caption(scene, tgt_lang))


def word_regions(scene: Scene, lang: str) -> list[int]:
    """Per caption word, the box index of the object it belongs to (``-1``: no object)."""
    out = []
    for _, tags in tagged_caption(scene, lang):
        ks = {int(c[-1]) for c in tags if c[:-1] in ("det", "colour", "shape")}
        out.append(scene.region_of[ks.pop()] if ks else -1)
    return out


# ----------------------------------------------------------------------------- sampling, drawing
def _sample_scene(rng: np.random.Generator, name: str, size: int, hide_prob: float) -> Scene:
    n = int(COUNTS[rng.integers(len(COUNTS))])
    colours = tuple(COLOURS[i] for i in rng.permutation(len(COLOURS))[:n])
    shapes = tuple(SHAPES[i] for i in rng.permutation(len(SHAPES))[:n])
    objs = tuple(_place_objects(rng, n, size))
    hides = []
    for _ in range(n):
        u = rng.random()
        hides.append("colour" if u < hide_prob / 2 else ("shape" if u < hide_prob else "none"))
    vague = tuple(_VAGUE[rng.integers(len(_VAGUE))] for _ in range(n))
    frame = FRAMES[rng.integers(len(FRAMES))]
    order = sorted(range(n), key=lambda k: (objs[k][0], objs[k][1]))  # boxes left to right
    region_of = tuple(order.index(k) for k in range(n))
    return Scene(image=name, colours=colours, shapes=shapes, hides=tuple(hides), vague=vague, frame=frame,
                 objects=objs, region_of=region_of)


def _render(scene: Scene, rng: np.random.Generator, size: int) -> Image.Image:
    """As the grounded set draws (2x, box-downsampled, light jittered background), one colour per object."""
    img = canvas(rng, size)
    draw = ImageDraw.Draw(img)
    ss = SUPERSAMPLE
    for colour, shape, (cx, cy, r) in zip(scene.colours, scene.shapes, scene.objects):
        draw_object(draw, shape, cx * ss, cy * ss, r * ss, jittered(rng, colour))
    return img.resize((size, size), Image.Resampling.BOX)


# ----------------------------------------------------------------------------- entry points
def generate(out_dir: Path, sizes: dict[str, int], seed: int, image_size: int = 64, langs=("en", "de", "fr"),
             hide_prob: float = 0.5, objects: str = "same") -> dict:
    """The grounded set of ``objects`` kind: ``same`` is :func:`~mmt_repro.grounded.images.generate_grounded`
    (byte-identical output), ``distinct`` is :func:`generate_distinct`."""
    if objects not in OBJECT_KINDS:
        raise ValueError(f"unknown objects kind {objects!r}; valid: {', '.join(OBJECT_KINDS)}")
    make = generate_grounded if objects == "same" else generate_distinct
    return make(out_dir, sizes, seed, image_size=image_size, langs=langs, hide_prob=hide_prob)


def generate_distinct(out_dir: Path, sizes: dict[str, int], seed: int, image_size: int = 64,
                      langs=("en", "de", "fr"), hide_prob: float = 0.5) -> dict:
    """Write the distinct-object grounded set under ``out_dir`` (module docstring) and return a summary."""
    out_dir = Path(out_dir)
    langs = tuple(langs)
    _check_args(sizes, image_size, langs, hide_prob)
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    summary: dict = {"objects": "distinct", "seed": int(seed), "image_size": int(image_size), "langs": list(langs),
                     "hide_prob": hide_prob, "splits": {}, "vocab_size": {}}
    vocab: dict[str, Counter] = {lang: Counter() for lang in langs}
    hidden: Counter = Counter()
    for split, n in sizes.items():
        rng = _split_rng(seed, "distinct:" + split)
        scenes = []
        for i in range(int(n)):
            scene = _sample_scene(rng, f"{split}_{i:05d}.png", image_size, hide_prob)
            with atomic_path(out_dir / "images" / scene.image) as tmp:
                _render(scene, rng, image_size).save(tmp, format="PNG", optimize=False, compress_level=6)
            scenes.append(scene)
            hidden.update(scene.hides)
        for lang in langs:
            lines = [caption(s, lang) for s in scenes]
            for line in lines:
                vocab[lang].update(line.split())
            write_lines(out_dir / f"{split}.{lang}", lines)
            write_lines(out_dir / "regions" / f"{split}.{lang}",
                        [" ".join(map(str, word_regions(s, lang))) for s in scenes])
        write_lines(out_dir / "image_splits" / f"{split}.txt", [s.image for s in scenes])
        write_lines(out_dir / "labels" / f"{split}.tsv",
                    ["image\tobjects\tcolours\tshapes\thides\tframe\tregion_of"]
                    + [f"{s.image}\t{len(s.colours)}\t{','.join(s.colours)}\t{','.join(s.shapes)}\t{','.join(s.hides)}"
                       f"\t{s.frame}\t{','.join(map(str, s.region_of))}" for s in scenes])
        boxes = {}
        for s in scenes:
            by_region = sorted(range(len(s.colours)), key=lambda k: s.region_of[k])
            boxes[s.image] = [[round(v, 2) for v in object_box(s.shapes[k], *s.objects[k])] for k in by_region]
        with atomic_write(out_dir / "boxes" / f"{split}.json") as fh:
            json.dump(boxes, fh)
        for a, b in gold_pairs(langs):
            write_lines(out_dir / "align" / f"{split}.{a}-{b}.gold", [gold_alignment(s, a, b) for s in scenes])
        summary["splits"][split] = int(n)
    total = sum(hidden.values())
    summary["hidden_rate"] = {h: hidden[h] / total if total else 0.0 for h in _HIDES}
    summary["vocab_size"] = {lang: len(vocab[lang]) for lang in langs}
    _write_readme(out_dir / "README.txt", summary)
    return summary


def _write_readme(path: Path, summary: dict) -> None:
    splits = ", ".join(f"{k}={v}" for k, v in summary["splits"].items())
    rates = ", ".join(f"{k} {v:.3f}" for k, v in summary["hidden_rate"].items())
    text = f"""Grounded synthetic set, distinct objects (mmt_repro.grounded.agreement.generate_distinct)

Purpose: a set where visual agreement (Yang et al. 2020) is testable. Each picture holds 2 or 3
objects of different colours and different shapes; the captions name every object (German and
French state colour and shape; the English hides one of them per object with probability
{summary["hide_prob"]}: per object {rates}). boxes/ lists one box per object, left to right (no
whole-image box); regions/{{split}}.{{lang}} gives, per caption word, the box of its object (-1: none).

Settings: seed={summary["seed"]}, image_size={summary["image_size"]}, langs={",".join(summary["langs"])}.
Splits: {splits}. Vocabulary sizes: {", ".join(f"{k} {v}" for k, v in summary["vocab_size"].items())}.
The files are a pure function of the settings above.
"""
    with atomic_write(path) as fh:
        fh.write(text)
