"""Preparers that turn already-downloaded official files into prepared corpora.

One entry point per source format; each reads input paths, refuses bad input with a
:class:`~mmt_repro.io.DataError` naming the file and the fix *before* writing, and writes its
outputs atomically. Downloading and checksums live elsewhere (the data rules).

======================================  ===========================================  ==========
function                                 reads                                        paper
======================================  ===========================================  ==========
:func:`prepare_iwslt14`                  WIT3 ``de-en.tgz`` / ``fr-en.tgz``            bertgen
:func:`prepare_iwslt14_prepared`         fairseq's prepared ``{split}.{lang}`` folder  bertgen
:func:`read_sgm`, :func:`prepare_newstest`  WMT ``*.sgm`` or plain newstest files      bertgen
:func:`prepare_setimes`                  OPUS ``en-tr.txt.zip`` (SETIMES2)             bertgen
:func:`prepare_karpathy`                 Karpathy ``dataset_{coco,flickr30k,flickr8k}.json``  bertgen
:func:`prepare_tasviret`                 ``tasviret8k_captions.json``                  bertgen
:func:`read_flickr8k_tokens`             ``Flickr8k.token.txt``                        bertgen
:func:`prepare_vatex`                    ``vatex_{training,validation}_v1.0.json``     deepfuse
:func:`prepare_vatex_prepared`           prepared ``{split}.{en,zh,id}`` mirror         deepfuse
:func:`extract_member`                   one file out of a ``.zip``/``.tgz``           (any)
======================================  ===========================================  ==========

The preparers read the extracted files; :func:`extract_member` takes one out of a downloaded
archive (``caption_datasets.zip`` -> ``dataset_coco.json``; the TasvirEt zip ->
``tasviret8k_captions.json``; WMT ``dev.tgz``/``test.tgz`` -> ``newstest2016-entr-src.en.sgm``).

The modules: :mod:`~mmt_repro.data.iwslt`, :mod:`~mmt_repro.data.newstest`,
:mod:`~mmt_repro.data.captions`, :mod:`~mmt_repro.data.vatex`; checks and the table of
published sizes: :mod:`~mmt_repro.data.checks`; corpus statistics: :mod:`~mmt_repro.data.stats`.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from mmt_repro.data.captions import (
    flickr30k_id,
    prepare_karpathy,
    prepare_tasviret,
    read_flickr8k_tokens,
    read_image_list,
    read_karpathy,
    split_tasviret,
)
from mmt_repro.data.iwslt import clean_corpus, prepare_iwslt14, prepare_iwslt14_prepared
from mmt_repro.data.newstest import prepare_newstest, prepare_setimes, read_newstest, read_sgm
from mmt_repro.data.vatex import prepare_vatex, prepare_vatex_prepared, read_vatex_prepared
from mmt_repro.io import DataError, atomic_path

__all__ = [
    "clean_corpus",
    "extract_member",
    "flickr30k_id",
    "prepare_iwslt14",
    "prepare_iwslt14_prepared",
    "prepare_karpathy",
    "prepare_newstest",
    "prepare_setimes",
    "prepare_tasviret",
    "prepare_vatex",
    "prepare_vatex_prepared",
    "read_flickr8k_tokens",
    "read_image_list",
    "read_karpathy",
    "read_newstest",
    "read_sgm",
    "read_vatex_prepared",
    "split_tasviret",
]


def extract_member(archive: str | os.PathLike, member: str, out: str | os.PathLike) -> Path:
    """Copy one file out of a ``.zip`` or ``.tar[.gz]``/``.tgz`` archive to ``out`` (atomic).

    ``member`` is a path inside the archive, or a base name that must match exactly one file
    member (``dataset_coco.json`` finds ``caption_datasets/dataset_coco.json`` wherever it is).
    """
    archive = Path(archive)
    if not archive.is_file():
        raise DataError(archive, "archive does not exist", "fetch it first (the download rule for this input)")

    def pick(names: list[str]) -> str:
        exact = [n for n in names if n.rstrip("/") == member]
        hits = exact or [n for n in names if PurePosixPath(n).name == member]
        if len(hits) != 1:
            shown = ", ".join(hits) if hits else ", ".join(sorted(names)[:20]) or "none"
            raise DataError(archive, f"{len(hits)} members match {member!r} ({'matches' if hits else 'members'}: {shown})",
                            "name the member by its full path inside the archive, or fetch the archive again")
        return hits[0]

    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                name = pick([n for n in zf.namelist() if not n.endswith("/")])
                with zf.open(name) as src, atomic_path(out) as tmp, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        else:
            with tarfile.open(archive, "r:*") as tar:
                files = {m.name: m for m in tar.getmembers() if m.isfile()}
                name = pick(list(files))
                with tar.extractfile(files[name]) as src, atomic_path(out) as tmp, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as err:
        raise DataError(archive, f"cannot read the archive ({err})", "delete it and fetch it again") from err
    return Path(out)
