"""Tests for mmt_repro.metrics.mt: hand-computed BLEU/chrF/TER and reference-tool scores.

The metric-validation sets live in ../shared/datasets/metric-validation (see its README for the
provenance of each gold value). The full-corpus TER check against tercom takes ~20 s on two
processes and runs in the e2e lane.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mmt_repro.io import DataError, read_lines
from mmt_repro.metrics.mt import (
    aggregate_seeds,
    chinese_bleu,
    corpus_scores,
    multibleu,
    paired_significance,
)
from mmt_repro.metrics.score_files import score_files

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
VALIDATION = DATASETS / "metric-validation"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data not found: {path}")
    return path


# --------------------------------------------------------------------------- BLEU by hand


def test_bleu_hand_computed_with_brevity_penalty():
    hyp = "the cat sat on the mat"  # 6 tokens
    ref = "the cat sat on the red mat"  # 7 tokens
    # clipped n-gram matches / hypothesis n-grams:
    #   1-grams: the the cat sat on mat -> all 6 in ref (ref has "the" twice)   6/6
    #   2-grams: the-cat cat-sat sat-on on-the | the-mat (ref has the-red)      4/5
    #   3-grams: the-cat-sat cat-sat-on sat-on-the | on-the-mat                 3/4
    #   4-grams: the-cat-sat-on cat-sat-on-the | sat-on-the-mat                 2/3
    # BP = exp(1 - ref_len / hyp_len) = exp(1 - 7/6)
    expected = 100 * math.exp(1 - 7 / 6) * (6 / 6 * 4 / 5 * 3 / 4 * 2 / 3) ** 0.25
    s = corpus_scores([hyp], [[ref]], metrics=["bleu"], tokenize="none")["bleu"]
    assert s["value"] == pytest.approx(expected, abs=1e-9)
    assert s["value"] == pytest.approx(67.32, abs=0.01)
    assert s["details"]["counts"] == [6, 4, 3, 2]
    assert s["details"]["totals"] == [6, 5, 4, 3]
    assert s["details"]["bp"] == pytest.approx(math.exp(-1 / 6))
    assert s["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:")


def test_bleu_without_brevity_penalty_and_clipping():
    # equal length -> BP = 1; "the" appears twice in hyp but once in ref -> clipped to 1
    hyp, ref = "the cat sat on the mat", "the cat sat on a mat"
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    s = corpus_scores([hyp], [[ref]], metrics=["bleu"], tokenize="none")["bleu"]
    assert s["value"] == pytest.approx(expected, abs=1e-9)


def test_perfect_hypothesis():
    refs = ["a man rides a horse on the beach .", "two dogs play in the snow ."]
    s = corpus_scores(refs, [refs])
    assert s["bleu"]["value"] == pytest.approx(100.0)
    assert s["ter"]["value"] == pytest.approx(0.0)
    assert s["chrf3"]["value"] == pytest.approx(100.0)
    assert s["chrf3_prec"]["value"] == pytest.approx(100.0)
    assert s["chrf3_rec"]["value"] == pytest.approx(100.0)


def test_multiple_references_raise_bleu():
    hyps = ["a man is riding a horse on a beach", "two dogs are playing in snow"]
    ref1 = ["a man rides a horse on the beach", "two dogs play in the snow"]
    ref2 = ["a man is riding a horse along a beach", "two dogs are playing in the snow"]
    one = corpus_scores(hyps, [ref1], metrics=["bleu"])["bleu"]
    two = corpus_scores(hyps, [ref1, ref2], metrics=["bleu"])["bleu"]
    assert two["value"] > one["value"]
    assert two["signature"].startswith("nrefs:2|")


def test_lowercase_option():
    hyp, ref = "The Cat Sat On The Mat", "the cat sat on the mat"
    s_cased = corpus_scores([hyp], [[ref]], metrics=["bleu", "ter"], tokenize="none")
    s_lc = corpus_scores([hyp], [[ref]], metrics=["bleu", "ter"], tokenize="none", lowercase=True)
    assert s_cased["ter"]["value"] == pytest.approx(100.0)  # case counts by default: 6 substitutions
    assert s_lc["ter"]["value"] == pytest.approx(0.0)
    assert s_lc["bleu"]["value"] == pytest.approx(100.0)
    assert "case:lc" in s_lc["bleu"]["signature"] and "case:mixed" in s_cased["ter"]["signature"]


@pytest.mark.parametrize("compat", ["multi-bleu", "sacrebleu"])
def test_bleu_lc_is_lowercased_bleu_beside_the_cased_one(compat):
    """``bleu_lc`` (Yang et al.: the cased score beside the lowercased one of Elliott and Kadar's
    metrics): the cased ``bleu`` stays cased, ``bleu_lc`` equals ``bleu`` with lowercase=True."""
    hyps = ["The Cat sat on a Mat .", "A Dog runs"]
    refs = [["the cat sat on the mat .", "a dog runs"]]
    both = corpus_scores(hyps, refs, metrics=["bleu", "bleu_lc"], tokenize="none", bleu_compat=compat)
    lc = corpus_scores(hyps, refs, metrics=["bleu"], tokenize="none", bleu_compat=compat, lowercase=True)
    assert both["bleu_lc"]["value"] == pytest.approx(lc["bleu"]["value"])
    assert both["bleu_lc"]["value"] > both["bleu"]["value"]
    assert "case:lc" in both["bleu_lc"]["signature"] and "case:mixed" in both["bleu"]["signature"]
    assert set(both) == {"bleu", "bleu_lc"}


def test_bleu_1ref_is_the_mean_of_single_reference_bleus_by_hand():
    """``bleu_1ref`` (BertGen's footnote 7): BLEU against each reference alone, averaged. One
    sentence, two references, computed by hand: against ``ref1`` 67.32 (6/6, 4/5, 3/4, 2/3,
    BP exp(1 - 7/6), as above), against ``ref2`` 100; the mean is below the two-reference BLEU
    (100: the hypothesis is ``ref2``). With one reference the metric is not written."""
    hyp = "the cat sat on the mat"
    ref1, ref2 = "the cat sat on the red mat", "the cat sat on the mat"
    first = 100 * math.exp(1 - 7 / 6) * (6 / 6 * 4 / 5 * 3 / 4 * 2 / 3) ** 0.25
    for compat in ("multi-bleu", "sacrebleu"):
        s = corpus_scores([hyp], [[ref1], [ref2]], metrics=["bleu", "bleu_1ref"], tokenize="none", bleu_compat=compat)
        assert s["bleu_1ref"]["details"]["per_reference"] == pytest.approx([first, 100.0], abs=1e-9)
        assert s["bleu_1ref"]["value"] == pytest.approx((first + 100.0) / 2, abs=1e-9)
        assert s["bleu"]["value"] == pytest.approx(100.0)
        assert s["bleu_1ref"]["signature"].startswith("mean-of-2-single-ref|")
        assert "nrefs:1|" in s["bleu_1ref"]["signature"]
    single = corpus_scores([hyp], [[ref1]], metrics=["bleu", "bleu_1ref"], tokenize="none")
    assert set(single) == {"bleu"}


# --------------------------------------------------------------------------- chrF and TER by hand


def test_chrf3_precision_recall_by_hand():
    # chrF ignores spaces. hyp "abc" vs ref "abcd", character n-grams (H / R / M):
    #   n=1: 3 / 4 / 3   n=2: 2 / 3 / 2   n=3: 1 / 2 / 1   n=4: 0 / 1 / 0 (not an effective order)
    prec = 100 * (3 / 3 + 2 / 2 + 1 / 1) / 3
    rec = 100 * (3 / 4 + 2 / 3 + 1 / 2) / 3
    f3 = (1 + 9) * prec * rec / (9 * prec + rec)
    s = corpus_scores(["abc"], [["abcd"]], metrics=["chrf3"])
    assert s["chrf3_prec"]["value"] == pytest.approx(prec)
    assert s["chrf3_rec"]["value"] == pytest.approx(rec)
    assert s["chrf3"]["value"] == pytest.approx(f3)
    assert s["chrf3"]["signature"] == s["chrf3_prec"]["signature"]
    assert "nc:6" in s["chrf3"]["signature"]


def test_chrf3_corpus_statistics_are_summed_before_averaging():
    # two segments: the corpus precision is not the mean of the segment precisions.
    # "abc"/"abcd": n=1 3/4/3, n=2 2/3/2, n=3 1/2/1, n=4 0/1/0
    # "xyzw"/"xyz": n=1 4/3/3, n=2 3/2/2, n=3 2/1/1, n=4 0/0/0 (sacreBLEU counts no hypothesis
    #               n-grams for an order where the reference has none)
    # summed H/R/M: n=1 7/7/6, n=2 5/5/4, n=3 3/3/2, n=4 0/1/0 (not effective)
    hyps, refs = ["abc", "xyzw"], ["abcd", "xyz"]
    prec = 100 * (6 / 7 + 4 / 5 + 2 / 3) / 3
    rec = 100 * (6 / 7 + 4 / 5 + 2 / 3) / 3
    s = corpus_scores(hyps, [refs], metrics=["chrf3"])
    assert s["chrf3_prec"]["value"] == pytest.approx(prec)
    assert s["chrf3_rec"]["value"] == pytest.approx(rec)
    seg1 = corpus_scores(hyps[:1], [refs[:1]], metrics=["chrf3"])["chrf3_prec"]["value"]
    seg2 = corpus_scores(hyps[1:], [refs[1:]], metrics=["chrf3"])["chrf3_prec"]["value"]
    assert s["chrf3_prec"]["value"] != pytest.approx((seg1 + seg2) / 2)


def test_ter_by_hand():
    # one shift of "d" over three words counts as one edit; 4 reference words
    assert corpus_scores(["d a b c"], [["a b c d"]], metrics=["ter"])["ter"]["value"] == pytest.approx(25.0)
    # one deletion against a 3-word reference
    assert corpus_scores(["a b c d"], [["a b d"]], metrics=["ter"])["ter"]["value"] == pytest.approx(100 / 3)


# --------------------------------------------------------------------------- errors


def test_unknown_metric_lists_valid_ones():
    with pytest.raises(ValueError, match="bleu.*chrf3.*ter"):
        corpus_scores(["a"], [["a"]], metrics=["rouge"])


def test_mismatched_line_counts():
    with pytest.raises(DataError, match="reference stream 1 has 1 lines"):
        corpus_scores(["a", "b"], [["a", "b"], ["a"]])


def test_score_files_names_the_short_file(tmp_path):
    hyp = tmp_path / "hyp.de"
    ref = tmp_path / "ref.de"
    hyp.write_text("a\nb\n", encoding="utf-8")
    ref.write_text("a\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        score_files(hyp, [ref], tmp_path / "s.json", meta=_meta())
    assert str(ref) in str(err.value)
    assert not (tmp_path / "s.json").exists()


def _meta(**kw):
    meta = {
        "paper": "doubly_attentive",
        "table": "table1",
        "system": "nmt",
        "pair": "en-de",
        "test_set": "test_2016_flickr",
        "seed": 1,
        "condition": "congruent",
    }
    meta.update(kw)
    return meta


def test_score_files_writes_json(tmp_path):
    hyp = tmp_path / "hyp.de"
    ref = tmp_path / "ref.de"
    hyp.write_text("ein mann fährt rad .\nzwei hunde spielen .\n", encoding="utf-8")
    ref.write_text("ein mann fährt fahrrad .\nzwei hunde spielen im schnee .\n", encoding="utf-8")
    out = tmp_path / "scores" / "nmt.json"
    result = score_files(hyp, [ref], out, meta=_meta(), tokenize="none")
    on_disk = json.loads(out.read_text(encoding="utf-8"))
    assert on_disk == result
    assert on_disk["n_sentences"] == 2
    assert on_disk["meta"]["system"] == "nmt"
    assert set(on_disk["scores"]) == {"bleu", "chrf3", "chrf3_prec", "chrf3_rec", "ter"}
    for entry in on_disk["scores"].values():
        assert isinstance(entry["value"], float) and entry["signature"].startswith("nrefs:1|")
    with pytest.raises(DataError, match="meta lacks"):
        score_files(hyp, [ref], tmp_path / "x.json", meta={"paper": "p"})


# --------------------------------------------------------------------------- significance


_BASE = [
    "a man in a red shirt is riding a bike",
    "two children play football in a park",
    "a woman is reading a newspaper at a cafe",
    "the dog jumps over a wooden fence",
    "people are walking along a busy street",
    "a chef is cooking food in a kitchen",
]


def test_paired_significance_self_and_much_better():
    refs = _BASE * 8
    weak = [" ".join(s.split()[:3]) + " thing" for s in refs]
    # a system compared with itself cannot be significantly different
    assert paired_significance(weak, list(weak), [refs]) == 1.0
    assert paired_significance(weak, list(weak), [refs], metric="ter", test="bs", n_samples=200) == 1.0
    # the references themselves are far better than the truncated outputs
    p = paired_significance(weak, refs, [refs], metric="bleu", test="ar", n_samples=1000)
    assert p == pytest.approx(1 / 1001)
    p_bs = paired_significance(weak, refs, [refs], metric="chrf3", test="bs", n_samples=200)
    assert p_bs < 0.01
    # deterministic for a fixed seed
    near = list(weak)
    near[:6] = refs[:6]
    a = paired_significance(weak, near, [refs], n_samples=300, seed=7)
    b = paired_significance(weak, near, [refs], n_samples=300, seed=7)
    assert a == b
    with pytest.raises(ValueError, match="valid"):
        paired_significance(weak, refs, [refs], metric="meteor")


# --------------------------------------------------------------------------- reference tools


def test_multeval_example_bleu_matches_multi_bleu():
    d = _need(VALIDATION / "multeval-example")
    hyps = read_lines(d / "hyps.lc.tok.en.baseline.opt0")
    refs = read_lines(d / "refs.test2010.lc.tok.en.0")
    s = corpus_scores(hyps, [refs], metrics=["bleu"], tokenize="none")["bleu"]
    gold = float((d / "hyps.baseline.opt0.bleu.gold").read_text().strip())
    assert gold == 18.54
    # multi-bleu.perl: BLEU = 18.54, 55.4/25.1/12.7/6.7 (BP=1.000, ratio=1.075, hyp_len=67461, ref_len=62774)
    assert round(s["value"], 2) == gold
    assert [round(p, 1) for p in s["details"]["precisions"]] == [55.4, 25.1, 12.7, 6.7]
    assert (s["details"]["sys_len"], s["details"]["ref_len"]) == (67461, 62774)
    assert s["details"]["bp"] == 1.0
    # sacreBLEU's own 13a tokenisation re-splits the Moses tokens and moves the score
    s13a = corpus_scores(hyps, [refs], metrics=["bleu"], tokenize="13a")["bleu"]
    assert round(s13a["value"], 2) != gold
    # the multi-bleu.perl-compatible entry point gives the same number and says so
    mb = multibleu(hyps, [refs])
    assert round(mb["value"], 2) == gold
    assert mb["signature"].startswith("multi-bleu.perl-compatible|nrefs:1|case:mixed|eff:no|tok:none|smooth:none|")
    via = corpus_scores(hyps, [refs], metrics=["bleu"], tokenize="none", bleu_compat="multi-bleu")["bleu"]
    assert via == mb


@pytest.mark.parametrize(
    "direction,lang,gold,precs,lens",
    [
        ("de-en", "en", 34.26, [69.9, 43.9, 29.6, 20.4], (122097, 131156)),
        ("en-de", "de", 28.40, [63.2, 35.4, 22.2, 14.5], (122665, 125754)),
    ],
)
def test_iwslt14_outputs_match_multi_bleu(direction, lang, gold, precs, lens):
    hyp = _need(VALIDATION / "iwslt14-transformer-outputs" / f"test.{direction}.hyp.{lang}")
    ref = _need(DATASETS / "iwslt14-de-en" / f"test.{lang}")
    s = corpus_scores(read_lines(hyp), [read_lines(ref)], metrics=["bleu"], tokenize="none", lowercase=True)["bleu"]
    assert round(s["value"], 2) == gold
    assert [round(p, 1) for p in s["details"]["precisions"]] == precs
    assert (s["details"]["sys_len"], s["details"]["ref_len"]) == lens


def _ter_stats(lines: tuple[list[str], list[str]]):
    from sacrebleu.metrics import TER

    hyps, refs = lines
    return TER()._extract_corpus_statistics(hyps, [refs])


@pytest.mark.e2e  # ~20 s on 2 cores (the whole corpus against tercom's own number): the slow lane
def test_multeval_example_ter_close_to_tercom():
    """sacreBLEU's TER against tercom 0.8.0 (via MultEval) on the whole MultEval example (2,489
    sentences; the sum of per-sentence edits over the sum of reference lengths is the corpus
    TER, so two processes each take half)."""
    from concurrent.futures import ProcessPoolExecutor

    d = _need(VALIDATION / "multeval-example")
    hyps = read_lines(d / "hyps.lc.tok.en.baseline.opt0")
    refs = read_lines(d / "refs.test2010.lc.tok.en.0")
    gold = float((d / "hyps.baseline.opt0.ter.gold").read_text().strip())  # 0.6551916398508937, a fraction
    half = len(hyps) // 2
    with ProcessPoolExecutor(2) as pool:
        parts = list(pool.map(_ter_stats, [(hyps[:half], refs[:half]), (hyps[half:], refs[half:])]))
    edits = sum(row[0] for part in parts for row in part)
    ref_length = sum(row[1] for part in parts for row in part)
    # tercom 0.8.0 via MultEval: 41129 edits / 62774 reference words; sacreBLEU finds one edit more
    assert ref_length == 62774
    assert abs(edits - gold * 62774) <= 1
    assert round(100 * edits / ref_length, 2) == round(100 * gold, 2)


def test_ter_case_handling_by_hand():
    """Cased text: case-sensitive TER counts a case difference as a substitution, MultEval's
    lowercased TER (``ter_lowercase``) does not; a shift costs one edit either way."""
    hyps = ["The Cat sat on the Mat .", "a dog runs"]
    refs = [["the cat sat on the mat .", "runs a dog"]]
    cased = corpus_scores(hyps, refs, metrics=["ter"], tokenize="none")["ter"]
    lower = corpus_scores(hyps, refs, metrics=["ter"], tokenize="none", ter_lowercase=True)["ter"]
    # sentence 1: The/the, Cat/cat, Mat/mat = 3 substitutions (0 lowercased); sentence 2: one shift
    assert (cased["details"]["num_edits"], cased["details"]["ref_length"]) == (4, 10)
    assert (lower["details"]["num_edits"], lower["details"]["ref_length"]) == (1, 10)
    assert cased["value"] == pytest.approx(40.0) and lower["value"] == pytest.approx(10.0)
    assert "case:mixed" in cased["signature"] and "case:lc" in lower["signature"]


# --------------------------------------------------------------------------- BLEU variants


def test_multibleu_gives_zero_without_a_4gram_match_like_the_perl_script():
    # hyp "a b c d e" vs ref "a b c x e": 1-grams 4/5, 2-grams 2/4, 3-grams 1/3, 4-grams 0/2.
    # multi-bleu.perl: any zero n-gram precision -> BLEU = 0; sacreBLEU's exp smoothing replaces
    # the 0/2 by 1 / (2^1 * 2) = 1/4 -> 100 * (4/5 * 2/4 * 1/3 * 1/4) ** 0.25
    hyp, ref = ["a b c d e"], [["a b c x e"]]
    assert multibleu(hyp, ref)["value"] == 0.0
    smoothed = corpus_scores(hyp, ref, metrics=["bleu"], tokenize="none")["bleu"]["value"]
    assert smoothed == pytest.approx(100 * (4 / 5 * 2 / 4 * 1 / 3 * 1 / 4) ** 0.25)
    assert multibleu(["The Cat"], [["the cat"]], lowercase=True)["signature"].startswith(
        "multi-bleu.perl-compatible|nrefs:1|case:lc|"
    )
    with pytest.raises(ValueError, match="tokenize='none'"):
        corpus_scores(hyp, ref, metrics=["bleu"], bleu_compat="multi-bleu")
    with pytest.raises(ValueError, match="valid: sacrebleu, multi-bleu"):
        corpus_scores(hyp, ref, bleu_compat="moses")


def test_chinese_bleu_declares_its_segmentation():
    hyp, ref = ["我 爱 北京 天安门"], [["我 爱 北京 的 天安门"]]
    # char (and zh: all CJK) -> hyp 我 爱 北 京 天 安 门 (7) vs ref 我 爱 北 京 的 天 安 门 (8)
    #   1-grams 7/7, 2-grams 5/6 (京天 is not in the ref), 3-grams 3/5, 4-grams 1/4
    #   BP = exp(1 - 8/7)
    by_char = 100 * math.exp(1 - 8 / 7) * (7 / 7 * 5 / 6 * 3 / 5 * 1 / 4) ** 0.25
    # none (the given word segmentation): 1-grams 4/4, 2-grams 2/3, 3-grams 1/2, 4-grams 0/1 ->
    #   exp smoothing 1/(2 * 1); BP = exp(1 - 5/4)
    by_word = 100 * math.exp(1 - 5 / 4) * (4 / 4 * 2 / 3 * 1 / 2 * 1 / 2) ** 0.25
    char = chinese_bleu(hyp, ref, tokenize="char")
    zh = chinese_bleu(hyp, ref, tokenize="zh")
    none = chinese_bleu(hyp, ref, tokenize="none")
    assert char["value"] == pytest.approx(by_char) and zh["value"] == pytest.approx(by_char)
    assert none["value"] == pytest.approx(by_word)
    assert "|tok:char|" in char["signature"] and "|tok:zh|" in zh["signature"] and "|tok:none|" in none["signature"]
    with pytest.raises(ValueError, match="declared segmentation"):
        chinese_bleu(hyp, ref, tokenize="13a")
    with pytest.raises(ValueError, match="declared segmentation"):
        corpus_scores(hyp, ref, metrics=["bleu"], lang="zh")  # default 13a is refused for Chinese
    assert corpus_scores(hyp, ref, metrics=["bleu"], lang="zh", tokenize="zh")["bleu"] == zh


# --------------------------------------------------------------------------- METEOR and CIDEr wiring


def test_corpus_scores_meteor_and_cider(tmp_path):
    import shutil

    from mmt_repro.metrics.meteor import bundled_jar

    if shutil.which("java") is None or bundled_jar() is None:
        pytest.skip("METEOR needs java and pycocoevalcap==1.2 (bundled meteor-1.5.jar)")
    hyps = ["ein mann fährt rad .", "zwei hunde spielen ."]
    refs = ["ein mann fährt fahrrad .", "zwei hunde spielen im schnee ."]
    with pytest.raises(ValueError, match="needs lang"):
        corpus_scores(hyps, [refs], metrics=["meteor"])
    hyp, ref = tmp_path / "hyp.de", tmp_path / "ref.de"
    hyp.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    ref.write_text("\n".join(refs) + "\n", encoding="utf-8")
    # lang comes from meta["pair"] = en-de; the jar in file mode gives 0.5254529767040553 for
    # these lines with -l de -norm -m "exact stem" (no German paraphrase table in the wheel)
    result = score_files(hyp, [ref], tmp_path / "s.json", meta=_meta(), metrics=["bleu", "meteor", "cider"], tokenize="none")
    met = result["scores"]["meteor"]
    assert met["value"] == pytest.approx(52.54529767040553, abs=1e-9)
    assert met["signature"].startswith("meteor-1.5|lang:de|modules:exact,stem|")
    assert "|paraphrase:missing|" in met["signature"] and met["signature"].endswith("|official:no")
    assert result["scores"]["cider"]["signature"].startswith("cider-d|n:4|sigma:6|nrefs:1|")
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8")) == result


# --------------------------------------------------------------------------- bootstrap details and seeds


def test_paired_bootstrap_details():
    refs = _BASE * 8
    weak = [" ".join(s.split()[:3]) + " thing" for s in refs]
    d = paired_significance(weak, refs, [refs], metric="bleu", test="bs", n_samples=200, details=True)
    assert d["test"] == "bs" and d["n_samples"] == 200 and d["p_value"] < 0.01
    assert d["system"]["score"] == pytest.approx(100.0)
    assert d["baseline"]["score"] == pytest.approx(corpus_scores(weak, [refs], metrics=["bleu"])["bleu"]["value"])
    assert d["baseline"]["mean"] is not None and d["baseline"]["ci"] >= 0
    assert d["signature"].startswith("nrefs:1|")
    same = paired_significance(weak, list(weak), [refs], test="bs", n_samples=50, details=True)
    assert same["p_value"] == 1.0 and same["system"]["score"] == same["baseline"]["score"]


def test_aggregate_seeds():
    mean, std, n = aggregate_seeds([51.0, 51.4, 50.6])
    assert (mean, n) == (pytest.approx(51.0), 3)
    # deviations -0, 0.4, -0.4 -> sample variance (0.16 + 0.16) / 2 = 0.16 -> std 0.4
    assert std == pytest.approx(0.4)
    assert aggregate_seeds([33.3]) == (33.3, None, 1)
    with pytest.raises(ValueError, match="no values"):
        aggregate_seeds([])
