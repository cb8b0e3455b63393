"""The stand-in input generator (mmt_repro.standins): one writer per manifest input, seeded and
byte-stable, a stand-in manifest that carries the real entries' URLs and unpack layouts with the
stand-ins' checksums, the overlay that points a run at the mirror, checkpoints whose key names
are the real ones at either size. The readers' own tests read each stand-in (the `standin`
fixture of tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from mmt_repro.corpora.manifest import load_manifest
from mmt_repro.standins import CHECKED_AGAINST, NOT_WRITTEN
from mmt_repro.standins.media_inputs import REAL, SHRUNK, mbert_shapes, vlbert_shapes
from mmt_repro.standins.mirror import CONFIG_NAME, MANIFEST_NAME, write_mirror, writers
from mmt_repro.standins.world import SIZES

CHEAP = ["wmt15_en_de", "karpathy_splits", "iwslt14_fr_en", "multi30k_task1"]


def test_every_manifest_input_has_a_writer_and_a_checked_source_or_a_reason():
    inputs = set(load_manifest())
    assert set(writers()) == set(CHECKED_AGAINST) == inputs - set(NOT_WRITTEN)
    assert NOT_WRITTEN == {} and len(inputs) == 32  # every input has a stand-in
    assert all(v.split(":")[0] in ("copy", "reader", "spec") for v in CHECKED_AGAINST.values())


def _sums(root) -> dict:
    return yaml.safe_load((root / MANIFEST_NAME).read_text(encoding="utf-8"))["inputs"]


def test_the_mirror_is_seeded_byte_stable_and_each_input_independent_of_the_others(tmp_path):
    a = write_mirror(tmp_path / "a", seed=3, inputs=CHEAP)
    write_mirror(tmp_path / "b", seed=3, inputs=CHEAP[::-1])
    alone = write_mirror(tmp_path / "c", seed=3, inputs=["karpathy_splits"])
    other = write_mirror(tmp_path / "d", seed=4, inputs=["karpathy_splits"])
    sa, sb = _sums(tmp_path / "a"), _sums(tmp_path / "b")
    assert sa == sb  # same seed, any order: the same bytes
    assert _sums(tmp_path / "c")["karpathy_splits"] == sa["karpathy_splits"]  # alone or with others
    assert _sums(tmp_path / "d")["karpathy_splits"] != sa["karpathy_splits"]  # another seed, other bytes
    assert sorted(a["inputs"]) == sorted(CHEAP) and alone["inputs"]["karpathy_splits"] == ["caption_datasets.zip"]
    assert other["config"].endswith(CONFIG_NAME)


def test_the_standin_manifest_keeps_the_real_entries_but_the_checksums(tmp_path):
    write_mirror(tmp_path, inputs=["wmt15_en_de", "vatex_i3d", "multi30k_task1"])
    real = load_manifest()
    stand = load_manifest(extra=[tmp_path / MANIFEST_NAME])
    for name in ("wmt15_en_de", "vatex_i3d", "multi30k_task1"):
        for fname, f in real[name].files.items():
            g = stand[name].file(fname)
            assert (g.urls, g.unpack) == (f.urls, f.unpack) and g.sha256 and g.sha256 != f.sha256
            assert (g.lines is None) == (f.lines is None)
    assert stand["multi30k_task1"].file("image_splits/val.txt").lines == SIZES["val"] == 8
    assert real["multi30k_task1"].file("image_splits/val.txt").lines == 1014  # the real manifest is untouched


def test_the_overlay_points_a_run_at_the_mirror(tmp_path):
    write_mirror(tmp_path, inputs=["vatex", "flickr8k_text", "flickr8k_images"], video_seconds=1)
    overlay = yaml.safe_load((tmp_path / CONFIG_NAME).read_text(encoding="utf-8"))
    assert overlay["inputs"] == {"mirror": str(tmp_path), "manifest_extra": [str(tmp_path / MANIFEST_NAME)]}
    assert overlay["datasets"]["tasviret"] == {"images": str(tmp_path / "flickr8k" / "Flicker8k_Dataset"),
                                               "split_sizes": [16, 6, 6]}  # the stand-in Flickr8k lists
    # config/config.yaml's prepared corpora without their published-size checks; nothing else set
    assert {k: v for k, v in overlay["datasets"].items() if k != "tasviret"} == {
        k: {"check_sizes": False} for k in ("iwslt14_de_en", "iwslt14_fr_en", "setimes2_en_tr", "wmt19_de_fr", "vatex",
                                             "coco_karpathy_test", "coco_karpathy")}
    listed = (tmp_path / "flickr8k-text" / "Flickr_8k.devImages.txt").read_text(encoding="utf-8").split()
    assert sorted(listed) == sorted(p.name for p in (tmp_path / "flickr8k" / "Flicker8k_Dataset").iterdir()
                                    if p.name in listed)


@pytest.mark.parametrize("shapes", [mbert_shapes, vlbert_shapes])
def test_checkpoint_keys_are_the_real_ones_at_both_sizes(shapes):
    import torch

    from mmt_repro.models.bertgen_convert import MBERT_KEYS, VLBERT_KEYS, map_keys

    real = shapes(REAL["hidden"], REAL["ffn"], REAL["layers"], 119547 if shapes is mbert_shapes else REAL["vl_vocab"])
    small = shapes(SHRUNK["hidden"], SHRUNK["ffn"], SHRUNK["layers"], 300)
    assert list(real) == list(small)
    table = MBERT_KEYS if shapes is mbert_shapes else VLBERT_KEYS
    mapped = map_keys({k: torch.empty(s, device="meta") for k, s in real.items()}, table)
    assert len(mapped) == len(real)
    vocab = 119547 if shapes is mbert_shapes else REAL["vl_vocab"]
    n = sum(int(np.prod(s)) for s in real.values()) - vocab * 768  # the tied MLM decoder is stored again
    # bert-base-multilingual-cased: 178.6M parameters; VL-BERT base: BERT-base's 110M + the visual parts
    assert n == (178_566_653 if shapes is mbert_shapes else 114_491_515)


def test_real_shapes_give_the_vocabularies_their_real_line_count(tmp_path):
    write_mirror(tmp_path / "small", inputs=["bertgen_vocab"])
    write_mirror(tmp_path / "real", inputs=["bertgen_vocab"], real_shapes=True)
    real = load_manifest()["bertgen_vocab"].file("vocab.txt").lines
    small = _sums(tmp_path / "small")["bertgen_vocab"]["files"]["vocab.txt"]["lines"]
    assert _sums(tmp_path / "real")["bertgen_vocab"]["files"]["vocab.txt"]["lines"] == real == 119547
    assert 300 < small < 3000  # the specials, punctuation and the stand-in corpora's words
    head = (tmp_path / "real" / "bertgen-vocab" / "vocab.txt").read_text(encoding="utf-8").split("\n")[:106]
    assert head[:2] == ["[PAD]", "[STOP]"] and head[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
