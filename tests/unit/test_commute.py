"""CoMMuTE (Futeral et al. 2023): the reader of the released text (line counts, files without a
final newline), the contrastive accuracy as the authors' evaluate.py counts it, and the property
that makes 50 % the image-blind score."""

import zlib
from pathlib import Path

import pytest

from mmt_repro.corpora.commute import SPLITS, first_lines, read_commute, read_commute_file, swapped_pairs
from mmt_repro.io import DataError
from mmt_repro.metrics.commute import contrastive_accuracy

SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "commute"
needs_release = pytest.mark.skipif(not (SHARED / "en-de" / "src.en").is_file(),
                                   reason=f"CoMMuTE's text is not at {SHARED} (manifest input commute)")


def blind_nll(text: str) -> float:
    """A scorer that reads only the translation: a fixed pseudo-random value per sentence."""
    return zlib.crc32(text.encode("utf-8")) / 2**32


@needs_release
@pytest.mark.parametrize("split,n,final_newline", [("en-de", 300, False), ("en-fr", 308, False),
                                                    ("en-cs", 308, False), ("en-fr_dev", 60, True)])
def test_the_release_has_its_line_counts_with_or_without_a_final_newline(split, n, final_newline):
    data = read_commute(SHARED, split)
    assert len(data) == len(data.correct) == len(data.incorrect) == len(data.images) == n
    assert (SHARED / split / "src.en").read_bytes().endswith(b"\n") == final_newline
    assert data.lang == SPLITS[split][0]
    if split == "en-de":
        assert data.src[:2] == ["We'll have to get rid of that mole."] * 2
        assert data.correct[:2] == ["Das Leberfleck muss entfernt werden.", "Der Maulwurf muss entfernt werden."]
        assert data.images[:2] == ["e9490cd.jpeg", "e2f18daf.jpeg"]
        assert data.src[-1] and data.images[-1].endswith(".jpeg")  # the unterminated last line is kept whole


@needs_release
@pytest.mark.parametrize("split,pairs", [("en-de", 150), ("en-cs", 154), ("en-fr_dev", 30)])
def test_an_image_blind_scorer_scores_exactly_half(split, pairs):
    """Each source is given twice and the two translations swap between the lines, so a scorer
    that ignores the image is right on exactly one line of each pair (unless it ties)."""
    data = read_commute(SHARED, split)
    assert swapped_pairs(data) == ([(i, i + 1) for i in range(0, 2 * pairs, 2)], [])
    result = contrastive_accuracy([blind_nll(t) for t in data.correct], [blind_nll(t) for t in data.incorrect])
    assert result == {"accuracy": 50.0, "n": 2 * pairs, "right": pairs, "ties": 0}
    # the authors' tie rule (a tie is a miss): a constant scorer gets 0, not 50
    assert contrastive_accuracy([1.0] * len(data), [1.0] * len(data))["accuracy"] == 0.0


@needs_release
def test_en_fr_has_two_pairs_whose_translations_do_not_swap_exactly():
    """En-Fr (v3): lines 24 and 100 (1-based) differ from their partner's other translation
    ("J'ai du mal à respirer.../J'ai la poitrine lourde...", "arêtes" without " !"), so a blind
    scorer gets 152 of the 304 swapped lines plus 0-4 of these four: 49.35-50.65 %, not exactly 50."""
    data = read_commute(SHARED, "en-fr")
    pairs, single = swapped_pairs(data)
    assert len(pairs) == 152 and single == [22, 23, 98, 99]
    assert data.incorrect[23] == "J'ai du mal à respirer.../J'ai la poitrine lourde..." != data.correct[22]
    assert data.correct[99] == "Ne mange pas les arêtes" and data.incorrect[98] == "Ne mange pas les arêtes !"
    result = contrastive_accuracy([blind_nll(t) for t in data.correct], [blind_nll(t) for t in data.incorrect])
    rest = sum(blind_nll(data.correct[i]) < blind_nll(data.incorrect[i]) for i in single)
    assert result["right"] == 152 + rest and result["ties"] == 0
    assert rest == 1 and result["accuracy"] == pytest.approx(100 * 153 / 308)  # 49.68 % for this scorer


@needs_release
@pytest.mark.parametrize("split", ["en-de", "en-fr", "en-cs"])
def test_a_scorer_that_knows_the_answer_scores_100(split):
    data = read_commute(SHARED, split)
    # per line, the scorer gives the translation that fits the line's image the lower NLL
    correct = [0.1 + blind_nll(t) / 10 for t in data.correct]
    incorrect = [0.2 + blind_nll(t) / 10 for t in data.incorrect]
    assert contrastive_accuracy(correct, incorrect) == {"accuracy": 100.0, "n": len(data), "right": len(data),
                                                        "ties": 0}


def test_accuracy_counts_a_tie_as_a_miss_like_the_authors_evaluate_py():
    assert contrastive_accuracy([1.0, 2.0, 3.0, 0.5], [2.0, 2.0, 1.0, 0.7]) == \
        {"accuracy": 50.0, "n": 4, "right": 2, "ties": 1}
    with pytest.raises(ValueError, match="3 correct scores but 2"):
        contrastive_accuracy([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="non-finite"):
        contrastive_accuracy([float("nan")], [1.0])


def test_reader_refuses_misaligned_short_or_empty_files(tmp_path):
    d = tmp_path / "en-de"
    d.mkdir()
    files = {"src.en": "a\na", "correct.de": "x\ny", "incorrect.de": "y\nx", "img.order": "1.jpeg\n2.jpeg\n"}
    for name, text in files.items():
        (d / name).write_text(text, encoding="utf-8")
    assert read_commute_file(d / "src.en") == ["a", "a"]  # no final newline
    assert read_commute_file(d / "img.order") == ["1.jpeg", "2.jpeg"]
    data = read_commute(tmp_path, "en-de", check_count=False)
    assert swapped_pairs(data) == ([(0, 1)], [])
    with pytest.raises(DataError, match="has 2 lines; CoMMuTE v3 .* has 300"):
        read_commute(tmp_path, "en-de")
    (d / "incorrect.de").write_text("y\nx\nz", encoding="utf-8")
    with pytest.raises(DataError, match="not line-aligned"):
        read_commute(tmp_path, "en-de", check_count=False)
    (d / "incorrect.de").write_text("y\n\nx", encoding="utf-8")
    with pytest.raises(DataError, match=r"empty line\(s\) \[2\]"):
        read_commute_file(d / "incorrect.de")
    with pytest.raises(DataError, match="no split 'en-xx'"):
        read_commute(tmp_path, "en-xx")


@needs_release
def test_a_cut_keeps_the_first_lines_and_whole_pairs_only():
    """first_lines (a CoMMuTE table's `options: {lines: N}`): the first N lines of every column;
    an odd N (it would split a swapped pair), fewer than 2 or more than the split holds is refused."""
    data = read_commute(SHARED, "en-de")
    cut = first_lines(data, 12)
    assert len(cut) == 12 and cut.src == data.src[:12] and cut.images == data.images[:12]
    assert cut.correct == data.correct[:12] and cut.incorrect == data.incorrect[:12]
    assert swapped_pairs(cut) == ([(i, i + 1) for i in range(0, 12, 2)], [])
    assert first_lines(data, None) is data
    for bad in (11, 0, True, 302, "12"):
        with pytest.raises(ValueError, match="CoMMuTE lines"):
            first_lines(data, bad)
