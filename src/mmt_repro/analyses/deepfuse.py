"""Wu (2020), DeepFuse (:mod:`mmt_repro.models.deepfuse`): the direction accuracy on the
grounded video set."""

from __future__ import annotations

from .registry import register_analysis


@register_analysis("deepfuse.direction_accuracy", inputs="translation")
def direction_accuracy(files: dict) -> dict:
    """Grounded video set: the share (%) of test sentences whose translation states the
    reference's direction of motion (and no other); the words only the order of the frames
    gives (:func:`mmt_repro.grounded.video.direction_accuracy`)."""
    from ..grounded.video import direction_accuracy as accuracy
    from ..io import read_lines

    hyps, refs = read_lines(files["hyp"]), read_lines(files["ref"])
    lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for line in refs[:20] for ch in line) else "de"
    result = accuracy(hyps, refs, lang)
    sig = f"direction accuracy|{lang}|hyp states the reference's direction and no other|n:{result['sentences']}"
    return {"direction_acc": {"value": round(result["accuracy"], 4), "signature": sig}}

