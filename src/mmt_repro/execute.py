"""Execution of the plan's run-level jobs: each function takes one job object
(mmt_repro.plan.jobs), calls the one package function that does the work, and writes the job
record beside the output — the resolved job, the package version and code hash, the git commit
when there is one, and the hash of the resolved settings — so that every number in
``results/tables/all.tsv`` leads back to the run that made it (docs/adding_a_paper.md).

Imports of the heavy layers (torch, metrics) are inside the functions: a score job never
imports torch."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .plan.jobs import AnalyseJob, Job, ScoreJob, TableJob, TrainJob, TranslateJob
from .plan.version import JOB_CODE, code_version

def git_commit(repo: Path | None = None) -> str | None:
    """The checkout's commit (with ``+dirty`` when tracked files differ), None outside git."""
    repo = repo or Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def provenance(job: Job) -> dict:
    """What produced an output: the job, the code and the settings, by hash."""
    return {
        "job": job.to_dict(),
        "settings_hash": job.settings_hash(),
        "code_version": code_version(*JOB_CODE[job.kind]),
        "git_commit": git_commit(),
    }


def write_json(path: str | Path, data: dict) -> None:
    """Atomically: a reader never sees half a record."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def add_provenance(path: str | Path, job: Job) -> None:
    """The job's record inside an output JSON (translation stats, scores, analyses)."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["provenance"] = provenance(job)
    write_json(path, data)


def train(job: TrainJob) -> None:
    """Train one system (resumes from ``job.last``), then write ``job.record``
    (<model>.job.json) with the model config as the checkpoint resolved it."""
    from .checkpoint import read_checkpoint
    from .train.trainer import train_from_files

    inp = job.inputs
    train_from_files(
        model_name=job.model, model_config=dict(job.model_config), train_config=dict(job.train_config),
        src_vocab=inp["src_vocab"], tgt_vocab=inp["tgt_vocab"], train_src=inp["train_src"],
        train_tgt=inp["train_tgt"], val_src=inp["val_src"], val_tgt=inp["val_tgt"], val_ref=inp["val_ref"],
        best_checkpoint=job.best, last_checkpoint=job.last, curve=job.curve,
        train_features=(inp.get("train_npy"), inp.get("train_index")),
        val_features=(inp.get("val_npy"), inp.get("val_index")), device=job.device,
        init_checkpoint=inp.get("init"), train_image_list=inp.get("train_image_list"), subword=job.subword,
        resources=dict(job.resources), imports=list(job.imports), train_extras=dict(job.extras), pair=job.pair,
        tasks=list(job.tasks),
    )
    ckpt = read_checkpoint(Path(job.best))
    write_json(job.record, {**provenance(job), "model": ckpt.get("model"),
                            "model_config_resolved": ckpt.get("model_config"),
                            "checkpoint_package_version": ckpt.get("package_version")})


def translate(job: TranslateJob) -> None:
    """Decode one test split; the decode stats carry the job record."""
    from .decode.translate import translate as decode_split

    inp = job.inputs
    decode_split(
        checkpoint=inp["checkpoint"], src=inp.get("src"), out=job.out, stats_out=job.stats,
        src_vocab=inp.get("src_vocab"), tgt_vocab=inp["tgt_vocab"], features_npy=inp.get("features_npy"),
        features_index=inp.get("features_index"), decode=dict(job.decode), subword=job.subword,
        shuffle_images_seed=job.shuffle_seed, direction=job.direction, device=job.device, pair=job.pair,
    )
    add_provenance(job.stats, job)


def dump_attention(job: TranslateJob) -> None:
    """Greedy decoding with every step's attention weights and gates saved."""
    from .decode.translate import dump_attention as dump

    inp = job.inputs
    dump(
        checkpoint=inp["checkpoint"], src=inp["src"], out=job.out, src_vocab=inp["src_vocab"],
        tgt_vocab=inp["tgt_vocab"], features_npy=inp.get("features_npy"), features_index=inp.get("features_index"),
        decode=dict(job.decode), direction=job.direction, device=job.device,
    )


def score(job: ScoreJob) -> None:
    """Every metric of the paper's scoring block, with signatures and the job record."""
    from .metrics.mt import score_files

    s, inp = job.scoring, job.inputs
    score_files(
        hyp=inp["hyp"], refs=inp["ref"], out_json=job.out, meta=dict(job.meta), metrics=tuple(s["metrics"]),
        tokenize=s["tokenize"], bleu_compat=s["bleu_compat"], lang=s["meteor_lang"], ref_subword=job.ref_subword,
        decode_stats=inp["decode_stats"], meteor_jar=job.meteor_jar, meteor_norm=s["meteor_norm"],
        ter_lowercase=s["ter_lowercase"],
    )
    add_provenance(job.out, job)


def analyse(job: AnalyseJob) -> None:
    """One registered analysis of one run, with the job record."""
    from .tables.analyses import run_analysis

    run_analysis(name=job.name, inputs=job.input_kind, files=dict(job.inputs), out_json=job.out,
                 meta=dict(job.meta), imports=list(job.imports))
    add_provenance(job.out, job)


def table(job: TableJob) -> None:
    """One paper table: our numbers beside the published ones, each row naming its runs."""
    from .tables.build import make_table_from_files

    make_table_from_files(
        score_jsons=list(job.inputs["scores"]), paper=job.paper, table=job.table,
        published=job.inputs["published"], out_tsv=job.out, significance_json=job.inputs.get("significance"),
        note=job.note, unavailable_systems=dict(job.unavailable), not_comparable=dict(job.not_comparable),
    )


RUNNERS = {"train": train, "translate": translate, "attention": dump_attention, "score": score,
           "analyse": analyse, "table": table}


def run_job(job: dict, rule: str | None = None) -> None:
    """Run a job given as its ``to_dict()`` (a rule's `job` param); dump_attention's translate
    job writes attention, not a translation."""
    from .plan.jobs import job_from_dict

    obj = job_from_dict(job)
    kind = "attention" if (obj.kind == "translate" and rule == "dump_attention") else obj.kind
    RUNNERS[kind](obj)
