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

The modules: :mod:`~mmt_repro.corpora.iwslt`, :mod:`~mmt_repro.corpora.newstest`,
:mod:`~mmt_repro.corpora.captions`, :mod:`~mmt_repro.corpora.vatex`; checks and the table of
published sizes: :mod:`~mmt_repro.corpora.checks`; corpus statistics: :mod:`~mmt_repro.corpora.stats`.
"""

from __future__ import annotations


from .archives import extract_member
from .captions import (
    flickr30k_id,
    prepare_karpathy,
    prepare_tasviret,
    read_flickr8k_tokens,
    read_image_list,
    read_karpathy,
    split_tasviret,
)
from .iwslt import clean_corpus, prepare_iwslt14, prepare_iwslt14_prepared
from .newstest import prepare_newstest, prepare_setimes, read_newstest, read_sgm
from .vatex import prepare_vatex, prepare_vatex_prepared, read_vatex_prepared

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
