"""Grounded synthetic *video* set: a translation task that only the order of the frames completes.

Each example is a short clip (``n_frames`` frames, ``image_size`` pixels square, lossless FFV1
in Matroska) of one shape (circle, square or triangle; red, green, blue or yellow) moving in a
straight line to the left, to the right, up or down across a light background, with one
caption per language. The Chinese (or German) target always states colour, shape and the
**direction of motion** (``一个红色的圆形向右移动。`` / ``ein roter kreis bewegt sich nach
rechts .``). The English source never states the direction (``a red circle is moving``) and
hides colour and shape independently with probability ``hide_prob`` (vague words drawn
independently of the truth: ``a coloured circle``, ``a red thing``).

What the words need:

- colour and shape: any single frame shows them;
- direction: only the order of the frames. The path's centre is drawn uniformly inside the
  frame, independently of the direction, and the object covers ``travel`` of the side, so
  the position in any one frame says little about where it is going; the same frames in
  another order (a time-shuffled clip) move elsewhere.

So a text-only model must guess the direction (chance: 25 %), a model that reads the video can
state it, and a model given the clip's frames shuffled in time cannot: ``time_shuffled``
splits (e.g. ``{test_tshuf: test}``) hold the same clips and captions as their source split
with each clip's frames in a random order (seeded, never the identity).

Output of :func:`generate_grounded_video` under ``out_dir``::

    {split}.{lang}              one caption per line (en/de: lowercase, tokens separated by one
                                space, ending " ."; zh: plain Chinese text, ending "。")
    video_splits/{split}.txt    one clip file name per line (``train_00000.mkv``)
    videos/{split}_{i:05d}.mkv  the clips (FFV1, RGB, image_size x image_size, n_frames frames)
    labels/{split}.tsv          ground truth per line: video, colour, shape, direction, frame,
                                hidden flags, and the frame order of time-shuffled clips
    README.txt                  what the generator does, with the settings and statistics

The output is a pure function of the arguments; each split draws from its own random stream
(seeded by the seed and the split's name).
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from ..io import DataError, atomic_path, atomic_write, write_lines

COLOURS = ("red", "green", "blue", "yellow")
SHAPES = ("circle", "square", "triangle")
DIRECTIONS = ("left", "right", "up", "down")
SUPPORTED_LANGS = ("en", "zh", "de")
FRAMES = ("moves", "is_moving", "we_see", "there_is", "video_shows")
_STEP = {"left": (-1.0, 0.0), "right": (1.0, 0.0), "up": (0.0, -1.0), "down": (0.0, 1.0)}
_RGB = {"red": (210, 35, 35), "green": (30, 160, 50), "blue": (35, 70, 215), "yellow": (225, 195, 10)}
_RADIUS = (0.12, 0.17)  # object bounding-circle radius, fraction of the side
TRAVEL = 0.36  # distance the object covers over the clip, fraction of the side

_ZH_COLOUR = {"red": "红色", "green": "绿色", "blue": "蓝色", "yellow": "黄色"}
_ZH_SHAPE = {"circle": "圆形", "square": "正方形", "triangle": "三角形"}
_ZH_DIR = {"left": "向左", "right": "向右", "up": "向上", "down": "向下"}
_DE_COLOUR = {"red": "rot", "green": "grün", "blue": "blau", "yellow": "gelb"}
_DE_NOUN = {"circle": ("kreis", "m"), "square": ("quadrat", "n"), "triangle": ("dreieck", "n")}
_DE_DIR = {"left": "nach links", "right": "nach rechts", "up": "nach oben", "down": "nach unten"}
_EN_VAGUE = ("shape", "object", "thing")
#: The words of the hidden temporal attribute in each target language (for the accuracy column).
DIRECTION_WORDS = {"zh": _ZH_DIR, "de": _DE_DIR}


@dataclass(frozen=True)
class Clip:
    video: str
    colour: str
    shape: str
    direction: str
    frame: str
    hide_colour: bool
    hide_shape: bool
    en_vague_noun: str
    en_coloured: bool
    path: tuple[tuple[float, float], ...]  # object centre per frame, pixels
    radius: float


def caption(c: Clip, lang: str) -> str:
    """The caption of ``c`` in ``lang`` (the English never states the direction)."""
    if lang == "en":
        colour = ("coloured" if c.en_coloured else None) if c.hide_colour else c.colour
        noun = c.en_vague_noun if c.hide_shape else c.shape
        np_ = " ".join(w for w in (colour, noun) if w)
        np_ = ("an " if np_[0] in "aeiou" else "a ") + np_
        return {"moves": f"{np_} moves .", "is_moving": f"{np_} is moving .", "we_see": f"we can see {np_} moving .",
                "there_is": f"there is {np_} moving .", "video_shows": f"the video shows {np_} moving ."}[c.frame]
    if lang == "zh":
        np_ = f"一个{_ZH_COLOUR[c.colour]}的{_ZH_SHAPE[c.shape]}"
        d = _ZH_DIR[c.direction]
        return {"moves": f"{np_}{d}移动。", "is_moving": f"{np_}正在{d}移动。", "we_see": f"我们可以看到{np_}在{d}移动。",
                "there_is": f"有{np_}在{d}移动。", "video_shows": f"视频中{np_}{d}移动。"}[c.frame]
    if lang == "de":
        noun, gender = _DE_NOUN[c.shape]
        stem = _DE_COLOUR[c.colour]
        nom = f"ein {stem}er {noun}" if gender == "m" else f"ein {stem}es {noun}"
        acc = f"einen {stem}en {noun}" if gender == "m" else nom
        d = _DE_DIR[c.direction]
        return {"moves": f"{nom} bewegt sich {d} .", "is_moving": f"{nom} bewegt sich gerade {d} .",
                "we_see": f"wir sehen {acc} , der sich {d} bewegt ." if gender == "m"
                else f"wir sehen {acc} , das sich {d} bewegt .",
                "there_is": f"es gibt {acc} , der sich {d} bewegt ." if gender == "m"
                else f"es gibt {acc} , das sich {d} bewegt .",
                "video_shows": f"das video zeigt {acc} , der sich {d} bewegt ." if gender == "m"
                else f"das video zeigt {acc} , das sich {d} bewegt ."}[c.frame]
    raise ValueError(f"unsupported language {lang!r}; supported: {', '.join(SUPPORTED_LANGS)}")


def _margin(size: int) -> float:
    """Pixels at each edge that the I3D resize (x 256/224) and centre crop cut, plus one."""
    return size * (1.0 - 224.0 / 256.0) / 2.0 + 1.0


def _sample(rng: np.random.Generator, name: str, size: int, n_frames: int, hide_prob: float) -> Clip:
    colour = COLOURS[rng.integers(len(COLOURS))]
    shape = SHAPES[rng.integers(len(SHAPES))]
    direction = DIRECTIONS[rng.integers(len(DIRECTIONS))]
    r = float(rng.uniform(*_RADIUS)) * size
    travel = TRAVEL * size
    lo = _margin(size) + r + travel / 2
    hi = size - _margin(size) - r - travel / 2
    cx, cy = float(rng.uniform(lo, hi)), float(rng.uniform(lo, hi))  # path centre, independent of direction
    dx, dy = _STEP[direction]
    frac = np.linspace(-0.5, 0.5, n_frames)
    path = tuple((cx + dx * travel * f, cy + dy * travel * f) for f in frac)
    hides = rng.random(2) < hide_prob
    return Clip(video=name, colour=colour, shape=shape, direction=direction, frame=FRAMES[rng.integers(len(FRAMES))],
                hide_colour=bool(hides[0]), hide_shape=bool(hides[1]),
                en_vague_noun=_EN_VAGUE[rng.integers(len(_EN_VAGUE))], en_coloured=bool(rng.random() < 0.3),
                path=path, radius=r)


def render(c: Clip, rng: np.random.Generator, size: int) -> np.ndarray:
    """The clip's frames ``(n_frames, size, size, 3)`` uint8: drawn at 2x, downsampled."""
    ss = 2
    bg = tuple(int(np.clip(int(rng.integers(220, 251)) + t, 0, 255)) for t in rng.integers(-6, 7, size=3))
    fill = tuple(int(v) for v in np.clip(np.array(_RGB[c.colour]) + rng.integers(-18, 19, size=3), 0, 255))
    frames = []
    r = c.radius * ss
    for x, y in c.path:
        img = Image.new("RGB", (size * ss, size * ss), bg)
        draw = ImageDraw.Draw(img)
        x, y = x * ss, y * ss
        if c.shape == "circle":
            draw.ellipse([x - r, y - r, x + r, y + r], fill=fill)
        elif c.shape == "square":
            h = r * 0.7071
            draw.rectangle([x - h, y - h, x + h, y + h], fill=fill)
        else:
            draw.polygon([(x, y - r), (x - r * 0.866, y + r * 0.5), (x + r * 0.866, y + r * 0.5)], fill=fill)
        frames.append(np.asarray(img.resize((size, size), Image.Resampling.BOX)))
    return np.stack(frames)


