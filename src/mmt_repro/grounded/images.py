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
                               (:func:`~mmt_repro.grounded.captions.gold_alignment`;
                               scored by :func:`mmt_repro.text.align.aer`)
    README.txt                 what the generator does, with the settings and statistics

The captions and their gold word alignments are :mod:`mmt_repro.grounded.captions`.

The output is a pure function of ``(sizes, seed, image_size, langs, hide_prob)``: the same
arguments give byte-identical files (the gold alignments were added later; every file that
existed before is byte-identical to what it was). Each split draws from its own random stream (seeded by
the seed and the split name), so changing one split's size leaves the other splits unchanged.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from .captions import (
    _EN_VAGUE_NOUNS,
    COLOURS,
    COUNTS,
    FRAMES,
    SHAPES,
    SUPPORTED_LANGS,
    Example,
    caption,
    gold_alignment,
)
from ..io import DataError, atomic_path, atomic_write, read_lines, write_lines

# Base RGB values; each image jitters them a little. Yellow is kept fairly saturated so that
# it stands out from the light background.
_RGB = {
    "red": (210, 35, 35),
    "green": (30, 160, 50),
    "blue": (35, 70, 215),
    "yellow": (225, 195, 10),
}

_RADIUS = (0.11, 0.20)  # object bounding-circle radius as a fraction of the image side


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


SUPERSAMPLE = 2  # objects are drawn at 2x and box-downsampled: anti-aliased edges


def canvas(rng: np.random.Generator, size: int) -> Image.Image:
    """A light background, its level and tint jittered per image, at ``SUPERSAMPLE`` x ``size``."""
    bg_level = int(rng.integers(220, 251))
    tint = rng.integers(-6, 7, size=3)
    bg = tuple(int(np.clip(bg_level + t, 0, 255)) for t in tint)
    return Image.new("RGB", (size * SUPERSAMPLE, size * SUPERSAMPLE), bg)


def jittered(rng: np.random.Generator, colour: str) -> tuple[int, int, int]:
    """The RGB of ``colour``, each channel moved by up to 18."""
    return tuple(int(v) for v in np.clip(np.array(_RGB[colour]) + rng.integers(-18, 19, size=3), 0, 255))


def draw_object(draw: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, r: float, fill) -> None:
    """One object in its bounding circle (``cx, cy, r`` in canvas pixels): a circle, an inscribed
    square or an upright equilateral triangle; its extent is :func:`object_box`."""
    x1, y1, x2, y2 = object_box(shape, cx, cy, r)
    if shape == "circle":
        draw.ellipse([x1, y1, x2, y2], fill=fill)
    elif shape == "square":
        draw.rectangle([x1, y1, x2, y2], fill=fill)
    else:
        draw.polygon([(cx, y1), (x1, y2), (x2, y2)], fill=fill)


def _render(ex: Example, rng: np.random.Generator, size: int) -> Image.Image:
    """Draw at 2x and downsample (anti-aliased edges); colours jittered slightly per image."""
    img = canvas(rng, size)
    fill = jittered(rng, ex.colour)
    draw = ImageDraw.Draw(img)
    ss = SUPERSAMPLE
    for cx, cy, r in ex.objects:
        draw_object(draw, ex.shape, cx * ss, cy * ss, r * ss, fill)
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
    from ..config import ConfigError

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
    text = f"""Grounded synthetic smoke dataset (mmt_repro.grounded.images.generate_grounded)

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
