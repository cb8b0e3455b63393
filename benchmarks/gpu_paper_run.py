"""Planned training and decoding jobs run on a GPU machine that has no Snakemake and no data.

``prepare`` (here, where the workflow runs) asks the plan of a configuration for the train and
translate jobs of some systems and one seed, with ``device: cuda`` and an optional training time
budget, and copies every input those jobs read (tokenised text, vocabularies, embedding tables)
into a folder, paths kept relative, with ``jobs.json``. ``run`` (on the GPU machine, inside that
folder) runs the train jobs side by side, each in its own process through
:func:`mmt_repro.execute.run_job` (the exact code a rule runs: the trainer with its device
contract, prefetch thread, checkpoints and curve), then the translate jobs, and packs curves,
logs, translations and decoding stats into one ``gpu_run.tar.gz`` (the device machine returns at
most 8 files). Packages the jobs never use there (sacremoses, subword-nmt, jsonschema, ...) are
stubbed as in ``gpu_calibration.py``. Checkpoints stay on the machine (too large to come back).

    python benchmarks/gpu_paper_run.py prepare --configfile config/paper_multi30k_fr_en.yaml \\
        --workdir runs/paper_multi30k_fr_en --paper emb_pred --systems nmt ours_text \\
        --decode nmt nmt_beam6 ours_text --splits test_2016_flickr test_2017_flickr --seed 2 \\
        --budget-min 4 --dest .gpu
    cd .gpu && python3 ../benchmarks/gpu_paper_run.py run --out "$OUT"
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))


def _files(value) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _files(v)]
    return [value] if isinstance(value, str) and value else []


def prepare(args) -> int:
    from mmt_repro.config import deep_update, load_yaml
    from mmt_repro.plan import Plan

    config = load_yaml(REPO / "config" / "config.yaml")
    for f in args.configfile:
        config = deep_update(config, load_yaml(Path(f)))
    config["device"] = "cuda"
    plan = Plan(config, REPO)
    work, dest = Path(args.workdir), Path(args.dest)
    dataset, pair, seed = args.dataset, args.pair, args.seed
    jobs = []
    for system in args.systems:
        w = SimpleNamespace(paper=args.paper, system=system, dataset=dataset, pair=pair, seed=str(seed))
        job = plan.train_job(w).to_dict()
        if args.budget_min:
            job["train_config"] = {**job["train_config"], "time_budget_min": args.budget_min}
        jobs.append(job)
    for system in args.decode:
        for split in args.splits:
            w = SimpleNamespace(paper=args.paper, system=system, dataset=dataset, pair=pair, seed=str(seed),
                                split=split, condition="congruent")
            jobs.append(plan.translate_job(w).to_dict())
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


def run(args) -> int:
    jobs = json.loads(Path("jobs.json").read_text(encoding="utf-8"))
    Path("logs").mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    me = [sys.executable, str(Path(__file__).resolve())]
    status = {}

    def start(i):
        log = open(_log_name(jobs[i], i), "w", encoding="utf-8")  # noqa: SIM115 - closed below
        return subprocess.Popen([*me, "one", "--index", str(i)], stdout=log, stderr=subprocess.STDOUT, env=env), log

    t0 = time.monotonic()
    trains = [i for i, j in enumerate(jobs) if j["kind"] == "train"]
    procs = {i: start(i) for i in trains}  # side by side on the one GPU
    for i, (p, log) in procs.items():
        status[i] = p.wait()
        log.close()
    print(f"train jobs {trains}: exit {[status[i] for i in trains]}, {time.monotonic() - t0:.0f} s", flush=True)
    for i, j in enumerate(jobs):
        if j["kind"] == "train":
            continue
        p, log = start(i)
        status[i] = p.wait()
        log.close()
        print(f"job {i} translate {j['system']} {j['split']}: exit {status[i]}", flush=True)
    keep = ["jobs.json", "logs"]
    for j in jobs:
        keep += [j[k] for k in ("curve", "record", "out", "stats") if j.get(k) and Path(j[k]).exists()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / "gpu_run.tar.gz", "w:gz") as tar:
        for k in keep:
            tar.add(k)
    print(f"{out / 'gpu_run.tar.gz'}: {len(keep)} entries; {time.monotonic() - t0:.0f} s in all", flush=True)
    return max(status.values(), default=0)


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
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--budget-min", type=float, default=0.0, help="training time budget (0: the stopping rule)")
    p.add_argument("--dest", required=True)
    p = sub.add_parser("run")
    p.add_argument("--out", required=True)
    p = sub.add_parser("one")
    p.add_argument("--index", type=int, required=True)
    args = ap.parse_args(argv)
    return {"prepare": prepare, "run": run, "one": one}[args.verb](args)


if __name__ == "__main__":
    sys.exit(main())
