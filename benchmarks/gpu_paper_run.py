"""Planned training and decoding jobs run on a GPU machine that has no Snakemake and no data.

``prepare`` (here, where the workflow runs) asks the plan of a configuration for the train and
translate jobs of some systems and seeds, with ``device: cuda`` and an optional training time
budget, and copies every input those jobs read (tokenised text, vocabularies, embedding tables)
into a folder, paths kept relative, with ``jobs.json`` (``--append`` adds to it). ``run`` (on the
GPU machine, inside that folder) runs the train jobs side by side, each in its own process through
:func:`mmt_repro.execute.run_job` (the exact code a rule runs: the trainer with its device
contract, prefetch thread, checkpoints and curve), then the translate jobs whose training has
finished (its record written), and packs curves, records, logs, translations and decoding stats into one
``gpu_run.tar.gz`` (the device machine returns at most 8 files). ``--train-limit S`` sends the
trains still running after S seconds SIGTERM: each saves its ``.last.pt`` and the next ``run``
on the same (warm) machine resumes it, provided that folder is still there (a carried folder is
replaced by each call, so run it in a copy outside the repository); a
train whose record exists has finished and is skipped,
as is a translation already written. Packages the jobs never use there (sacremoses, subword-nmt,
jsonschema, ...) are stubbed as in ``gpu_calibration.py``. Checkpoints stay on the machine (too
large to come back). ``collect`` (here again) unpacks the archive into the run folder, refusing to
overwrite a file that differs, and scores each translation with the plan's own score job, then builds the
tables named (``--tables``: significance and table jobs of the plan), so the tables read GPU runs
beside CPU ones; every run keeps its job record (``device: cuda``).

    python benchmarks/gpu_paper_run.py prepare --configfile config/paper_multi30k_fr_en.yaml \\
        --workdir runs/paper_multi30k_fr_en --paper emb_pred --systems nmt \\
        --decode nmt nmt_beam6 --splits test_2016_flickr test_2017_flickr --seeds 2 3 --dest .gpu
    cd .gpu && python3 ../benchmarks/gpu_paper_run.py run --out "$OUT" --train-limit 450
    python benchmarks/gpu_paper_run.py collect --configfile config/paper_multi30k_fr_en.yaml \\
        --workdir runs/paper_multi30k_fr_en --archive <files_at>/gpu_run.tar.gz
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

INTERRUPTED = 75  # mmt_repro.train.trainer.INTERRUPTED_EXIT_CODE (not imported: torch-free here)
HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))


def _plan(configfiles, device: str | None = None):
    """The plan of config/config.yaml with ``configfiles`` merged in (and ``device`` set)."""
    from mmt_repro.config import deep_update, load_yaml
    from mmt_repro.plan import Plan

    config = load_yaml(REPO / "config" / "config.yaml")
    for f in configfiles:
        config = deep_update(config, load_yaml(Path(f)))
    if device:
        config["device"] = device
    return Plan(config, REPO)


def _output(job: dict) -> str:
    return job["record"] if job["kind"] == "train" else job["out"]


def _files(value) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _files(v)]
    return [value] if isinstance(value, str) and value else []


def prepare(args) -> int:
    plan = _plan(args.configfile, device="cuda")
    work, dest = Path(args.workdir), Path(args.dest)
    dataset, pair = args.dataset, args.pair
    listed = dest / "jobs.json"
    jobs = json.loads(listed.read_text(encoding="utf-8")) if args.append and listed.exists() else []
    new = []
    for seed in args.seeds:
        for system in args.systems:
            w = SimpleNamespace(paper=args.paper, system=system, dataset=dataset, pair=pair, seed=str(seed))
            job = plan.train_jobs.job(w).to_dict()
            if args.budget_min:
                job["train_config"] = {**job["train_config"], "time_budget_min": args.budget_min}
            new.append(job)
        for system in args.decode:
            for split in args.splits:
                w = SimpleNamespace(paper=args.paper, system=system, dataset=dataset, pair=pair, seed=str(seed),
                                    split=split, condition="congruent")
                new.append(plan.translate_jobs.job(w).to_dict())
    outputs = {_output(j) for j in jobs}
    jobs += [j for j in new if _output(j) not in outputs]
    made = {j.get("best") for j in jobs if j["kind"] == "train"}
    copied = 0
    for job in jobs:
        for f in _files(list(job.get("inputs", {}).values())) + _files(list(job.get("resources", {}).values())):
            if f in made or (dest / f).exists():
                continue
            src = work / f
            if not src.exists():
                sys.exit(f"{src}: an input of a {job['kind']} job is missing; build it first "
                         f"(snakemake {f} in {work})")
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
            copied += 1
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "jobs.json").write_text(json.dumps(jobs, indent=1) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"{dest}/jobs.json: {len(jobs)} jobs; {copied} input files copied, {size / 2**20:.1f} MiB in {dest}")
    return 0


def _stubs() -> list[str]:
    sys.path.insert(0, str(HERE))
    from gpu_calibration import install_stubs

    try:  # transformers probes optional packages when imported: before the stubs
        import transformers  # noqa: F401
    except ImportError:
        pass
    return install_stubs()


def one(args) -> int:
    """One job (``--index`` into jobs.json) in this process."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stubbed = _stubs()
    logging.getLogger("gpu_paper_run").info("stubbed (not installed here): %s", ", ".join(stubbed) or "none")
    from mmt_repro.execute import run_job

    job = json.loads(Path("jobs.json").read_text(encoding="utf-8"))[args.index]
    t0 = time.monotonic()
    run_job(job)
    logging.getLogger("gpu_paper_run").info("job %d (%s %s) done in %.1f s", args.index, job["kind"],
                                            job["system"], time.monotonic() - t0)
    return 0