def write_clip(path: Path, frames: np.ndarray, fps: int = 8) -> None:
    """Frames ``(F, H, W, 3)`` uint8 as a lossless FFV1 Matroska file (atomically)."""
    import av

    # bitexact: no random segment UIDs or dates, so the same frames give the same bytes
    with atomic_path(path) as tmp, av.open(str(tmp), mode="w", format="matroska",
                                           container_options={"fflags": "+bitexact"}) as out:
        stream = out.add_stream("ffv1", rate=fps, options={"flags": "+bitexact"})
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "bgr0"
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def _shuffled_order(rng: np.random.Generator, n: int) -> np.ndarray:
    while True:
        order = rng.permutation(n)
        if n < 2 or not np.array_equal(order, np.arange(n)):
            return order


def check_config(name: str, settings: dict) -> dict[str, list[str]]:
    """Splits (the keys of ``sizes`` and of ``time_shuffled``) and languages of a grounded video
    dataset, checked at planning (a :class:`~mmt_repro.config.ConfigError` names the key)."""
    from ..config import ConfigError

    key = f"datasets.{name}"
    splits = list(settings.get("sizes") or {})
    if not splits:
        raise ConfigError(f"{key}.sizes: no splits; give split -> size, e.g. {{train: 800, val: 60, test: 120}}")
    shuffled = dict(settings.get("time_shuffled") or {})
    for new, src in shuffled.items():
        if src not in splits:
            raise ConfigError(f"{key}.time_shuffled.{new}: source split {src!r} is not a key of {key}.sizes; valid "
                              f"values: {', '.join(splits)}")
        if new in splits:
            raise ConfigError(f"{key}.time_shuffled.{new}: the name is already a split of {key}.sizes")
    langs = list(settings.get("langs") or ("en", "zh"))
    bad = [lang for lang in langs if lang not in SUPPORTED_LANGS]
    if bad:
        raise ConfigError(f"{key}.langs: unsupported language(s) {', '.join(bad)} for the grounded video generator; "
                          f"valid values: {', '.join(SUPPORTED_LANGS)}")
    all_splits = splits + list(shuffled)
    for role in ("train", "val"):
        if settings.get(role) is not None and settings[role] not in all_splits:
            raise ConfigError(f"{key}.{role}: {settings[role]!r} is not a split of {key}; valid values: "
                              f"{', '.join(all_splits)}")
    return {"splits": all_splits, "langs": langs}


