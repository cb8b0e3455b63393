"""Rule test_significance: p-values of each system against the table's baseline."""

from __future__ import annotations

from ..plan.jobs import SignificanceJob


def run(job: SignificanceJob) -> None:
    from ..tables.significance import table_significance

    s = job.scoring
    table_significance(
        translations=dict(job.translations), references=dict(job.references), baseline=job.baseline,
        pair=job.pair, out_json=job.out, metrics=tuple(job.metrics), n_samples=s["significance_samples"],
        tokenize=s["tokenize"], seeds=s["significance_seeds"], ter_lowercase=s["ter_lowercase"],
        meteor_norm=s["meteor_norm"], lang=job.lang, meteor_jar=job.meteor_jar, ref_subword=job.ref_subword,
    )
