"""WMT news test sets (SGML or plain text) and the SETIMES2 En-Tr training corpus (OPUS).

Used by BertGen (Mitzalis et al. 2021): SETIMES2 En<->Tr is trained on the OPUS SETIMES2
corpus, with dev = newstest2016 + newstest2017 (3000 + 3007 = 6,007 sentences) and test =
newstest2018 (3000; the paper's "6,000" counts both directions); the zero-shot De<->Fr test
is the WMT19 newstest2019 ("euelections", 1,701 sentences).

* SGML (``newstest2018-entr-src.en.sgm``, ``newstest2019-defr-src-ts.de.sgm`` ...): text of
  every ``<seg id="N">...</seg>`` in file order (:func:`read_sgm`).
* Plain text (``newstest2018.en-tr.en`` as sacrebleu or OPUS-MT-testsets give it): one
  sentence per line.
* OPUS "moses" zip (``en-tr.txt.zip`` from ``opus.nlpl.eu/download.php?f=SETIMES/v2/moses/en-tr.txt.zip``)
  with members ``SETIMES.en-tr.en`` and ``SETIMES.en-tr.tr`` (plus README/LICENSE, unused).
"""

from __future__ import annotations

import html
import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from .archives import read_text_members
from .checks import check_lines
from ..io import DataError, read_lines, write_lines

log = logging.getLogger(__name__)

_SEG = re.compile(r"<seg\b[^>]*>(.*?)</seg\s*>", re.S | re.I)
_SEG_OPEN = re.compile(r"<seg\b", re.I)
# only well-formed references (with the semicolon): a bare "S&D" stays as it is
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_WS = re.compile(r"\s+")


def read_sgm(path: str | os.PathLike) -> list[str]:
    """Segments of a WMT SGML file, in file order.

    Each ``<seg ...>text</seg>`` gives one line: entities (``&amp;``, ``&quot;``, ``&#39;``) are
    unescaped, surrounding whitespace is stripped and inner whitespace runs become one space
    (as sacrebleu does when it converts SGML). A ``<seg`` without its closing tag, or a file
    without segments, is a :class:`~mmt_repro.io.DataError`.
    """
    path = Path(path)
    text = "\n".join(read_lines(path))
    segs = _SEG.findall(text)
    opened = len(_SEG_OPEN.findall(text))
    if not segs:
        raise DataError(path, "no <seg> elements found", "this is not a WMT SGML file; pass the .sgm or the plain-text file")
    if opened != len(segs):
        raise DataError(path, f"{opened} <seg> tags opened but {len(segs)} closed (truncated or malformed SGML)",
                        "fetch the file again")
    out = []
    for seg in segs:
        seg = _ENTITY.sub(lambda m: html.unescape(m.group(0)), seg)
        out.append(_WS.sub(" ", seg).strip())
    return out


def read_newstest(path: str | os.PathLike) -> list[str]:
    """Sentences of a news test file: :func:`read_sgm` for ``*.sgm``, else one per line."""
    path = Path(path)
    if path.name.endswith((".sgm", ".sgm.gz")):
        return read_sgm(path)
    return read_lines(path)


def prepare_newstest(
    sources: Mapping[str, Sequence[str | os.PathLike]],
    out_dir: str | os.PathLike,
    split: str,
    expected_lines: int | None = None,
    corpus: str | None = None,
) -> dict[str, int]:
    """Concatenate news test files per language into ``out_dir/{split}.{lang}``.

    ``sources`` maps a language to its files in order, SGML or plain text (e.g. SETIMES2
    dev: ``{"en": [newstest2016.en-tr.en, newstest2017.en-tr.en], "tr": [...]}``). Every file
    of one language must have as many sentences as the file at the same position in the
    others; the total must equal ``expected_lines`` or the published size of
    ``corpus``/``split`` (e.g. ``corpus="setimes2_en-tr", split="valid"`` -> 6007). Returns
    ``{lang: lines}`` plus ``{"file:<name>": lines}`` for each input file of the first language.
    """
    if not sources:
        raise ValueError("prepare_newstest needs at least one language")
    langs = list(sources)
    n_files = {lang: len(files) for lang, files in sources.items()}
    if len(set(n_files.values())) != 1 or not next(iter(n_files.values())):
        raise DataError(None, f"every language needs the same non-zero number of files, got {n_files}",
                        "list the files of each test set in the same order for every language")
    per_file = {lang: [read_newstest(p) for p in files] for lang, files in sources.items()}
    counts: dict[str, int] = {}
    for i, first in enumerate(sources[langs[0]]):
        counts[f"file:{Path(first).name}"] = check_lines(
            {str(sources[lang][i]): per_file[lang][i] for lang in langs}, source=first)
    data = {lang: [x for part in per_file[lang] for x in part] for lang in langs}
    n = check_lines(data, source=sources[langs[0]][0], expected_lines=expected_lines, corpus=corpus,
                    split=split if corpus else None)
    out_dir = Path(out_dir)
    for lang in langs:
        write_lines(out_dir / f"{split}.{lang}", data[lang])
        counts[lang] = n
    return counts


def prepare_setimes(
    zip_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    src: str = "en",
    tgt: str = "tr",
    split: str = "train",
) -> dict[str, int]:
    """SETIMES2 training pairs from the OPUS moses zip into ``out_dir/{split}.{src,tgt}``.

    Reads members ``SETIMES.{src}-{tgt}.{src}`` and ``SETIMES.{src}-{tgt}.{tgt}`` (found by base
    name; OPUS orders the pair alphabetically, so pass ``src="en", tgt="tr"``). The text is
    kept as is, except that pairs with an empty or blank side are dropped, and ``\\r`` is
    removed. Returns ``{"pairs": read, "empty_dropped": n, "kept": written}``. (OPUS v2 lists
    about 207.7k pairs; BertGen's Table 1 reports 185,318 training pairs for Tr->En, so it
    filtered further in a way the paper does not describe.)
    """
    zip_path = Path(zip_path)
    pair = f"{src}-{tgt}"
    if not zip_path.is_file():
        raise DataError(zip_path, "zip file does not exist", f"download SETIMES/v2/moses/{pair}.txt.zip from OPUS")
    names = {lang: f"SETIMES.{pair}.{lang}" for lang in (src, tgt)}
    text = read_text_members(zip_path, list(names.values()),
                             f"use the OPUS moses zip {pair}.txt.zip (languages in alphabetical order)")
    sides = {lang: text[name] for lang, name in names.items()}
    if len(sides[src]) != len(sides[tgt]):
        raise DataError(zip_path, f"SETIMES.{pair}.{src} has {len(sides[src])} lines but .{tgt} has {len(sides[tgt])}",
                        "the zip is damaged or not the OPUS moses release; fetch it again")
    keep = [i for i, (a, b) in enumerate(zip(sides[src], sides[tgt])) if a.strip() and b.strip()]
    data = {lang: [sides[lang][i] for i in keep] for lang in (src, tgt)}
    n = check_lines(data, source=zip_path)
    if n == 0:
        raise DataError(zip_path, "no sentence pairs", "fetch the zip again")
    dropped = len(sides[src]) - n
    if dropped:
        log.info("%s: dropped %d pairs with an empty side", zip_path, dropped)
    out_dir = Path(out_dir)
    for lang in (src, tgt):
        write_lines(out_dir / f"{split}.{lang}", data[lang])
    return {"pairs": len(sides[src]), "empty_dropped": dropped, "kept": n}
