"""CoMMuTE's figure on the grounded set: a contrastive test built from the smoke run's grounded
test split separates a model that reads the image from one that does not.

CoMMuTE (docs/scoring.md) asks whether a system gives the translation that matches the image a
lower perplexity than one that does not. The grounded captions hide in the English source what
only the image shows; here, every test line whose source names no colour while its German
reference names exactly one makes three items: the reference against the same sentence with that
colour word changed to each other colour of the grounded palette (the same inflection, a form the
captions use), so that a model ranking colours by the text alone wins about half of them. Both are forced through the smoke run's trained systems
(:func:`mmt_repro.decode.forced.forced_nll`, the path CoMMuTE scores with) and the accuracy is
:func:`mmt_repro.metrics.commute.contrastive_accuracy`'s. A model reading the congruent image
should pick the reference; text alone, shuffled images or none leave it the text's prior, near
half."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

GAIN = 20.0  # accuracy points by which the congruent image must beat the image-blind conditions
BLIND = 15.0  # how far from 50 % an image-blind condition may land (the text's prior over two colours)
# (paper, system, feature set of its grounded training or None): the grounded check's image and
# text-only models of Calixto et al., and BertGen's grounded system (scored through its own factorisation)
SYSTEMS = [("doubly_attentive", "nmt", None), ("doubly_attentive", "nmt_src_img", "resnet50-res4f"),
           ("bertgen", "grounded", "frcnn-objects")]
SHUFFLE_SEED = 1234  # the config's shuffle_seed: the derangement every probe uses


def _items(run: Path) -> tuple[list[str], list[str], list[list[str]], list[int]]:
    """Sources, references, the contrastive references (one list per other colour: the colour
    changed where the line is an item, else the reference) and the item lines."""
    from mmt_repro.corpora.masked_words import grounded_colour_lexicon
    from mmt_repro.io import read_lines

    lexicon = grounded_colour_lexicon()
    palette = list(lexicon)
    src = read_lines(run / "results" / "data" / "grounded" / "test.en")
    ref = read_lines(run / "results" / "data" / "grounded" / "test.de")
    wrong, items = [list(ref) for _ in palette[1:]], []
    for i, (s, t) in enumerate(zip(src, ref)):
        if any(form in s.split() for c in palette for form in lexicon[c]["en"]):
            continue  # the source names the colour: no need of the image
        words = t.split()
        hits = [(k, c) for k, w in enumerate(words) for c in palette if w in lexicon[c]["de"]]
        if len(hits) != 1:
            continue
        k, colour = hits[0]
        stem = os.path.commonprefix(list(lexicon[colour]["de"]))
        for shift, variant in enumerate(wrong, start=1):
            other = palette[(palette.index(colour) + shift) % len(palette)]
            # the same ending on the other colour's stem (the captions' forms: rot-e, blau-en, ...)
            changed = os.path.commonprefix(list(lexicon[other]["de"])) + words[k][len(stem):]
            assert changed in lexicon[other]["de"], (words[k], changed)
            variant[i] = " ".join(words[:k] + [changed] + words[k + 1:])
        items.append(i)
    return src, ref, wrong, items


def _accuracies(run: Path, paper: str, system: str, features: str | None, tmp: Path) -> dict:
    """Contrastive accuracy of one trained system per image condition."""
    from mmt_repro.datasets.batching import ParallelData
    from mmt_repro.decode.forced import forced_nll
    from mmt_repro.decode.system import export_system
    from mmt_repro.decode.translate import load_for_decoding
    from mmt_repro.io import write_lines
    from mmt_repro.metrics.commute import contrastive_accuracy
    from mmt_repro.settings import pair_langs
    from mmt_repro.text.system_recipe import SystemRecipe

    src_raw, ref, wrong, items = _items(run)
    folder = tmp / f"{paper}.{system}"
    export_system(run / "results" / "models" / paper / system / "grounded.en-de.seed1.best.pt", folder)
    recipe = SystemRecipe.load(folder)
    store = run / "results" / "features" / "grounded" / f"{features}.std" if features else None
    model, _, sv, tv, feats, dev = load_for_decoding(
        folder, folder / "src_vocab.json", folder / "tgt_vocab.json",
        store / "test.npy" if store else None, store / "test.index.parquet" if store else None, "cpu")
    src = write_lines(tmp / f"{paper}.{system}.src", recipe.prepare(src_raw, "src"))
    targets = {which: write_lines(tmp / f"{paper}.{system}.{which}", recipe.prepare(lines, "tgt"))
               for which, lines in (("correct", ref), *((f"incorrect{n}", w) for n, w in enumerate(wrong)))}
    conditions = {"congruent": (feats, None)}
    if feats is not None:
        conditions["shuffled"] = (feats, SHUFFLE_SEED)
        if getattr(model, "visual_optional", False):
            conditions["no_image"] = (None, None)
    out = {}
    for condition, (store_of, seed) in conditions.items():
        mean_nll = {}
        for which, tgt in targets.items():
            data = ParallelData(src, sv, tgt, tv, features=store_of, shuffle_images_seed=seed,
                                langs=pair_langs("en-de"))
            total, n_tokens = forced_nll(model, data, dev)
            mean_nll[which] = [float(total[i] / n_tokens[i]) for i in items]
        incorrect = [k for k in mean_nll if k != "correct"]
        out[condition] = contrastive_accuracy(mean_nll["correct"] * len(incorrect),
                                              [v for k in incorrect for v in mean_nll[k]])
    return out


def test_grounded_contrastive_accuracy_separates_the_image_model_from_the_text_only_one(smoke_run, tmp_path):
    src, ref, wrong, items = _items(smoke_run)
    assert 100 <= len(items) <= len(src) and len(wrong) == 3
    for variant in wrong:
        assert [i for i, (a, b) in enumerate(zip(ref, variant)) if a != b] == items
    assert all(len({ref[i], *(v[i] for v in wrong)}) == 4 for i in items)
    acc = {(paper, system): _accuracies(smoke_run, paper, system, features, tmp_path)
           for paper, system, features in SYSTEMS}
    for key, by_condition in acc.items():
        print(key, {c: f"{r['accuracy']:.2f} ({r['right']}/{r['n']})" for c, r in by_condition.items()})
        assert all(r["n"] == 3 * len(items) for r in by_condition.values())
    text_only = acc["doubly_attentive", "nmt"]["congruent"]["accuracy"]
    assert abs(text_only - 50) <= BLIND
    for key in (("doubly_attentive", "nmt_src_img"), ("bertgen", "grounded")):
        congruent = acc[key]["congruent"]["accuracy"]
        blind = {c: r["accuracy"] for c, r in acc[key].items() if c != "congruent"}
        assert blind, key
        assert congruent >= text_only + GAIN, (key, congruent, text_only)
        for condition, value in blind.items():
            assert abs(value - 50) <= BLIND and congruent >= value + GAIN, (key, condition, value)
