"""Reference results: the evidence behind a configuration's tables, committed beside the code.

A run folder (Snakemake's ``--directory``) holds weights and caches of many GB; a reader who
wants to check a claim needs a few hundred KB of it. ``python -m mmt_repro reference`` copies
that part into ``reference/<name>/`` (a folder per configuration), keeping the run folder's
relative paths, so every path a table names (``runs``, score files) resolves inside it:

``reference.json``
    the provenance: the config overlays and targets, the commit(s) and device(s) the job
    records name, the date the tables were built, the seeds and the training time of every
    run, and per translation table the table job (its note, declared differences, unavailable
    and non-comparable systems, its score files): what :func:`rebuild_table` needs.
``results/tables/<paper>/<table>.tsv``
    the tables of the targets, as the workflow built them (analysis tables too).
``results/scores/...json``, ``results/significance/...json``
    every score file of every translation table, with its signatures; the p-values.
``results/translations/...txt`` (+ ``.stats.json``)
    the hypotheses behind each score.
``results/models/.../<run>.curve.tsv``, ``.job.json``
    each run's learning curve and its resolved training job; never the weights.
``results/tables/<paper>/<table>.protocols.tsv`` (+ ``.json``), ``results/text/...``
    where the run folder has it, each translation table's protocol grid
    (:mod:`mmt_repro.tables.protocols`) with the references it scored against, and in
    ``reference.json`` the job that made it (``grid_jobs``): what :func:`rebuild_grid` needs.
``results/tables/<paper>/<table>.probe.tsv``
    where the run folder has it, each translation table's image-use probe (docs/probes.md),
    with its own runs' scores and translations, and its job in ``reference.json``
    (``probe_jobs``).
``results/tables/cross_paper.tsv`` (+ ``.json``)
    where the run folder has it, the cross-paper table (:mod:`mmt_repro.tables.cross_paper`)
    with the translations and references of its rows, named in ``reference.json``
    (``cross_paper``).

Evidence that was not kept (a run folder lost before this command existed) can be given as a
transcription, ``transcribed/scores.tsv`` (one row per published per-seed score:
``table system test_set seed metric value source``): :func:`scores_from_transcript` writes it
out as score files marked ``transcribed``, so the table code, not a hand, turns it into the
reference tables; ``reference.json`` then says what was not committed and why.

The test ``tests/unit/test_reference.py`` rebuilds every reference table from the committed
score files with :func:`rebuild_table` and compares it, cell for cell, with the committed one;
``tests/unit/test_protocols.py`` does the same for every committed protocol grid
(:func:`rebuild_grid`, from the committed translations and references).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from ..io import DataError, atomic_write
from ..plan.paths import path
from .build import make_table_from_files, read_table, write_table

REFERENCE_FILE = "reference.json"
TRANSCRIPT = "transcribed/scores.tsv"
TRANSCRIPT_COLUMNS = ["table", "system", "test_set", "seed", "metric", "value", "source"]
#: what a transcribed score file carries as its signature: the original was not kept
TRANSCRIBED_SIGNATURE = "transcribed (the score file's signature was not kept)"


def _translation_of(score: str) -> str:
    """The translation file a score file scores (same wildcards, see mmt_repro.plan.paths)."""
    rel = Path(score).relative_to("results/scores")
    return str(Path("results/translations") / rel.with_suffix(".txt"))


def _run_files(runs: str) -> list[str]:
    """The curve and job record of every checkpoint a table row names (never the weights)."""
    out = []
    for ckpt in runs.split():
        stem = ckpt[: -len(".best.pt")] if ckpt.endswith(".best.pt") else ckpt
        out += [f"{stem}.curve.tsv", f"{stem}.job.json"]
    return out


# an absolute path into a Python environment's site-packages (a venv anywhere on the machine)
_SITE_PACKAGES = re.compile(r'/[^"\s]*?/site-packages/')


def _table_jobs(plan, tables) -> list[dict]:
    return [plan.table_jobs.job(SimpleNamespace(paper=p, table=t)).to_dict() for p, t in tables]


def _grid_jobs(plan, tables, run_dir: Path) -> list[dict]:
    """The job of each protocol grid the run folder has for ``tables``: the one its legend
    records (the job that made it), else the plan's."""
    jobs = []
    for p, t in tables:
        legend = run_dir / path("protocols_legend", paper=p, table=t)
        if not (run_dir / path("protocols", paper=p, table=t)).is_file() or not legend.is_file():
            continue
        made = json.loads(legend.read_text(encoding="utf-8")).get("provenance", {}).get("job")
        jobs.append(made or plan.protocol_jobs.job(SimpleNamespace(paper=p, table=t)).to_dict())
    return jobs


