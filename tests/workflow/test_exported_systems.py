"""The smoke run's trained systems on new input (docs/trained_systems.md): one system of each paper
exported with its text recipe (which export checks line for line on the run's prepared validation
text: Moses with BPE, Moses words, WordPiece, Chinese characters), raw test sentences translated to
detokenised text, and the features of test images and videos made through the export equal to the
workflow's own test stores."""

from __future__ import annotations

import numpy as np
import pytest

from mmt_repro.io import read_lines, write_lines

# paper/system/run -> (feature set, item folder, the boxes its regions were pooled from)
SYSTEMS = {
    "doubly_attentive/nmt_src_img/grounded.en-de": ("grounded/resnet50-res4f.std", "images", None),
    "emb_pred/nmt/grounded.fr-en": (None, None, None),
    "visual_agreement/mhca/grounded.en-de": ("grounded/frcnn-objects.std", "images", "boxes/test.json"),
    "bertgen/grounded/grounded.en-de": ("grounded/frcnn-objects.std", "images", "boxes/test.json"),
    "deepfuse/deepfuse/grounded_video.en-zh": ("grounded_video/i3d-r50.std", "videos", None),
}
N = 3  # test sentences per system


def check_exported_systems(run, tmp_path):
    """The body of the test, on a finished smoke run folder ``run``."""
    from mmt_repro.decode.system import export_system, extract_for_system, translate_raw
    from mmt_repro.text.system_recipe import SystemRecipe

    results = run / "results"
    for name, (features, folder, boxes) in SYSTEMS.items():
        paper, system, stem = name.split("/")
        dataset, pair = stem.split(".")
        src_lang, tgt_lang = pair.split("-")
        out = tmp_path / paper
        written = export_system(results / "models" / paper / system / f"{stem}.seed1.best.pt", out)
        assert set(written["recipe"]) == {"src", "tgt"} and min(written["recipe"].values()) >= 10, name
        assert written["features"] == (features.split("/")[1] if features else None), name
        recipe = SystemRecipe.load(out)
        raw = read_lines(results / "data" / dataset / f"test.{src_lang}")[:N]
        src = write_lines(tmp_path / f"{paper}.{src_lang}", [line[:1].upper() + line[1:] for line in raw])
        media = None
        if features:
            listed = read_lines(results / "data" / dataset / ("image_splits" if folder == "images" else "video_splits")
                                / "test.txt")[:N]
            media = [next((results / "data" / dataset / folder).glob(f"{item}*")) for item in listed]
            work = tmp_path / f"{paper}.features"
            work.mkdir()
            npy, _ = extract_for_system(out, media, work, device="cpu",
                                        boxes=results / "data" / dataset / boxes if boxes else None)
            want = np.load(results / "features" / features / "test.npy")[:N].astype(np.float32)
            np.testing.assert_allclose(np.load(npy).astype(np.float32), want, atol=0.05)
        translate_raw(out, src, tmp_path / f"{paper}.hyp", media=media, device="cpu",
                      boxes=results / "data" / dataset / boxes if boxes else None)
        hyps = read_lines(tmp_path / f"{paper}.hyp")
        assert len(hyps) == N and all(hyps), (name, hyps)
        for hyp in hyps:
            assert not any(mark in hyp for mark in ("@@", "##", "&apos;", "&quot;", "&amp;")), (name, hyp)
            if tgt_lang == "zh":
                assert " " not in hyp, (name, hyp)
            else:
                assert not hyp.endswith(" ."), (name, hyp)  # punctuation attached
            if "lc" in recipe.tgt.steps:
                assert hyp == hyp.lower(), (name, hyp)


@pytest.mark.e2e
def test_smoke_systems_export_and_translate_raw_input(smoke_run, tmp_path):
    check_exported_systems(smoke_run, tmp_path)
