"""Moses preprocessing parity with the official Multi30k files, BPE and its inverse."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmt_repro.io import DataError, read_lines
from mmt_repro.text.bpe import apply_bpe, apply_bpe_lines, learn_bpe, merge_bpe
from mmt_repro.text.moses import detokenize_lines, preprocess_lines
from mmt_repro.text.recipes import prepare_text

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
RAW = DATASETS / "multi30k" / "task1" / "raw"
GOLD = DATASETS / "multi30k-extra" / "task1" / "tok"

# train (29000 lines x 3 languages) also matches exactly but takes ~7 s; the test sets are quick
PARITY_SPLITS = ["val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"]


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data not found: {path} (expected ../shared/datasets beside the repository)")
    return path


# --- Moses ------------------------------------------------------------------------------------


@pytest.mark.parametrize("split", PARITY_SPLITS)
@pytest.mark.parametrize("lang", ["en", "de", "fr"])
def test_matches_official_lc_norm_tok(split, lang):
    """lowercase -> normalise -> tokenise reproduces the official files line for line (100%)."""
    raw = read_lines(_need(RAW / f"{split}.{lang}.gz"))
    gold = read_lines(_need(GOLD / f"{split}.lc.norm.tok.{lang}"))
    assert len(raw) == len(gold)
    ours = preprocess_lines(raw, lang, lowercase=True)
    mismatches = [(i + 1, o, g) for i, (o, g) in enumerate(zip(ours, gold)) if o != g]
    assert mismatches == [], f"{len(mismatches)} of {len(gold)} lines differ, first: {mismatches[:3]}"


@pytest.mark.parametrize(
    "lang, raw, expected",
    [
        # the two cases where sacremoses' defaults differ from the perl scripts (val split):
        # 1. a right single quote not between ASCII letters becomes '"' (perl), not "'"
        ("fr", "Une femme jette un coup d’œil dans un télescope.", "une femme jette un coup d &quot; œil dans un télescope ."),
        # 2. de/fr: a quote after a final full stop moves before it, even at the end of a line
        ("de", "Auf dem Schild steht: „Come on now ... what's gayer than tea.“",
         "auf dem schild steht : &quot; come on now ... what &apos; s gayer than tea &quot; ."),
        # an apostrophe between letters stays one (escaped) apostrophe; hyphens are not split
        ("en", "A man's sand-dune jump.", "a man &apos;s sand-dune jump ."),
        ("fr", "L’homme & la femme", "l&apos; homme &amp; la femme"),
        # en: a quote before a comma or full stop moves after it
        ("en", 'He says "hi", then leaves', "he says &quot; hi , &quot; then leaves"),
    ],
)
def test_perl_specific_rules(lang, raw, expected):
    assert preprocess_lines([raw], lang, lowercase=True) == [expected]


def test_perl_parity_does_not_leak_into_other_normalizers():
    from sacremoses import MosesPunctNormalizer

    preprocess_lines(["d’œil"], "fr")  # builds our patched normalizer
    assert MosesPunctNormalizer(lang="fr").normalize("d’œil") == "d'œil"  # sacremoses default untouched


def test_options_and_file_roundtrip(tmp_path):
    src = tmp_path / "in.de"
    src.write_text("Ein „Test“ – hier.\nZweite Zeile!\n", encoding="utf-8")
    out = prepare_text(src, tmp_path / "out.de", "norm.tok", "de")
    assert read_lines(out) == ["Ein &quot; Test &quot; - hier .", "Zweite Zeile !"]
    assert preprocess_lines(["Ein „Test“ – hier."], "de", tokenize=False) == ['Ein "Test" - hier.']
    assert preprocess_lines(["Ein „Test“."], "de", normalize=False) == ["Ein „ Test “ ."]
    assert preprocess_lines(["Ein „Test“."], "de", normalize=False, tokenize=False, lowercase=True) == ["ein „test“."]
    assert preprocess_lines([""], "en") == [""]
    with pytest.raises(ValueError, match="line break"):
        preprocess_lines(["two\nlines"], "en")


def test_preprocess_missing_input_names_file(tmp_path):
    missing = tmp_path / "nope.en"
    with pytest.raises(DataError, match="nope.en"):
        prepare_text(missing, tmp_path / "out.en", "norm.tok", "en")
    assert not (tmp_path / "out.en").exists()


def test_detokenize_undoes_tokenisation():
    assert detokenize_lines(["a man &apos;s hat , &quot; red &quot; &amp; blue ."], "en") == ['a man\'s hat, "red" & blue.']
    assert detokenize_lines(["ein mann , der schläft ."], "de") == ["ein mann, der schläft."]


# --- BPE --------------------------------------------------------------------------------------

# Sennrich et al.'s toy corpus: low x5, lower x2, newest x6, widest x3. With end-of-word
# symbols (subword-nmt 0.2 codes) the pair counts are e.g. (e,s)=9, (s,t</w>)=9, (w,e)=8,
# (l,o)=7. subword-nmt takes the most frequent pair and breaks ties by the larger pair:
#   1 s t</w>      9  (ties with e s; "s" > "e")
#   2 e st</w>     9
#   3 l o          7
#   4 w est</w>    6  (ties n e, e w; "w" largest)
#   5 n e          6  (ties e west</w>; "n" > "e")
#   6 ne west</w>  6
#   7 lo w</w>     5
#   8 w i 3, 9 wi d 3, 10 wid est</w> 3, 11 w e 2, 12 we r</w> 2, 13 lo wer</w> 2, then no
#   pair left with frequency >= 2.
TOY = " ".join(["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3)
TOY_MERGES = [
    "s t</w>", "e st</w>", "l o", "w est</w>", "n e", "ne west</w>", "lo w</w>",
    "w i", "wi d", "wid est</w>", "w e", "we r</w>", "lo wer</w>",
]


@pytest.fixture
def toy(tmp_path):
    # split over two files to exercise joint learning
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    words = TOY.split()
    a.write_text(" ".join(words[:8]) + "\n", encoding="utf-8")
    b.write_text(" ".join(words[8:]) + "\n", encoding="utf-8")
    return [a, b]


def test_learn_bpe_hand_checked_merges(toy, tmp_path):
    codes = learn_bpe(toy, tmp_path / "codes", num_symbols=100)
    lines = read_lines(codes)
    assert lines[0].startswith("#version:")
    assert lines[1:] == TOY_MERGES
    again = learn_bpe(toy, tmp_path / "codes2", num_symbols=100)
    assert again.read_bytes() == codes.read_bytes()  # deterministic


def test_learn_bpe_num_symbols_and_min_frequency(toy, tmp_path):
    assert read_lines(learn_bpe(toy, tmp_path / "c7", num_symbols=7))[1:] == TOY_MERGES[:7]
    # frequency-3 pairs are the last ones with min_frequency=3
    assert read_lines(learn_bpe(toy, tmp_path / "c3", num_symbols=100, min_frequency=3))[1:] == TOY_MERGES[:10]
    with pytest.raises(DataError, match="no BPE merge"):
        learn_bpe(toy, tmp_path / "c99", num_symbols=10, min_frequency=99)
    assert not (tmp_path / "c99").exists()


def test_apply_bpe_segments_with_learnt_merges(toy, tmp_path):
    codes = learn_bpe(toy, tmp_path / "codes", num_symbols=7)
    # lowest: s t</w> -> e st</w> -> l o -> w est</w> gives lo + west; "lo west</w>" is no merge
    # newer: only "n e" applies; widest: only the est</w> merges (w i etc. are not in the 7)
    assert apply_bpe_lines(codes, ["low lowest newer widest newest"]) == ["low lo@@ west ne@@ w@@ e@@ r w@@ i@@ d@@ est newest"]
    src = tmp_path / "in.txt"
    src.write_text("lowest\nnewest low\n", encoding="utf-8")
    out = apply_bpe(codes, src, tmp_path / "out.txt")
    assert read_lines(out) == ["lo@@ west", "newest low"]


def test_bpe_bad_codes_file(tmp_path):
    bad = tmp_path / "codes"
    bad.write_text("#version: 0.2\ne s\nthree symbols here\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"codes.*line 3"):
        apply_bpe_lines(bad, ["x"])
    with pytest.raises(DataError, match="does not exist"):
        apply_bpe_lines(tmp_path / "missing", ["x"])


def test_merge_bpe():
    assert merge_bpe("lo@@ west ne@@ w@@ e@@ r") == "lowest newer"
    assert merge_bpe("a b@@") == "a b"
    assert merge_bpe("a b@@ ") == "a b"
    assert merge_bpe("no segmentation here") == "no segmentation here"
    assert merge_bpe("") == ""


def test_bpe_round_trip_on_real_text(tmp_path):
    train = _need(GOLD / "val.lc.norm.tok.en")
    codes = learn_bpe([train, _need(GOLD / "val.lc.norm.tok.de")], tmp_path / "codes", num_symbols=500)
    lines = read_lines(_need(GOLD / "test_2016_flickr.lc.norm.tok.en"))
    segmented = apply_bpe_lines(codes, lines)
    assert any("@@ " in s for s in segmented)  # some words were actually split
    assert [merge_bpe(s) for s in segmented] == lines
