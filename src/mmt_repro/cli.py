"""``python -m mmt_repro <verb>``: the package's functions by hand, outside Snakemake.

Verbs: ``show`` (print a results table; ``--paper``: shaped like the paper's), ``results-doc``
(docs/results.md from all.tsv), ``models`` (list registered models),
``check`` (alias ``check-config``: the preflight of a config and its targets), ``translate``
(raw sentences, and images, through an exported system to detokenised text; ``--segmented``:
a model-form source file with a checkpoint or an exported folder), ``export`` (a trained system
as one folder: safetensors weights, config, vocabularies, text and feature recipes), ``score`` (score a hypothesis file), ``config-docs`` (the
configuration reference, config/README.md, from config/schema.yaml), ``plan`` (the cost plan), ``progress``
(where a run folder's trainings stand), ``reference`` (copy a run's evidence into reference/<name>/),
``docs`` (the results pages and every generated block of README and docs/).

Every verb with ``--configfile`` takes its targets before or after it, as Snakemake does:
``check --configfile site.yaml results/tables/emb_pred/table1.tsv``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .config import ConfigError
from .io import DataError


def _show(args) -> int:
    import pandas as pd

    from .tables.build import format_table

    if args.paper is not None and args.table is None and args.paper.endswith(".tsv"):
        args.table, args.paper = args.paper, ""  # `show --paper all.tsv`: the table, every paper
    if args.table is None:
        raise DataError(None, "no table given", "name one, e.g. python -m mmt_repro show results/tables/all.tsv")
    path = Path(args.table)
    if not path.exists():
        raise DataError(path, "table does not exist", "run the workflow first (make smoke)")
    if args.paper is not None or args.format != "text":
        from .tables.paper_view import show_paper

        print(show_paper(path, args.paper or None, args.format))
        return 0
    print(format_table(pd.read_csv(path, sep="\t", keep_default_na=False)))
    return 0


def _emit(text: str, out: str | None) -> int:
    """Print ``text``, or write it to ``out`` atomically and say so."""
    from .io import atomic_write

    if out is None:
        sys.stdout.write(text)
        return 0
    with atomic_write(out) as fh:
        fh.write(text)
    print(f"wrote {out}")
    return 0


def _results_doc(args) -> int:
    from .tables.paper_view import results_doc

    return _emit(results_doc(args.table, source=args.table), args.out)


def _models(args) -> int:  # noqa: ARG001
    from .models import available

    print("\n".join(available()))
    return 0


def _check(args) -> int:
    """The preflight of the workflow (mmt_repro.plan_tools.preflight), as Snakemake runs it at planning."""
    import time

    from .plan_tools.preflight import check_configs, config_file_of

    start = time.perf_counter()
    repo = Path(args.repo) if args.repo else Path(__file__).resolve().parents[2]
    if not (repo / "config" / "config.yaml").is_file():
        raise DataError(repo, "not the mmt-repro repository (no config/config.yaml)", "give --repo <the repository>")
    words = list(args.items)  # `check-config a.yaml b.yaml` (config files) still works
    configs = [*(w for w in words if config_file_of(w)), *(args.configfile or [])]
    targets = [w for w in words if not config_file_of(w)]
    result = check_configs(repo, configs, targets, workdir=args.directory or repo)
    took = time.perf_counter() - start
    if result.problems:
        print(result.report(prefix="error: "), file=sys.stderr)
        print(f"({took:.1f} s)", file=sys.stderr)
        return 1
    print(f"ok: no problems in the config, its names, overrides and the inputs of {len(result.targets)} "
          f"target(s) ({took:.1f} s)")
    return 0


def _translate(args) -> int:
    if not args.segmented:
        return _translate_raw(args)
    from .decode.translate import translate

    ckpt = Path(args.checkpoint)
    args.beam = 12 if args.beam is None else args.beam
    args.max_len = 80 if args.max_len is None else args.max_len
    if args.src is None or args.out is None:
        raise DataError(ckpt, "--segmented needs --src (the model-form source) and --out", "give both")
    vocabs = {}
    for side in ("src", "tgt"):  # an exported folder holds its vocabularies
        given = getattr(args, f"{side}_vocab")
        vocabs[side] = Path(given) if given else (ckpt / f"{side}_vocab.json" if ckpt.is_dir() else None)
        if vocabs[side] is None:
            raise DataError(ckpt, f"--{side}-vocab is needed with a checkpoint file",
                            f"give --{side}-vocab, or export the model to a folder (python -m mmt_repro export)")
    info = translate(
        checkpoint=ckpt, src=Path(args.src), out=Path(args.out),
        src_vocab=vocabs["src"], tgt_vocab=vocabs["tgt"],
        features_npy=args.features_npy, features_index=args.features_index,
        decode={"beam_size": args.beam, "max_len": args.max_len}, subword=args.subword, device=args.device,
    )
    print(json.dumps(info))
    return 0


def _media_of(args) -> list[Path]:
    """``--images`` files, then those an ``--image-list`` names (paths relative to the list's folder)."""
    media = [Path(m) for m in args.images or []]
    if args.image_list:
        from .io import read_lines

        listing = Path(args.image_list)
        media += [listing.parent / name.strip() for name in read_lines(listing, allow_empty_lines=False)]
    return media


def _translate_raw(args) -> int:
    from .decode.system import translate_raw

    if args.src_vocab or args.tgt_vocab or args.subword != "none":
        raise DataError(args.checkpoint, "--src-vocab, --tgt-vocab and --subword go with --segmented",
                        "drop them: an exported folder holds its vocabularies and its text recipe")
    info = translate_raw(
        Path(args.checkpoint), args.src, args.out, media=_media_of(args),
        features_npy=args.features_npy, features_index=args.features_index,
        decode={"beam_size": args.beam, "max_len": args.max_len}, device=args.device, boxes=args.boxes,
    )
    print(json.dumps(info), file=sys.stderr if args.out in (None, "-") else sys.stdout)
    return 0


def _commute(args) -> int:
    from .decode.commute import score_commute, score_commute_checkpoint

    given = dict(images=Path(args.images) if args.images else None, device=args.device)
    if Path(args.system).is_dir():
        result = score_commute(Path(args.system), Path(args.commute), args.split, args.out, **given)
    else:
        result = score_commute_checkpoint(Path(args.system), Path(args.commute), args.split, args.out, **given)
    print(f"CoMMuTE {args.split}: {result['accuracy']:.2f} % ({result['right']} of {result['n']} lines; "
          f"{result['ties']} ties, counted as misses)")
    return 0


def _export(args) -> int:
    from .decode.system import export_system

    out = Path(args.out)
    written = export_system(Path(args.checkpoint), out, src_vocab=args.src_vocab, tgt_vocab=args.tgt_vocab,
                            record=args.record)
    print(f"wrote {out}: " + ", ".join(sorted(p.name for p in out.iterdir())))
    if written["recipe"] is not None:
        checked = ", ".join(f"{side} {n} lines" for side, n in written["recipe"].items()) or "no raw text in the run"
        print(f"text recipe checked against the run's prepared validation text: {checked}")
    if written["features"]:
        print(f"feature set: {written['features']} (features.json)")
    if written["decode"]:
        print(f"decoding: beam {written['decode']['beam_size']}, at most {written['decode']['max_len']} tokens "
              "(decode.json)")
    return 0


def _list(args) -> int:
    from .plan import load_plan
    from .plan_tools.listing import catalogue, format_catalogue

    plan = load_plan(Path(__file__).resolve().parents[2], args.configfile or [])
    print(format_catalogue(catalogue(plan, args.paper)))
    return 0


def _config_docs(args) -> int:
    from .config import schema_reference

    return _emit(schema_reference(args.schema), args.out)


def _score(args) -> int:
    from .io import read_lines
    from .metrics.mt import corpus_scores

    scores = corpus_scores(read_lines(args.hyp), [read_lines(r) for r in args.refs], tokenize=args.tokenize)
    print(json.dumps(scores, indent=1))
    return 0


def _plan_of(configfiles):
    """The plan of config/config.yaml with ``configfiles`` merged on top, from the repository."""
    from .plan import load_plan

    return load_plan(Path("."), configfiles or [])


def _plan(args) -> int:
    from .plan_tools.packing import format_packed_cost_plan, packed_cost_plan  # the cost plan, + packs if on

    plan = _plan_of(args.configfile)
    report = packed_cost_plan(plan, args.targets or plan.targets.default_targets(), args.gpu, args.bertgen_k)
    print(format_packed_cost_plan(report, markdown=args.markdown))
    return 0


def _progress(args) -> int:
    from .plan_tools.progress import format_progress, progress, target_tables

    plan = _plan_of(args.configfile)
    targets = args.targets or plan.targets.default_targets()
    print(format_progress(progress(plan, targets, Path(args.directory))))
    if args.scores:
        from .tables.build import format_table, read_table
        from .tables.interim import interim_tables

        for out in interim_tables(plan, target_tables(plan, targets), Path(args.directory)):
            print(f"\n{out} (interim: the runs scored so far)\n{format_table(read_table(out))}")
    return 0


def _reference(args) -> int:
    from .tables.reference import collect_reference, transcribed_reference

    plan = _plan_of(args.configfile)
    targets = args.targets or plan.targets.default_targets()
    if args.transcribed:
        record = transcribed_reference(plan, targets, Path(args.out), args.configfile or [], reason=args.reason or "",
                                       purpose=args.purpose)
    else:
        record = collect_reference(plan, targets, Path(args.directory), Path(args.out), args.configfile or [],
                                   purpose=args.purpose)
    n = sum(1 for p in Path(args.out).rglob("*") if p.is_file())
    print(f"wrote {args.out}: {n} files, {len(record['tables'])} table(s), {len(record['runs'])} run(s) "
          f"(evidence: {record['evidence']}); then: python -m mmt_repro docs")
    return 0


def _docs(args) -> int:
    from .tables.pages import generate_docs

    repo = Path(args.repo) if args.repo else Path(".")
    changed = generate_docs(repo, check=args.check)
    for f in changed:
        print(f"{'differs' if args.check else 'wrote'}: {f}")
    if args.check and changed:
        print("the generated docs differ from the committed evidence: run python -m mmt_repro docs", file=sys.stderr)
        return 1
    if not changed:
        print("docs up to date")
    return 0


def _standins(args) -> int:
    from .standins.mirror import write_mirror

    got = write_mirror(args.out, seed=args.seed, inputs=args.inputs or None,
                       shared=None if args.no_shared else args.shared, real_shapes=args.real_shapes,
                       scale=args.scale, video_seconds=args.video_seconds)
    for name, files in got["inputs"].items():
        print(f"{name}: {len(files)} file(s)")
    print(f"stand-in manifest: {got['manifest']}\nconfig overlay: {got['config']} "
          f"(snakemake ... --configfile config/config.yaml {got['config']})")
    return 0


def _rehearsal_report(args) -> int:
    from .plan_tools.rehearsal import format_report, full_plan, rehearsal_jobs

    repo = Path(args.repo or ".")
    jobs = rehearsal_jobs(args.run_dir, repo, full_plan(repo, args.configfile or ()))
    print(format_report(jobs, slowest=args.slowest))
    if args.out:
        from .plan_tools.rehearsal import run_meta, write_evidence

        print(f"evidence: {write_evidence(jobs, args.out, run_meta(args.run_dir, repo))}")
    return 0


def _targets_after_configfile(args, positional: str) -> None:
    """``--configfile a.yaml target ...``: the words after the config files that are not config
    files are targets (``nargs="+"`` would take them all as config files)."""
    files = getattr(args, "configfile", None) or []
    from .plan_tools.preflight import config_file_of

    extra = [w for w in files if not config_file_of(w)]
    if not extra:
        return
    args.configfile = [w for w in files if config_file_of(w)]
    current = getattr(args, positional)
    if isinstance(current, list):
        setattr(args, positional, [*current, *extra])
    elif current is None and len(extra) == 1:
        setattr(args, positional, extra[0])
    else:
        raise ConfigError(f"--configfile takes config files (*.yaml); {extra} are not")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mmt_repro", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("show", help="print a results table (e.g. results/tables/all.tsv)")
    p.add_argument("table", nargs="?")
    p.add_argument("--paper", nargs="?", const="", metavar="PAPER",
                   help="lay each table out as the paper does (systems x metrics, cells ours (paper, delta)); "
                        "PAPER: only that paper's tables")
    p.add_argument("--format", default="text", choices=["text", "markdown", "latex"], help="with --paper")
    p.set_defaults(func=_show)
    p = sub.add_parser("results-doc", help="docs/results.md: every table as the paper lays it out, with its runs")
    p.add_argument("table", help="results/tables/all.tsv")
    p.add_argument("--out", help="write it here (e.g. docs/results.md) instead of printing it")
    p.set_defaults(func=_results_doc)
    p = sub.add_parser("models", help="list registered models")
    p.set_defaults(func=_models)
    p = sub.add_parser("check", aliases=["check-config"],
                       help="the preflight: every config, name, override and input problem at once (as at planning)")
    p.add_argument("items", nargs="*", metavar="target|config.yaml",
                   help="targets (default: what `snakemake` builds); *.yaml: config files merged in order")
    p.add_argument("--configfile", nargs="+", help="config files merged on top of config/config.yaml")
    p.add_argument("--repo", help="the repository (default: the one this package is installed from)")
    p.add_argument("--directory", help="Snakemake's working directory (default: the repository)")
    p.set_defaults(func=_check)
    p = sub.add_parser("translate", help="translate raw sentences (and images or videos) with an exported system, "
                                         "writing detokenised text; --segmented: a model-form (BPE) source file")
    p.add_argument("--checkpoint", required=True, help="an exported folder (python -m mmt_repro export); with "
                   "--segmented also a .pt file")
    p.add_argument("--src", help="raw sentences, one a line; - or omitted: standard input (a captioning system "
                   "reads none)")
    p.add_argument("--out", help="the translations, one a line (default: standard output)")
    p.add_argument("--images", nargs="+", metavar="FILE", help="one image (or video) per sentence, in order: "
                   "features made by the extractor the system was trained with")
    p.add_argument("--image-list", help="a file naming one image (or video) per sentence, relative to its folder")
    p.add_argument("--boxes", help="region systems: a JSON {image file name: [[x1, y1, x2, y2], ...]} of boxes "
                   "to pool instead of detecting them")
    p.add_argument("--features-npy", help="a feature store as the workflow writes it (row i: sentence i)")
    p.add_argument("--features-index")
    p.add_argument("--segmented", action="store_true",
                   help="the source is already in the model's form (the recipe's chain and BPE); the output is "
                        "tokenised, with --subword merged back (the workflow's scoring form)")
    p.add_argument("--src-vocab", help="with --segmented; default: the exported folder's")
    p.add_argument("--tgt-vocab", help="with --segmented; default: the exported folder's")
    p.add_argument("--beam", type=int, help="beam size (1: greedy); default: the paper's for the system "
                   "(decode.json of the exported folder; 12 with --segmented)")
    p.add_argument("--max-len", type=int, help="most target tokens; default: the paper's (80 with --segmented)")
    p.add_argument("--subword", default="none", choices=["none", "bpe", "wordpiece", "char"],
                   help="with --segmented: the target side's segmentation, merged back in the output")
    p.add_argument("--device", default="auto")
    p.set_defaults(func=_translate)
    p = sub.add_parser("list", help="papers, tables, systems and test sets, what each needs, the target to ask for")
    p.add_argument("paper", nargs="?", help="one paper (default: every paper)")
    p.add_argument("--configfile", nargs="+", help="config files merged on top of config/config.yaml")
    p.set_defaults(func=_list)
    p = sub.add_parser("export", help="a trained system as one folder: safetensors weights, config, vocabularies, "
                                      "its text recipe and, for a multimodal system, its feature recipe")
    p.add_argument("checkpoint", help="a .best.pt in a run folder (its .job.json beside it names the vocabularies "
                                      "and the prepared text the recipe is read from)")
    p.add_argument("out", help="the folder to write")
    p.add_argument("--src-vocab")
    p.add_argument("--tgt-vocab")
    p.add_argument("--record", help="the training job record (default: <stem>.job.json beside the checkpoint)")
    p.set_defaults(func=_export)
    p = sub.add_parser("commute", help="CoMMuTE's contrastive accuracy of a system: both translations of every "
                                       "line forced through it under the line's image (docs/scoring.md)")
    p.add_argument("system", help="an exported folder, or a .best.pt with its .job.json beside it")
    p.add_argument("--commute", required=True, help="CoMMuTE's text: the folder holding en-de/, en-fr/, en-cs/ "
                   "(resources/commute)")
    p.add_argument("--split", required=True, help="en-de, en-fr, en-cs or en-fr_dev (the system's pair)")
    p.add_argument("--images", help="the folder of the unpacked images.tar.gz (multimodal systems)")
    p.add_argument("--out", help="a JSON of the accuracy and each line's two per-token NLLs")
    p.add_argument("--device", default="auto")
    p.set_defaults(func=_commute)
    p = sub.add_parser("score", help="BLEU, chrF3 and TER of a hypothesis file")
    p.add_argument("hyp")
    p.add_argument("refs", nargs="+")
    p.add_argument("--tokenize", default="13a")
    p.set_defaults(func=_score)
    p = sub.add_parser("config-docs", help="the configuration reference (config/README.md) from the schema")
    p.add_argument("--schema", default="config/schema.yaml")
    p.add_argument("--out", help="write it here (e.g. config/README.md) instead of printing it")
    p.set_defaults(func=_config_docs)
    p = sub.add_parser("plan", help="cost plan: updates, step time, GPU-hours and resources per training job")
    p.add_argument("targets", nargs="*", help="default: what `snakemake` builds (rule all)")
    p.add_argument("--configfile", nargs="+", help="config files merged on top of config/config.yaml")
    p.add_argument("--gpu", default=None, help="config/calibration/<gpu>.json (default: h100; cpu on a CPU run)")
    p.add_argument("--markdown", action="store_true", help="a Markdown table")
    p.add_argument("--bertgen-k", type=int, default=8,
                   help="k of BertGen's batch_scale option priced beside the exact run (k examples per task a step)")
    p.set_defaults(func=_plan)
    p = sub.add_parser("progress", help="where each training of the targets stands in a run folder: finished, "
                                        "begun (epochs, best val BLEU, stopping rule) or not started")
    p.add_argument("targets", nargs="*", help="default: what `snakemake` builds (rule all)")
    p.add_argument("--configfile", nargs="+", help="config files merged on top of config/config.yaml")
    p.add_argument("--directory", default=".", help="the run folder (snakemake's --directory)")
    p.add_argument("--scores", action="store_true",
                   help="also each target table from the runs scored so far (results/interim/<paper>/<table>.tsv "
                        "in the run folder; rows with fewer seeds than planned get no verdict)")
    p.set_defaults(func=_progress)
    p = sub.add_parser("reference", help="copy the evidence of a run's tables (tables, scores, translations, curves, "
                                         "job records; never weights) into reference/<name>/")
    p.add_argument("targets", nargs="*", help="table targets (default: the config's targets)")
    p.add_argument("--configfile", nargs="+", help="config files merged on top of config/config.yaml")
    p.add_argument("--directory", default=".", help="the run folder (snakemake's --directory)")
    p.add_argument("--out", required=True, help="the reference folder, e.g. reference/paper_multi30k_fr_en")
    p.add_argument("--purpose", default="paper", choices=["paper", "check", "smoke"],
                   help="paper: the paper's own setting; check: a bounded check; smoke: the synthetic run")
    p.add_argument("--transcribed", action="store_true",
                   help="no run folder: build the scores and tables from <out>/transcribed/scores.tsv")
    p.add_argument("--reason", help="with --transcribed: why the evidence is not committed")
    p.set_defaults(func=_reference)
    p = sub.add_parser("standins", help="write stand-in inputs (every manifest input in its real format, cut "
                                        "small) into a mirror folder, with their manifest and a config overlay")
    p.add_argument("out", help="the mirror folder to write (inputs.mirror of the overlay)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--inputs", nargs="*", help="manifest inputs to write (default: all that have a stand-in)")
    p.add_argument("--shared", default=str(Path(__file__).resolve().parents[2].parent / "shared" / "datasets"),
                   help="local copies of the real files whose first lines the stand-ins take")
    p.add_argument("--no-shared", action="store_true", help="seeded text only, no local copies")
    p.add_argument("--real-shapes", action="store_true",
                   help="checkpoints and WordPiece vocabularies at their real sizes (~1.2 GB) instead of shrunk")
    p.add_argument("--scale", type=int, default=1, help="lines, images and videos per split times this")
    p.add_argument("--video-seconds", type=float, default=10.0, help="length of each stand-in clip")
    p.set_defaults(func=_standins)
    p = sub.add_parser("rehearsal-report", help="each job of a run (its benchmark files): wall time and peak memory "
                                                "against what the SLURM profile requests for it at full size")
    p.add_argument("run_dir", help="the run folder (snakemake's --directory), e.g. of `make rehearsal`")
    p.add_argument("--configfile", nargs="+", help="site overlays of the full run, merged on top of config/config.yaml")
    p.add_argument("--repo", help="the repository (default: the working directory)")
    p.add_argument("--slowest", type=int, default=15, help="how many of the slowest jobs to list")
    p.add_argument("--out", help="also write the evidence here (report.tsv, summary.json), e.g. reference/rehearsal")
    p.set_defaults(func=_rehearsal_report)
    p = sub.add_parser("docs", help="write the results pages (docs/results/) and every generated block of "
                                    "README.md and docs/ from the reference folders")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page or block differs")
    p.add_argument("--repo", help="the repository (default: the working directory)")
    p.set_defaults(func=_docs)
    args = parser.parse_args(argv)
    try:
        if getattr(args, "configfile", None):
            _targets_after_configfile(args, {"check": "items", "check-config": "items", "list": "paper"}.get(
                args.verb, "targets"))
        return args.func(args)
    except (DataError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
