"""Grounded synthetic smoke dataset: determinism, grammar, hidden attributes, file layout."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mmt_repro.grounded.images import generate_grounded
from mmt_repro.grounded.captions import COLOURS, SHAPES, Example, caption
from mmt_repro.io import DataError, read_lines

SIZES = {"train": 120, "val": 20, "test": 40}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("grounded")
    summary = generate_grounded(out, SIZES, seed=7)
    return out, summary


def _labels(out: Path, split: str) -> list[dict]:
    lines = read_lines(out / "labels" / f"{split}.tsv")
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_byte_identical_files(dataset, tmp_path):
    out, _ = dataset
    again = tmp_path / "again"
    generate_grounded(again, SIZES, seed=7)
    a, b = _files(out), _files(again)
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    other = tmp_path / "other"
    generate_grounded(other, SIZES, seed=8)
    c = _files(other)
    assert c["train.de"] != a["train.de"]
    assert c["images/train_00000.png"] != a["images/train_00000.png"]


def test_split_streams_are_independent(dataset, tmp_path):
    out, _ = dataset
    # Changing the train size leaves the test split untouched.
    generate_grounded(tmp_path, {"train": 5, "test": 40}, seed=7)
    assert (tmp_path / "test.en").read_bytes() == (out / "test.en").read_bytes()
    assert (tmp_path / "images/test_00003.png").read_bytes() == (out / "images/test_00003.png").read_bytes()


def test_file_counts_and_format(dataset):
    out, summary = dataset
    assert summary["splits"] == SIZES
    assert summary["images"] == sum(SIZES.values())
    assert len(list((out / "images").glob("*.png"))) == sum(SIZES.values())
    assert (out / "README.txt").read_text().startswith("Grounded synthetic smoke dataset")
    for split, n in SIZES.items():
        names = read_lines(out / "image_splits" / f"{split}.txt")
        assert names == [f"{split}_{i:05d}.png" for i in range(n)]
        assert len(_labels(out, split)) == n
        for lang in ("en", "de", "fr"):
            lines = read_lines(out / f"{split}.{lang}")
            assert len(lines) == n
            for line in lines:
                assert line == line.lower()
                assert line.endswith(" .") and "  " not in line and line == line.strip()
                assert set(line.split()) <= set(summary["vocab"][lang])
    with Image.open(out / "images" / "val_00003.png") as im:
        assert im.size == (64, 64) and im.mode == "RGB"


def test_images_match_labels(dataset):
    """The drawn colour is the labelled one: the most saturated pixels are near its RGB."""
    out, _ = dataset
    ref = {"red": (210, 35, 35), "green": (30, 160, 50), "blue": (35, 70, 215), "yellow": (225, 195, 10)}
    for row in _labels(out, "test")[:20]:
        with Image.open(out / "images" / row["image"]) as im:
            px = np.asarray(im, dtype=np.float64).reshape(-1, 3)
        sat = px[px.max(axis=1) - px.min(axis=1) > 80]
        assert len(sat) > 10, row
        mean = sat.mean(axis=0)
        nearest = min(ref, key=lambda k: sum((a - b) ** 2 for a, b in zip(ref[k], mean)))
        assert nearest == row["colour"], (row, mean)


def _ex(count, colour, shape, frame="i_see", loc=False, hide=(False, False, False), **kw) -> Example:
    base = dict(image="x.png", count=count, colour=colour, shape=shape, location=("left", "top"), frame=frame,
                with_location=loc, hide_count=hide[0], hide_colour=hide[1], hide_shape=hide[2],
                en_vague_noun="thing", en_vague_det="some", en_colour_filler="", en_singular_article="a",
                objects=((10.0, 10.0, 5.0),))
    base.update(kw)
    return Example(**base)


@pytest.mark.parametrize(
    "count,colour,shape,frame,de,fr",
    [
        (1, "red", "circle", "visible", "ein roter kreis ist zu sehen .", "un cercle rouge est visible ."),
        (2, "red", "circle", "visible", "zwei rote kreise sind zu sehen .", "deux cercles rouges sont visibles ."),
        (1, "blue", "triangle", "visible", "ein blaues dreieck ist zu sehen .", "un triangle bleu est visible ."),
        (1, "green", "circle", "i_see", "ich sehe einen grünen kreis .", "je vois un cercle vert ."),
        (1, "yellow", "square", "there_is", "es gibt ein gelbes quadrat .", "il y a un carré jaune ."),
        (3, "yellow", "square", "picture_with", "hier ist ein bild mit drei gelben quadraten .",
         "voici une photo avec trois carrés jaunes ."),
        (1, "red", "circle", "picture_with", "hier ist ein bild mit einem roten kreis .",
         "voici une photo avec un cercle rouge ."),
        (3, "blue", "triangle", "we_see", "wir sehen drei blaue dreiecke .", "on voit trois triangles bleus ."),
        (2, "green", "square", "picture_shows", "das bild zeigt zwei grüne quadrate .",
         "la photo montre deux carrés verts ."),
    ],
)
def test_german_and_french_grammar(count, colour, shape, frame, de, fr):
    ex = _ex(count, colour, shape, frame)
    assert caption(ex, "de") == de
    assert caption(ex, "fr") == fr


def test_location_phrase_in_every_language():
    ex = _ex(2, "red", "square", "visible", loc=True)
    assert caption(ex, "en") == "two red squares are visible at the top left ."
    assert caption(ex, "de") == "zwei rote quadrate sind oben links zu sehen ."
    assert caption(ex, "fr") == "deux carrés rouges sont visibles en haut à gauche ."


def test_english_hiding_forms():
    assert caption(_ex(1, "blue", "circle", hide=(True, False, True), en_vague_det="something"), "en") == \
        "i can see something blue ."
    assert caption(_ex(2, "blue", "circle", hide=(False, True, True), en_vague_noun="object"), "en") == \
        "i can see two objects ."
    assert caption(_ex(1, "red", "square", "there_is", hide=(False, False, True), en_vague_noun="object"), "en") == \
        "there is a red object ."
    assert caption(_ex(1, "red", "square", "there_is", hide=(False, True, True), en_vague_noun="object"), "en") == \
        "there is an object ."
    # Vague English wording does not depend on the true count: 1 and 3 read the same.
    one = _ex(1, "red", "triangle", "visible", hide=(True, False, False))
    three = dataclasses.replace(one, count=3)
    assert caption(one, "en") == caption(three, "en") == "some red triangles are visible ."
    assert caption(one, "de") != caption(three, "de")


_DE_COLOUR = {"red": "rot", "green": "grün", "blue": "blau", "yellow": "gelb"}
_DE_SHAPE = {"circle": "kreis", "square": "quadrat", "triangle": "dreieck"}
_FR_COLOUR = {"red": "rouge", "green": "vert", "blue": "bleu", "yellow": "jaune"}
_FR_SHAPE = {"circle": "cercle", "square": "carré", "triangle": "triangle"}
_EN_COUNT = re.compile(r"\b(a|an|one|two|three)\b")


def test_hidden_attributes_absent_from_english_present_in_targets(dataset):
    out, summary = dataset
    n_hidden = 0
    rows = []
    for split in SIZES:
        labels = _labels(out, split)
        en, de, fr = (read_lines(out / f"{split}.{lang}") for lang in ("en", "de", "fr"))
        rows += list(zip(labels, en, de, fr))
    for lab, en, de, fr in rows:
        en_words, de_words, fr_words = en.split(), de.split(), fr.split()
        count, colour, shape = int(lab["count"]), lab["colour"], lab["shape"]
        # The targets always state all three attributes.
        assert any(w.startswith(_DE_COLOUR[colour]) for w in de_words), de
        assert any(w.startswith(_DE_SHAPE[shape]) for w in de_words), de
        assert any(w.startswith(_FR_COLOUR[colour]) for w in fr_words), fr
        assert any(w.startswith(_FR_SHAPE[shape]) for w in fr_words), fr
        de_count = {1: ("ein", "einen", "einem"), 2: ("zwei",), 3: ("drei",)}[count]
        assert any(w in de_count for w in de_words), de
        # English: hidden attributes absent, stated ones present.
        en_np = en.replace("here is a picture of ", "").replace("one or more", "")
        if lab["hide_colour"] == "1":
            assert not set(en_words) & set(COLOURS), en
        else:
            assert colour in en_words, en
        if lab["hide_shape"] == "1":
            assert not any(w.rstrip("s") in SHAPES for w in en_words), en
        else:
            assert shape in en or shape + "s" in en, en
        if lab["hide_count"] == "1":
            assert not _EN_COUNT.search(en_np), en
        else:
            stated = set(_EN_COUNT.findall(en_np))
            assert stated and stated <= {1: {"a", "an", "one"}, 2: {"two"}, 3: {"three"}}[count], en
        n_hidden += sum(lab[k] == "1" for k in ("hide_count", "hide_colour", "hide_shape"))
    # About half of the three attributes are hidden on average.
    assert 1.2 < n_hidden / len(rows) < 1.8
    assert 1.2 < summary["mean_hidden_attributes"] < 1.8


def test_bad_arguments(tmp_path):
    with pytest.raises(DataError, match="unsupported language"):
        generate_grounded(tmp_path, {"train": 2}, seed=0, langs=("en", "xx"))
    with pytest.raises(DataError, match="no splits"):
        generate_grounded(tmp_path, {}, seed=0)


def test_check_config_splits_from_sizes_langs_from_config():
    from mmt_repro.config import ConfigError
    from mmt_repro.grounded.images import check_config

    cfg = {"source": "grounded", "sizes": {"train": 10, "val": 2, "test": 2, "test_extra": 3}, "train": "train", "val": "val"}
    assert check_config("g", cfg) == {"splits": ["train", "val", "test", "test_extra"], "langs": ["en", "de", "fr"]}
    assert check_config("g", {**cfg, "langs": ["en", "fr"]})["langs"] == ["en", "fr"]
    with pytest.raises(ConfigError, match=r"^datasets\.g\.langs: unsupported language\(s\) xx for the grounded "
                                          r"generator; valid values: en, de, fr$"):
        check_config("g", {**cfg, "langs": ["en", "xx"]})
    with pytest.raises(ConfigError, match=r"^datasets\.g\.val: 'dev' is not a split of datasets\.g\.sizes; "
                                          r"valid values: train, val, test, test_extra$"):
        check_config("g", {**cfg, "val": "dev"})


@pytest.mark.slow  # over 10 s idle: `make test` runs it, `make test-fast` leaves it out
def test_english_tokens_tell_nothing_about_a_hidden_attribute():
    # Issue 11, item 8: a classifier from the English tokens to each hidden attribute does no
    # better than guessing the most frequent value (within 2 points), over 20k captions. Naive
    # Bayes over token presence, trained on one half and scored on the other. With image-thirds
    # locations of freely placed objects it read the hidden count from the location phrase:
    # 42.3 % against 34.0 % for the most frequent count.
    from collections import Counter, defaultdict

    from mmt_repro.grounded.images import _sample_example, _split_rng

    rng = _split_rng(7, "probe")
    examples = [_sample_example(rng, f"x{i}", 64, 0.5) for i in range(20000)]
    for attr in ("count", "colour", "shape"):
        data = [(set(caption(e, "en").split()), getattr(e, attr)) for e in examples if getattr(e, f"hide_{attr}")]
        train, test = data[: len(data) // 2], data[len(data) // 2 :]
        prior = Counter(y for _, y in train)
        seen = defaultdict(Counter)
        for toks, y in train:
            for w in toks:
                seen[w][y] += 1

        def predict(toks):
            return max(prior, key=lambda c: np.log(prior[c]) + sum(
                np.log((seen[w][c] + 1) / (prior[c] + 2)) for w in toks))

        accuracy = sum(predict(toks) == y for toks, y in test) / len(test)
        majority = max(Counter(y for _, y in test).values()) / len(test)
        assert len(test) > 4000
        assert accuracy <= majority + 0.02, (attr, accuracy, majority)


def test_boxes_hold_each_drawn_object(dataset):
    """boxes/{split}.json: one tight box per object; every coloured pixel lies in a box, every box
    is mostly coloured (a circle fills pi/4 of its box, a square all of it, a triangle half)."""
    import json

    out, _ = dataset
    boxes = json.loads((out / "boxes" / "test.json").read_text())
    rows = _labels(out, "test")
    assert list(boxes) == [r["image"] for r in rows]
    fill = {"circle": np.pi / 4, "square": 1.0, "triangle": 0.5}
    for row in rows[:30]:
        b = np.array(boxes[row["image"]])
        assert b.shape == (int(row["count"]), 4)
        with Image.open(out / "images" / row["image"]) as im:
            px = np.asarray(im, dtype=np.float64)
        coloured = px.max(axis=2) - px.min(axis=2) > 80
        ys, xs = np.nonzero(coloured)
        inside = np.zeros(len(xs), dtype=bool)
        for x1, y1, x2, y2 in b:
            assert 0 <= x1 < x2 <= px.shape[1] and 0 <= y1 < y2 <= px.shape[0]
            inside |= (xs + 0.5 >= x1 - 1) & (xs + 0.5 <= x2 + 1) & (ys + 0.5 >= y1 - 1) & (ys + 0.5 <= y2 + 1)
            box = coloured[int(np.ceil(y1)):int(y2), int(np.ceil(x1)):int(x2)]
            assert box.mean() > 0.6 * fill[row["shape"]], (row, (x1, y1, x2, y2), box.mean())
        assert inside.all(), row
