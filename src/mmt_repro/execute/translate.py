"""Rules translate and dump_attention: decode one test split with one checkpoint."""

from __future__ import annotations

from ..plan.jobs import TranslateJob
from .record import add_provenance


def blank_mode(condition: str) -> str | None:
    """The blank-image mode of a condition (``blank_zero`` -> ``zero``), or None."""
    return condition.removeprefix("blank_") if condition.startswith("blank_") else None


def run(job: TranslateJob) -> None:
    """Decode one test split; the decode stats carry the job record."""
    from ..decode.translate import translate as decode_split

    inp = job.inputs
    decode_split(
        checkpoint=inp["checkpoint"], src=inp.get("src"), out=job.out, stats_out=job.stats,
        src_vocab=inp.get("src_vocab"), tgt_vocab=inp["tgt_vocab"], features_npy=inp.get("features_npy"),
        features_index=inp.get("features_index"), decode=dict(job.decode), subword=job.subword,
        shuffle_images_seed=job.shuffle_seed, direction=job.direction, device=job.device, pair=job.pair,
        blank=blank_mode(job.condition), mean_npy=inp.get("mean_npy"), mean_index=inp.get("mean_index"),
    )
    add_provenance(job.stats, job)


def dump_attention(job: TranslateJob) -> None:
    """Greedy decoding with every step's attention weights and gates saved."""
    from ..decode.translate import dump_attention as dump

    inp = job.inputs
    dump(
        checkpoint=inp["checkpoint"], src=inp["src"], out=job.out, src_vocab=inp["src_vocab"],
        tgt_vocab=inp["tgt_vocab"], features_npy=inp.get("features_npy"), features_index=inp.get("features_index"),
        decode=dict(job.decode), direction=job.direction, device=job.device,
    )