def generate_grounded_video(
    out_dir: Path,
    sizes: dict[str, int],
    seed: int,
    image_size: int = 40,
    n_frames: int = 16,
    langs=("en", "zh"),
    hide_prob: float = 0.5,
    time_shuffled: dict[str, str] | None = None,
) -> dict:
    """Write the grounded video set under ``out_dir`` (module docstring); returns a summary."""
    out_dir = Path(out_dir)
    langs = tuple(langs)
    time_shuffled = dict(time_shuffled or {})
    if not sizes:
        raise DataError(None, "grounded video dataset: no splits requested", "pass sizes such as {'train': 800}")
    bad = [lang for lang in langs if lang not in SUPPORTED_LANGS]
    if bad:
        raise DataError(None, f"grounded video dataset: unsupported language(s) {bad}", f"choose from {SUPPORTED_LANGS}")
    if image_size < 32 or n_frames < 2:
        raise DataError(None, f"grounded video dataset: image_size {image_size} / n_frames {n_frames} too small",
                        "use image_size >= 32 and n_frames >= 2")
    for new, src in time_shuffled.items():
        if src not in sizes:
            raise DataError(None, f"time-shuffled split {new!r} names unknown source split {src!r}",
                            f"use one of {', '.join(sizes)}")
    (out_dir / "videos").mkdir(parents=True, exist_ok=True)
    header = ["video", "colour", "shape", "direction", "frame", "hide_colour", "hide_shape", "frame_order"]
    summary: dict = {"seed": int(seed), "image_size": int(image_size), "n_frames": int(n_frames), "langs": list(langs),
                     "hide_prob": hide_prob, "splits": {}, "directions": {}}
    plan = [(s, int(n), None) for s, n in sizes.items()] + [(new, int(sizes[src]), src) for new, src in time_shuffled.items()]
    for split, n, source in plan:
        rng = np.random.default_rng([int(seed), zlib.crc32((source or split).encode("utf-8"))])
        order_rng = np.random.default_rng([int(seed), zlib.crc32(f"time_shuffled:{split}".encode("utf-8"))])
        clips, rows = [], []
        for i in range(n):
            c = _sample(rng, f"{split}_{i:05d}.mkv", image_size, n_frames, hide_prob)
            frames = render(c, rng, image_size)
            order = _shuffled_order(order_rng, n_frames) if source else np.arange(n_frames)
            write_clip(out_dir / "videos" / c.video, frames[order])
            clips.append(c)
            rows.append("\t".join([c.video, c.colour, c.shape, c.direction, c.frame, str(int(c.hide_colour)),
                                   str(int(c.hide_shape)), " ".join(map(str, order))]))
        for lang in langs:
            write_lines(out_dir / f"{split}.{lang}", [caption(c, lang) for c in clips])
        write_lines(out_dir / "video_splits" / f"{split}.txt", [c.video for c in clips])
        write_lines(out_dir / "labels" / f"{split}.tsv", ["\t".join(header), *rows])
        summary["splits"][split] = n
        summary["directions"][split] = dict(Counter(c.direction for c in clips))
    _write_readme(out_dir / "README.txt", summary, time_shuffled)
    return summary


