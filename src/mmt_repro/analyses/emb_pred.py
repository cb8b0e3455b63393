"""Hirasawa et al. (2019), embedding prediction (:mod:`mmt_repro.models.emb_pred`): word F by
training frequency (Figure 1) and sentence-to-image retrieval in the IMAGINATION latent space."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..models.layers import masked_mean
from .registry import register_analysis


@register_analysis("emb_pred.rare_f", inputs="translation_train")
def rare_f(files: dict) -> dict:
    """Figure 1: word F-score (sentence presence, Kumar & Tsvetkov 2019) per bin of training
    frequency (:mod:`mmt_repro.metrics.rare_words`, compare-mt's bins), in %. A bin without
    test words is left out. The signature names the metric's settings only; a bin's counts (its
    words in the outputs and references, which differ from seed to seed) are ``details``."""
    from ..io import read_lines
    from ..metrics.rare_words import rare_word_fscore

    table = rare_word_fscore(read_lines(files["hyp"]), read_lines(files["ref"]), read_lines(files["train"]))
    sig = "word F|sentence presence|pooled per training-frequency bin|whitespace tokens"
    return {f"f_freq_{row.bin}": {"value": round(100.0 * float(row.fscore), 4), "signature": sig,
                                  "details": {"words": int(row.n_words), "hyp_sents": int(row.hyp_sents),
                                              "ref_sents": int(row.ref_sents), "both": int(row.both)}}
            for row in table.itertuples() if not np.isnan(row.fscore)}


@register_analysis("emb_pred.retrieval", inputs="model")
def retrieval(files: dict) -> dict:
    """The IMAGINATION latent space at work: rank every test image by the cosine of its
    features to each test sentence's ``v_hat`` (eq. 6); recall at 1, 5 and 10 (%), the median
    rank and chance R@1 (100 / n)."""
    from ..checkpoint import load_model
    from ..datasets.batching import ParallelData, move
    from ..features.store import open_features
    from ..io import DataError
    from ..text.vocab import Vocab

    model, _ = load_model(files["checkpoint"])
    if not getattr(model, "use_image", False):
        raise DataError(files["checkpoint"], f"{model.registry_name} has no visual latent space",
                        "run the retrieval analysis on IMAGINATION models (emb_pred.imag, emb_pred.ours)")
    store = open_features(files["features_npy"], files["features_index"])
    data = ParallelData(files["src"], Vocab.load(files["src_vocab"]), features=store)
    v_hat = torch.zeros(data.n_examples, model.config.img_dim)
    images = torch.zeros(data.n_examples, model.config.img_dim)
    with torch.inference_mode():
        for batch in data.eval_batches(64):
            ids = batch["ids"]
            v_hat[ids] = model.predict_image(model.encode(move(batch, torch.device("cpu"))))
            images[ids] = masked_mean(batch["img"], batch["img_mask"])
    sims = F.normalize(v_hat, dim=-1) @ F.normalize(images, dim=-1).t()  # (sentences, images)
    gold = sims.diagonal().unsqueeze(1)
    ranks = (sims > gold).sum(1) + 1  # 1 = the sentence's own image is the nearest
    n = data.n_examples
    sig = f"sentence->image retrieval|cosine|{n} candidates"
    out = {f"r{k}": {"value": round(100.0 * float((ranks <= k).float().mean()), 4), "signature": sig} for k in (1, 5, 10)}
    out["median_rank"] = {"value": float(ranks.float().median()), "signature": sig}
    out["chance_r1"] = {"value": round(100.0 / n, 4), "signature": sig}
    return out