def _probe_jobs(plan, tables, run_dir: Path) -> list[dict]:
    """The job of each image-use probe (docs/probes.md) the run folder has for ``tables``."""
    return [plan.probe_jobs.job(SimpleNamespace(paper=p, table=t)).to_dict() for p, t in tables
            if plan.table(p, t).get("probe") and (run_dir / path("probe", paper=p, table=t)).is_file()]


def _cross_paper(run_dir: Path) -> dict | None:
    """The legend of the run folder's cross-paper table (mmt_repro.tables.cross_paper), or None."""
    tsv, legend = run_dir / path("cross_paper"), run_dir / path("cross_paper_legend")
    if not (tsv.is_file() and legend.is_file()):
        return None
    return json.loads(legend.read_text(encoding="utf-8"))


def _curve_summary(file: Path) -> dict:
    """Epochs, best validation BLEU and training seconds of a curve TSV (its last ``elapsed_s``)."""
    with open(file, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        return {"epochs": 0}
    vals = [(float(r["val_bleu"]), i + 1) for i, r in enumerate(rows) if r.get("val_bleu") not in (None, "")]
    best = max(vals) if vals else (None, None)
    return {"epochs": len(rows), "best_val_bleu": best[0], "best_epoch": best[1],
            "train_seconds": float(rows[-1]["elapsed_s"]) if rows[-1].get("elapsed_s") else None}


def collect_reference(plan, targets, run_dir: Path, out_dir: Path, configfiles=(), purpose: str = "paper") -> dict:
    """Copy the evidence of ``targets`` (table paths, or ``results/tables/all.tsv``) from
    ``run_dir`` into ``out_dir`` and write its ``reference.json``; return that record. ``purpose``:
    ``paper`` (the paper's own setting), ``check`` (a bounded check) or ``smoke`` (synthetic), the
    first line of its results page (:mod:`mmt_repro.tables.pages`).

    Every file a table needs must exist: a missing one is an error naming it (build the table
    first), and nothing is written then. ``out_dir`` is replaced whole, so a reference never
    mixes two runs."""
    from ..plan_tools.progress import target_tables

    run_dir, out_dir = Path(run_dir), Path(out_dir)
    wanted = {str(t) for t in targets}
    tables = [(p, t, plan.table_kind(p, t)) for p, t in target_tables(plan, targets, every_kind=True)]
    if not tables:
        raise DataError(None, f"no enabled table among the targets {sorted(wanted)}",
                        "name table targets, e.g. results/tables/emb_pred/table1.tsv, or results/tables/all.tsv")
    translation = [(p, t) for p, t, kind in tables if kind == "translation"]
    jobs = _table_jobs(plan, translation)
    files: list[str] = [path("table", paper=p, table=t) for p, t, _ in tables]
    for job in jobs:
        files += list(job["inputs"]["scores"])
        files += [_translation_of(s) for s in job["inputs"]["scores"]]
        if job["inputs"].get("significance"):
            files.append(job["inputs"]["significance"])
    missing = [f for f in files if not (run_dir / f).is_file()]
    if missing:
        raise DataError(run_dir / missing[0], f"{len(missing)} file(s) of the targets' evidence do not exist "
                        f"(first: {missing[0]})", "build the targets in that folder first (snakemake <targets> "
                        "--directory <run folder>), then run this again")
    grids = _grid_jobs(plan, translation, run_dir)
    for job in grids:
        files += [job["out"], job["legend"], *job["inputs"]["references"]]
    probes = _probe_jobs(plan, translation, run_dir)
    for job in probes:  # the probe table, its own runs' scores and translations
        files += [job["out"], *job["inputs"]["scores"]]
        files += [_translation_of(s) for s in job["inputs"]["scores"]]
        files += [f for f in (_translation_of(s)[: -len(".txt")] + ".stats.json" for s in job["inputs"]["scores"])
                  if (run_dir / f).is_file()]
    cross = _cross_paper(run_dir)
    for row in (cross or {}).get("rows", []):  # the cross-paper table's translations and references
        files += [*row["translations"].values(), *row["references"], *([row["probe"]["file"]] if row["probe"] else [])]
    files += [f for f in (path("cross_paper"), path("cross_paper_legend")) if cross]
    for p, t, _ in tables:
        files += _run_files(" ".join(read_table(run_dir / path("table", paper=p, table=t))["runs"]))
    files += [f for f in (_translation_of(s)[: -len(".txt")] + ".stats.json"
                          for job in jobs for s in job["inputs"]["scores"]) if (run_dir / f).is_file()]
    files = sorted(set(files))
    lost = [f for f in files if not (run_dir / f).is_file()]
    if lost:
        raise DataError(run_dir / lost[0], f"{len(lost)} run file(s) named by the tables do not exist "
                        f"(first: {lost[0]})", "the run folder is incomplete: re-run the targets there")

    records = {f: json.loads((run_dir / f).read_text(encoding="utf-8")) for f in files if f.endswith(".job.json")}
    runs = {}
    for f, rec in sorted(records.items()):
        job = rec.get("job", {})
        stem = f[: -len(".job.json")]
        runs[stem] = {"paper": job.get("paper"), "system": job.get("system"), "seed": job.get("seed"),
                      "device": job.get("device"), "commit": rec.get("git_commit"),
                      **_curve_summary(run_dir / f"{stem}.curve.tsv")}
    built = max((run_dir / path("table", paper=p, table=t)).stat().st_mtime for p, t, _ in tables)
    record = {
        "name": out_dir.name,
        "purpose": purpose,
        "configfiles": [str(c) for c in configfiles],
        "targets": sorted(wanted),
        "evidence": "run folder",
        "not_committed": "model weights (.best.pt, .last.pt): rebuild them with the targets' command",
        "built": dt.datetime.fromtimestamp(built, dt.timezone.utc).strftime("%Y-%m-%d"),
        "commits": sorted({r["commit"] for r in runs.values() if r["commit"]}),
        "devices": sorted({str(r["device"]) for r in runs.values() if r["device"]}),
        "runs": runs,
        "tables": [{"paper": p, "table": t, "kind": kind, "seeds": len(plan.table(p, t).get("seeds") or [])}
                   for p, t, kind in tables],
        "table_jobs": jobs,
        "grid_jobs": grids,
        "probe_jobs": probes,
        **({"cross_paper": {"out": path("cross_paper"), "legend": path("cross_paper_legend")}} if cross else {}),
    }
    staging = out_dir.with_name(f".{out_dir.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    # absolute paths of the machine that ran (the METEOR jar in a score's details) are written
    # relative to the repository or the run folder, and a Python environment's files from its
    # site-packages/, so that the evidence reads the same anywhere
    local = sorted({f"{Path(plan.repo).resolve()}/", f"{run_dir.resolve()}/"}, key=len, reverse=True)
    for f in files:
        (staging / f).parent.mkdir(parents=True, exist_ok=True)
        if f.endswith(".json"):
            text = (run_dir / f).read_text(encoding="utf-8")
            for prefix in local:
                text = text.replace(prefix, "")
            text = _SITE_PACKAGES.sub("site-packages/", text)
            (staging / f).write_text(text, encoding="utf-8")
        else:
            shutil.copyfile(run_dir / f, staging / f)
    keep = out_dir / "transcribed"  # transcriptions are written by hand: never dropped
    if keep.is_dir():
        shutil.copytree(keep, staging / "transcribed")
    write_record(staging, record)
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.replace(out_dir)
    return record


def write_record(folder: Path, record: dict) -> None:
    with atomic_write(Path(folder) / REFERENCE_FILE) as fh:
        fh.write(json.dumps(record, indent=1, sort_keys=True) + "\n")


def read_record(folder: Path) -> dict:
    file = Path(folder) / REFERENCE_FILE
    if not file.is_file():
        raise DataError(file, "no reference record", "write it with python -m mmt_repro reference")
    return json.loads(file.read_text(encoding="utf-8"))


def reference_folders(root: Path) -> list[Path]:
    """Every folder under ``root`` (``reference/``) that has a reference record, by name."""
    return sorted(p.parent for p in Path(root).glob(f"*/{REFERENCE_FILE}"))


def rebuild_table(folder: Path, job: dict, out_tsv: Path, published: Path, seeds: int | None = None) -> pd.DataFrame:
    """The table of ``job`` (a recorded table job) built by the table code from the score files
    inside ``folder``, against ``published`` (config/published_results.tsv). ``seeds``: how many
    the table plans; a row the evidence holds fewer of says so in its note and gets no verdict
    (a transcription that lacks a seed's value)."""
    folder = Path(folder)
    inputs = job["inputs"]
    sig = inputs.get("significance")
    df = make_table_from_files(
        score_jsons=[folder / s for s in inputs["scores"]], paper=job["paper"], table=job["table"],
        published=Path(published), out_tsv=Path(out_tsv),
        significance_json=folder / sig if sig and (folder / sig).is_file() else None,
        unavailable_systems=dict(job["unavailable"]), note=job["note"],
        not_comparable=dict(job["not_comparable"]), differences=dict(job.get("differences") or {}),
    )
    short = (df["n_seeds"] > 0) & (df["n_seeds"] < (seeds or 0))
    if short.any():
        for i in df.index[short]:
            kept = [x for x in df.at[i, "note"].split("; ") if x and not x.startswith("verdict: ")]
            df.at[i, "note"] = "; ".join([*kept, f"{df.at[i, 'n_seeds']} of {seeds} seeds in the evidence, no verdict"])
        df.loc[short, ["verdict"]] = ""
        df.loc[short, ["tolerance"]] = float("nan")
        write_table(df, out_tsv)
    return df


def rebuild_grid(folder: Path, job: dict, out_root: Path) -> tuple[Path, Path]:
    """The protocol grid of ``job`` (a recorded grid job) built by the grid code from the
    translations, references and score files inside ``folder``, written under ``out_root`` (same
    relative paths); returns (TSV, legend)."""
    from .protocols import protocol_grid

    folder, out_root = Path(folder), Path(out_root)
    protocol_grid(
        translations={k: str(folder / f) for k, f in job["translations"].items()},
        references={ts: [str(folder / f) for f in files] for ts, files in job["references"].items()},
        protocols=list(job["protocols"]), lang=job["lang"], out_tsv=out_root / job["out"],
        out_json=out_root / job["legend"], table_metrics=dict(job["table_metrics"]),
        scores={k: str(folder / f) for k, f in job["scores"].items()}, ref_subword=job["ref_subword"],
        meteor_jar=job.get("meteor_jar"), meta={"paper": job["paper"], "table": job["table"], "pair": job["pair"]},
    )
    return out_root / job["out"], out_root / job["legend"]


def rebuild_tables(folder: Path, out_root: Path, published: Path) -> list[Path]:
    """Every translation table of the reference ``folder`` rebuilt under ``out_root`` (same
    relative paths); returns the files written."""
    record = read_record(folder)
    seeds = {(t["paper"], t["table"]): t.get("seeds") for t in record["tables"]}
    out = []
    for job in record["table_jobs"]:
        file = Path(out_root) / job["out"]
        rebuild_table(folder, job, file, published, seeds.get((job["paper"], job["table"])))
        out.append(file)
    return out


def read_transcript(file: Path) -> list[dict]:
    """The rows of a ``transcribed/scores.tsv``, checked: columns, numeric values and seeds."""
    file = Path(file)
    with open(file, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        if reader.fieldnames != TRANSCRIPT_COLUMNS:
            raise DataError(file, f"columns {reader.fieldnames}", f"the header must be: {' '.join(TRANSCRIPT_COLUMNS)}")
        rows = list(reader)
    for i, r in enumerate(rows, start=2):
        try:
            r["value"], r["seed"] = float(r["value"]), int(r["seed"])
        except ValueError as err:
            raise DataError(file, f"line {i}: {err}", "write the value and the seed as plain numbers") from err
    return rows


def scores_from_transcript(folder: Path, plan, jobs: list[dict]) -> list[str]:
    """Score files for ``jobs`` (table jobs of ``plan``) from ``folder/transcribed/scores.tsv``:
    one file per (system, test set, seed) path a table job names, holding the transcribed
    metrics, each with :data:`TRANSCRIBED_SIGNATURE` and the file's ``transcribed`` source.
    Returns the score paths written (relative to ``folder``); a job's score path with no
    transcribed value is left out of that job (its rows then say "not run")."""
    folder = Path(folder)
    rows = read_transcript(folder / TRANSCRIPT)
    by_key: dict[tuple, dict] = {}
    for r in rows:
        by_key.setdefault((r["table"], r["system"], r["test_set"], r["seed"]), {})[r["metric"]] = r
    written = []
    for job in jobs:
        kept = []
        for score in job["inputs"]["scores"]:
            w = _score_wildcards(score)
            got = by_key.get((job["table"], w["system"], w["split"], int(w["seed"])))
            if not got:
                continue
            meta = dict(plan.score_jobs.job(SimpleNamespace(**w)).meta)  # what the score job would write
            data = {
                "meta": meta,
                "scores": {m: {"value": r["value"], "signature": TRANSCRIBED_SIGNATURE} for m, r in sorted(got.items())},
                "transcribed": sorted({r["source"] for r in got.values()}),
            }
            out = folder / score
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            kept.append(score)
            written.append(score)
        job["inputs"]["scores"] = kept
        job["inputs"].pop("significance", None)
    return written


def _score_wildcards(score: str) -> dict:
    """The wildcards of a score path (results/scores/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.json)."""
    parts = Path(score).parts
    stem = parts[-1][: -len(".json")]
    dataset, split, pair, seed, condition = stem.split(".")
    return {"paper": parts[-3], "system": parts[-2], "dataset": dataset, "split": split, "pair": pair,
            "seed": seed[len("seed"):], "condition": condition}


def transcribed_reference(plan, targets, out_dir: Path, configfiles=(), reason: str = "", purpose: str = "paper") -> dict:
    """A reference folder whose scores come from its transcription (see the module docstring):
    writes the score files and the reference tables with the table code, and a record saying
    what was not committed (``reason``). Without ``transcribed/scores.tsv`` the record alone: a
    configuration that ran, whose evidence was not kept (its page says so, and shows whatever
    other transcribed figures the folder holds)."""
    from ..plan_tools.progress import target_tables

    out_dir = Path(out_dir)
    has_scores = (out_dir / TRANSCRIPT).is_file()  # without it: a record of what was not kept, no tables
    tables = target_tables(plan, targets) if has_scores else []
    jobs = _table_jobs(plan, tables)
    if has_scores:
        scores_from_transcript(out_dir, plan, jobs)
    published = plan.repo_source(jobs[0]["inputs"]["published"] if jobs else "config/published_results.tsv")
    record = {
        "name": out_dir.name, "purpose": purpose, "configfiles": [str(c) for c in configfiles], "targets": sorted(str(t) for t in targets),
        "evidence": "transcribed",
        "not_committed": reason or "the run folder was not kept",
        "built": dt.date.today().isoformat(), "commits": [], "devices": [], "runs": {},
        "tables": [{"paper": p, "table": t, "kind": "translation", "seeds": len(plan.table(p, t)["seeds"])}
                   for p, t in tables],
        "table_jobs": jobs,
    }
    write_record(out_dir, record)
    rebuild_tables(out_dir, out_dir, published)
    return record
