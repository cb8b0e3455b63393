"""Rule score: every metric of the paper's scoring block on one translation."""

from __future__ import annotations

from ..plan.jobs import ScoreJob
from .record import add_provenance


def run(job: ScoreJob) -> None:
    """Every metric of the paper's scoring block, with signatures and the job record."""
    from ..metrics.score_files import score_files

    s, inp = job.scoring, job.inputs
    score_files(
        hyp=inp["hyp"], refs=inp["ref"], out_json=job.out, meta=dict(job.meta), metrics=tuple(s["metrics"]),
        tokenize=s["tokenize"], bleu_compat=s["bleu_compat"], lang=s["meteor_lang"], ref_subword=job.ref_subword,
        decode_stats=inp["decode_stats"], meteor_jar=job.meteor_jar, meteor_norm=s["meteor_norm"],
        ter_lowercase=s["ter_lowercase"],
    )
    if "masked_words" in inp:  # the source-degradation probe: colour accuracy beside BLEU
        from ..metrics.masked_words import add_colour_accuracy

        add_colour_accuracy(score_json=job.out, src=inp["masked_src"], words=inp["masked_words"], hyp=inp["hyp"],
                            ref=inp["ref"][0], words_kind=s["masked_words"],
                            src_wordpiece=s["masked_src_wordpiece"], ref_wordpiece=job.ref_subword == "wordpiece")
    add_provenance(job.out, job)
