"""Corpus preparers (mmt_repro.corpora.preparers) and checks (mmt_repro.corpora.checks).

Fake archives/JSONs are built in tmp_path with the official layouts and the expected output
worked out by hand from the recipes; the real data in ../shared/datasets checks sizes, the
IWSLT test concatenation order, the SGML reader and the TasvirEt split rule.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import shared_dataset

from mmt_repro.corpora.captions import TASVIRET_SIZES
from mmt_repro.corpora.checks import KNOWN_SIZES, check_corpus, check_lines, known_size
from mmt_repro.corpora.preparers import (
    clean_corpus,
    extract_member,
    flickr30k_id,
    prepare_iwslt14,
    prepare_iwslt14_prepared,
    prepare_karpathy,
    prepare_newstest,
    prepare_setimes,
    prepare_tasviret,
    prepare_vatex,
    prepare_vatex_prepared,
    read_flickr8k_tokens,
    read_image_list,
    read_sgm,
    read_vatex_prepared,
    split_tasviret,
)
from mmt_repro.corpora.iwslt import perl_lc
from mmt_repro.io import DataError, read_lines
from mmt_repro.standins.world import SIZES


def lines(path) -> list[str]:
    return Path(path).read_text(encoding="utf-8").split("\n")[:-1]


# --------------------------------------------------------------------------- IWSLT'14

N_SENT = 48
LABELS = {"TED.dev2010": "alpha", "TEDX.dev2012": "beta", "TED.tst2010": "gamma", "TED.tst2011": "delta",
          "TED.tst2012": "epsilon"}


def _train_tags(lang: str) -> list[str]:
    de = lang == "de"
    out = [
        "<url>http://www.ted.com/talks/anna_berg.html</url>",
        "<keywords>talks, science</keywords>",
        "<speaker>Anna Berg</speaker>",
        "<talkid>1</talkid>",
        "<title>Anna Berg: Das Thema</title>" if de else "<title>Anna Berg: The topic</title>",
        ("<description>TED Talk Subtitles: Ein Vortrag.</description>" if de
         else "<description>TED Talk Subtitles: A talk.</description>"),
        "Ja." if de else "Yes, I really think so.",  # 2 vs 7 tokens: ratio 3.5 > 1.5, dropped
        "Ja, klar." if de else "Yes, of course.",  # 4 vs 5 tokens: kept
        "Danke." if de else "Thank you.",  # 2 vs 3 tokens: ratio exactly 1.5, kept
        "   " if de else "(Applause)",  # empty side: dropped
        " ".join(["wort"] * 176) if de else " ".join(["word"] * 176),  # 176 > 175 tokens: dropped
        " ".join(["Wort"] * 175) if de else " ".join(["Word"] * 175),  # 175 tokens: kept, lowercased
    ]
    out += [f"Wir sehen Bild {i} hier." if de else f"We see picture {i} here." for i in range(1, N_SENT + 1)]
    return out


def _xml(name: str, lang: str) -> list[str]:
    de = lang == "de"
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<mteval>",
           f'<srcset setid="iwslt-{name}" srclang="{"german" if de else "english"}">',
           '<doc docid="535" genre="lectures">',
           "<url>http://www.ted.com/talks/x.html</url>", "<talkid>535</talkid>",
           "<title>Ein Titel</title>" if de else "<title>A title</title>"]
    if name == "TED.dev2010":
        out += ['<seg id="1"> Vielen Dank, Chris. </seg>' if de else '<seg id="1"> Thank you so much, Chris. </seg>',
                '<seg id="2">Das ist toll.</seg>' if de else "<seg id=\"2\">It\u2019s great.\t</seg>  "]
    out += [f'<seg id="9">Test {LABELS[name]} eins.</seg>' if de else f'<seg id="9">Test {LABELS[name]} one.</seg>']
    return out + ["</doc>", "</srcset>", "</mteval>"]


def _tgz(path: Path, files: dict[str, list[str] | bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, content in files.items():
            data = content if isinstance(content, bytes) else ("\n".join(content) + "\n").encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _iwslt_archive(tmp_path: Path, drop: str | None = None, replace: dict | None = None) -> Path:
    files: dict[str, list[str] | bytes] = {"de-en/README": ["readme"]}
    for lang in ("de", "en"):
        files[f"de-en/train.tags.de-en.{lang}"] = _train_tags(lang)
        for name in LABELS:
            files[f"de-en/IWSLT14.{name}.de-en.{lang}.xml"] = _xml(name, lang)
    files.pop(drop, None)
    files.update(replace or {})
    return _tgz(tmp_path / "de-en.tgz", files)


def test_iwslt14_recipe_by_hand(tmp_path):
    counts = prepare_iwslt14(_iwslt_archive(tmp_path), "de", "en", tmp_path / "out", check_sizes=False)
    clean_de = ["&lt; speaker &gt; anna berg &lt; / speaker &gt;", "anna berg : das thema",
                "ted talk subtitles : ein vortrag .", "ja , klar .", "danke .", " ".join(["wort"] * 175)]
    clean_en = ["&lt; speaker &gt; anna berg &lt; / speaker &gt;", "anna berg : the topic",
                "ted talk subtitles : a talk .", "yes , of course .", "thank you .", " ".join(["word"] * 175)]
    clean_de += [f"wir sehen bild {i} hier ." for i in range(1, N_SENT + 1)]
    clean_en += [f"we see picture {i} here ." for i in range(1, N_SENT + 1)]
    assert len(clean_de) == 54
    # valid = cleaned lines 23 and 46 (awk NR%23==0) = sentences 17 and 40; train = the other 52
    assert lines(tmp_path / "out/valid.de") == ["wir sehen bild 17 hier .", "wir sehen bild 40 hier ."]
    assert lines(tmp_path / "out/valid.en") == ["we see picture 17 here .", "we see picture 40 here ."]
    assert lines(tmp_path / "out/train.de") == [x for i, x in enumerate(clean_de, 1) if i not in (23, 46)]
    assert lines(tmp_path / "out/train.en") == [x for i, x in enumerate(clean_en, 1) if i not in (23, 46)]
    # test: <seg> lines only, tags and surrounding whitespace gone, ’ -> ', tokenised, lowercased,
    # in fairseq's order dev2010, TEDX.dev2012, tst2010, tst2011, tst2012
    assert lines(tmp_path / "out/test.de") == ["vielen dank , chris .", "das ist toll .", "test alpha eins .",
                                               "test beta eins .", "test gamma eins .", "test delta eins .",
                                               "test epsilon eins ."]
    assert lines(tmp_path / "out/test.en") == ["thank you so much , chris .", "it &apos;s great .", "test alpha one .",
                                               "test beta one .", "test gamma one .", "test delta one .",
                                               "test epsilon one ."]
    assert counts == {"raw": 57, "clean": 54, "TED.dev2010": 3, "TEDX.dev2012": 1, "TED.tst2010": 1,
                      "TED.tst2011": 1, "TED.tst2012": 1, "train": 52, "valid": 2, "test": 7}


def test_iwslt14_checks_sizes_and_members(tmp_path):
    archive = _iwslt_archive(tmp_path)
    with pytest.raises(DataError, match="published size for iwslt14_de-en is 6750") as err:
        prepare_iwslt14(archive, "de", "en", tmp_path / "out")
    assert str(archive) in str(err.value)
    assert not (tmp_path / "out").exists()  # nothing written on failure
    archive = _iwslt_archive(tmp_path, drop="de-en/IWSLT14.TEDX.dev2012.de-en.en.xml")
    with pytest.raises(DataError, match="IWSLT14.TEDX.dev2012.de-en.en.xml"):
        prepare_iwslt14(archive, "de", "en", tmp_path / "out", check_sizes=False)
    archive = _iwslt_archive(tmp_path, replace={"de-en/train.tags.de-en.de": b"Gr\xfc\xdfe\n"})
    with pytest.raises(DataError, match="train.tags.de-en.de: not valid UTF-8"):
        prepare_iwslt14(archive, "de", "en", tmp_path / "out", check_sizes=False)
    with pytest.raises(DataError, match="known pairs: de-en, fr-en"):
        prepare_iwslt14(archive, "en", "de", tmp_path / "out")


def test_clean_corpus_and_perl_lc():
    src = ["a  b\tc", "a", "a b c d", "x|y z", ""]
    tgt = ["a b", "a b", "a", "u v", "a"]
    # 3 vs 2 kept (1.5), 1 vs 2 dropped (2.0), 4 vs 1 dropped, '|' deleted (not factored), empty dropped
    assert clean_corpus(src, tgt) == (["a b c", "xy z"], ["a b", "u v"])
    assert clean_corpus(["a b c"], ["a"], ratio=3) == (["a b c"], ["a"])
    assert clean_corpus(["a " * 5], ["b " * 5], max_len=4) == ([], [])
    assert perl_lc("ΟΔΟΣ Straße İ") == "οδοσ straße i̇"  # no final sigma, as Perl's lc


def test_iwslt14_prepared_real_folder(tmp_path):
    folder = shared_dataset("iwslt14-de-en")
    counts = prepare_iwslt14_prepared(folder, "de", "en", tmp_path / "out")
    assert counts == {"valid": 7283, "test": 6750}
    assert (tmp_path / "out/test.de").read_bytes() == (folder / "test.de").read_bytes()
    assert (tmp_path / "out/valid.en").read_bytes() == (folder / "valid.en").read_bytes()
    # fairseq's order (dev2010, TEDX.dev2012, tst2010-2012) is the real one: line 888 of test
    # is the first line of TEDX.dev2012, not of tst2010
    test_de = read_lines(folder / "test.de")
    assert test_de[887] == read_lines(folder / "IWSLT14.TEDX.dev2012.de-en.de")[0]
    assert test_de[887 + 1165] == read_lines(folder / "IWSLT14.TED.tst2010.de-en.de")[0]
    with pytest.raises(DataError, match="prepared split file is missing") as err:
        prepare_iwslt14_prepared(folder, "de", "en", tmp_path / "out2", splits=["train", "test"])
    assert "train.de" in str(err.value)


def test_iwslt14_prepared_detects_wrong_order(tmp_path):
    folder = shared_dataset("iwslt14-de-en")
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    for p in copy.iterdir():
        p.chmod(0o644)
    t = read_lines(copy / "test.en")
    (copy / "test.en").write_text("\n".join(t[887:] + t[:887]) + "\n", encoding="utf-8")  # dev2010 moved last
    with pytest.raises(DataError, match=r"differs from the concatenation .* at line 1"):
        prepare_iwslt14_prepared(copy, "de", "en", tmp_path / "out", splits=["test"])
    (copy / "valid.de").write_text("\n".join(read_lines(copy / "valid.de")[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="different numbers of lines"):
        prepare_iwslt14_prepared(copy, "de", "en", tmp_path / "out", splits=["valid"])


def test_extract_member_tgz_and_zip(tmp_path):
    archive = _iwslt_archive(tmp_path)
    out = extract_member(archive, "IWSLT14.TED.tst2011.de-en.en.xml", tmp_path / "x" / "tst2011.xml")
    assert lines(out) == _xml("TED.tst2011", "en")
    z = _zip(tmp_path / "caption_datasets.zip", {"caption_datasets/dataset_coco.json": b"{}", "b/dataset_coco.json": b"[]"})
    assert extract_member(z, "b/dataset_coco.json", tmp_path / "c.json").read_bytes() == b"[]"
    with pytest.raises(DataError, match="2 members match 'dataset_coco.json'"):
        extract_member(z, "dataset_coco.json", tmp_path / "d.json")
    with pytest.raises(DataError, match="0 members match 'dataset_flickr8k.json'"):
        extract_member(z, "dataset_flickr8k.json", tmp_path / "d.json")
    assert not (tmp_path / "d.json").exists()


# --------------------------------------------------------------------------- news test sets, SETIMES2


def test_read_sgm_real_equals_plain_text():
    folder = shared_dataset("wmt-newstest")
    segs = read_sgm(folder / "newstest2019-defr-src-ts.de.sgm")
    assert len(segs) == 1701 == known_size("newstest2019_de-fr", "test")
    assert segs == read_lines(folder / "newstest2019.de-fr.de")
    assert segs[584].startswith("Die Fraktion der Sozialisten und Sozialdemokraten (S&D)")  # bare & kept


def test_read_sgm_entities_and_truncation(tmp_path):
    sgm = tmp_path / "t.sgm"
    sgm.write_text('<srcset setid="x" srclang="any">\n<doc docid="d" genre="news">\n<p>\n'
                   '<seg id="1">  AT&amp;T  says &quot;hi&quot;&#39;s </seg>\n'
                   '<seg id="2">S&D &lt;b&gt; caf&eacute;</seg>\n</p>\n</doc>\n</srcset>\n', encoding="utf-8")
    assert read_sgm(sgm) == ['AT&T says "hi"\'s', "S&D <b> café"]
    sgm.write_text('<doc>\n<seg id="1">a</seg>\n<seg id="2">b\n', encoding="utf-8")
    with pytest.raises(DataError, match="2 <seg> tags opened but 1 closed"):
        read_sgm(sgm)
    sgm.write_text("plain text\n", encoding="utf-8")
    with pytest.raises(DataError, match="no <seg> elements"):
        read_sgm(sgm)


def test_prepare_newstest_real_setimes_dev_and_test(tmp_path):
    f = shared_dataset("wmt-newstest")
    dev = {lang: [f / f"newstest2016.en-tr.{lang}", f / f"newstest2017.en-tr.{lang}"] for lang in ("en", "tr")}
    counts = prepare_newstest(dev, tmp_path, "valid", corpus="setimes2_en-tr")
    assert counts == {"file:newstest2016.en-tr.en": 3000, "file:newstest2017.en-tr.en": 3007, "en": 6007, "tr": 6007}
    out = read_lines(tmp_path / "valid.tr")
    assert out[:3000] == read_lines(f / "newstest2016.en-tr.tr") and out[3000:] == read_lines(f / "newstest2017.en-tr.tr")
    test = {lang: [f / f"newstest2018.en-tr.{lang}"] for lang in ("en", "tr")}
    assert prepare_newstest(test, tmp_path, "test", corpus="setimes2_en-tr")["en"] == 3000
    wmt19 = {"de": [f / "newstest2019-defr-src-ts.de.sgm"], "fr": [f / "newstest2019.de-fr.fr"]}  # SGML + plain
    assert prepare_newstest(wmt19, tmp_path, "test", corpus="wmt19_de-fr")["fr"] == 1701
    with pytest.raises(DataError, match="published size of setimes2_en-tr valid is 6007"):
        prepare_newstest({lang: [f / f"newstest2016.en-tr.{lang}"] for lang in ("en", "tr")}, tmp_path / "x", "valid",
                         corpus="setimes2_en-tr")
    with pytest.raises(DataError, match="different numbers of lines"):
        prepare_newstest({"en": [f / "newstest2016.en-tr.en"], "tr": [f / "newstest2017.en-tr.tr"]}, tmp_path / "x", "t")
    assert not (tmp_path / "x").exists()


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def test_prepare_setimes_fake_zip(tmp_path):
    z = _zip(tmp_path / "en-tr.txt.zip", {
        "README": b"OPUS",
        "SETIMES.en-tr.en": "Hello world.\r\nSecond line\n\nFourth.\n".encode(),
        "SETIMES.en-tr.tr": "Merhaba dünya.\r\nİkinci satır\nÜçüncü\n \n".encode(),
    })
    counts = prepare_setimes(z, tmp_path / "out")
    assert counts == {"pairs": 4, "empty_dropped": 2, "kept": 2}
    assert lines(tmp_path / "out/train.en") == ["Hello world.", "Second line"]
    assert lines(tmp_path / "out/train.tr") == ["Merhaba dünya.", "İkinci satır"]
    z2 = _zip(tmp_path / "bad.zip", {"SETIMES.en-tr.en": b"a\n", "SETIMES.en-tr.tr": b"a\nb\n"})
    with pytest.raises(DataError, match="has 1 lines but .tr has 2"):
        prepare_setimes(z2, tmp_path / "out2")
    z3 = _zip(tmp_path / "other.zip", {"SETIMES.en-tr.en": b"a\n"})
    with pytest.raises(DataError, match="member 'SETIMES.en-tr.tr' is missing"):
        prepare_setimes(z3, tmp_path / "out2")
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="cannot read the zip"):
        prepare_setimes(tmp_path / "junk.zip", tmp_path / "out2")


# --------------------------------------------------------------------------- captions


def _img(name, split, caps, filepath=None):
    d = {"filename": name, "split": split,
         "sentences": [{"raw": c, "tokens": c.lower().strip(" .").split()} for c in caps]}
    if filepath:
        d["filepath"] = filepath
    return d


def _karpathy(tmp_path, dataset="tiny") -> Path:
    images = [
        _img("a.jpg", "train", [f"A {k} ." for k in range(1, 6)], "train2014"),
        _img("b.jpg", "restval", [f"B {k} ." for k in range(1, 6)], "val2014"),
        _img("c.jpg", "test", ["C one\n is  here. ", "C 2 .", "C 3 .", "C 4 .", "C 5 .", "C extra ."], "val2014"),
        _img("d.jpg", "val", [f"D {k} ." for k in range(1, 6)], "val2014"),
        _img("e.jpg", "train", [f"E {k} ." for k in range(1, 6)], "train2014"),
    ]
    p = tmp_path / "dataset_tiny.json"
    p.write_text(json.dumps({"images": images, "dataset": dataset}), encoding="utf-8")
    return p


def test_prepare_karpathy_layout_and_restval(tmp_path):
    js = _karpathy(tmp_path)
    assert prepare_karpathy(js, tmp_path / "m") == {"train": 3, "val": 1, "test": 1}
    assert lines(tmp_path / "m/image_splits/train.txt") == ["a.jpg", "b.jpg", "e.jpg"]  # restval merged, JSON order
    assert lines(tmp_path / "m/train.2.en") == ["A 2 .", "B 2 .", "E 2 ."]
    assert lines(tmp_path / "m/test.1.en") == ["C one is here."]  # whitespace collapsed
    assert lines(tmp_path / "m/test.5.en") == ["C 5 ."]  # 6th caption ignored
    assert not (tmp_path / "m/test.6.en").exists()
    assert prepare_karpathy(js, tmp_path / "d", restval="drop", lang="xx") == {"train": 2, "val": 1, "test": 1}
    assert lines(tmp_path / "d/train.1.xx") == ["A 1 .", "E 1 ."]
    counts = prepare_karpathy(js, tmp_path / "k", restval="keep", text="tokens", with_filepath=True)
    assert counts == {"train": 2, "val": 1, "test": 1, "restval": 1}
    assert lines(tmp_path / "k/image_splits/restval.txt") == ["val2014/b.jpg"]
    assert lines(tmp_path / "k/test.1.en") == ["c one is here"]
    check_corpus({f"{k}.en": tmp_path / f"m/train.{k}.en" for k in range(1, 6)},
                 image_list=tmp_path / "m/image_splits/train.txt", expected_lines=3)


def test_prepare_karpathy_errors(tmp_path):
    with pytest.raises(DataError, match="Karpathy coco split 'train' has 2 images, the published size is 82783"):
        prepare_karpathy(_karpathy(tmp_path, dataset="coco"), tmp_path / "o")
    assert prepare_karpathy(_karpathy(tmp_path, dataset="coco"), tmp_path / "o", check_sizes=False)["test"] == 1
    with pytest.raises(DataError, match="has 5 captions, fewer than 6"):
        prepare_karpathy(_karpathy(tmp_path), tmp_path / "o2", captions_per_image=6)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"images": [{"filename": "x.jpg", "split": "dev", "sentences": []}]}), encoding="utf-8")
    with pytest.raises(DataError, match="has split 'dev'"):
        prepare_karpathy(bad, tmp_path / "o3")
    bad.write_text('{"images": [', encoding="utf-8")
    with pytest.raises(DataError, match="not valid UTF-8 JSON"):
        prepare_karpathy(bad, tmp_path / "o3")
    assert not (tmp_path / "o2").exists() and not (tmp_path / "o3").exists()


def test_read_flickr8k_tokens_real():
    caps = read_flickr8k_tokens(shared_dataset("flickr8k-text") / "Flickr8k.token.txt")
    assert len(caps) == 8092 and all(len(v) == 5 for v in caps.values())
    assert caps["1000268201_693b08cb0e.jpg"][0] == (
        "A child in a pink dress is climbing up a set of stairs in an entry way .")
    # the official file labels this caption "2258277193_586949ec62.jpg.1#0"
    assert caps["2258277193_586949ec62.jpg"][0] == "people waiting for the subway"
    assert not any(name.endswith(".1") for name in caps)


def test_read_flickr8k_tokens_malformed(tmp_path):
    p = tmp_path / "tok.txt"
    p.write_text("a.jpg#0\tone\na.jpg#2\tthree\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"a.jpg has captions #\[0, 2\]"):
        read_flickr8k_tokens(p)
    p.write_text("a.jpg caption without tab\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 1 is not"):
        read_flickr8k_tokens(p)


def test_flickr30k_id():
    assert flickr30k_id("1000268201_693b08cb0e.jpg") == "1000268201"
    assert flickr30k_id("1007129816.jpg") == "1007129816"
    assert flickr30k_id("images/1007129816.jpg\n") == "1007129816"


@pytest.fixture(scope="module")
def real_lists():
    f8k = shared_dataset("flickr8k-text")
    m30k = shared_dataset("multi30k") / "task1" / "image_splits"
    images = [x for s in ("train", "dev", "test") for x in read_image_list(f8k / f"Flickr_8k.{s}Images.txt")]
    return {"flickr8k": images, **{s: read_image_list(m30k / f"{s}.txt") for s in ("train", "val", "test_2016_flickr")}}


def test_split_tasviret_real_lists(real_lists):
    images = real_lists["flickr8k"]
    assert len(images) == 8000
    m30k_train = {flickr30k_id(x) for x in real_lists["train"]}
    split = split_tasviret(images, seed=1234, exclude=real_lists["train"])
    assert tuple(len(split[s]) for s in ("train", "val", "test")) == TASVIRET_SIZES == (6914, 543, 543)
    sets = {s: set(v) for s, v in split.items()}
    assert not (sets["train"] & sets["val"]) and not (sets["train"] & sets["test"]) and not (sets["val"] & sets["test"])
    # no val/test image is a Multi30k training image; and train is exactly the Flickr8k images that
    # are Multi30k training images (6914 of them: the paper's number), so no Multi30k val/test image is in train
    assert not any(flickr30k_id(x) in m30k_train for x in sets["val"] | sets["test"])
    assert sets["train"] == {x for x in images if flickr30k_id(x) in m30k_train}
    evaluation = {flickr30k_id(x) for x in real_lists["val"] + real_lists["test_2016_flickr"]}
    assert sum(flickr30k_id(x) in evaluation for x in sets["val"] | sets["test"]) == 238 + 239
    assert not any(flickr30k_id(x) in evaluation for x in sets["train"])
    # deterministic for a seed; another seed only reshuffles val/test
    assert split_tasviret(images, seed=1234, exclude=real_lists["train"]) == split
    other = split_tasviret(images, seed=7, exclude=real_lists["train"])
    assert other["train"] == split["train"] and set(other["test"]) != sets["test"]
    assert set(other["val"]) | set(other["test"]) == sets["val"] | sets["test"]
    assert split["train"] == [x for x in images if x in sets["train"]]  # input order kept


def test_split_tasviret_small_cases():
    names = [f"{i}_x.jpg" for i in range(10)]
    split = split_tasviret(names, seed=0, sizes=(4, 2, 2), exclude=["0.jpg", "1.jpg", "2.jpg", "3.jpg"])
    assert {len(v) for v in split.values()} == {4, 2}
    assert not {"0_x.jpg", "1_x.jpg", "2_x.jpg", "3_x.jpg"} & set(split["val"] + split["test"])
    assert sum(len(v) for v in split.values()) == 8  # 2 images left over
    with pytest.raises(DataError, match="only 2 images are outside the excluded set, val\\+test need 4"):
        split_tasviret(names, seed=0, sizes=(4, 2, 2), exclude=[f"{i}.jpg" for i in range(8)])
    with pytest.raises(DataError, match="only 3 images are left for train"):
        split_tasviret(names[:7], seed=0, sizes=(4, 2, 2))
    with pytest.raises(DataError, match="listed more than once"):
        split_tasviret(["a.jpg", "a.jpg"], seed=0, sizes=(1, 0, 0))


def test_prepare_tasviret_fake_json(tmp_path):
    images = [_img(f"{i}_ab.jpg", "train", [f"resim {i} bir", f"resim {i} iki"]) for i in range(7)]
    js = tmp_path / "tasviret8k_captions.json"
    js.write_text(json.dumps({"images": images, "dataset": "tasviret"}, ensure_ascii=False), encoding="utf-8")
    counts = prepare_tasviret(js, tmp_path / "o", seed=3, exclude=["0.jpg", "1.jpg", "2.jpg"],
                              restrict_to=[f"{i}_ab.jpg" for i in range(6)], sizes=(3, 1, 1))
    assert counts == {"train": 3, "val": 1, "test": 1}
    train = lines(tmp_path / "o/image_splits/train.txt")
    evaluation = lines(tmp_path / "o/image_splits/val.txt") + lines(tmp_path / "o/image_splits/test.txt")
    assert set(evaluation) <= {"3_ab.jpg", "4_ab.jpg", "5_ab.jpg"} and "6_ab.jpg" not in train + evaluation
    assert lines(tmp_path / "o/train.2.tr") == [f"resim {n.split('_')[0]} iki" for n in train]
    assert not (tmp_path / "o/train.3.tr").exists()
    with pytest.raises(DataError, match="only 7 images are outside the excluded set, val\\+test need 1086"):
        prepare_tasviret(js, tmp_path / "o2", seed=3, exclude=[])  # the published sizes by default
    assert not (tmp_path / "o2").exists()


# --------------------------------------------------------------------------- VATEX


def _vatex(tmp_path, n=2, chinese=True) -> Path:
    data = []
    for v in range(n):
        item = {"videoID": f"vid{v}xxxxxx_000010_000020", "enCap": [f"en {v} cap {k} " for k in range(10)]}
        if chinese:
            item["chCap"] = [f"中文 {v} 第{k}" for k in range(10)]
        data.append(item)
    p = tmp_path / "vatex_validation_v1.0.json"
    p.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return p


def test_prepare_vatex_fake_json(tmp_path):
    js = _vatex(tmp_path)
    assert prepare_vatex(js, tmp_path / "o", "val", check_sizes=False) == {"videos": 2, "pairs": 10}
    assert lines(tmp_path / "o/val.en")[:5] == [f"en 0 cap {k}" for k in range(5, 10)]  # the last 5 captions
    assert lines(tmp_path / "o/val.zh")[5] == "中文 1 第5"
    assert lines(tmp_path / "o/val.id") == [f"vid{v}xxxxxx_000010_000020&{k}" for v in range(2) for k in range(5)]
    assert read_vatex_prepared(tmp_path / "o", "val")["id"][9] == "vid1xxxxxx_000010_000020&4"
    assert prepare_vatex(js, tmp_path / "k", "val", keep=["vid1xxxxxx_000010_000020"]) == {"videos": 1, "pairs": 5}
    with pytest.raises(DataError, match="official VATEX val split has 3000"):
        prepare_vatex(js, tmp_path / "x", "val")
    with pytest.raises(DataError, match="lacks videoID/enCap/chCap"):
        prepare_vatex(_vatex(tmp_path, chinese=False), tmp_path / "x", "val", check_sizes=False)
    assert not (tmp_path / "x").exists()


def test_vatex_prepared_real_mirror(tmp_path):
    folder = shared_dataset("vatex-val-parallel")
    data = read_vatex_prepared(folder, "val")
    assert len(data["en"]) == 14050 and len({x.rsplit("&", 1)[0] for x in data["id"]}) == 2810
    assert data["en"][0] == "a person is climbing down a snowy cliff with the help of a rope ."
    assert data["id"][:2] == ["G9zN5TTuGO4_000179_000189&0", "G9zN5TTuGO4_000179_000189&1"]
    assert prepare_vatex_prepared(folder, tmp_path / "o") == {"videos": 2810, "pairs": 14050}
    bad = tmp_path / "bad"
    bad.mkdir()
    for lang in ("en", "zh"):
        (bad / f"val.{lang}").write_text("a\nb\n", encoding="utf-8")
    (bad / "val.id").write_text("v&0\nv&2\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2 is 'v&2'; expected <videoID>&1"):
        read_vatex_prepared(bad, "val")


# --------------------------------------------------------------------------- checks


def test_check_corpus_real_multi30k():
    m = shared_dataset("multi30k") / "task1"
    n = check_corpus({"en": m / "raw/val.en.gz", "de": m / "raw/val.de.gz"}, image_list=m / "image_splits/val.txt",
                     corpus="multi30k", split="val")
    assert n == 1014 == KNOWN_SIZES["multi30k"]["val"]


def test_check_corpus_errors(tmp_path):
    a, b, img = tmp_path / "a.en", tmp_path / "a.de", tmp_path / "img.txt"
    a.write_text("x\ny\n", encoding="utf-8")
    b.write_text("x\n\n", encoding="utf-8")
    img.write_text("1.jpg\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2 is empty") as err:
        check_corpus({"en": a, "de": b})
    assert str(b) in str(err.value) and "fix:" in str(err.value)
    assert check_corpus({"en": a, "de": b}, allow_empty=True) == 2
    with pytest.raises(DataError, match="1 image names for 2 caption lines"):
        check_corpus({"en": a}, image_list=img)
    b.write_bytes(b"x\n\xff\n")
    with pytest.raises(DataError, match="line 2 is not valid UTF-8"):
        check_corpus({"en": a, "de": b})
    b.write_text("x\n", encoding="utf-8")
    with pytest.raises(DataError, match="different numbers of lines"):
        check_corpus({"en": a, "de": b})
    with pytest.raises(DataError, match="published size of tasviret test is 543"):
        check_corpus({"en": a}, corpus="tasviret", split="test")
    with pytest.raises(DataError, match="expected size is 3"):
        check_corpus({"en": a}, expected_lines=3)
    with pytest.raises(DataError, match="unknown corpus 'nope'"):
        check_corpus({"en": a}, corpus="nope", split="test")


def test_known_sizes_table():
    assert KNOWN_SIZES["multi30k"] == {"train": 29000, "val": 1014, "test_2016_flickr": 1000,
                                       "test_2017_flickr": 1000, "test_2017_mscoco": 461}
    assert known_size("iwslt14_de-en", "test") == 887 + 1165 + 1565 + 1433 + 1700 == 6750
    assert known_size("iwslt14_fr-en", "test") == 4493
    assert known_size("setimes2_en-tr", "valid") == known_size("newstest2016_en-tr", "test") + known_size(
        "newstest2017_en-tr", "test") == 6007
    assert known_size("coco_karpathy", "test") == 5000 and known_size("vatex", "val") == 15000
    assert sum(KNOWN_SIZES["tasviret"].values()) == 8000 and known_size("nope", "x") is None
    assert check_lines({"en": ["a"], "de": ["b"]}, image_list=["1.jpg"], expected_lines=1) == 1


# ----------------------------------------------------------------------------- stand-in inputs
# Each reader below runs on its input's stand-in (mmt_repro.standins) fetched from a stand-in
# mirror as rule fetch_input fetches the real file: official member names, folders and formats.


def test_wmt15_reads_the_three_standin_archives(standin, tmp_path):
    from mmt_repro.corpora.wmt import prepare_wmt15

    s = standin("wmt15_en_de")
    counts = prepare_wmt15(list(s["files"].values()), tmp_path / "train.en", tmp_path / "train.de")
    # europarl has one pair with an empty German side (dropped); the other pairs of each archive are ignored
    assert counts == {"europarl-v7.de-en": {"pairs": 24, "kept": 23}, "commoncrawl.de-en": {"pairs": 24, "kept": 24},
                      "news-commentary-v10.de-en": {"pairs": 24, "kept": 24}}
    assert len(read_lines(tmp_path / "train.en")) == len(read_lines(tmp_path / "train.de")) == 71
    with tarfile.open(s["files"]["training-parallel-nc-v10.tgz"]) as tar:
        assert "news-commentary-v10.de-en.de" in tar.getnames()  # at the top: no training/ folder in v10


@pytest.mark.parametrize("pair,sets", [("de-en", 5), ("fr-en", 4)])
def test_iwslt14_recipe_reads_the_standin_wit3_archive(standin, tmp_path, pair, sets):
    src, tgt = pair.split("-")
    s = standin(f"iwslt14_{src}_{tgt}")
    counts = prepare_iwslt14(s["files"][f"{pair}.tgz"], src, tgt, tmp_path, check_sizes=False)
    # 2 talks x 12 lines of train.tags (headers dropped, <speaker> etc. kept as fairseq does): 34 lines,
    # every 23rd to valid; each XML set has 6 <seg>s
    assert (counts["raw"], counts["train"], counts["valid"], counts["test"]) == (34, 33, 1, 6 * sets)
    test = read_lines(tmp_path / f"test.{src}")
    assert len(test) == 6 * sets and all(t == t.lower() and "<seg" not in t for t in test)


def test_iwslt14_prepared_reads_the_standin_folder(standin, tmp_path):
    s = standin("iwslt14_de_en_prepared")
    counts = prepare_iwslt14_prepared(s["resources"], "de", "en", tmp_path, check_sizes=False)
    assert counts == {"train": 6, "valid": 6, "test": 30}  # test = the five sets concatenated, checked
    with pytest.raises(DataError, match="expected size is 160239"):  # the published sizes stay the default
        prepare_iwslt14_prepared(s["resources"], "de", "en", tmp_path / "again")


def test_setimes_and_newstest_read_their_standins(standin, tmp_path):
    s = standin("setimes2_en_tr")
    assert prepare_setimes(s["files"]["en-tr.txt.zip"], tmp_path) == {"pairs": 30, "empty_dropped": 1, "kept": 29}
    plain = standin("wmt_newstest")["files"]
    sgm = standin("wmt_newstest_sgm")["files"]
    for archive, member, text in (("wmt18-dev.tgz", "newstest2017-entr-ref.tr.sgm", "newstest2017.en-tr.tr"),
                                  ("wmt18-test.tgz", "newstest2018-entr-src.en.sgm", "newstest2018.en-tr.en"),
                                  ("wmt19-test.tgz", "newstest2019-defr-src-ts.de.sgm", "newstest2019.de-fr.de")):
        extract_member(sgm[archive], member, tmp_path / member)
        assert read_sgm(tmp_path / member) == read_lines(plain[text])  # the SGML holds the plain-text sentences
    sources = {lang: [plain[f"newstest2016.en-tr.{lang}"], plain[f"newstest2017.en-tr.{lang}"]] for lang in ("en", "tr")}
    counts = prepare_newstest(sources, tmp_path, "valid")
    assert counts["en"] == counts["tr"] == 2 * SIZES["newstest"]


def test_karpathy_tasviret_and_flickr8k_read_their_standins(standin, tmp_path):
    k = standin("karpathy_splits")["files"]["caption_datasets.zip"]
    with zipfile.ZipFile(k) as zf:
        assert sorted(zf.namelist()) == ["dataset_coco.json", "dataset_flickr30k.json", "dataset_flickr8k.json"]
    extract_member(k, "dataset_coco.json", tmp_path / "coco.json")
    assert prepare_karpathy(tmp_path / "coco.json", tmp_path / "coco", check_sizes=False) == \
        {"train": 6, "val": 3, "test": 4}  # restval (2) merged into train (4)
    coco = json.loads((tmp_path / "coco.json").read_text(encoding="utf-8"))["images"][0]
    assert coco["filename"].startswith("COCO_train2014_") and coco["cocoid"] == int(coco["filename"][-16:-4])
    with pytest.raises(DataError, match="published size is 82783"):
        prepare_karpathy(tmp_path / "coco.json", tmp_path / "again")
    f8k = standin("flickr8k_text")["files"]
    tokens = read_flickr8k_tokens(f8k["Flickr8k.token.txt"])
    lists = [n for f in ("Flickr_8k.trainImages.txt", "Flickr_8k.devImages.txt", "Flickr_8k.testImages.txt")
             for n in read_lines(f8k[f])]
    assert list(tokens) == lists and {len(c) for c in tokens.values()} == {5}
    tas = standin("tasviret")["files"]["ff1082bf8f613d4a67e4c89a697288e6.zip"]
    extract_member(tas, "tasviret8k_captions.json", tmp_path / "tasviret.json")
    m30k_train = read_lines(standin("multi30k_task1")["files"]["image_splits/train.txt"])
    got = prepare_tasviret(tmp_path / "tasviret.json", tmp_path / "tr", 1, exclude=m30k_train, restrict_to=lists,
                           sizes=(16, 6, 6))
    assert got == {"train": 16, "val": 6, "test": 6}
    assert len(read_lines(tmp_path / "tr" / "test.2.tr")) == 6


def test_coco_captions_read_the_standin(standin, tmp_path):
    from mmt_repro.corpora.prepare import _coco_captions

    src = standin("coco_karpathy_test_captions")["files"]["testall_caps.txt"]
    assert _coco_captions(src, tmp_path, check_sizes=False) == {"images": 4, "captions": 20}
    assert read_lines(tmp_path / "test.2.en") == read_lines(src)[1::5]
    with pytest.raises(DataError, match="has 5,000"):
        _coco_captions(src, tmp_path)
