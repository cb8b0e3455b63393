"""Back-translation (Calixto et al. 2017, section 5, "M30k_C"): a target-to-source text NMT
translates the comparable target-language descriptions of the training images; each synthetic
source sentence, its real target sentence and its image form a new training triple.

:func:`assemble_backtranslation` builds that corpus from the translated files: it re-applies the
fine-tuning data's BPE codes to the synthetic source side (so pre-training and fine-tuning share
vocabularies), concatenates the ``k`` description files, and writes one image name per sentence.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..io import DataError, read_lines, write_lines
from ..text.bpe import apply_bpe_lines

log = logging.getLogger(__name__)


def assemble_backtranslation(
    synthetic_sources: list[Path],
    targets: list[Path],
    image_lists: list[Path],
    codes: Path,
    out_src: Path,
    out_tgt: Path,
    out_images: Path,
) -> dict:
    """``synthetic_sources[k]`` (back-translations, BPE merged), ``targets[k]`` (the real target
    side, BPE applied) and ``image_lists[k]`` line up sentence by sentence for each k."""
    if not (len(synthetic_sources) == len(targets) == len(image_lists)) or not targets:
        raise ValueError("synthetic_sources, targets and image_lists must be non-empty and of equal length")
    src_all, tgt_all, img_all = [], [], []
    dropped = 0
    for syn, tgt, imgs in zip(synthetic_sources, targets, image_lists):
        s, t, i = read_lines(syn), read_lines(tgt), read_lines(imgs)
        if not (len(s) == len(t) == len(i)):
            raise DataError(
                syn, f"{len(s)} back-translations, {len(t)} target lines in {tgt}, {len(i)} images in {imgs}",
                "re-run the back-translation of this file",
            )
        for a, b, c in zip(apply_bpe_lines(codes, s), t, i):
            if not a.strip() or not b.strip():  # an empty back-translation teaches nothing
                dropped += 1
                continue
            src_all.append(a)
            tgt_all.append(b)
            img_all.append(c)
    write_lines(out_src, src_all)
    write_lines(out_tgt, tgt_all)
    write_lines(out_images, img_all)
    info = {"sentences": len(src_all), "files": len(targets), "dropped_empty": dropped}
    log.info("back-translated corpus: %s", info)
    return info
