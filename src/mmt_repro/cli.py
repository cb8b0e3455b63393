"""``python -m mmt_repro <verb>``: the package's functions by hand, outside Snakemake.

Verbs: ``show`` (print a results table), ``models`` (list registered models),
``check-config`` (validate a config file, or several merged in order), ``translate``
(decode a file with a checkpoint), ``score`` (score a hypothesis file), ``config-docs`` (the
configuration reference, config/README.md, from config/schema.yaml).
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

    path = Path(args.table)
    if not path.exists():
        raise DataError(path, "table does not exist", "run the workflow first (make smoke)")
    print(format_table(pd.read_csv(path, sep="\t", keep_default_na=False)))
    return 0


def _models(args) -> int:  # noqa: ARG001
    from .models import available

    print("\n".join(available()))
    return 0


def _check_config(args) -> int:
    from .config import deep_update, load_yaml, validate_config

    merged: dict = {}
    for f in args.configs:
        merged = deep_update(merged, load_yaml(f))
    validate_config(merged, args.schema)
    print("ok")
    return 0


def _translate(args) -> int:
    from .decode.translate import translate

    info = translate(
        checkpoint=Path(args.checkpoint), src=Path(args.src), out=Path(args.out),
        src_vocab=Path(args.src_vocab), tgt_vocab=Path(args.tgt_vocab),
        features_npy=args.features_npy, features_index=args.features_index,
        decode={"beam_size": args.beam, "max_len": args.max_len}, subword=args.subword, device=args.device,
    )
    print(json.dumps(info))
    return 0


def _config_docs(args) -> int:
    from .config import schema_reference
    from .io import atomic_write

    text = schema_reference(args.schema)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    with atomic_write(args.out) as fh:
        fh.write(text)
    print(f"wrote {args.out}")
    return 0


def _score(args) -> int:
    from .io import read_lines
    from .metrics.mt import corpus_scores

    scores = corpus_scores(read_lines(args.hyp), [read_lines(r) for r in args.refs], tokenize=args.tokenize)
    print(json.dumps(scores, indent=1))
    return 0


def _plan(args) -> int:
    from .config import deep_update, load_yaml
    from .plan import Plan
    from .plan.cost import cost_plan, format_cost_plan

    config = load_yaml(Path("config/config.yaml"))
    for f in args.configfile or []:
        config = deep_update(config, load_yaml(Path(f)))
    plan = Plan(config, Path("."))
    report = cost_plan(plan, args.targets or plan.default_targets(), args.gpu)
    print(format_cost_plan(report, markdown=args.markdown))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mmt_repro", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("show", help="print a results table (e.g. results/tables/all.tsv)")
    p.add_argument("table")
    p.set_defaults(func=_show)
    p = sub.add_parser("models", help="list registered models")
    p.set_defaults(func=_models)
    p = sub.add_parser("check-config", help="validate config files merged in order")
    p.add_argument("configs", nargs="+")
    p.add_argument("--schema", default="config/schema.yaml")
    p.set_defaults(func=_check_config)
    p = sub.add_parser("translate", help="decode a BPE-segmented source file")
    for name in ("checkpoint", "src", "out", "src-vocab", "tgt-vocab"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--features-npy")
    p.add_argument("--features-index")
    p.add_argument("--beam", type=int, default=12)
    p.add_argument("--max-len", type=int, default=80)
    p.add_argument("--subword", default="none", choices=["none", "bpe", "wordpiece", "char"],
                   help="the target side's segmentation, merged back in the output")
    p.add_argument("--device", default="auto")
    p.set_defaults(func=_translate)
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
    p.add_argument("--gpu", default=None, help="benchmarks/calibration/<gpu>.json (default: h100; cpu on a CPU run)")
    p.add_argument("--markdown", action="store_true", help="a Markdown table")
    p.set_defaults(func=_plan)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (DataError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
