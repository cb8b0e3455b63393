"""Position budgets of unrolled examples shared by the data layer (which counts them) and the
models (which lay them out): :func:`seq_len_cap`, BertGen's authors' cap on text + region
positions. Torch-free; below the models so both may import it."""

from __future__ import annotations

import numpy as np


def seq_len_cap(n_text, n_regions, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Text and region positions that unrolled examples keep under the authors' ``seq_len`` cap
    (``n_text``: the example's text ``[lang] [CLS] x [SEP] y_<t [MASK] [SEP]``; ``n_regions``:
    its image's region slots, the whole image included; scalars or arrays; ``seq_len`` 0: off).

    ImperialNLP/BertGen's ``Multi30kDataset.__getitem__`` (MMT) and
    ``Multi30kDatasetImageOnly.__getitem__`` (captioning) truncate when text + regions exceed
    ``seq_len`` (their ``DATASET.SEQ_LEN``, 64 in the training config): one position at a time
    they drop a region while there are more regions than text positions, else a text position,
    until the sum is ``seq_len``; then they keep at least 2 text positions and 1 region. So the
    longer side is cut down to the shorter, then both in turn (text first on a tie): at 64 with
    101 regions the text keeps up to 32 positions and the regions the rest. The kept text is
    its first ``keep - 1`` positions and the final ``[SEP]``; the [MASK] sits just before that
    ``[SEP]``, so an example whose text is cut at all loses its [MASK] and its label (the caller
    drops the label). Regions keep the first slots (slot 0, the whole image, first). An example
    without regions (``n_regions`` 0) is never cut.

    This is their loop in closed form (``tests/models/test_bertgen.py`` checks it against the
    loop for every small case)."""
    t = np.asarray(n_text, dtype=np.int64)
    b = np.asarray(n_regions, dtype=np.int64)
    if seq_len <= 0:
        return t, b
    over = t + b - seq_len
    cut = (over > 0) & (b > 0)
    alone = np.abs(t - b) >= over  # the longer side absorbs the whole excess
    t_keep = np.where(alone, np.where(t > b, t - over, t), seq_len // 2)
    b_keep = np.where(alone, np.where(t > b, b, b - over), seq_len - seq_len // 2)
    t_keep = np.maximum(t_keep, 2)
    b_keep = np.maximum(b_keep, 1)
    return np.where(cut, t_keep, t), np.where(cut, b_keep, b)
