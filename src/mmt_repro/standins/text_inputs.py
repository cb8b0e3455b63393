"""Stand-ins of the text inputs: corpora, archives of corpora, caption JSONs, word vectors,
WordPiece vocabularies. Each ``write_<input>(ctx, folder)`` writes the files of one manifest
input under ``folder`` (the input's ``mirror_dir`` in the stand-in mirror), in the published
format and member layout, and returns ``{file name: {"lines": n}}`` for the text files whose
line count the manifest declares. What each format was checked against is in
:data:`mmt_repro.standins.CHECKED_AGAINST`.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from .common import WORDS, gz_bytes, head_lines, text_bytes, write, write_tar, write_zip
from .world import World

M30K = "multi30k/task1"


def write_multi30k_task1(w: World, folder: Path) -> dict:
    out = {}
    for split, names in w.m30k_images.items():
        for lang in w.m30k_langs(split):
            rel = f"raw/{split}.{lang}.gz"
            lines = w.texts.lines(lang, len(names), f"{M30K}/{rel}")
            write(folder / rel, gz_bytes(text_bytes(lines)))
            out[rel] = {"lines": len(lines)}
        write(folder / f"image_splits/{split}.txt", text_bytes(w.m30k_list(split)))
        out[f"image_splits/{split}.txt"] = {"lines": len(names)}
    return out


def write_multi30k_task1_tok(w: World, folder: Path) -> dict:
    out = {}
    for split in ("train", "val", "test_2016_flickr"):
        for lang in ("en", "de", "fr"):
            name = f"{split}.lc.norm.tok.{lang}"
            n = len(w.m30k_images[split])
            lines = w.texts.real(f"multi30k-extra/task1/tok/{name}", n)
            if lines is None:
                lines = [s.lower() for s in w.texts.lines(lang, n)]
            write(folder / name, text_bytes(lines))
            out[name] = {"lines": n}
    return out


def write_multi30k_task2(w: World, folder: Path) -> dict:
    out = {}
    for split, names in w.m30k2_images.items():
        if split == "test_2017":
            continue
        for k in range(1, 6):
            for lang in ("en", "de"):
                rel = f"raw/{split}.{k}.{lang}.gz"
                lines = w.texts.lines(lang, len(names), f"multi30k/task2/{rel}")
                write(folder / rel, gz_bytes(text_bytes(lines)))
                out[rel] = {"lines": len(names)}
    for split, names in w.m30k2_images.items():
        rel = f"image_splits/{split}_images.txt"
        write(folder / rel, text_bytes(names))
        out[rel] = {"lines": len(names)}
    return out


# ----------------------------------------------------------------------------- WMT'15 (Calixto et al.)
#: archive -> (member folder, [(member prefix, pair)]): the de-en files the reader takes, plus
#: the other pairs each official archive holds (written small, so the reader has to pick). All
#: three at the archive's top level, as GluonNLP's prepare_wmt.py member table gives them (nc-v9
#: and v12 have a training/ folder, v10 has none).
WMT15_MEMBERS = {
    "europarl-v7-de-en.tgz": ("", [("europarl-v7.de-en", "de-en")]),
    "training-parallel-commoncrawl.tgz": ("", [(f"commoncrawl.{p}", p)
                                               for p in ("cs-en", "de-en", "es-en", "fr-en", "ru-en")]),
    "training-parallel-nc-v10.tgz": ("", [(f"news-commentary-v10.{p}", p)
                                          for p in ("cs-en", "de-en", "fr-en", "ru-en")]),
}


def write_wmt15_en_de(w: World, folder: Path) -> dict:
    for archive, (top, pairs) in WMT15_MEMBERS.items():
        members = {}
        for prefix, pair in pairs:
            n = w.n["wmt15"] if pair == "de-en" else 3
            src, tgt = pair.split("-")
            for lang in (src, tgt):
                lines = w.texts.lines(lang if lang in WORDS else "en", n)
                if archive.startswith("europarl") and lang == "de":
                    lines[1] = ""  # Europarl has unaligned sentences: an empty side the reader drops
                members[f"{top}{prefix}.{lang}"] = text_bytes(lines)
            if archive.startswith("training-parallel-commoncrawl"):
                members[f"{top}{prefix}.annotation"] = text_bytes(f"http://example.org/{i}\t{i}" for i in range(n))
        write_tar(folder / archive, members, folders=[top] if top else [])
    return {}


# ----------------------------------------------------------------------------- IWSLT'14 (BertGen)
IWSLT_SETS = {"de-en": ("TED.dev2010", "TEDX.dev2012", "TED.tst2010", "TED.tst2011", "TED.tst2012"),
              "fr-en": ("TED.dev2010", "TED.tst2010", "TED.tst2011", "TED.tst2012")}


def _iwslt_train(w: World, pair: str, lang: str, talks: int, per_talk: int) -> list[str]:
    out = []
    for t in range(talks):
        out += [f"<url>http://www.ted.com/talks/talk_{pair}_{t}.html</url>",
                "<keywords>talks, culture, design</keywords>",
                f"<speaker>Speaker {t}</speaker>",
                f"<talkid>{100 + t}</talkid>",
                f"<title>Speaker {t}: Talk {t}</title>",
                f"<description>TED Talk Subtitles and Transcript: talk {t}</description>"]
        out += w.texts.lines(lang, per_talk)
        out += ["<reviewer></reviewer>", "<translator></translator>"]
    return out


def _iwslt_xml(w: World, name: str, pair: str, lang: str, segs: list[str]) -> list[str]:
    src, tgt = pair.split("-")
    kind = "srcset" if lang == src else "refset"
    langs = {"de": "german", "en": "english", "fr": "french"}
    head = f'<{kind} setid="iwslt2014-{name.split(".")[1]}" srclang="{langs[src]}"' + \
        ("" if kind == "srcset" else f' trglang="{langs[tgt]}"') + ">"
    body = ['<?xml version="1.0" encoding="UTF-8"?>', "<mteval>", head, '<doc docid="535" genre="lectures">',
            "<url>http://www.ted.com/talks/talk.html</url>",
            "<description>TED Talk Subtitles and Transcript</description>",
            "<keywords>talks</keywords>", "<talkid>535</talkid>", "<title>A talk</title>"]
    body += [f'<seg id="{i}"> {s} </seg>' for i, s in enumerate(segs, start=1)]
    return body + ["</doc>", f"</{kind}>", "</mteval>"]


def _write_iwslt(w: World, folder: Path, pair: str) -> None:
    src, tgt = pair.split("-")
    members = {}
    state = w.texts.rng.bit_generator.state
    for lang in (src, tgt):
        w.texts.rng.bit_generator.state = state  # both sides get sentences of the same lengths (parallel)
        members[f"{pair}/train.tags.{pair}.{lang}"] = text_bytes(_iwslt_train(w, pair, lang, 2, w.n["iwslt_talk"]))
    for name in IWSLT_SETS[pair]:
        for lang in (src, tgt):
            w.texts.rng.bit_generator.state = state
            segs = w.texts.lines(lang, w.n["iwslt_set"])
            members[f"{pair}/IWSLT14.{name}.{pair}.{lang}.xml"] = text_bytes(_iwslt_xml(w, name, pair, lang, segs))
    members[f"{pair}/README"] = text_bytes(["IWSLT 2014 evaluation campaign, MT track (stand-in)"])
    write_tar(folder / f"{pair}.tgz", members, folders=[f"{pair}/"])


def write_iwslt14_de_en(w: World, folder: Path) -> dict:
    _write_iwslt(w, folder, "de-en")
    return {}


def write_iwslt14_fr_en(w: World, folder: Path) -> dict:
    _write_iwslt(w, folder, "fr-en")
    return {}


def write_iwslt14_de_en_prepared(w: World, folder: Path) -> dict:
    out = {}
    n = w.n["iwslt_set"]
    sets = {"TED.dev2010": 0, "TEDX.dev2012": 887, "TED.tst2010": 887 + 1165, "TED.tst2011": 887 + 1165 + 1565,
            "TED.tst2012": 887 + 1165 + 1565 + 1433}
    for lang in ("de", "en"):
        test = []
        for name, skip in sets.items():
            lines = w.texts.real(f"iwslt14-de-en/test.{lang}", n, skip) or [s.lower() for s in w.texts.lines(lang, n)]
            write(folder / f"IWSLT14.{name}.de-en.{lang}", text_bytes(lines))
            out[f"IWSLT14.{name}.de-en.{lang}"] = {"lines": n}
            test += lines
        write(folder / f"test.{lang}", text_bytes(test))
        out[f"test.{lang}"] = {"lines": len(test)}
        for split in ("valid", "train"):
            lines = w.texts.real(f"iwslt14-de-en/valid.{lang}", n, 0 if split == "valid" else n) or \
                [s.lower() for s in w.texts.lines(lang, n)]
            write(folder / f"{split}.{lang}", text_bytes(lines))
            out[f"{split}.{lang}"] = {"lines": n}
    return out


# ----------------------------------------------------------------------------- news test, SETIMES2
NEWSTEST = {"newstest2016": "en-tr", "newstest2017": "en-tr", "newstest2018": "en-tr", "newstest2019": "de-fr"}


def newstest_lines(w: World, test_set: str, lang: str) -> list[str]:
    pair = NEWSTEST[test_set]
    return w.shared_lines(f"{test_set}.{lang}", lang, w.n["newstest"], f"wmt-newstest/{test_set}.{pair}.{lang}")


def write_wmt_newstest(w: World, folder: Path) -> dict:
    out = {}
    for test_set, pair in NEWSTEST.items():
        for lang in pair.split("-"):
            name = f"{test_set}.{pair}.{lang}"
            write(folder / name, text_bytes(newstest_lines(w, test_set, lang)))
            out[name] = {"lines": w.n["newstest"]}
    return out


def sgm_lines(kind: str, test_set: str, src: str, tgt: str, lang: str, segs: list[str], docid: str) -> list[str]:
    """WMT SGML: ``<srcset>``/``<refset>``, one ``<doc>`` with ``<p>`` and numbered ``<seg>``s
    (the layout of ../shared/datasets/wmt-newstest/newstest2019-defr-src-ts.de.sgm)."""
    import html

    head = f'<srcset setid="{test_set}" srclang="any">' if kind == "src" else \
        f'<refset setid="{test_set}" srclang="any" trglang="{lang}">'
    out = [head, f'<doc sysid="ref" docid="{docid}" genre="news" origlang="{src}">', "<p>"]
    out += [f'<seg id="{i}">{html.escape(s, quote=False)}</seg>' for i, s in enumerate(segs, start=1)]
    return out + ["</p>", "</doc>", f"</{kind}set>"]


def write_wmt_newstest_sgm(w: World, folder: Path) -> dict:
    archives = {"wmt18-dev.tgz": ("dev", ("newstest2016", "newstest2017"), ""),
                "wmt18-test.tgz": ("test", ("newstest2018",), ""),
                "wmt19-test.tgz": ("sgm", ("newstest2019",), "-ts")}
    for archive, (top, sets, ts) in archives.items():
        members = {}
        for test_set in sets:
            a, b = NEWSTEST[test_set].split("-")
            for src, tgt in ((a, b), (b, a)) if ts == "" else ((a, b),):
                code = f"{src}{tgt}"
                members[f"{top}/{test_set}-{code}-src{ts}.{src}.sgm"] = text_bytes(
                    sgm_lines("src", test_set, src, tgt, src, newstest_lines(w, test_set, src), "doc1"))
                members[f"{top}/{test_set}-{code}-ref{ts}.{tgt}.sgm"] = text_bytes(
                    sgm_lines("ref", test_set, src, tgt, tgt, newstest_lines(w, test_set, tgt), "doc1"))
        write_tar(folder / archive, members, folders=[f"{top}/"])
    return {}


def write_setimes2_en_tr(w: World, folder: Path) -> dict:
    n = w.n["setimes"]
    en = w.texts.lines("en", n, "wmt-newstest/newstest2016.en-tr.en", skip=w.n["newstest"])
    tr = w.texts.lines("tr", n, "wmt-newstest/newstest2016.en-tr.tr", skip=w.n["newstest"])
    en[2] = ""  # OPUS moses files have pairs with an empty side; the reader drops them
    members = {"README": text_bytes(["This is the SETIMES2 corpus from OPUS (stand-in)."]),
               "LICENSE": text_bytes(["CC-BY-SA (stand-in copy of the notice)"]),
               "SETIMES.en-tr.en": text_bytes(en), "SETIMES.en-tr.tr": text_bytes(tr)}
    write_zip(folder / "en-tr.txt.zip", members)
    return {}


# ----------------------------------------------------------------------------- captions
def _sentence(raw: str, imgid: int, sentid: int) -> dict:
    return {"tokens": raw.lower().rstrip(" .").split(), "raw": raw, "imgid": imgid, "sentid": sentid}


def karpathy_json(dataset: str, images: list[tuple[str, str, str | None]], captions: list[list[str]]) -> dict:
    """``{"images": [...], "dataset": ...}`` as in Karpathy's ``dataset_*.json``: per image
    (``filepath`` and ``cocoid`` for COCO only) ``sentids``, ``filename``, ``imgid``, ``split``,
    ``sentences`` (``tokens``, ``raw``, ``imgid``, ``sentid``)."""
    out, sentid = [], 0
    for imgid, ((filename, split, filepath), caps) in enumerate(zip(images, captions)):
        sents = [_sentence(c, imgid, sentid + k) for k, c in enumerate(caps)]
        img = {"filepath": filepath} if filepath else {}
        img.update({"sentids": [s["sentid"] for s in sents], "filename": filename, "imgid": imgid, "split": split,
                    "sentences": sents})
        if dataset == "coco":
            img["cocoid"] = int(filename.rsplit("_", 1)[1].split(".")[0])
        out.append(img)
        sentid += len(sents)
    return {"images": out, "dataset": dataset}


def _caps(w: World, n_images: int, per: int, lang: str = "en", rel: str | None = None) -> list[list[str]]:
    flat = w.texts.lines(lang, n_images * per, rel)
    return [flat[i * per:(i + 1) * per] for i in range(n_images)]


def write_karpathy_splits(w: World, folder: Path) -> dict:
    coco = [(n, s, n.split("_")[1]) for n, s in w.coco_karpathy]
    f30k = [(n, s, None) for n, s in w.f30k_karpathy]
    f8k = [(n, s, None) for n, s in w.f8k_karpathy]
    rel = "coco-karpathy-test-captions/testall_caps.txt"
    docs = {"dataset_coco.json": karpathy_json("coco", coco, _caps(w, len(coco), 5, rel=rel)),
            "dataset_flickr30k.json": karpathy_json("flickr30k", f30k, _caps(w, len(f30k), 5)),
            "dataset_flickr8k.json": karpathy_json("flickr8k", f8k, _caps(w, len(f8k), 5))}
    write_zip(folder / "caption_datasets.zip", {name: json.dumps(doc).encode("utf-8") for name, doc in docs.items()})
    return {}


def write_coco_karpathy_test_captions(w: World, folder: Path) -> dict:
    n = len([1 for _, s in w.coco_karpathy if s == "test"]) * 5
    lines = w.texts.lines("en", n, "coco-karpathy-test-captions/testall_caps.txt")
    write(folder / "testall_caps.txt", text_bytes(lines))
    return {"testall_caps.txt": {"lines": n}}


def write_flickr8k_text(w: World, folder: Path) -> dict:
    out = {}
    lists = {"Flickr_8k.trainImages.txt": "train", "Flickr_8k.devImages.txt": "dev", "Flickr_8k.testImages.txt": "test"}
    for name, split in lists.items():
        write(folder / name, text_bytes(w.f8k[split]))
        out[name] = {"lines": len(w.f8k[split])}
    tokens = []
    for img in w.f8k_all:
        caps = w.f8k_captions.get(img) or w.texts.lines("en", 5)
        tokens += [f"{img}#{k}\t{c}" for k, c in enumerate(caps)]
    write(folder / "Flickr8k.token.txt", text_bytes(tokens))
    out["Flickr8k.token.txt"] = {"lines": len(tokens)}
    return out


def write_tasviret(w: World, folder: Path) -> dict:
    images = [(n, "train", None) for n in w.f8k_all]
    doc = karpathy_json("tasviret8k", images, _caps(w, len(images), 2, lang="tr"))
    write_zip(folder / "ff1082bf8f613d4a67e4c89a697288e6.zip",
              {"tasviret8k_captions.json": json.dumps(doc, ensure_ascii=False).encode("utf-8")})
    return {}


# ----------------------------------------------------------------------------- VATEX (DeepFuse)
def write_vatex(w: World, folder: Path) -> dict:
    for split, name in (("train", "vatex_training_v1.0.json"), ("val", "vatex_validation_v1.0.json")):
        videos = w.vatex[split]
        items = []
        for i, vid in enumerate(videos):
            en = w.texts.lines("en", 5)
            zh = [w.texts.sentence("zh") for _ in range(5)]
            if split == "val":
                pen = w.texts.real("vatex-val-parallel/val.en", 5, 5 * i)
                pzh = w.texts.real("vatex-val-parallel/val.zh", 5, 5 * i)
                pen = [s.strip().capitalize() for s in pen] if pen else w.texts.lines("en", 5)
                pzh = [s.replace(" ", "") for s in pzh] if pzh else [w.texts.sentence("zh") for _ in range(5)]
            else:
                pen, pzh = w.texts.lines("en", 5), [w.texts.sentence("zh") for _ in range(5)]
            items.append({"videoID": vid, "enCap": en + pen, "chCap": zh + pzh})
        write(folder / name, json.dumps(items, ensure_ascii=False).encode("utf-8"))
    return {}


def write_vatex_val_prepared(w: World, folder: Path) -> dict:
    videos = w.vatex["val"]
    n = 5 * len(videos)
    ids = [f"{v}&{k}" for v in videos for k in range(5)]
    en = w.texts.real("vatex-val-parallel/val.en", n) or [" " + s.lower() for s in w.texts.lines("en", n)]
    zh = w.texts.real("vatex-val-parallel/val.zh", n) or [" " + " ".join(w.texts.sentence("zh")) for _ in range(n)]
    out = {}
    for name, lines in (("val.en", en), ("val.zh", zh), ("val.id", ids)):
        write(folder / name, text_bytes(lines))
        out[name] = {"lines": n}
    return out


# ----------------------------------------------------------------------------- vectors, vocabularies
def write_fasttext_cc(w: World, folder: Path) -> dict:
    """``cc.<lang>.300.vec.gz``: a ``<count> <dim>`` header, then ``word v1 .. v300`` with four
    decimals, as fastText's published files; the words are those of the stand-in corpora."""
    for lang in ("en", "fr", "de"):
        words = w.words(lang)
        vecs = w.rng.standard_normal((len(words), 300)).astype(np.float32) * 0.05
        lines = [f"{len(words)} 300"] + [w_ + " " + " ".join(f"{v:.4f}" for v in row) for w_, row in zip(words, vecs)]
        write(folder / f"cc.{lang}.300.vec.gz", gz_bytes(text_bytes(lines)))
    return {}


