"""Yang, Chen, Zhang and Sun (2020) (:mod:`mmt_repro.models.visual_agreement`): the analyses
of a trained checkpoint, VAD (Table 5, eqs. 21-22) and the mean beta of visual and non-visual
words (Figure 4). The decoder block that aligns best (section 4), an input of the Transformer
agreement trainings, is chosen in the training stage (:mod:`mmt_repro.train.alignment_layer`).
"""

from __future__ import annotations

import logging

import torch

from ..models.visual_agreement_transformer import _TransformerJoint, read_layer_choice
from .registry import register_analysis

log = logging.getLogger(__name__)


# ============================================================================ analyses
def _read_visual_words(path) -> set[str]:
    """Words marked visual in a ``word<TAB>lang<TAB>visual`` list (``visual`` = 1), lowercased
    (looked up case-insensitively); ``#`` lines are comments."""
    from ..io import DataError, read_lines

    words = set()
    for k, line in enumerate(read_lines(path)):
        if not line.strip() or line.startswith("#") or line.startswith("word\t"):
            continue
        parts = line.split("\t")
        if len(parts) < 3 or parts[2] not in ("0", "1"):
            raise DataError(path, f"line {k + 1} is not word<TAB>lang<TAB>0|1: {line!r}", "fix the visual word list")
        if parts[2] == "1":
            words.add(parts[0].lower())
    return words


@register_analysis("visual_agreement.vad", inputs="model")
def vad_analysis(files: dict) -> dict:
    """Table 5: VAD (eq. 21) on the uniquely aligned word pairs (eq. 22) of the split's
    symmetrised alignment, teacher forcing both directions on the reference, split into visual
    and non-visual pairs by the visual word list (``files["visual_words"]``); Transformer
    models read their alignment block from the checkpoint or ``files["alignment_layer"]``."""
    from ..checkpoint import load_model
    from ..datasets.batching import ParallelData, move
    from ..features.store import open_features
    from ..io import DataError, read_lines
    from ..metrics.vad import visual_agreement_distance
    from ..text.vocab import Vocab

    model, _ = load_model(files["checkpoint"])
    if not model.uses_visual:
        raise DataError(files["checkpoint"], f"{model.registry_name} reads no image: no visual attention",
                        "run VAD on a multimodal system")
    if isinstance(model, _TransformerJoint) and model.layer("forward") is None:
        if "alignment_layer" not in files:
            raise DataError(files["checkpoint"], "a Transformer without a recorded alignment block",
                            "give the table `files: {alignment_layer: ...}` (rule select_alignment_layer)")
        chosen = read_layer_choice(files["alignment_layer"])
        model.set_layers(chosen["forward"], chosen["backward"])
    data = ParallelData(files["src"], Vocab.load(files["src_vocab"]), files["tgt"], Vocab.load(files["tgt_vocab"]),
                        features=open_features(files.get("features_npy"), files.get("features_index")))
    fwd, bwd = [None] * data.n_examples, [None] * data.n_examples
    for batch in data.eval_batches(32):
        f, b = model.word_attention(move(batch, torch.device("cpu")))
        for k, i in enumerate(batch["ids"].tolist()):
            fwd[i], bwd[i] = f[k], b[k]
    words = _read_visual_words(files["visual_words"]) if "visual_words" in files else None
    lower = lambda path: [line.lower() for line in read_lines(path)]  # noqa: E731
    res = visual_agreement_distance(fwd, bwd, read_lines(files["align"]), lower(files["src"]), lower(files["tgt"]),
                                    words)
    sig = f"VAD|l1|teacher-forced reference|unique fast_align pairs:{res['n_pairs']}|n_sentences:{data.n_examples}"
    out = {"vad": {"value": round(res["vad"], 4), "signature": sig}}
    if words is not None:
        out["vad_visual"] = {"value": round(res["vad_visual"], 4),
                             "signature": sig + f"|visual pairs:{res['n_pairs_visual']}"}
        out["vad_non_visual"] = {"value": round(res["vad_non_visual"], 4),
                                 "signature": sig + f"|non-visual pairs:{res['n_pairs_non_visual']}"}
    return out


@register_analysis("visual_agreement.beta_words", inputs="attention")
def beta_words(files: dict) -> dict:
    """Figure 4 in numbers: the mean beta (eq. 17) of emitted visual and non-visual words
    (greedy decoding of the test set; the visual word list of ``files["visual_words"]``)."""
    from ..io import DataError

    dumps = torch.load(files["attention"], weights_only=True)  # our own dumps: tensors, lists, strings
    if not dumps or "beta" not in dumps[0]:
        raise DataError(files["attention"], "the dump has no beta", "dump a model with beta_gate: true")
    words = _read_visual_words(files["visual_words"]) if "visual_words" in files else set()
    vis, non = [], []
    for d in dumps:
        for tok, beta in zip(d["hyp_tokens"], d["beta"].tolist()):
            (vis if tok.lower() in words else non).append(beta)
    sig = f"beta|greedy|emitted words (no <eos>)|visual:{len(vis)}|non-visual:{len(non)}|n_sentences:{len(dumps)}"
    mean = lambda xs: round(sum(xs) / len(xs), 4) if xs else float("nan")  # noqa: E731
    return {"beta_visual": {"value": mean(vis), "signature": sig}, "beta_non_visual": {"value": mean(non), "signature": sig}}
