"""Execution of the plan's run-level jobs (train_model, translate, dump_attention, score,
analyse, make_table, test_significance, protocol_grid, make_probe_table, make_cross_paper_table, make_curves,
learn_alignment, align, assemble_backtranslation): each module takes one job object (mmt_repro.plan.jobs), calls the one
package function that does the work, and writes the job record beside the output
(:mod:`.record`): the resolved job, the package version and code hash, the git commit when there
is one, and the hash of the resolved settings. So every number in ``results/tables/all.tsv``
leads back to the run that made it (docs/adding_a_paper.md).

One module per kind, imported by name when the job runs. What decides a kind's outputs, and so
its code version, is declared per stage in :mod:`mmt_repro.plan_tools.version` (``JOB_STAGE``,
``STAGES``): a change to the scoring code re-runs the score jobs and nothing else."""

from __future__ import annotations

from importlib import import_module

# job kind (or rule, for dump_attention) -> (module of this package, function)
RUNNERS = {
    "train": ("train", "run"),
    "translate": ("translate", "run"),
    "attention": ("translate", "dump_attention"),
    "score": ("score", "run"),
    "analyse": ("analyse", "run"),
    "table": ("table", "run"),
    "significance": ("significance", "run"),
    "protocols": ("protocols", "run"),
    "probe": ("probe", "run"),
    "cross_paper": ("cross_paper", "run"),
    "curves": ("curves", "run"),
    "alignment_model": ("alignment", "learn"),
    "align": ("alignment", "align"),
    "backtranslation": ("backtranslation", "run"),
}


def run_job(job: dict, rule: str | None = None, code: str | None = None) -> None:
    """Run a job given as its ``to_dict()`` (a rule's one `job` param); dump_attention's
    translate job writes attention, not a translation. ``code``: the rule's `code` param (the
    plan's code version of the job), written to the job record as it is; None computes it."""
    from ..plan.jobs import job_from_dict
    from .record import use_planned_code

    obj = job_from_dict(job)
    kind = "attention" if (obj.kind == "translate" and rule == "dump_attention") else obj.kind
    module, func = RUNNERS[kind]
    use_planned_code(code)
    try:
        getattr(import_module(f"{__name__}.{module}"), func)(obj)
    finally:
        use_planned_code(None)
