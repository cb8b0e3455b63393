"""CoMMuTE's contrastive accuracy of a trained run (Futeral et al., ACL 2023), as the analysis
``<paper>.commute`` of a table of ``kind: analysis`` (``inputs: model``; :mod:`mmt_repro.plan.commute`
plans it): the run's checkpoint is exported with its text and feature recipes
(:func:`mmt_repro.decode.commute.score_commute_checkpoint`), both translations of every CoMMuTE
line are forced through it under the line's image, and the share of lines whose correct
translation has the lower per-token NLL is the score ``commute_acc`` (percent).

The table's ``files`` name the split's ``src.en`` (its folder names the split: ``en-de``...) and
the other three files (inputs of the job); a multimodal system also gets ``images``, the folder of
the CoMMuTE images.
"""

from __future__ import annotations

from pathlib import Path

from .registry import register_analysis

#: The papers whose runs may have a CoMMuTE table (an English source).
PAPERS = ("doubly_attentive", "emb_pred", "deepfuse", "visual_agreement", "bertgen")


def commute_accuracy(files: dict, lines: int | None = None) -> dict:
    """``{"commute_acc": {"value", "signature"}}`` of ``files["checkpoint"]`` on the CoMMuTE split
    whose ``src.en`` is ``files["commute_src"]``; ``lines`` (the table's ``options``): its first
    lines only (the rehearsal's cut; the signature says so)."""
    from ..decode.commute import score_commute_checkpoint

    src = Path(files["commute_src"])
    folder, split = src.parent.parent, src.parent.name
    with_images = files.get("images")
    result = score_commute_checkpoint(files["checkpoint"], folder, split, out=None, images=with_images,
                                      device="auto", lines=lines)
    cut = f"|lines:first-{lines}" if lines is not None else ""
    signature = (f"commute:v3|split:{split}|n:{result['n']}{cut}|nll:token-mean|ties:miss|"
                 f"images:{'yes' if result['images'] else 'no'}|unk:{result['tgt_unk_tokens']}")
    return {"commute_acc": {"value": result["accuracy"], "signature": signature}}


for _paper in PAPERS:
    register_analysis(f"{_paper}.commute", inputs="model")(commute_accuracy)

__all__ = ["PAPERS", "commute_accuracy"]