def _log_name(job: dict, i: int) -> str:
    extra = f".{job['split']}" if job["kind"] == "translate" else ""
    return f"logs/{i:02d}.{job['kind']}.{job['system']}{extra}.log"


def ready_translations(jobs: list[dict]) -> tuple[list[int], list[str]]:
    """Indices of the translate jobs to run now, and a line for each one that must wait. A
    checkpoint is decoded only once its training has finished (its record written): the trainer
    writes best.pt at every improvement, so an interrupted run has one too. A translation already
    written is not redone."""
    records = {j["best"]: j["record"] for j in jobs if j["kind"] == "train"}
    todo, waiting = [], []
    for i, j in enumerate(jobs):
        if j["kind"] != "translate" or Path(j["out"]).exists():
            continue
        done = Path(records.get(j["checkpoint"], j["checkpoint"]))
        if done.exists():
            todo.append(i)
        else:
            waiting.append(f"job {i} translate {j['system']} seed {j['seed']} {j['split']}: skipped, "
                           f"{done} not written (its training has not finished)")
    return todo, waiting


def train_states(jobs: list[dict]) -> list[str]:
    """A line for each train job still to run: whether it resumes from its ``.last.pt`` or starts
    from update 0, and a warning where a curve exists without a ``.last.pt`` (the folder was
    replaced or the checkpoint lost: the curve's epochs will be trained again)."""
    lines = []
    for i, j in enumerate(jobs):
        if j["kind"] != "train" or Path(j["record"]).exists():
            continue
        name = f"job {i} train {j['system']} seed {j['seed']}"
        curve = Path(j["curve"])
        epochs = max(len(curve.read_text(encoding="utf-8").splitlines()) - 1, 0) if curve.exists() else 0
        if Path(j["last"]).exists():
            lines.append(f"{name}: resumes from {j['last']}")
        elif epochs:
            lines.append(f"{name}: WARNING: its curve has {epochs} epochs but {j['last']} is missing: "
                         "starts again from update 0 (was the folder replaced?)")
        else:
            lines.append(f"{name}: starts from update 0")
    return lines