def _vocab(w: World, bertgen: bool) -> list[str]:
    head = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]", "<S>", "<T>"]
    if bertgen:  # BertGen renames [unused1-20]: [STOP] and the task tokens (ids of tests/models/test_bertgen.py)
        for i, tok in {1: "[STOP]", 16: "[TO_EN]", 17: "[TO_DE]", 18: "[TO_FR]", 19: "[TO_CS]", 20: "[TO_TU]"}.items():
            head[i] = tok
    body = list(dict.fromkeys(list("!\"#$%&'()*+,-./0123456789:;<=>?@") +
                              [x for lang in ("en", "de", "fr", "tr", "cs") for x in w.words(lang)] +
                              [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyzäöüßçğıöşé"] +
                              list("abcdefghijklmnopqrstuvwxyz")))
    vocab = head + [t for t in body if t not in head]
    if w.real_shapes:
        vocab += [f"##stand{i}" for i in range(w.wordpieces - len(vocab))]
    return vocab


def write_bertgen_vocab(w: World, folder: Path) -> dict:
    vocab = _vocab(w, bertgen=True)
    write(folder / "vocab.txt", text_bytes(vocab))
    return {"vocab.txt": {"lines": len(vocab)}}


def write_mbert_vocab(w: World, folder: Path) -> dict:
    vocab = _vocab(w, bertgen=False)
    write(folder / "vocab.txt", text_bytes(vocab))
    return {"vocab.txt": {"lines": len(vocab)}}


# ----------------------------------------------------------------------------- CoMMuTE (Futeral et al.)
def commute_splits(w: World) -> dict[str, dict[str, list[str]]]:
    """CoMMuTE's lines per split (``src``, ``correct``, ``incorrect``, ``images``) at the release's
    line counts: the local copy's when there is one, else seeded pairs of lines (one source twice,
    the two translations swapped, an image name of 8 hex digits per line). A function of the seed
    and the copy alone, so the text and the image stand-ins name the same images."""
    from ..corpora.commute import SPLITS
    from .common import Texts

    out = {}
    for split, (lang, n) in SPLITS.items():
        names = {"src": "src.en", "correct": f"correct.{lang}", "incorrect": f"incorrect.{lang}",
                 "images": "img.order"}
        texts = Texts(w.seed, w.texts.shared)
        got = {k: texts.real(f"commute/{split}/{f}", n) for k, f in names.items()}
        if any(v is None for v in got.values()):
            texts.rng = np.random.default_rng([w.seed, zlib.crc32(f"commute/{split}".encode("utf-8"))])
            got = {k: [] for k in names}
            for _ in range(n // 2):
                src, a, b = texts.sentence("en"), texts.sentence(lang), texts.sentence(lang)
                got["src"] += [src, src]
                got["correct"] += [a, b]
                got["incorrect"] += [b, a]
                got["images"] += [f"{texts.hex_id(8)}.jpeg", f"{texts.hex_id(8)}.jpeg"]
        out[split] = {"files": names, **got}
    return out


def write_commute(w: World, folder: Path) -> dict:
    """``<split>/{src.en, correct.<lang>, incorrect.<lang>, img.order}`` as the release lays them
    out: no final newline but in en-fr_dev."""
    out = {}
    for split, data in commute_splits(w).items():
        for key, name in data["files"].items():
            lines = data[key]
            body = "\n".join(lines) + ("\n" if split == "en-fr_dev" else "")
            write(folder / split / name, body.encode("utf-8"))
            out[f"{split}/{name}"] = {"lines": len(lines)}
    return out


# ----------------------------------------------------------------------------- Meteor 1.5
#: Meteor's language codes of the release's paraphrase tables -> the stand-in words they pair.
METEOR_TABLES = {"cz": "cs", "de": "de", "en": "en", "es": "en", "fr": "fr", "ru": "en"}
#: Entries of the real English table at the head of its stand-in.
METEOR_REAL_ENTRIES = 100


def _paraphrase_entries(w: World, lang: str, n: int = 40) -> list[str]:
    """``n`` entries of Meteor's paraphrase format: three lines each, a probability, a phrase and
    its paraphrase (whitespace tokens), pairing words of the stand-in text of ``lang``."""
    words = [x for x in w.words(lang) if x.isalpha()]
    lines = []
    for i in range(min(n, len(words) - 1)):
        phrase = words[i] if i % 3 else f"{words[i]} {words[i + 1]}"  # every third a two-word phrase
        j = int(w.rng.integers(0, len(words)))
        para = words[j] if words[j] != phrase else words[(j + 1) % len(words)]
        lines += [f"{w.rng.uniform(0.01, 0.5):.6f}", phrase, para]
    return lines


def write_meteor(w: World, folder: Path) -> dict:
    """``meteor-1.5.tar.gz``: ``meteor-1.5/meteor-1.5.jar`` and ``meteor-1.5/data/paraphrase-<code>.gz``
    as the release lays them out. The jar is the program itself, pycocoevalcap's copy of
    ``meteor-1.5.jar``; the tables are cut: English starts with the first
    :data:`METEOR_REAL_ENTRIES` entries of the real ``paraphrase-en.gz`` (the copy pycocoevalcap
    ships, byte-identical to cmu-mtlab/meteor's), then every table pairs words of the stand-in
    text (:data:`METEOR_TABLES`; Spanish and Russian, which no paper scores, pair English ones)."""
    from ..io import DataError
    from ..metrics.meteor import bundled_jar, paraphrase_file

    jar = bundled_jar()
    if jar is None or not paraphrase_file(jar, "en").is_file():
        raise DataError(None, "the Meteor stand-in copies pycocoevalcap's meteor-1.5.jar and paraphrase-en.gz, "
                        "and pycocoevalcap is not installed", "pip install pycocoevalcap==1.2 (make venv)")
    members = {"meteor-1.5/meteor-1.5.jar": jar.read_bytes()}
    real_en = head_lines(paraphrase_file(jar, "en"), 3 * METEOR_REAL_ENTRIES)
    for code, lang in METEOR_TABLES.items():
        lines = (real_en if code == "en" else []) + _paraphrase_entries(w, lang)
        members[f"meteor-1.5/data/paraphrase-{code}.gz"] = gz_bytes(text_bytes(lines))
    write_tar(folder / "meteor-1.5.tar.gz", members, folders=["meteor-1.5/", "meteor-1.5/data/"])
    return {}
