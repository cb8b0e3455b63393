"""The distinct-object grounded set (mmt_repro.grounded.agreement): captions and gold
alignments by hand, the known word -> region link against the drawn pixels, no whole-image box,
and the default set unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mmt_repro.grounded.images import _RGB, generate_grounded
from mmt_repro.grounded.agreement import Scene, caption, generate, gold_alignment, word_regions
from mmt_repro.io import read_lines

SIZES = {"train": 60, "test": 40}

# Two objects: a red circle (colour hidden in English) drawn on the right, a blue square on the left.
SCENE = Scene(image="x.png", colours=("red", "blue"), shapes=("circle", "square"), hides=("colour", "none"),
              vague=("thing", "object"), frame="there_is", objects=((40.0, 30.0, 8.0), (15.0, 30.0, 8.0)),
              region_of=(1, 0))


def test_captions_and_gold_alignment_by_hand():
    assert caption(SCENE, "en") == "there is a circle and a blue square ."
    assert caption(SCENE, "de") == "es gibt einen roten kreis und ein blaues quadrat ."
    assert caption(SCENE, "fr") == "il y a un cercle rouge et un carré bleu ."
    # en: there0 is1 a2 circle3 and4 a5 blue6 square7 .8
    # de: es0 gibt1 einen2 roten3 kreis4 und5 ein6 blaues7 quadrat8 .9   ("roten" has no English word)
    assert gold_alignment(SCENE, "en", "de") == "0?0 0?1 1?0 1?1 2-2 3-4 4-5 5-6 6-7 7-8 8-9"
    # fr: il0 y1 a2 un3 cercle4 rouge5 et6 un7 carré8 bleu9 .10 (French puts the colour after the noun)
    assert gold_alignment(SCENE, "en", "fr").split()[-6:] == ["3-4", "4-6", "5-7", "6-9", "7-8", "8-10"]
    # a hidden shape: the vague noun stands for the shape and is linked to it
    shape_hidden = Scene(**{**SCENE.__dict__, "hides": ("shape", "none")})
    assert caption(shape_hidden, "en") == "there is a red thing and a blue square ."
    assert "4-4" in gold_alignment(shape_hidden, "en", "de").split()  # thing - kreis
    # three objects: "X , Y and Z"
    three = Scene(image="y.png", colours=("green", "yellow", "red"), shapes=("triangle", "circle", "square"),
                  hides=("none", "none", "none"), vague=("shape",) * 3, frame="i_see",
                  objects=((10.0, 10.0, 5.0), (30.0, 10.0, 5.0), (50.0, 10.0, 5.0)), region_of=(0, 1, 2))
    assert caption(three, "en") == "i can see a green triangle , a yellow circle and a red square ."
    assert caption(three, "de") == "ich sehe ein grünes dreieck , einen gelben kreis und ein rotes quadrat ."


def test_word_regions_by_hand():
    # the circle is region 1 (right), the square region 0 (left); frame, "and" and "." point nowhere
    assert word_regions(SCENE, "en") == [-1, -1, 1, 1, -1, 0, 0, 0, -1]
    assert word_regions(SCENE, "de") == [-1, -1, 1, 1, 1, -1, 0, 0, 0, -1]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("distinct")
    generate(out, SIZES, seed=3, objects="distinct")
    return out


def _rows(out: Path, split: str) -> list[dict]:
    lines = read_lines(out / "labels" / f"{split}.tsv")
    return [dict(zip(lines[0].split("\t"), line.split("\t"))) for line in lines[1:]]


def test_each_word_points_at_its_own_object_in_the_pixels(dataset):
    """Distinct colours and shapes per image, one box per object (left to right, no whole-image
    box), and every object word's region shows that object's colour at its centre."""
    rows = _rows(dataset, "test")
    boxes = json.loads((dataset / "boxes" / "test.json").read_text())
    de = read_lines(dataset / "test.de")
    regions = read_lines(dataset / "regions" / "test.de")
    checked = 0
    for row, sent, reg in zip(rows, de, regions):
        colours, shapes = row["colours"].split(","), row["shapes"].split(",")
        n = int(row["objects"])
        assert n in (2, 3) and len(set(colours)) == n and len(set(shapes)) == n
        b = np.array(boxes[row["image"]])
        assert b.shape == (n, 4)
        assert (np.diff((b[:, 0] + b[:, 2]) / 2) >= 0).all()  # left to right
        assert (b[:, 2] - b[:, 0]).max() < 0.5 * 64  # object boxes only: none spans the image
        with Image.open(dataset / "images" / row["image"]) as im:
            px = np.asarray(im, dtype=np.float64)
        region_of = [int(r) for r in row["region_of"].split(",")]
        for word, r in zip(sent.split(), map(int, reg.split())):
            if r < 0:
                continue
            k = region_of.index(r)  # the caption object of that region
            x1, y1, x2, y2 = b[r]
            centre = px[int((y1 + y2) / 2), int((x1 + x2) / 2)]
            assert np.abs(centre - np.array(_RGB[colours[k]])).max() <= 40, (row, word, centre)
            checked += 1
    assert checked > 250  # 40 captions, 2-3 objects of 3 words each


def test_english_hides_at_most_one_attribute_per_object_and_german_states_both(dataset):
    rows = _rows(dataset, "train")
    en, de = read_lines(dataset / "train.en"), read_lines(dataset / "train.de")
    hides = [h for row in rows for h in row["hides"].split(",")]
    assert set(hides) == {"none", "colour", "shape"}
    assert 0.35 < hides.count("none") / len(hides) < 0.65  # hide_prob 0.5: a colour or a shape half the time
    stems = {"red": "rot", "green": "grün", "blue": "blau", "yellow": "gelb"}
    for row, e, d in zip(rows, en.copy(), de):
        for colour, shape, hide in zip(row["colours"].split(","), row["shapes"].split(","), row["hides"].split(",")):
            assert (colour in e.split()) == (hide != "colour")
            assert (shape in e.split()) == (hide != "shape")
            assert any(w.startswith(stems[colour]) for w in d.split())


def test_deterministic_and_the_default_set_unchanged(dataset, tmp_path):
    again = tmp_path / "again"
    generate(again, SIZES, seed=3, objects="distinct")
    files = [p.relative_to(dataset) for p in sorted(dataset.rglob("*")) if p.is_file()]
    assert files and all((again / f).read_bytes() == (dataset / f).read_bytes() for f in files)
    same_a, same_b = tmp_path / "same_a", tmp_path / "same_b"
    generate(same_a, {"test": 5}, seed=3)  # objects: same (the default) is generate_grounded
    generate_grounded(same_b, {"test": 5}, seed=3)
    for f in (p.relative_to(same_b) for p in same_b.rglob("*") if p.is_file()):
        assert (same_a / f).read_bytes() == (same_b / f).read_bytes(), f
    with pytest.raises(ValueError, match="distinct"):
        generate(tmp_path / "bad", {"test": 1}, seed=3, objects="several")