def run(args) -> int:
    jobs = json.loads(Path("jobs.json").read_text(encoding="utf-8"))
    Path("logs").mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    me = [sys.executable, str(Path(__file__).resolve())]
    status = {}

    def start(i):
        log = open(_log_name(jobs[i], i), "a", encoding="utf-8")  # noqa: SIM115 - closed below
        return subprocess.Popen([*me, "one", "--index", str(i)], stdout=log, stderr=subprocess.STDOUT, env=env), log

    def wait_all(procs, limit=0.0):
        t_start = time.monotonic()
        stopped = False
        while any(p.poll() is None for p, _ in procs.values()):
            if limit and not stopped and time.monotonic() - t_start > limit:
                for p, _ in procs.values():
                    if p.poll() is None:
                        p.send_signal(signal.SIGTERM)  # the trainer saves .last.pt and exits 75
                stopped = True
                print(f"train limit {limit:.0f} s reached: SIGTERM sent to the trains still running", flush=True)
            time.sleep(1.0)
        for i, (p, log) in procs.items():
            status[i] = p.returncode
            log.close()

    t0 = time.monotonic()
    trains = [i for i, j in enumerate(jobs) if j["kind"] == "train" and not Path(j["record"]).exists()]
    for line in train_states(jobs):
        print(line, flush=True)
    wait_all({i: start(i) for i in trains}, args.train_limit)  # side by side on the one GPU
    print(f"train jobs {trains}: exit {[status[i] for i in trains]} (75: interrupted, resumes on the next run), "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    todo, waiting = ready_translations(jobs)
    for line in waiting:
        print(line, flush=True)
    wait_all({i: start(i) for i in todo})  # decoding is short: all at once
    for i in todo:
        print(f"job {i} translate {jobs[i]['system']} seed {jobs[i]['seed']} {jobs[i]['split']}: exit {status[i]}",
              flush=True)
    keep = ["jobs.json", "logs"]
    for j in jobs:
        keep += [j[k] for k in ("curve", "record", "out", "stats") if j.get(k) and Path(j[k]).exists()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / "gpu_run.tar.gz", "w:gz") as tar:
        for k in keep:
            tar.add(k)
    print(f"{out / 'gpu_run.tar.gz'}: {len(keep)} entries; {time.monotonic() - t0:.0f} s in all", flush=True)
    return max([s for s in status.values() if s != INTERRUPTED], default=0)


def collect(args) -> int:
    """Unpack a ``run`` archive into the run folder and score its translations with the plan's score jobs."""
    from mmt_repro.execute import run_job

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    work = Path(args.workdir)
    conflicts, written = [], 0
    with tarfile.open(args.archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and not any(x in m.name for x in args.exclude)]
        for m in members:
            if Path(m.name).is_absolute() or ".." in Path(m.name).parts:
                sys.exit(f"{args.archive}: unsafe member {m.name}")
            data = tar.extractfile(m).read()
            name = m.name if m.name.startswith("results/") else f"{args.name}/{m.name}"  # jobs.json, logs
            target = work / name
            if target.exists():
                if target.read_bytes() != data:
                    conflicts.append(name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
    print(f"{work}: {written} files written from {args.archive}")
    if conflicts:
        print("kept as they were (differ from the archive; move them aside to take the GPU run's):\n  "
              + "\n  ".join(conflicts))
    plan = _plan(args.configfile)
    jobs = json.loads((work / args.name / "jobs.json").read_text(encoding="utf-8"))
    here = Path.cwd()
    os.chdir(work)  # the jobs' paths are relative to the run folder
    try:
        for j in jobs:
            if j["kind"] != "translate" or not Path(j["out"]).exists():
                continue
            w = SimpleNamespace(paper=j["paper"], system=j["system"], dataset=j["dataset"], pair=j["pair"],
                                seed=str(j["seed"]), split=j["split"], condition=j["condition"])
            score = plan.score_jobs.job(w).to_dict()
            if Path(score["out"]).exists() and Path(score["out"]).stat().st_mtime >= Path(j["out"]).stat().st_mtime:
                continue
            run_job(score)
            print(f"scored {score['out']}")
        for name in args.tables:
            paper, table = name.split("/")
            w = SimpleNamespace(paper=paper, table=table)
            missing = [f for f in plan.table_jobs.scores(paper, table) if not Path(f).exists()]
            if missing:
                print(f"{paper}/{table}: not built, {len(missing)} score files missing (e.g. {missing[0]}); "
                      "score those runs first or narrow the table with an overlay")
                continue
            steps = [plan.table_jobs.job(w).to_dict()]
            if "significance" in steps[0]["inputs"]:  # the table reads its significance tests
                steps.insert(0, plan.significance_jobs.job(w).to_dict())
            for job in steps:
                run_job(job)
            print(f"built {steps[-1]['out']}")
    finally:
        os.chdir(here)
    return 1 if conflicts else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--configfile", nargs="+", required=True)
    p.add_argument("--workdir", required=True, help="the run folder whose results/ holds the inputs")
    p.add_argument("--paper", required=True)
    p.add_argument("--systems", nargs="+", required=True, help="systems to train")
    p.add_argument("--decode", nargs="*", default=[], help="systems to decode (after training)")
    p.add_argument("--splits", nargs="*", default=[])
    p.add_argument("--dataset", default="multi30k")
    p.add_argument("--pair", default="fr-en")
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--append", action="store_true", help="add to the jobs.json already in --dest")
    p.add_argument("--budget-min", type=float, default=0.0, help="training time budget (0: the stopping rule)")
    p.add_argument("--dest", required=True)
    p = sub.add_parser("run")
    p.add_argument("--out", required=True)
    p.add_argument("--train-limit", type=float, default=0.0,
                   help="seconds, then SIGTERM to the trains still running (0: none)")
    p = sub.add_parser("collect")
    p.add_argument("--configfile", nargs="+", required=True)
    p.add_argument("--workdir", required=True, help="the run folder the tables are built in")
    p.add_argument("--archive", required=True, help="gpu_run.tar.gz of a run")
    p.add_argument("--name", default="gpu_run", help="folder of the run folder for the archive's jobs.json and logs")
    p.add_argument("--exclude", nargs="*", default=[], help="archive members to leave out (substrings)")
    p.add_argument("--tables", nargs="*", default=[], help="paper/table to build once scored (all its runs scored)")
    p = sub.add_parser("one")
    p.add_argument("--index", type=int, required=True)
    args = ap.parse_args(argv)
    return {"prepare": prepare, "run": run, "one": one, "collect": collect}[args.verb](args)


if __name__ == "__main__":
    sys.exit(main())
