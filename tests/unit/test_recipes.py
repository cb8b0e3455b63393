"""Text recipes: chain grammar, Moses parity, WordPiece, Chinese characters, length filter, per-paper values."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import shared_dataset

from mmt_repro.io import DataError, read_lines
from mmt_repro.text.recipes import (
    PAPERS_DIR,
    Recipe,
    apply_chain,
    chain_for,
    filter_pairs_by_length,
    filter_parallel,
    merge_for_scoring,
    merge_subwords,
    merge_wordpiece,
    parse_chain,
    prepare_text,
    recipe_for,
    segment_chars,
)
from mmt_repro.text.wordpiece import load_wordpiece

PAPERS = ("doubly_attentive", "emb_pred", "visual_agreement", "bertgen", "deepfuse")

# --- chain grammar ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chain, lang, steps",
    [
        ("lc.norm.tok", "en", ("lc", "norm", "tok")),
        ("norm.tok", "de", ("norm", "tok")),
        ("lc", "fr", ("lc",)),
        ("lc.wp", "en", ("lc", "wp")),
        ("norm.wp", "tr", ("norm", "wp")),
        ("char", "zh", ("char",)),
        ("lc.char", "zh", ("lc", "char")),
    ],
)
def test_parse_chain(chain, lang, steps):
    assert parse_chain(chain, lang) == steps


@pytest.mark.parametrize(
    "chain, lang, message",
    [
        ("lc.foo", "en", "unknown step 'foo' in chain 'lc.foo'; valid steps: lc, norm, tok, wp, char"),
        ("bpe", "en", "unknown step 'bpe'"),
        ("", "en", "empty step chain"),
        ("lc..tok", "en", "empty step"),
        ("lc.", "en", "empty step"),
        ("lc.lc.tok", "en", "repeats step(s) lc"),
        ("tok.lc", "en", "out of order"),
        ("norm.lc.tok", "en", "out of order"),
        ("tok.wp", "en", "more than one segmenting step (tok, wp)"),
        ("char", "en", "'char' (Chinese character segmentation) is for zh only, not 'en'"),
        ("norm.tok", "zh", "'tok' (Moses) does not segment Chinese"),
    ],
)
def test_bad_chain_errors(chain, lang, message):
    with pytest.raises(ValueError) as err:
        apply_chain(["A line."], chain, lang)
    assert message in str(err.value)


def test_wp_needs_a_vocabulary():
    with pytest.raises(ValueError, match="wp step but no wordpiece_vocab"):
        apply_chain(["a"], "lc.wp", "en")


# --- Moses steps ------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "de", "fr"])
def test_lc_norm_tok_matches_official_multi30k(lang):
    """The first 200 val lines through ``lc.norm.tok`` equal the official tokenised file."""
    raw = read_lines(shared_dataset(f"multi30k/task1/raw/val.{lang}.gz"))[:200]
    gold = read_lines(shared_dataset(f"multi30k-extra/task1/tok/val.lc.norm.tok.{lang}"))[:200]
    assert len(raw) == len(gold) == 200
    ours = apply_chain(raw, "lc.norm.tok", lang)
    mismatches = [(i + 1, o, g) for i, (o, g) in enumerate(zip(ours, gold)) if o != g]
    assert mismatches == []


def test_steps_one_at_a_time():
    line = "A  man’s “Sand-Dune” jump."
    assert apply_chain([line], "lc", "en") == ["a  man’s “sand-dune” jump."]
    assert apply_chain([line], "lc.norm", "en") == ['a man\'s "sand-dune" jump.']
    assert apply_chain([line], "lc.norm.tok", "en") == ["a man &apos;s &quot; sand-dune &quot; jump ."]
    assert apply_chain([line], "norm.tok", "en") == ["A man &apos;s &quot; Sand-Dune &quot; jump ."]


def test_prepare_text_writes_the_chain(tmp_path):
    src = tmp_path / "val.en"
    src.write_text("A man's sand-dune jump.\nTwo dogs.\n", encoding="utf-8")
    out = prepare_text(src, tmp_path / "val.lc.norm.tok.en", "lc.norm.tok", "en")
    assert out.read_text(encoding="utf-8") == "a man &apos;s sand-dune jump .\ntwo dogs .\n"


def test_prepare_text_bad_chain_writes_nothing(tmp_path):
    src = tmp_path / "val.en"
    src.write_text("a\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown step 'tokenise'"):
        prepare_text(src, tmp_path / "val.lc.tokenise.en", "lc.tokenise", "en")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["val.en"]


# --- WordPiece --------------------------------------------------------------------------------

TOY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "man", "is", "play", "##ing", "guitar", "##s",
             "un", "##der", "the", "tree", ".", "'", "s", "café", "cafe"]


@pytest.fixture
def toy_vocab(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(TOY_VOCAB) + "\n", encoding="utf-8")
    return path


def test_wordpiece_by_hand(toy_vocab):
    # lc, then BERT's basic split (punctuation apart), then greedy longest-match WordPiece:
    # playing = play + ##ing, guitars = guitar + ##s, under = un + ##der ("unde", "und" absent);
    # a word whose rest cannot be matched ("players": no ##ers/##er/##e) is one [UNK]
    lines = ["A man is playing guitars under the tree.", "The man's players play."]
    assert apply_chain(lines, "lc.wp", "en", wordpiece_vocab=toy_vocab) == [
        "a man is play ##ing guitar ##s un ##der the tree .",
        "the man ' s [UNK] play .",
    ]


def test_wordpiece_casing(toy_vocab):
    # the wp step does not lowercase (cased M-BERT); lc does, and keeps the accent
    assert apply_chain(["Café"], "wp", "fr", wordpiece_vocab=toy_vocab) == ["[UNK]"]
    assert apply_chain(["Café"], "lc.wp", "fr", wordpiece_vocab=toy_vocab) == ["café"]
    # BERT's own lowercasing (uncased models) also strips accents
    assert load_wordpiece(toy_vocab, lowercase=True).tokenize("Café") == ["cafe"]


def test_wordpiece_loader_cache_and_errors(tmp_path, toy_vocab):
    assert load_wordpiece(toy_vocab) is load_wordpiece(toy_vocab)
    assert len(load_wordpiece(toy_vocab).get_vocab()) == len(TOY_VOCAB)
    with pytest.raises(DataError, match="WordPiece vocabulary file does not exist"):
        load_wordpiece(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"not a BERT vocabulary: no \[PAD\], \[UNK\]"):
        load_wordpiece(bad)


def test_merge_wordpiece():
    assert merge_wordpiece(["a man is play ##ing guitar ##s un ##der the tree .", "##s x [UNK] y ##z", ""]) == [
        "a man is playing guitars under the tree .",
        "s x [UNK] yz",
        "",
    ]


def test_wordpiece_round_trip(toy_vocab):
    """BertGen scores words: pieces merged back give the lowercased, punctuation-split text."""
    lines = ["A man is playing guitars under the tree.", "The man's guitar."]
    pieces = apply_chain(lines, "lc.wp", "en", wordpiece_vocab=toy_vocab)
    assert merge_wordpiece(pieces) == ["a man is playing guitars under the tree .", "the man ' s guitar ."]


def test_merge_subwords_and_for_scoring():
    assert merge_subwords(["new@@ est car@@"], "bpe") == ["newest car"]
    assert merge_subwords(["a@@ b ##c"], "none") == ["a@@ b ##c"]
    with pytest.raises(ValueError, match="unknown subword kind 'sentencepiece'; valid: bpe, wordpiece, char, none"):
        merge_subwords(["x"], "sentencepiece")
    assert merge_for_scoring(["play ##ing"], "bertgen", "de") == ["playing"]
    assert merge_for_scoring(["new@@ est"], "doubly_attentive", "de") == ["newest"]
    assert merge_for_scoring(["一 个 人"], "deepfuse", "zh") == ["一 个 人"]  # BPE on the English source only


# --- Chinese characters -----------------------------------------------------------------------


def test_char_segmentation_by_hand():
    line = "一个人，用 CPU 2000年。"
    assert segment_chars(line) == "一 个 人 ， 用 C P U 2 0 0 0 年 。"
    assert segment_chars(line, keep_latin_runs=True) == "一 个 人 ， 用 CPU 2000 年 。"
    assert apply_chain([line], "char", "zh") == ["一 个 人 ， 用 C P U 2 0 0 0 年 。"]
    assert apply_chain([line], "lc.char", "zh") == ["一 个 人 ， 用 c p u 2 0 0 0 年 。"]


def test_char_segmentation_matches_real_vatex():
    """VATEX val.zh is ' ' + each character of the raw caption followed by ' ' (a raw space shows as
    three); so the raw text is every second character, and ``char`` must give the same tokens."""
    gold = read_lines(shared_dataset("vatex-val-parallel/val.zh"))
    assert len(gold) == 14050
    assert all(set(line[0::2]) == {" "} for line in gold)  # the reconstruction below is exact
    raw = [line[1::2] for line in gold]
    assert raw[0] == "一个人在借助绳子的条件下顺利的从山上爬下来。"
    ours = apply_chain(raw, "char", "zh")
    assert ours[0] == "一 个 人 在 借 助 绳 子 的 条 件 下 顺 利 的 从 山 上 爬 下 来 。"
    mismatches = [(i + 1, o, g) for i, (o, g) in enumerate(zip(ours, gold)) if o.split() != g.split()]
    assert mismatches == []
    # Latin letters are single characters in the real data too (line 327: "C P U")
    assert "C P U" in gold[326] and "C P U" in ours[326]


# --- length filter ----------------------------------------------------------------------------


def test_filter_pairs_by_length_by_hand():
    src = ["a b", "a b c d", "", "x y z", "x"]
    tgt = ["1 2", "1", "1 2", "1 2 3", "1 2 3 4"]
    # pair 1: source 4 > 3; pair 2: empty source < min_len; pair 4: target 4 > 3
    assert filter_pairs_by_length(src, tgt, max_len=3) == (["a b", "x y z"], ["1 2", "1 2 3"], [0, 3])
    assert filter_pairs_by_length(src, tgt, max_len=3, min_len=0)[2] == [0, 2, 3]
    with pytest.raises(ValueError, match="source has 5 lines, target 4"):
        filter_pairs_by_length(src, tgt[:4], max_len=3)


def test_calixto_boundary_80_kept_81_dropped():
    src = [" ".join(["w"] * 80), " ".join(["w"] * 81)]
    assert filter_pairs_by_length(src, ["x", "x"], max_len=recipe_for("doubly_attentive").max_len)[2] == [0]


def test_filter_parallel_with_image_list(tmp_path):
    (tmp_path / "train.en").write_text("a b\na b c d\nx y z\n", encoding="utf-8")
    (tmp_path / "train.de").write_text("1 2\n1\n1 2 3\n", encoding="utf-8")
    (tmp_path / "train.images").write_text("i0.jpg\ni1.jpg\ni2.jpg\n", encoding="utf-8")
    counts = filter_parallel(
        tmp_path / "train.en", tmp_path / "train.de", tmp_path / "out.en", tmp_path / "out.de", max_len=3,
        image_list_in=tmp_path / "train.images", image_list_out=tmp_path / "out.images",
    )
    assert counts == {"pairs": 3, "kept": 2}
    assert read_lines(tmp_path / "out.en") == ["a b", "x y z"]
    assert read_lines(tmp_path / "out.de") == ["1 2", "1 2 3"]
    assert read_lines(tmp_path / "out.images") == ["i0.jpg", "i2.jpg"]


def test_filter_parallel_errors(tmp_path):
    (tmp_path / "s").write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "t").write_text("a\n", encoding="utf-8")
    (tmp_path / "i").write_text("i0\n", encoding="utf-8")
    with pytest.raises(DataError, match="has 1 lines but the source"):
        filter_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "so", tmp_path / "to", max_len=5)
    with pytest.raises(DataError, match="lists 1 images but"):
        filter_parallel(tmp_path / "s", tmp_path / "s", tmp_path / "so", tmp_path / "to", 5, tmp_path / "i", tmp_path / "io")
    with pytest.raises(ValueError, match="give both image_list_in and image_list_out"):
        filter_parallel(tmp_path / "s", tmp_path / "s", tmp_path / "so", tmp_path / "to", 5, image_list_in=tmp_path / "i")
    assert not (tmp_path / "so").exists()


# --- per-paper recipes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "paper, lang, chain, suffix, subword, bpe_symbols, vocab_size, max_len, lowercase",
    [
        ("doubly_attentive", "en", "norm.tok", "norm.tok.bpe", "bpe", 90_000, None, 80, False),
        ("doubly_attentive", "de", "norm.tok", "norm.tok.bpe", "bpe", 90_000, None, 80, False),
        ("emb_pred", "fr", "lc.norm.tok", "lc.norm.tok", "none", None, 10_000, None, True),
        ("emb_pred", "en", "lc.norm.tok", "lc.norm.tok", "none", None, 10_000, None, True),
        ("visual_agreement", "en", "norm.tok", "norm.tok", "none", None, 10_000, None, False),
        ("visual_agreement", "fr", "norm.tok", "norm.tok", "none", None, 10_000, None, False),
        ("bertgen", "en", "lc.wp", "lc.wp", "wordpiece", None, None, None, True),
        ("bertgen", "tr", "lc.wp", "lc.wp", "wordpiece", None, None, None, True),
        ("deepfuse", "en", "lc.norm.tok", "lc.norm.tok.bpe", "bpe", 20_000, None, None, True),
        ("deepfuse", "zh", "char", "char", "none", 20_000, None, None, True),
    ],
)
def test_recipe_values(paper, lang, chain, suffix, subword, bpe_symbols, vocab_size, max_len, lowercase):
    recipe = recipe_for(paper)
    assert recipe.paper == paper
    assert chain_for(paper, lang) == chain
    assert recipe.suffix_for(lang) == suffix
    assert recipe.subword_for(lang) == subword
    assert (recipe.bpe_symbols, recipe.vocab_size, recipe.max_len, recipe.lowercase) == (
        bpe_symbols, vocab_size, max_len, lowercase,
    )
    assert recipe.source and recipe.scoring


def test_every_paper_has_its_recipe_in_its_settings_file():
    assert {p.stem for p in PAPERS_DIR.glob("*.yaml")} >= set(PAPERS)
    recipes = {p: recipe_for(p) for p in PAPERS}
    assert recipes["deepfuse"].zh_segmentation == "char"
    assert recipes["deepfuse"].bpe_langs == ("en",)
    assert all(r.zh_segmentation is None for k, r in recipes.items() if k != "deepfuse")
    assert "80 tokens" in recipes["doubly_attentive"].source
    assert "Multilingual Cased" in recipes["bertgen"].source
    assert recipes["doubly_attentive"].joint_bpe and not recipes["doubly_attentive"].joint_vocab


def test_recipe_block_with_an_unknown_key_names_it_and_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown recipe key\(s\) \['bpe_merges'\]; valid keys: .*bpe_symbols"):
        Recipe.from_dict("x", {"langs": ["en"], "chain": "norm.tok", "bpe_merges": 3})
    r = Recipe.from_dict("x", {"langs": ["en", "zh"], "chain": "lc.norm.tok", "chains": {"zh": "char"},
                               "zh_segmentation": "char", "lowercase": True, "subword": "char"})
    assert r.chain_for("zh") == "char" and r.suffix_for("zh") == "char" and r.subword_for("en") == "char"
    assert merge_subwords(["一 个 人"], r.subword_for("zh")) == ["一 个 人"]  # characters are scored as characters


def test_unknown_paper_and_language():
    with pytest.raises(ValueError) as err:
        recipe_for("calixto")
    assert str(err.value).startswith("unknown paper 'calixto': no ")
    assert str(err.value).endswith("calixto.yaml; valid: bertgen, deepfuse, doubly_attentive, emb_pred, visual_agreement")
    with pytest.raises(ValueError, match="unknown paper 'imagination'"):
        chain_for("imagination", "en")
    with pytest.raises(ValueError, match="recipe 'deepfuse' has no language 'de'; its languages: en, zh"):
        chain_for("deepfuse", "de")


def test_recipe_is_frozen_and_checked():
    with pytest.raises(dataclasses.FrozenInstanceError):
        recipe_for("emb_pred").vocab_size = 5  # type: ignore[misc]
    with pytest.raises(ValueError, match="lowercase=True but chain 'norm.tok'"):
        Recipe(paper="x", langs=("en",), chain="norm.tok", lowercase=True)
    with pytest.raises(ValueError, match="bpe_symbols must be set exactly when subword is 'bpe'"):
        Recipe(paper="x", langs=("en",), chain="norm.tok", subword="bpe")
    with pytest.raises(ValueError, match="unknown step 'tokenize'"):
        Recipe(paper="x", langs=("en",), chain="norm.tokenize")
