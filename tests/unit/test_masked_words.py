"""The source-degradation probe (Caglayan et al., 2019): word lists, masking, colour accuracy,
the gain rows, and the plan of the masked conditions (mmt_repro.metrics.masked_words,
mmt_repro.corpora.masked_words, mmt_repro.plan.masking, mmt_repro.tables.masked)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import deep_update, load_yaml
from mmt_repro.corpora.masked_words import grounded_colour_lexicon, list_masked_words
from mmt_repro.grounded import captions
from mmt_repro.metrics.masked_words import (
    BASIC_COLOUR_TERMS,
    PLACEHOLDER,
    add_colour_accuracy,
    colour_accuracy,
    mask_file,
    mask_line,
    read_word_list,
    word_list,
)
from mmt_repro.plan import Plan
from mmt_repro.plan.masking import masked_runs
from mmt_repro.tables.masked import gain_rows

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- word lists
def test_the_grounded_lexicon_is_exactly_the_generators_colours_and_translations():
    lex = grounded_colour_lexicon()
    assert tuple(lex) == captions.COLOURS == ("red", "green", "blue", "yellow")
    assert lex["red"] == {"en": ("red",), "de": ("rote", "roten", "roter", "rotes"), "fr": ("rouge", "rouges")}
    assert lex["green"]["de"] == ("grüne", "grünen", "grüner", "grünes")
    assert lex["blue"]["fr"] == ("bleu", "bleus")
    assert lex["yellow"] == {"en": ("yellow",), "de": ("gelbe", "gelben", "gelber", "gelbes"),
                             "fr": ("jaune", "jaunes")}
    # every colour word the generator writes is listed, and nothing else: the colour tokens of
    # every caption of a generated split are the listed forms of the example's colour
    forms = {lang: {f for c in lex for f in lex[c][lang]} for lang in ("en", "de", "fr")}
    for colour in captions.COLOURS:
        for frame in captions.FRAMES:
            ex = captions.Example(image="x", count=2, colour=colour, shape="square", location=("left", None),
                                  frame=frame, with_location=True, hide_count=False, hide_colour=False,
                                  hide_shape=False, en_vague_noun="shape", en_vague_det="some", en_colour_filler="",
                                  en_singular_article="a", objects=())
            for lang in ("en", "de", "fr"):
                said = [t for t in captions.caption(ex, lang).split() if t in forms[lang]]
                assert said and all(t in lex[colour][lang] for t in said), (lang, said)


def test_a_word_list_keeps_the_colours_of_the_split_with_every_target_form(tmp_path):
    lines = ["A man in a Red shirt .", "Two black dogs and a red ball .", "A greyhound runs ."]
    rows = word_list(BASIC_COLOUR_TERMS, "en", "de", lines)
    assert [r[0] for r in rows] == ["black", "red"]  # lexicon order; "greyhound" is not "grey"
    assert rows[1] == ("red", ("red",), ("rot", "rote", "rotem", "roten", "roter", "rotes"))
    src = tmp_path / "test.en"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = list_masked_words(src, tmp_path / "test.colours.tsv", "en", "fr", "basic_colour_terms")
    text = out.read_text(encoding="utf-8").splitlines()
    assert text[0] == "# masked words: colours; placeholder [v]"
    assert text[1].startswith("# lexicon: basic_colour_terms: Berlin & Kay (1969)")
    assert read_word_list(out) == {"black": (("black",), ("noir", "noire", "noirs", "noires")),
                                   "red": (("red",), ("rouge", "rouges"))}
    with pytest.raises(ValueError, match="no forms in tr"):
        word_list(BASIC_COLOUR_TERMS, "en", "tr", lines)


def test_the_basic_colour_terms_are_berlin_and_kays_eleven_in_four_languages():
    assert list(BASIC_COLOUR_TERMS) == ["black", "white", "red", "green", "yellow", "blue", "brown", "purple",
                                        "pink", "orange", "grey"]
    assert all(set(forms) == {"en", "de", "fr", "cs"} for forms in BASIC_COLOUR_TERMS.values())
    assert "weißen" in BASIC_COLOUR_TERMS["white"]["de"] and "weissen" in BASIC_COLOUR_TERMS["white"]["de"]
    assert BASIC_COLOUR_TERMS["black"]["cs"][:3] == ("černý", "černá", "černé")


# ---------------------------------------------------------------------------- masking
WORDS = {"red": (("red",), ("rot", "rote", "roten")), "blue": (("blue",), ("blau", "blaue", "blauen"))}


def test_masking_replaces_each_colour_word_by_one_placeholder_and_nothing_else():
    line = "A man in a Red shirt and a red hat , blue sky ."
    masked, colours = mask_line(line, WORDS)
    assert masked == "A man in a [v] shirt and a [v] hat , [v] sky ."
    assert colours == ["red", "red", "blue"]
    assert masked.split().count(PLACEHOLDER) == len(colours) == 3
    kept = [t for t in masked.split() if t != PLACEHOLDER]
    assert kept == [t for t in line.split() if t.lower() not in ("red", "blue")]
    # "reddish" and "blue-eyed" are other words: left as they are
    assert mask_line("a reddish blue-eyed cat", WORDS) == ("a reddish blue-eyed cat", [])


def test_wordpiece_words_are_masked_whole(tmp_path):
    masked, colours = mask_line("a man in a re ##d shirt , blue hat", WORDS, wordpiece=True)
    assert (masked, colours) == ("a man in a [v] shirt , [v] hat", ["red", "blue"])
    # without the wordpiece flag the pieces are tokens of their own
    assert mask_line("a re ##d shirt", WORDS) == ("a re ##d shirt", [])
    words = tmp_path / "w.tsv"
    words.write_text("colour\tsource_forms\ttarget_forms\nred\tred\trot,rote\n", encoding="utf-8")
    text = tmp_path / "s.en"
    text.write_text("a red ball\nno colour here\nred and red\n", encoding="utf-8")
    counts = mask_file(text, words, tmp_path / "m.en")
    assert counts == {"sentences": 3, "sentences_masked": 2, "placeholders": 3}
    assert (tmp_path / "m.en").read_text(encoding="utf-8") == "a [v] ball\nno colour here\n[v] and [v]\n"


# ---------------------------------------------------------------------------- colour accuracy
def test_colour_accuracy_counts_clipped_matches_against_the_references_colours():
    masked = [["red"], ["red", "blue"], [], ["blue"], ["red", "red"]]
    refs = ["ein roter ball", "ein rotes auto und ein blauer hut", "nichts", "ein hut", "rote und rote"]
    hyps = ["ein Roten ball", "ein blaues auto und ein blauer hut", "rot", "ein blauer hut", "rote und rote rot"]
    words = {"red": (("red",), ("roter", "rotes", "rote", "roten", "rot")),
             "blue": (("blue",), ("blauer", "blaues"))}
    result = colour_accuracy(masked, hyps, refs, words)
    # 0: red scorable, hyp has "Roten" (lowercased) -> 1/1; 1: red 0/1 (no red form), blue 1/1;
    # 2: nothing masked; 3: the reference has no blue -> not scorable; 4: 2 red, ref 2, hyp 3 -> 2/2
    assert result["sentences"] == [[0, 1, 1, 1], [1, 2, 2, 1], [3, 1, 0, 0], [4, 2, 2, 2]]
    assert (result["occurrences"], result["scorable"], result["correct"]) == (6, 5, 4)
    assert result["value"] == pytest.approx(80.0)
    assert colour_accuracy([[]], ["x"], ["y"], words)["value"] == 0.0
    with pytest.raises(ValueError, match="not parallel"):
        colour_accuracy([["red"]], [], ["y"], words)


def test_the_score_json_gets_colour_accuracy_beside_bleu(tmp_path):
    (tmp_path / "src.en").write_text("a red ball\na blue hat\n", encoding="utf-8")
    (tmp_path / "hyp.de").write_text("ein roter ball\nein roter hut\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("ein roter ball\nein blauer hut\n", encoding="utf-8")
    words = tmp_path / "w.tsv"
    words.write_text("colour\tsource_forms\ttarget_forms\nred\tred\troter\nblue\tblue\tblauer\n", encoding="utf-8")
    score = tmp_path / "score.json"
    score.write_text(json.dumps({"meta": {}, "scores": {"bleu": {"value": 50.0, "signature": "s"}}}), encoding="utf-8")
    add_colour_accuracy(score, tmp_path / "src.en", words, tmp_path / "hyp.de", tmp_path / "ref.de")
    data = json.loads(score.read_text(encoding="utf-8"))
    assert data["scores"]["bleu"]["value"] == 50.0
    assert data["scores"]["colour_acc"]["value"] == 50.0
    assert data["scores"]["colour_acc"]["signature"].endswith("|occurrences:2|scorable:2")
    assert data["masked"]["sentences"] == [[0, 1, 1, 1], [1, 1, 1, 0]]


def test_the_gain_is_masked_minus_masked_shuffled():
    row = dict(ours_std=None, n_seeds=1, signature="sig", runs="m.pt", note="")
    rows = {("mmt", "en-de", "test", "masked", "colour_acc"): dict(row, ours=75.5),
            ("mmt", "en-de", "test", "masked_shuffled", "colour_acc"): dict(row, ours=30.25),
            ("nmt", "en-de", "test", "masked", "colour_acc"): dict(row, ours=40.0)}
    gains = gain_rows(rows)
    assert list(gains) == [("mmt", "en-de", "test", "masked_gain", "colour_acc")]
    assert gains[("mmt", "en-de", "test", "masked_gain", "colour_acc")]["ours"] == 45.25
    assert gains[("mmt", "en-de", "test", "masked_gain", "colour_acc")]["comparable"] is False


# ---------------------------------------------------------------------------- the plan
@pytest.fixture(scope="module")
def smoke():
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(REPO / "config" / "smoke.yaml"))
    return Plan(config, REPO)


@pytest.fixture(scope="module")
def full():
    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


def test_the_masked_conditions_are_planned_for_multimodal_systems_and_masked_only_for_text_only(smoke, full):
    assert masked_runs(smoke, "doubly_attentive", "grounded") == [
        ("nmt", "test", 1, "masked"), ("nmt_src_img", "test", 1, "masked"), ("nmt_src_img", "test", 1, "masked_shuffled")]
    # one grounded table in the smoke run; the Multi30k tables of every Multi30k paper in the full one
    assert [(p, t) for p, t, _ in smoke.enabled if masked_runs(smoke, p, t)] == [("doubly_attentive", "grounded")]
    planned = {(p, t) for p, t, _ in full.enabled if masked_runs(full, p, t)}
    assert planned == {("doubly_attentive", "table1"), ("emb_pred", "table3"), ("visual_agreement", "table3_en_fr"),
                       ("bertgen", "table4_en_de")}
    for paper, table in planned:
        for system, _, _, condition in masked_runs(full, paper, table):
            assert condition == "masked" or full.multimodal(paper, system)
        text_only = [s for s in full.table(paper, table)["systems"] if not full.multimodal(paper, s)]
        assert text_only and all(
            {c for s2, _, _, c in masked_runs(full, paper, table) if s2 == s} == {"masked"} for s in text_only)
    with pytest.raises(ValueError, match="has none"):  # captioning: no source to mask
        masked_runs(Plan(deep_update(load_yaml(REPO / "config" / "config.yaml"), {"papers": {"bertgen": {"tables": {
            "table2_f30k_fr": {"masked_words": "colours"}}}}}), REPO), "bertgen", "table2_f30k_fr")
    # the table reads the masked runs' scores
    scores = smoke.table_jobs.job(W(paper="doubly_attentive", table="grounded")).inputs["scores"]
    assert "results/scores/doubly_attentive/nmt_src_img/grounded.test.en-de.seed1.masked_shuffled.json" in scores
    assert "results/scores/doubly_attentive/nmt/grounded.test.en-de.seed1.masked_shuffled.json" not in scores


def test_a_masked_run_reads_the_masked_source_in_the_models_form(smoke, full):
    w = W(paper="doubly_attentive", system="nmt_src_img", dataset="grounded", pair="en-de", split="test", seed="1",
          condition="masked_shuffled")
    job = smoke.translate_jobs.job(w)
    assert job.inputs["src"] == "results/masked/doubly_attentive/grounded.en-de/test.norm.tok.colours.bpe.en"
    assert job.shuffle_seed == smoke.settings["doubly_attentive"].scoring.shuffle_seed
    assert smoke.translate_jobs.job(W(**dict(vars(w), condition="masked"))).shuffle_seed is None
    score = smoke.score_jobs.job(w)
    assert score.scoring["metrics"] == ["bleu"] and score.scoring["masked_words"] == "colours"
    assert score.inputs["masked_words"] == "results/masked/grounded.en-de/test.colours.tsv"
    assert score.inputs["masked_src"] == "results/text/grounded/test.norm.tok.en"
    assert smoke.masking.lexicon(W(dataset="grounded")) == "grounded"
    assert full.masking.lexicon(W(dataset="multi30k")) == "basic_colour_terms"
    with pytest.raises(ValueError, match="reads no images"):
        smoke.translate_jobs.job(W(**dict(vars(w), system="nmt")))
    # word-level and WordPiece recipes read the masked chain text itself
    bertgen = full.translate_jobs.job(W(paper="bertgen", system="bertgen", dataset="multi30k", pair="en-de",
                                        split="test_2016_flickr", seed="1", condition="masked"))
    assert bertgen.inputs["src"] == "results/masked/multi30k.en-de/test_2016_flickr.lc.wp.colours.en"
    assert full.masking.wordpiece(W(chain="lc.wp")) and not full.masking.wordpiece(W(chain="norm.tok"))
