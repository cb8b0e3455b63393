"""The grounded video set (grounded/video.py): captions, clips, time-shuffled splits."""

import hashlib

import numpy as np
import pytest

from mmt_repro.config import ConfigError
from mmt_repro.grounded.video import DIRECTIONS, check_config, generate_grounded_video
from mmt_repro.features.video import decode_video


def _digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _labels(path):
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def test_set_is_deterministic_and_only_the_frame_order_tells_the_direction(tmp_path):
    sizes = {"train": 12, "test": 6}
    a = generate_grounded_video(tmp_path / "a", sizes, seed=3, image_size=37, n_frames=8, langs=("en", "zh", "de"),
                                time_shuffled={"test_tshuf": "test"})
    generate_grounded_video(tmp_path / "b", sizes, seed=3, image_size=37, n_frames=8, langs=("en", "zh", "de"),
                            time_shuffled={"test_tshuf": "test"})
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert a["splits"] == {"train": 12, "test": 6, "test_tshuf": 6}
    out = tmp_path / "a"
    labels = _labels(out / "labels" / "train.tsv")
    en = (out / "train.en").read_text().splitlines()
    zh = (out / "train.zh").read_text().splitlines()
    de = (out / "train.de").read_text().splitlines()
    for lab, e, z, d in zip(labels, en, zh, de):
        assert not any(w in e.split() for w in ("left", "right", "up", "down"))  # English never says where
        assert {"left": "向左", "right": "向右", "up": "向上", "down": "向下"}[lab["direction"]] in z
        assert f"nach {dict(left='links', right='rechts', up='oben', down='unten')[lab['direction']]}" in d
        assert (lab["colour"] in e.split()) != bool(int(lab["hide_colour"]))
    # the clip: the object moves the stated way (mean position of the coloured pixels)
    frames, _ = decode_video(out / "videos" / labels[0]["video"], 37)
    assert frames.shape == (8, 37, 37, 3)
    dark = frames.astype(int).sum(-1) < 600  # the object, not the light background
    ys, xs = [], []
    for f in dark:
        yy, xx = np.nonzero(f)
        ys.append(yy.mean())
        xs.append(xx.mean())
    step = {"left": (xs[0] - xs[-1]), "right": xs[-1] - xs[0], "up": ys[0] - ys[-1], "down": ys[-1] - ys[0]}
    assert step[labels[0]["direction"]] > 8
    # time-shuffled: the same captions and the same frames, in another order
    assert (out / "test_tshuf.zh").read_text() == (out / "test.zh").read_text()
    shuf = _labels(out / "labels" / "test_tshuf.tsv")
    for orig, sh in zip(_labels(out / "labels" / "test.tsv"), shuf):
        order = [int(i) for i in sh["frame_order"].split()]
        assert sorted(order) == list(range(8)) and order != list(range(8))
        f0, _ = decode_video(out / "videos" / orig["video"], 37)
        f1, _ = decode_video(out / "videos" / sh["video"], 37)
        assert np.array_equal(f0[order], f1)
    assert set(a["directions"]["train"]) <= set(DIRECTIONS)


def test_layout_checks():
    ok = check_config("gv", {"sizes": {"train": 5, "test": 2}, "time_shuffled": {"test_tshuf": "test"},
                             "langs": ["en", "zh"], "train": "train", "val": "test"})
    assert ok == {"splits": ["train", "test", "test_tshuf"], "langs": ["en", "zh"]}
    with pytest.raises(ConfigError, match="time_shuffled.x"):
        check_config("gv", {"sizes": {"train": 5}, "time_shuffled": {"x": "nope"}})
    with pytest.raises(ConfigError, match="langs"):
        check_config("gv", {"sizes": {"train": 5}, "langs": ["en", "fr"]})
