"""WMT'15 English-German training corpora (Europarl v7, Common Crawl, News Commentary v10), the
general-domain pre-training data of Calixto et al. 2017 (about 4.3M sentence pairs).

The three official archives are fetched (URL or local mirror) by :mod:`mmt_repro.corpora.fetch`
as the manifest input ``wmt15_en_de``; :func:`prepare_wmt15` extracts the German-English
files, checks that each pair of files lines up, drops pairs with an empty side, and writes
``train.en``/``train.de``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..io import DataError, write_lines
from .archives import read_text_members

log = logging.getLogger(__name__)

#: archive file name (as in the manifest) -> member basename prefix of its de-en files
WMT15_ARCHIVES = {
    "europarl-v7-de-en.tgz": "europarl-v7.de-en",
    "training-parallel-commoncrawl.tgz": "commoncrawl.de-en",
    "training-parallel-nc-v10.tgz": "news-commentary-v10.de-en",
}


def prepare_wmt15(archives: list[str | Path], out_en: Path, out_de: Path) -> dict:
    """Concatenate the de-en files of the three archives (in :data:`WMT15_ARCHIVES` order,
    recognised by file name) into ``out_en`` and ``out_de``."""
    by_name = {Path(a).name: Path(a) for a in archives}
    missing = sorted(set(WMT15_ARCHIVES) - set(by_name))
    if missing:
        raise DataError(None, f"WMT'15 archives missing: {', '.join(missing)}", "fetch every archive of input wmt15_en_de")
    en_all, de_all, counts = [], [], {}
    for name, prefix in WMT15_ARCHIVES.items():
        archive = by_name[name]
        text = read_text_members(archive, [f"{prefix}.en", f"{prefix}.de"], "fetch the archive again")
        en, de = text[f"{prefix}.en"], text[f"{prefix}.de"]
        if len(en) != len(de):
            raise DataError(archive, f"{prefix}: {len(en)} English vs {len(de)} German lines", "fetch the archive again")
        kept = [(e.strip(), d.strip()) for e, d in zip(en, de) if e.strip() and d.strip()]
        counts[prefix] = {"pairs": len(en), "kept": len(kept)}
        en_all.extend(e for e, _ in kept)
        de_all.extend(d for _, d in kept)
    write_lines(out_en, en_all)
    write_lines(out_de, de_all)
    log.info("WMT'15 en-de: %s, %d pairs in total", counts, len(en_all))
    return counts
