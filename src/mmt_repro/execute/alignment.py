"""Rules learn_alignment and align: fast_align's two models on a paper's training text, then
every split aligned with both and symmetrised (Yang et al. 2020's alignment stage)."""

from __future__ import annotations

from ..plan.jobs import AlignJob, AlignmentModelJob


def learn(job: AlignmentModelJob) -> None:
    from ..text.align import learn_alignment

    s = job.settings
    learn_alignment(src=job.inputs["src"], tgt=job.inputs["tgt"], fwd_out=job.fwd, bwd_out=job.bwd,
                    iterations=s["iterations"], favor_diagonal=s["favor_diagonal"],
                    optimize_tension=s["optimize_tension"], variational_bayes=s["variational_bayes"])


def align(job: AlignJob) -> None:
    from ..text.align import align_files

    inp = job.inputs
    align_files(fwd=inp["fwd"], bwd=inp["bwd"], src=inp["src"], tgt=inp["tgt"], out=job.out)
