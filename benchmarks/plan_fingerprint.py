"""Every job Snakemake plans for a target, as one JSON line each: rule, inputs, outputs, params.

Used to show that a change to the planning code plans the same jobs (before/after diff):

    python benchmarks/plan_fingerprint.py all > before.jsonl
    python benchmarks/plan_fingerprint.py all --configfile config/smoke.yaml > before_smoke.jsonl

Params are written with the job's own values (input functions evaluated); ``--no-params`` leaves
them out (a refactoring that regroups params into one job object changes them by design).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def plain(value):
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if hasattr(value, "items") and hasattr(value, "keys"):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def fingerprint(targets, configfiles, with_params=True):
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(
            snakefile=REPO / "Snakefile",
            workdir=REPO,
            config_settings=ConfigSettings(configfiles=[Path(c) for c in configfiles]),
            resource_settings=ResourceSettings(cores=2),
        )
        dag_api = wf.dag(dag_settings=DAGSettings(targets=set(targets), forceall=True))
        workflow = dag_api.workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        workflow._build_dag()
        dag = workflow.dag
        rows = []
        for job in dag.jobs:
            row = {
                "rule": job.rule.name,
                "output": sorted(map(str, job.output)),
                "input": sorted(map(str, job.input)),
            }
            if with_params:
                row["params"] = plain(dict(job.params.items()))
            rows.append(row)
    return sorted(rows, key=lambda r: (r["rule"], r["output"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--configfile", action="append", default=[])
    ap.add_argument("--no-params", action="store_true")
    args = ap.parse_args()
    # Read as a dry run by the workflow's preflight (workflow/rules/common.smk), so that the
    # full configuration plans without its inputs in place (missing inputs are reported).
    sys.argv = ["snakemake", "--dry-run", *args.targets]
    for row in fingerprint(args.targets, args.configfile, not args.no_params):
        sys.stdout.write(json.dumps(row, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