def direction_accuracy(hyps: list[str], refs: list[str], lang: str) -> dict:
    """Share (%) of sentences whose hypothesis states the reference's direction of motion and no
    other direction (words of :data:`DIRECTION_WORDS`; spaces ignored, so character-segmented
    Chinese matches). Sentences whose reference states no direction are not counted."""
    words = DIRECTION_WORDS.get(lang)
    if words is None:
        raise ValueError(f"no direction words for {lang!r}; known: {', '.join(DIRECTION_WORDS)}")
    squash = (lambda s: s.replace(" ", "")) if lang == "zh" else (lambda s: f" {s} ")
    keys = {d: (w if lang == "zh" else f" {w} ") for d, w in words.items()}
    right = counted = 0
    for hyp, ref in zip(hyps, refs):
        truth = [d for d, w in keys.items() if w in squash(ref)]
        if len(truth) != 1:
            continue
        counted += 1
        said = [d for d, w in keys.items() if w in squash(hyp)]
        right += said == truth
    return {"accuracy": 100.0 * right / max(counted, 1), "sentences": counted}


def _write_readme(path: Path, summary: dict, time_shuffled: dict) -> None:
    splits = ", ".join(f"{k}={v}" for k, v in summary["splits"].items())
    shuffled = ", ".join(f"{k} (from {v})" for k, v in time_shuffled.items()) or "none"
    text = f"""Grounded synthetic video set (mmt_repro.grounded.video.generate_grounded_video)

Purpose: check that the video path of a multimodal translation model carries information that
only the order of the frames holds. Each clip shows one shape ({", ".join(SHAPES)}; colours
{", ".join(COLOURS)}) moving {", ".join(DIRECTIONS)} across {summary["n_frames"]} frames of
{summary["image_size"]}x{summary["image_size"]} pixels. The target captions state colour, shape and
direction; the English source never states the direction and hides colour and shape each with
probability {summary["hide_prob"]}. Time-shuffled splits hold the same clips with their frames in
a random order: {shuffled}.

Settings: seed={summary["seed"]}, langs={",".join(summary["langs"])}. Splits: {splits}.
Directions per split: {summary["directions"]}.
"""
    with atomic_write(path) as fh:
        fh.write(text)
