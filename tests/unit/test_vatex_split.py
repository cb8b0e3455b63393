"""VATEX pairs re-split by video (the real-text run's train/val/test): no video in two splits."""

import pytest

from mmt_repro.corpora.vatex import split_by_video
from mmt_repro.io import DataError


def _data(n_videos=6):
    ids = [f"v{v}&{k}" for v in range(n_videos) for k in range(5)]
    return {"en": [f"e{i}" for i in ids], "zh": [f"z{i}" for i in ids], "id": ids}


def test_split_by_video_keeps_videos_whole_and_is_seeded():
    out = split_by_video(_data(), {"train": 3, "val": 1, "test": 2}, seed=1)
    videos = {s: {i.split("&")[0] for i in part["id"]} for s, part in out.items()}
    assert [len(v) for v in videos.values()] == [3, 1, 2]
    assert not (videos["train"] & videos["test"]) and not (videos["val"] & videos["test"])
    for part in out.values():
        assert len(part["id"]) == 5 * len({i.split("&")[0] for i in part["id"]})
        assert all(e == f"e{i}" and z == f"z{i}" for e, z, i in zip(part["en"], part["zh"], part["id"]))
        assert part["id"] == sorted(part["id"], key=_data()["id"].index)  # original order kept
    assert out == split_by_video(_data(), {"train": 3, "val": 1, "test": 2}, seed=1)
    assert out != split_by_video(_data(), {"train": 3, "val": 1, "test": 2}, seed=2)
    with pytest.raises(DataError, match="there are 6"):
        split_by_video(_data(), {"train": 7}, seed=1)


def test_jieba_chain_step_for_chinese_only():
    from mmt_repro.text.recipes import apply_chain, parse_chain

    assert parse_chain("jieba", "zh") == ("jieba",)
    with pytest.raises(ValueError, match="zh only"):
        parse_chain("lc.jieba", "en")
    with pytest.raises(ValueError, match="more than one segmenting step"):
        parse_chain("char.jieba", "zh")
    (words,) = apply_chain(["一个人在跑步。"], "jieba", "zh")
    assert "".join(words.split()) == "一个人在跑步。" and 1 < len(words.split()) < 7


# ----------------------------------------------------------------------------- stand-in inputs
def test_vatex_readers_read_the_standin_json_and_prepared_pairs(standin, tmp_path):
    import json

    from mmt_repro.corpora.vatex import prepare_vatex, prepare_vatex_prepared
    from mmt_repro.io import read_lines

    raw = standin("vatex")["files"]
    items = json.loads(raw["vatex_validation_v1.0.json"].read_text(encoding="utf-8"))
    assert [len(x["enCap"]) for x in items] == [10] * 4 and set(items[0]) == {"videoID", "enCap", "chCap"}
    assert prepare_vatex(raw["vatex_validation_v1.0.json"], tmp_path / "raw", "val", check_sizes=False) == \
        {"videos": 4, "pairs": 20}
    assert prepare_vatex(raw["vatex_training_v1.0.json"], tmp_path / "raw", "train", check_sizes=False) == \
        {"videos": 8, "pairs": 40}
    with pytest.raises(DataError, match="official VATEX val split has 3000"):
        prepare_vatex(raw["vatex_validation_v1.0.json"], tmp_path / "again", "val")
    prep = standin("vatex_val_prepared")["resources"]
    assert prepare_vatex_prepared(prep, tmp_path / "prep", "val") == {"videos": 4, "pairs": 20}
    # the two forms name the same videos, each with its five pairs
    assert read_lines(tmp_path / "prep" / "val.id") == read_lines(tmp_path / "raw" / "val.id")
