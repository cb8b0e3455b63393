"""Chinese word segmentation with jieba (``jieba.cut``, default dictionary, HMM on): the
recipe's ``jieba`` step (:mod:`mmt_repro.text.recipes`) and the jieba-word BLEU of
:mod:`mmt_repro.metrics.zh_words`. Character-segmented text is joined back into plain text
first (spaces between Chinese characters dropped)."""

from __future__ import annotations

import re

_CJK_SPACE = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef])\s+(?=[\u3000-\u9fff\uff00-\uffef])")


def join_chars(line: str) -> str:
    """Character-segmented Chinese back to plain text (spaces kept between Latin tokens)."""
    return _CJK_SPACE.sub("", line.strip())


def jieba_words(line: str) -> str:
    """``line`` (plain or character-segmented) as jieba words separated by single spaces."""
    import jieba

    return " ".join(w for w in jieba.cut(join_chars(line)) if w.strip())
