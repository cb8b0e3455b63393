"""IWSLT'14 De-En and Fr-En, prepared exactly as fairseq's ``examples/translation/prepare-iwslt14.sh``.

Used by BertGen (Mitzalis et al. 2021, section 2.2.3), which "takes the prepare-iwslt14 recipe
from Fairseq" for De<->En and Fr<->En. Input: the WIT3 archive ``{src}-{tgt}.tgz`` (e.g.
``https://wit3.fbk.eu/archive/2014-01/texts/de/en/de-en.tgz``) whose members are::

    de-en/train.tags.de-en.{de,en}                        # training text with XML-ish headers
    de-en/IWSLT14.TED.{dev2010,tst2010,tst2011,tst2012}.de-en.{de,en}.xml
    de-en/IWSLT14.TEDX.dev2012.de-en.{de,en}.xml          # de-en only
    de-en/README, de-en/train.en                          # not used

Members are found by base name, so the top folder does not matter. The recipe, step by step
(perl scripts of Moses; we use sacremoses through :mod:`mmt_repro.text.moses`):

train
    1. drop every line *containing* ``<url>``, ``<talkid>`` or ``<keywords>``; delete the tags
       ``<title>``, ``</title>``, ``<description>``, ``</description>`` (their text stays). Other
       header lines (``<speaker>``, ``<reviewer>``, ``<translator>``) are *kept*, as in fairseq;
    2. ``tokenizer.perl -l L`` (XML escaping on, no aggressive hyphen splitting, no
       punctuation normalisation, original case);
    3. ``clean-corpus-n.perl -ratio 1.5 ... 1 175``: collapse whitespace, drop a pair if either
       side is empty, has more than 175 or fewer than 1 tokens, or if one side has more than
       1.5 times the tokens of the other (:func:`clean_corpus`);
    4. ``lowercase.perl`` (Perl ``lc``: no Greek final-sigma rule, see :func:`perl_lc`);
    5. ``valid`` = lines 23, 46, ... of the result (``awk 'NR%23==0'``), ``train`` = the rest.

valid/test XML
    keep lines containing ``<seg id``; remove ``<seg id="N">`` plus following whitespace and
    ``</seg>`` with surrounding whitespace; map U+2019 to ``'``; tokenise; lowercase. XML
    entities are *not* unescaped (the script does not either). ``test`` concatenates, in the
    script's order, dev2010, TEDX.dev2012 (de-en only), tst2010, tst2011, tst2012: this order
    was checked line by line against ``../shared/datasets/iwslt14-de-en/test.{de,en}``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from .archives import read_text_members
from .checks import KNOWN_SIZES, check_lines
from ..io import DataError, read_lines, write_lines
from ..text.moses import preprocess_lines

log = logging.getLogger(__name__)

#: Test sets concatenated into ``test`` per pair, in fairseq's order (``cat`` in the script).
IWSLT14_TEST_SETS: dict[str, tuple[str, ...]] = {
    "de-en": ("TED.dev2010", "TEDX.dev2012", "TED.tst2010", "TED.tst2011", "TED.tst2012"),
    "fr-en": ("TED.dev2010", "TED.tst2010", "TED.tst2011", "TED.tst2012"),
}
CLEAN_RATIO = 1.5
CLEAN_MIN, CLEAN_MAX = 1, 175
VALID_EVERY = 23

_DROP = ("<url>", "<talkid>", "<keywords>")
_STRIP_TAGS = ("<title>", "</title>", "<description>", "</description>")
_SEG_OPEN = re.compile(r'<seg id="[0-9]*">[ \t\n\r\f\v]*')
_SEG_CLOSE = re.compile(r"[ \t\n\r\f\v]*</seg>[ \t\n\r\f\v]*")
_WS = re.compile(r"\s+")


def perl_lc(line: str) -> str:
    """Lowercase like Perl's ``lc`` (``lowercase.perl``): Python's ``str.lower`` except that a
    final capital sigma becomes ``σ``, not ``ς`` (Perl has no final-sigma context rule)."""
    if "Σ" not in line:
        return line.lower()
    return "".join(ch.lower() for ch in line)


def _word_count(line: str) -> int:
    return len(line.split(" ")) if line else 0


def clean_corpus(
    src: Sequence[str],
    tgt: Sequence[str],
    ratio: float = CLEAN_RATIO,
    min_len: int = CLEAN_MIN,
    max_len: int = CLEAN_MAX,
    max_word_length: int = 1000,
) -> tuple[list[str], list[str]]:
    """``clean-corpus-n.perl -ratio R corpus src tgt out MIN MAX`` on two lists of lines.

    As the perl script: unless the first pair contains ``|`` (factored corpus) every ``|`` is
    deleted; whitespace runs become one space and both ends are trimmed; a pair is dropped if
    a side is empty, a side has more than ``max_len`` or fewer than ``min_len`` space-separated
    tokens, either token-count ratio exceeds ``ratio``, or a token is longer than
    ``max_word_length`` characters. Kept pairs are returned with the whitespace cleaned.
    """
    if len(src) != len(tgt):
        raise ValueError(f"clean_corpus: {len(src)} source lines but {len(tgt)} target lines")
    factored = bool(src) and ("|" in src[0] or "|" in tgt[0])
    too_long = re.compile(r"[^\s|]{%d}" % (max_word_length + 1))
    out_src: list[str] = []
    out_tgt: list[str] = []
    for f, e in zip(src, tgt):
        if not factored:
            f, e = f.replace("|", ""), e.replace("|", "")
        f = _WS.sub(" ", f).strip(" ")
        e = _WS.sub(" ", e).strip(" ")
        if not f or not e:
            continue
        fc, ec = _word_count(f), _word_count(e)
        if fc > max_len or ec > max_len or fc < min_len or ec < min_len:
            continue
        if ec / fc > ratio or fc / ec > ratio:
            continue
        if too_long.search(e) or too_long.search(f):
            continue
        out_src.append(f)
        out_tgt.append(e)
    return out_src, out_tgt


def filter_train_tags(lines: Iterable[str]) -> list[str]:
    """Step 1 of the train recipe: the ``grep -v`` / ``sed`` header filter (module docstring)."""
    out = []
    for line in lines:
        if any(tag in line for tag in _DROP):
            continue
        for tag in _STRIP_TAGS:
            line = line.replace(tag, "")
        out.append(line)
    return out


def extract_segs(lines: Iterable[str]) -> list[str]:
    """The ``grep '<seg id' | sed ...`` step for the IWSLT XML files (module docstring)."""
    out = []
    for line in lines:
        if "<seg id" not in line:
            continue
        line = _SEG_OPEN.sub("", line)
        line = _SEG_CLOSE.sub("", line)
        out.append(line.replace("\u2019", "'"))
    return out


def _tok_lc(lines: Sequence[str], lang: str) -> list[str]:
    # tokenizer.perl passes a blank line through unchanged; the cleaner / later steps trim it
    return [perl_lc(t) for t in preprocess_lines(lines, lang, lowercase=False, normalize=False, tokenize=True)]


def _pair(src: str, tgt: str) -> str:
    pair = f"{src}-{tgt}"
    if pair not in IWSLT14_TEST_SETS:
        raise DataError(None, f"no IWSLT'14 recipe for pair {pair!r}; known pairs: {', '.join(IWSLT14_TEST_SETS)}",
                        "use src/tgt as in the archive name (de-en.tgz: src=de, tgt=en)")
    return pair


def _check_known(source, corpus: str, counts: dict[str, int], strict: Sequence[str]) -> None:
    for split, n in counts.items():
        want = KNOWN_SIZES.get(corpus, {}).get(split)
        if want is None or n == want:
            continue
        if split in strict:
            raise DataError(source, f"{split} has {n} lines, but the published size for {corpus} is {want}",
                            "the archive is not the official IWSLT'14 release or is incomplete; fetch it again "
                            "(or pass check_sizes=False for a deliberate subset)")
        log.warning("%s: %s has %d lines, fairseq's recipe gives %d (tokeniser differences?)", source, split, n, want)


def prepare_iwslt14(
    archive: str | os.PathLike,
    src: str,
    tgt: str,
    out_dir: str | os.PathLike,
    check_sizes: bool = True,
) -> dict[str, int]:
    """Run fairseq's ``prepare-iwslt14.sh`` (without BPE) on the WIT3 archive ``{src}-{tgt}.tgz``.

    Writes ``out_dir/{train,valid,test}.{src,tgt}`` (tokenised, lowercased) atomically and
    returns line counts: ``raw`` (train.tags lines after the header filter), ``clean``,
    ``train``, ``valid``, ``test`` and one entry per test set. With ``check_sizes`` the test
    size must equal :data:`~mmt_repro.corpora.checks.KNOWN_SIZES` (6750 de-en, 4493 fr-en); a
    train/valid size that differs from fairseq's (160239/7283 de-en) is logged as a warning,
    since it depends on the tokeniser matching tokenizer.perl exactly.
    """
    archive = Path(archive)
    pair = _pair(src, tgt)
    if not archive.is_file():
        raise DataError(archive, "archive does not exist", f"download {pair}.tgz from wit3.fbk.eu/archive/2014-01/texts/")
    train_names = [f"train.tags.{pair}.{lang}" for lang in (src, tgt)]
    xml_names = {(name, lang): f"IWSLT14.{name}.{pair}.{lang}.xml" for name in IWSLT14_TEST_SETS[pair] for lang in (src, tgt)}
    text = read_text_members(archive, [*train_names, *xml_names.values()],
                             "fetch the official IWSLT'14 archive again (wit3.fbk.eu/archive/2014-01/texts/)")
    train_raw = {lang: text[name] for lang, name in zip((src, tgt), train_names)}
    xml = {key: text[name] for key, name in xml_names.items()}

    # train: filter headers, tokenise, clean, lowercase, split off every 23rd line
    filtered = {lang: filter_train_tags(lines) for lang, lines in train_raw.items()}
    if len(filtered[src]) != len(filtered[tgt]):
        raise DataError(archive, f"train.tags.{pair}.{src} and .{tgt} differ in length after the header filter "
                        f"({len(filtered[src])} vs {len(filtered[tgt])})", "fetch the archive again")
    tok = {lang: preprocess_lines(lines, lang, normalize=False) for lang, lines in filtered.items()}
    clean_src, clean_tgt = clean_corpus(tok[src], tok[tgt])
    clean = {src: [perl_lc(x) for x in clean_src], tgt: [perl_lc(x) for x in clean_tgt]}
    valid = {lang: lines[VALID_EVERY - 1 :: VALID_EVERY] for lang, lines in clean.items()}
    train = {lang: [x for i, x in enumerate(lines, start=1) if i % VALID_EVERY] for lang, lines in clean.items()}

    # valid/test sets from the XML
    sets = {key: _tok_lc(extract_segs(lines), key[1]) for key, lines in xml.items()}
    counts: dict[str, int] = {"raw": len(filtered[src]), "clean": len(clean[src])}
    for name in IWSLT14_TEST_SETS[pair]:
        counts[name] = check_lines({lang: sets[(name, lang)] for lang in (src, tgt)},
                                   source=f"{archive}:IWSLT14.{name}.{pair}.*.xml", allow_empty=True)
    test = {lang: [x for name in IWSLT14_TEST_SETS[pair] for x in sets[(name, lang)]] for lang in (src, tgt)}

    for split, data in (("train", train), ("valid", valid), ("test", test)):
        counts[split] = check_lines(data, source=archive, allow_empty=split == "test")
    if check_sizes:
        _check_known(archive, f"iwslt14_{pair}", {s: counts[s] for s in ("train", "valid", "test")}, strict=("test",))
    out_dir = Path(out_dir)
    for split, data in (("train", train), ("valid", valid), ("test", test)):
        for lang in (src, tgt):
            write_lines(out_dir / f"{split}.{lang}", data[lang])
    return counts


def prepare_iwslt14_prepared(
    folder: str | os.PathLike,
    src: str,
    tgt: str,
    out_dir: str | os.PathLike,
    splits: Sequence[str] | None = None,
    check_sizes: bool = True,
) -> dict[str, int]:
    """Copy and check the output of fairseq's script (its ``tmp/`` folder: ``{split}.{lang}``).

    For a folder like ``../shared/datasets/iwslt14-de-en`` (valid and test only, no train).
    ``splits=None`` takes whichever of train/valid/test exist (at least one must); a list
    makes those splits required. Each split must be parallel, without empty lines except in
    test, and (with ``check_sizes``) of the published size (:data:`~mmt_repro.corpora.checks.KNOWN_SIZES`); when the
    individual test sets (``IWSLT14.TED.dev2010.de-en.de`` ...) are in the folder too, ``test``
    must be exactly their concatenation in fairseq's order. Writes ``out_dir/{split}.{lang}``
    atomically; returns ``{split: lines}``.
    """
    folder = Path(folder)
    pair = _pair(src, tgt)
    if not folder.is_dir():
        raise DataError(folder, "folder does not exist", "point it at the output of fairseq's prepare-iwslt14.sh")
    wanted = list(splits) if splits is not None else [s for s in ("train", "valid", "test")
                                                      if (folder / f"{s}.{src}").exists() or (folder / f"{s}.{tgt}").exists()]
    if not wanted:
        raise DataError(folder, f"no {{train,valid,test}}.{{{src},{tgt}}} files found",
                        "point it at the folder holding fairseq's prepared splits")
    corpus = f"iwslt14_{pair}"
    lines: dict[str, dict[str, list[str]]] = {}
    counts: dict[str, int] = {}
    for split in wanted:
        for lang in (src, tgt):
            if not (folder / f"{split}.{lang}").is_file():
                raise DataError(folder / f"{split}.{lang}", "prepared split file is missing",
                                "copy it from the fairseq output, or leave this split out")
        data = {lang: read_lines(folder / f"{split}.{lang}") for lang in (src, tgt)}
        counts[split] = check_lines(data, source=folder / f"{split}.{src}", allow_empty=split == "test",
                                    expected_lines=KNOWN_SIZES.get(corpus, {}).get(split) if check_sizes else None)
        lines[split] = data
    if "test" in lines:
        parts = {lang: [folder / f"IWSLT14.{name}.{pair}.{lang}" for name in IWSLT14_TEST_SETS[pair]] for lang in (src, tgt)}
        for lang, paths in parts.items():
            if all(p.is_file() for p in paths):
                joined = [x for p in paths for x in read_lines(p)]
                if joined != lines["test"][lang]:
                    first = next((i for i, (a, b) in enumerate(zip(joined, lines["test"][lang]), 1) if a != b),
                                 min(len(joined), len(lines["test"][lang])) + 1)
                    raise DataError(folder / f"test.{lang}",
                                    f"differs from the concatenation {' + '.join(p.name for p in paths)} at line {first}",
                                    "re-create test by concatenating the sets in fairseq's order")
    out_dir = Path(out_dir)
    for split, data in lines.items():
        for lang in (src, tgt):
            write_lines(out_dir / f"{split}.{lang}", data[lang])
    return counts

