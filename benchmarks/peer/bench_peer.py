"""Ours against a peer toolkit (JoeyNMT 2.3.0) on real Multi30k En->De text: same data, sizes, threads.

    make bench-peer        # installs the peer into .venv-peer (benchmarks/peer/setup_peer.sh), then runs this
    python benchmarks/peer/bench_peer.py [--budget-min 4] [--repeats 3] [--threads 2] [--work DIR]
                                         [--models gru transformer] [--beams 1 5]
    python benchmarks/peer/bench_peer.py --budget-min 40 --repeats 1     # the full run (~3 h)

Data, the same files for both toolkits: Multi30k task 1 train / val / test2016 En-De from
``../shared/datasets`` (``--datasets``), lowercased, punctuation-normalised and Moses-tokenised
by our text recipe (``lc.norm.tok``), then joint BPE with 10,000 merges (subword-nmt) learned on
the training text of both languages. Each toolkit builds its own vocabulary from the segmented
training text (every type; min frequency 1), drops training pairs over 80 tokens, and decodes
the segmented test source.

Models (``--models``), each of the same sizes in both toolkits:

- ``gru`` (``GRU`` below): bi-GRU 512 encoder, GRU 512 decoder with additive attention,
  embeddings 256, dropout 0.3, Adam 1e-3, clip 1.0, batches of 64 sentences, loss per target
  token. ``DIFFERENCES`` lists where the two architectures differ.
- ``transformer`` (``TRANSFORMER``): 3+3 layers x 256, 4 heads, FFN 1024, pre-LN, tied target
  embeddings and output layer, dropout 0.1, label smoothing 0.1, Adam (0.9, 0.98) with linear
  warm-up over 1,000 updates to 5e-4 and inverse square root decay, clip 1.0, batches of 64
  sentences. Ours is the shared ``transformer.nmt``; ``DIFFERENCES_TRANSFORMER`` lists the
  differences. Ours also decodes greedily *without* its cache (every step recomputes the
  decoder over the whole prefix, as JoeyNMT does): the outputs must be identical, and the rate
  shows what the cache buys.

Each repeat runs both toolkits one after the other (ours first in odd repeats, the peer first in
even ones), never at the same time. For each toolkit and repeat:

- train for ``--budget-min`` minutes of wall clock from process start (start-up, vocabulary and
  periodic validation count, as they do for a user), then stop it with its own stop signal
  (ours: SIGTERM, which saves ``.last.pt``; JoeyNMT: SIGINT, which saves ``latest.ckpt``).
  Training target tok/s is the median of the toolkit's own periodic rates (every 50 updates,
  the first interval dropped), both counting non-padding target tokens with </s>;
- decode test2016 (1,000 sentences) with the final weights, greedy and beam 5 (``--beams``), 64
  sentences a batch. Sentences/s is the toolkit's own timing of its generation loop (ours: the translate
  stats; JoeyNMT: its "Generation took" line), so model loading is left out for both;
- BLEU for both with our scorer: subwords merged, sacreBLEU with tokenize none against the
  tokenised lowercased reference;
- peak RSS of every process (``wait4``; the larger of training and decoding is reported);
- CPU use of training and of each decoding: CPU seconds (user + system, ``wait4``) / wall
  seconds / threads, printed beside the rates so that ratios can be compared across machines
  (a rate that falls at the same CPU use: a slower machine; a use well under 1: threads wait).

It prints min / median / max for both toolkits and the ratio of medians (ours / peer; for RSS,
lower is better), and writes everything, each run included, to ``results/benchmarks/peer.json``.
Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SPLITS = {"train": "train", "val": "val", "test": "test_2016_flickr"}  # our name -> Multi30k file stem
LANGS = ("en", "de")
BPE_MERGES = 10000
MAX_LEN = 80
LOG_EVERY = 50
PEER_VALIDATE_EVERY = 450  # ~one epoch (454 batches of 64), as ours validates; JoeyNMT wants a multiple of LOG_EVERY

# The matched GRU. Ours is the conditional GRU of Calixto et al.'s text-only NMT
# (models/doubly_attentive.py); JoeyNMT's is its recurrent encoder-decoder with Bahdanau attention.
GRU = {"emb": 256, "enc": 512, "dec": 512, "att": 512, "dropout": 0.3, "lr": 1e-3, "clip": 1.0, "batch": 64}
DIFFERENCES = [
    "decoder cell: ours is a conditional GRU (GRU over the previous word, attention, second GRU over the "
    "context; Nematus/dl4mt); JoeyNMT's is one GRU with input feeding (previous attentional vector in the input)",
    "output: ours reads out tanh(W s + W y_prev + W c) in the embedding size (256) before the vocabulary "
    "projection; JoeyNMT projects its 512-d attentional vector tanh(W [s; c])",
    "decoder start state: ours tanh(W mean(h)); JoeyNMT's 'bridge' tanh(W h_last)",
    "initialisation: ours N(0, 0.1^2) for non-recurrent matrices, orthogonal recurrent "
    "(config/cpu_multi30k.yaml); JoeyNMT its defaults (Xavier uniform, normal embeddings)",
    "dropout 0.3: ours variational on the encoder input/output and the decoder's recurrent products, plus "
    "before the output; JoeyNMT on embeddings, between layers and before the attentional layer",
    "learning rate: constant 1e-3 in both (JoeyNMT 2.3.0 needs a scheduler: 'exponential' with factor 1.0; "
    "its 'plateau' fails on torch 2.14)",
    "beam length normalisation: ours score / length^1.0; JoeyNMT GNMT's ((5 + length) / 6)^1.0",
    "length bound: ours min(80, 2n + 10) for n source tokens; JoeyNMT 1.5x the longest source of the batch",
]


# The matched Transformer: ours is the shared transformer.nmt (models/transformer.py).
TRANSFORMER = {"layers": 3, "d_model": 256, "heads": 4, "ff": 1024, "dropout": 0.1, "label_smoothing": 0.1,
               "lr": 5e-4, "warmup": 1000, "betas": [0.9, 0.98], "clip": 1.0, "batch": 64}
DIFFERENCES_TRANSFORMER = [
    "layer norm: pre-LN in both (JoeyNMT's default; ours `pre_norm: true`), with a final LayerNorm on both stacks",
    "dropout 0.1 in both on the embeddings, the attention weights, after the FFN's ReLU and on each sub-layer "
    "output",
    "initialisation: ours Xavier-uniform matrices and N(0, d^-1/2) embeddings (fairseq); JoeyNMT Xavier-uniform "
    "everywhere, embeddings included (its transformer configs' initializer)",
    "label smoothing: ours fairseq's (epsilon / (V - 1) on every other token); JoeyNMT epsilon / (V - 2) "
    "(padding excluded)",
    "learning rate: both linear warm-up over 1,000 updates to 5e-4, then lr x sqrt(1000 / step); JoeyNMT floors it "
    "at learning_rate_min (1e-8 here)",
    "decoding: ours caches every layer's keys and values (one new position per step); JoeyNMT recomputes the "
    "decoder over the whole prefix at every step",
    "length bound: ours min(80, 2n + 10) for n source tokens; JoeyNMT 1.5x the longest source of the batch",
]


def joey_config(data: Path, model_dir: Path, threads: int, mode: str, beam: int = 1,
                load_model: Path | None = None, model: str = "gru") -> dict:
    """JoeyNMT 2.3.0 config of the matched ``model`` (gru or transformer); ``mode`` train or test."""
    side = {"level": "word", "lowercase": False, "normalize": False, "max_length": MAX_LEN, "voc_min_freq": 1,
            "tokenizer_cfg": {"pretokenizer": "none"}}
    src, trg = dict(side, lang="en"), dict(side, lang="de")
    data_cfg = {"train": str(data / "train.bpe"), "dev": str(data / "val.bpe"), "dataset_type": "plain",
                "src": src, "trg": trg}
    if mode == "test":
        data_cfg = {"test": str(data / "test.bpe"), "dataset_type": "plain",
                    "src": dict(src, voc_file=str(model_dir / "src_vocab.txt")),
                    "trg": dict(trg, voc_file=str(model_dir / "trg_vocab.txt"))}
    if model == "transformer":
        return _joey_transformer(data_cfg, model_dir, beam, load_model)
    emb = {"embedding_dim": GRU["emb"], "scale": False, "dropout": GRU["dropout"]}
    return {
        "name": "peer_gru", "joeynmt_version": "2.3.0", "model_dir": str(model_dir), "use_cuda": False,
        "random_seed": 1, "data": data_cfg,
        "testing": {"beam_size": beam, "beam_alpha": 1.0, "batch_size": 64, "batch_type": "sentence",
                    "max_output_length": MAX_LEN, "eval_metrics": ["bleu"], "sacrebleu_cfg": {"tokenize": "none"},
                    **({"load_model": str(load_model)} if load_model else {})},
        "training": {"optimizer": "adam", "learning_rate": GRU["lr"], "learning_rate_min": 1e-8,
                     "clip_grad_norm": GRU["clip"], "batch_size": GRU["batch"], "batch_type": "sentence",
                     "normalization": "tokens",
                     # 2.3.0 refuses a config without a scheduler, and its 'plateau' passes `verbose`, which
                     # torch 2.14 no longer takes: exponential decay by a factor 1.0 = constant lr
                     "scheduling": "exponential", "decrease_factor": 1.0, "epochs": 1000, "shuffle": True,
                     "validation_freq": PEER_VALIDATE_EVERY, "logging_freq": LOG_EVERY, "eval_metrics": ["bleu"],
                     "early_stopping_metric": "bleu", "keep_best_ckpts": 1, "overwrite": True,
                     "print_valid_sents": [0]},
        "model": {
            "encoder": {"type": "recurrent", "rnn_type": "gru", "hidden_size": GRU["enc"], "bidirectional": True,
                        "num_layers": 1, "dropout": GRU["dropout"], "embeddings": emb},
            "decoder": {"type": "recurrent", "rnn_type": "gru", "hidden_size": GRU["dec"], "num_layers": 1,
                        "attention": "bahdanau", "input_feeding": True, "init_hidden": "bridge",
                        "dropout": GRU["dropout"], "hidden_dropout": GRU["dropout"], "embeddings": emb},
        },
    }


def _joey_transformer(data_cfg: dict, model_dir: Path, beam: int, load_model: Path | None) -> dict:
    t = TRANSFORMER
    emb = {"embedding_dim": t["d_model"], "scale": True, "dropout": t["dropout"]}
    side = {"type": "transformer", "num_layers": t["layers"], "num_heads": t["heads"], "hidden_size": t["d_model"],
            "ff_size": t["ff"], "dropout": t["dropout"], "layer_norm": "pre", "embeddings": emb}
    return {
        "name": "peer_transformer", "joeynmt_version": "2.3.0", "model_dir": str(model_dir), "use_cuda": False,
        "random_seed": 1, "data": data_cfg,
        "testing": {"beam_size": beam, "beam_alpha": 1.0, "batch_size": 64, "batch_type": "sentence",
                    "max_output_length": MAX_LEN, "eval_metrics": ["bleu"], "sacrebleu_cfg": {"tokenize": "none"},
                    **({"load_model": str(load_model)} if load_model else {})},
        "training": {"optimizer": "adam", "adam_betas": t["betas"], "learning_rate": t["lr"],
                     "learning_rate_min": 1e-8, "scheduling": "warmupinversesquareroot",
                     "learning_rate_warmup": t["warmup"], "label_smoothing": t["label_smoothing"],
                     "clip_grad_norm": t["clip"], "batch_size": t["batch"], "batch_type": "sentence",
                     "normalization": "tokens", "epochs": 1000, "shuffle": True,
                     "validation_freq": PEER_VALIDATE_EVERY, "logging_freq": LOG_EVERY, "eval_metrics": ["bleu"],
                     "early_stopping_metric": "bleu", "keep_best_ckpts": 1, "overwrite": True,
                     "print_valid_sents": [0]},
        "model": {"initializer": "xavier_uniform", "embed_initializer": "xavier_uniform", "bias_initializer": "zeros",
                  "tied_softmax": True, "encoder": side, "decoder": dict(side)},
    }


def ours_model_config(model: str = "gru") -> dict:
    if model == "transformer":
        t = TRANSFORMER
        return {"d_model": t["d_model"], "n_heads": t["heads"], "d_ff": t["ff"], "enc_layers": t["layers"],
                "dec_layers": t["layers"], "dropout": t["dropout"], "attention_dropout": t["dropout"],
                "activation_dropout": t["dropout"],  # JoeyNMT's feed-forward drops after the ReLU too
                "label_smoothing": t["label_smoothing"], "pre_norm": True, "tie_embeddings": True}
    return {"emb_dim": GRU["emb"], "enc_dim": GRU["enc"], "dec_dim": GRU["dec"], "att_dim": GRU["att"],
            "init_std": 0.1, "dropout_enc": GRU["dropout"], "dropout_dec": GRU["dropout"],
            "dropout_out": GRU["dropout"]}


def ours_train_config(model: str = "gru") -> dict:
    base = {"max_len": MAX_LEN, "log_every": LOG_EVERY, "max_epochs": 1000, "patience": 1000}
    if model == "transformer":
        t = TRANSFORMER
        return dict(base, optimizer="adam", lr=t["lr"], adam_betas=t["betas"], lr_schedule="inverse_sqrt",
                    warmup_steps=t["warmup"], clip_norm=t["clip"], batch_size=t["batch"])
    return dict(base, optimizer="adam", lr=GRU["lr"], clip_norm=GRU["clip"], batch_size=GRU["batch"])


OURS_MODEL = {"gru": "doubly_attentive.nmt", "transformer": "transformer.nmt"}


# --- data ------------------------------------------------------------------------------------


def prepare(datasets: Path, data: Path) -> None:
    """Tokenise, learn joint BPE and segment every split once; both toolkits read the result."""
    from mmt_repro.text.bpe import apply_bpe, learn_bpe
    from mmt_repro.text.recipes import prepare_text
    from mmt_repro.text.vocab import build_vocab_file

    raw = datasets / "multi30k" / "task1" / "raw"
    needed = [raw / f"{stem}.{lang}.gz" for stem in SPLITS.values() for lang in LANGS]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        sys.exit(f"bench_peer: missing Multi30k input(s) {', '.join(missing)}; put ../shared/datasets beside "
                 "the repository or pass --datasets DIR (a folder with multi30k/task1/raw/*.gz)")
    done = data / ".prepared"
    if done.exists():
        return
    data.mkdir(parents=True, exist_ok=True)
    for split, stem in SPLITS.items():
        for lang in LANGS:
            prepare_text(raw / f"{stem}.{lang}.gz", data / f"{split}.tok.{lang}", "lc.norm.tok", lang)
    learn_bpe([data / f"train.tok.{lang}" for lang in LANGS], data / "bpe.codes", BPE_MERGES)
    for split in SPLITS:
        for lang in LANGS:
            apply_bpe(data / "bpe.codes", data / f"{split}.tok.{lang}", data / f"{split}.bpe.{lang}")
    for lang in LANGS:
        build_vocab_file([data / f"train.bpe.{lang}"], data / f"vocab.{lang}")
    done.touch()


# --- processes -------------------------------------------------------------------------------


def env_for(threads: int) -> dict:
    env = dict(os.environ)
    env.update({"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"})
    return env


def run(cmd: list[str], log: Path, threads: int, stop_after_s: float | None = None,
        stop_signal: int = signal.SIGINT, ok_codes: tuple[int, ...] = (0,)) -> dict:
    """Run ``cmd`` with stdout+stderr to ``log``; optionally stop it with ``stop_signal`` after
    ``stop_after_s``. Returns wall seconds, peak RSS (MiB), CPU seconds (user + system) of the
    process and its CPU use (CPU seconds / wall / threads)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log, "w") as out:
        # SIGINT back to its default in the child: a benchmark started in the background (`cmd &`,
        # nohup, CI) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt, so
        # JoeyNMT would not stop at the budget.
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env_for(threads), cwd=REPO,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        stopped = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if stop_after_s is not None and not stopped and time.monotonic() - started >= stop_after_s:
                proc.send_signal(stop_signal)
                stopped = True
            time.sleep(0.2)
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code not in ok_codes:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-30:])
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed with exit code {code}; log {log}:\n{tail}")
    wall = time.monotonic() - started
    cpu = usage.ru_utime + usage.ru_stime
    # CPU use = CPU seconds / wall seconds / threads: 1.0 keeps every thread busy the whole run.
    # Comparable across machines of one type: a rate that drops while the use stays says the
    # machine is slower; a use well under 1 says time goes to waiting or to serial work.
    return {"wall_s": round(wall, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "cpu_s": round(cpu, 1),
            "cpu_use": round(cpu / max(wall, 1e-9) / threads, 3)}


def median_rate(values: list[float]) -> float:
    """Median of the logged rates without the first (warm-up) one; a budget too short for two
    logs keeps the one it has."""
    if not values:
        raise RuntimeError("no logged training rate: raise --budget-min")
    return statistics.median(values[1:] or values)


# --- ours ------------------------------------------------------------------------------------


def ours_train(data: Path, out: Path, args, model: str = "gru") -> dict:
    cmd = [sys.executable, str(HERE / "run_ours.py"), "train", "--data", str(data), "--out", str(out),
           "--threads", str(args.threads), "--model", OURS_MODEL[model],
           "--model-config", json.dumps(ours_model_config(model)),
           "--train-config", json.dumps(ours_train_config(model))]
    info = run(cmd, out / "train.log", args.threads, args.budget_min * 60, signal.SIGTERM, ok_codes=(0, 75))
    rates = [float(m) for m in re.findall(r" ([0-9.]+) tok/s", (out / "train.log").read_text())]
    # each of our logged rates covers the epoch so far (JoeyNMT's: the last 50 updates)
    steps = [int(m) for m in re.findall(r"step (\d+) train_loss", (out / "train.log").read_text())]
    info.update(tok_s=median_rate(rates), updates=max(steps, default=0))
    return info


def ours_decode(data: Path, out: Path, beam: int, args, model: str = "gru", cache: bool = True) -> dict:
    hyp = out / (f"test.beam{beam}.txt" if cache else "test.nocache.txt")
    action = "decode" if cache else "decode-nocache"
    cmd = [sys.executable, str(HERE / "run_ours.py"), action, "--data", str(data), "--out", str(out),
           "--threads", str(args.threads), "--beam", str(beam), "--hyp", str(hyp)]
    info = run(cmd, out / f"{hyp.stem}.log", args.threads)
    stats = json.loads(hyp.with_suffix(".stats.json").read_text())
    info.update(sent_s=stats["sentences_per_s"], hyps=hyp.read_text().splitlines(),
                cut_at_max_len=stats["cut_at_max_len"])
    return info


# --- peer ------------------------------------------------------------------------------------


def peer_train(data: Path, out: Path, args, model: str = "gru") -> dict:
    import yaml

    model_dir = out / "model"
    out.mkdir(parents=True, exist_ok=True)
    cfg = out / "train.yaml"
    cfg.write_text(yaml.safe_dump(joey_config(data, model_dir, args.threads, "train", model=model)))
    cmd = [str(args.peer_python), "-m", "joeynmt", "train", str(cfg), "--skip-test"]
    info = run(cmd, out / "train.log", args.threads, args.budget_min * 60, signal.SIGINT)
    text = (out / "train.log").read_text()
    rates = [float(m) for m in re.findall(r"Tokens per Sec:\s+([0-9.]+)", text)]
    steps = [int(m) for m in re.findall(r"Step:\s+(\d+)", text)]
    info.update(tok_s=median_rate(rates), updates=max(steps, default=0))
    return info


def peer_decode(data: Path, out: Path, beam: int, args, model: str = "gru") -> dict:
    import yaml

    from mmt_repro.text.bpe import merge_bpe

    model_dir = out / "model"
    cfg = out / f"test.beam{beam}.yaml"
    cfg.write_text(yaml.safe_dump(joey_config(data, model_dir, args.threads, "test", beam, model_dir / "latest.ckpt",
                                              model=model)))
    prefix = out / f"joey.beam{beam}"
    cmd = [str(args.peer_python), "-m", "joeynmt", "test", str(cfg), "--output-path", str(prefix)]
    log = out / f"decode.beam{beam}.log"
    info = run(cmd, log, args.threads)
    took = re.findall(r"Generation took\s+([0-9.]+)\[sec\]", log.read_text())
    if not took:
        raise RuntimeError(f"no 'Generation took' line in {log}")
    hyps = [merge_bpe(line) for line in Path(f"{prefix}.test").read_text().splitlines()]
    info.update(sent_s=round(len(hyps) / float(took[-1]), 1), hyps=hyps)
    return info


TOOLKITS = {"ours": (ours_train, ours_decode), "peer": (peer_train, peer_decode)}


# --- report ----------------------------------------------------------------------------------


def one_run(name: str, data: Path, out: Path, refs: list[str], args, model: str = "gru") -> dict:
    from mmt_repro.metrics.mt import corpus_scores

    train_fn, decode_fn = TOOLKITS[name]
    print(f"  {model} {name}: training {args.budget_min:g} min ...", flush=True)
    result = {"train": train_fn(data, out, args, model)}
    for beam in args.beams:
        d = decode_fn(data, out, beam, args, model)
        hyps = d.pop("hyps")
        d["bleu"] = round(corpus_scores(hyps, [refs], metrics=("bleu",), tokenize="none")["bleu"]["value"], 2)
        # decoding speed depends on how long the outputs are: their length beside the reference's
        d["len_ratio"] = round(sum(len(h.split()) for h in hyps) / sum(len(r.split()) for r in refs), 3)
        result[f"beam{beam}"] = d
        if beam == 1 and name == "ours" and model == "transformer":  # the same greedy search without the cache
            nc = ours_decode(data, out, 1, args, model, cache=False)
            nc_hyps = nc.pop("hyps")
            nc["identical_to_cached"] = sum(a == b for a, b in zip(nc_hyps, hyps))
            nc["sentences"] = len(hyps)
            result["nocache"] = nc
    result["peak_rss_mib"] = max(v["peak_rss_mib"] for v in result.values())
    t = result["train"]
    shown = "; ".join(f"beam {b} {result[f'beam{b}']['sent_s']} sent/s BLEU {result[f'beam{b}']['bleu']}"
                      for b in args.beams)
    if "nocache" in result:
        shown += (f"; greedy without cache {result['nocache']['sent_s']} sent/s, "
                  f"{result['nocache']['identical_to_cached']}/{len(refs)} identical")
    print(f"  {model} {name}: {t['tok_s']:.0f} tok/s (CPU use {t['cpu_use']:.2f}), {t['updates']} updates; {shown}; "
          f"peak RSS {result['peak_rss_mib']:.0f} MiB", flush=True)
    return result


def rows_for(beams: list[int], model: str) -> list:
    """label, getter, higher is better (None: neither)."""
    rows = [("training target tok/s", lambda r: r["train"]["tok_s"], True),
            ("training CPU use", lambda r: r["train"].get("cpu_use", float("nan")), None),
            ("updates in the budget", lambda r: r["train"]["updates"], True)]
    for b in beams:
        name = "greedy" if b == 1 else f"beam-{b}"
        rows.append((f"{name} decoding sent/s", lambda r, b=b: r[f"beam{b}"]["sent_s"], True))
        rows.append((f"{name} decoding CPU use", lambda r, b=b: r[f"beam{b}"].get("cpu_use", float("nan")), None))
    if 1 in beams and model == "transformer":
        rows.append(("greedy, ours uncached sent/s", lambda r: r.get("nocache", r["beam1"])["sent_s"], True))
    for b in beams:  # decoding speed depends on the output length (an early model runs to its bound)
        name = "greedy" if b == 1 else f"beam-{b}"
        rows.append((f"{name} output/ref length", lambda r, b=b: r[f"beam{b}"]["len_ratio"], None))
    for b in beams:
        name = "greedy" if b == 1 else f"beam {b}"
        rows.append((f"test2016 BLEU, {name}", lambda r, b=b: r[f"beam{b}"]["bleu"], True))
    rows.append(("peak RSS MiB", lambda r: r["peak_rss_mib"], False))
    return rows


ROWS = rows_for([1, 5], "gru")


def spread(values: list[float]) -> str:
    def fmt(v: float) -> str:
        return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"

    return " / ".join(fmt(v) for v in (min(values), statistics.median(values), max(values)))


def table(runs: dict, row_specs=None) -> list[dict]:
    rows = []
    for label, get, _ in row_specs or ROWS:
        ours, peer = [get(r) for r in runs["ours"]], [get(r) for r in runs["peer"]]
        ratio = statistics.median(ours) / statistics.median(peer) if statistics.median(peer) else float("nan")
        rows.append({"measure": label, "ours": ours, "peer": peer, "ratio_ours_over_peer": round(ratio, 2)})
    return rows


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-min", type=float, default=4.0, help="training wall clock per toolkit and repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--datasets", type=Path, default=REPO.parent / "shared" / "datasets")
    ap.add_argument("--work", type=Path, default=REPO / "results" / "benchmarks" / "peer_work")
    ap.add_argument("--json", type=Path, default=REPO / "results" / "benchmarks" / "peer.json")
    ap.add_argument("--only", choices=tuple(TOOLKITS), help="run one toolkit (debugging; no table)")
    ap.add_argument("--peer-python", type=Path, default=REPO / ".venv-peer" / "bin" / "python")
    ap.add_argument("--models", nargs="+", choices=("gru", "transformer"), default=["gru", "transformer"],
                    help="matched models to compare (default both)")
    ap.add_argument("--beams", nargs="+", type=int, default=[1, 5], help="beam sizes to decode with (1: greedy)")
    args = ap.parse_args()
    if not args.peer_python.exists():
        sys.exit(f"bench_peer: no peer interpreter at {args.peer_python}; run benchmarks/peer/setup_peer.sh "
                 "(or make bench-peer, which runs it) first")
    data = args.work / "data"
    prepare(args.datasets, data)
    refs = (data / "test.tok.de").read_text().splitlines()
    runs = {m: {"ours": [], "peer": []} for m in args.models}
    for model in args.models:
        for rep in range(1, args.repeats + 1):
            order = ("ours", "peer") if rep % 2 else ("peer", "ours")
            print(f"{model}: repeat {rep}/{args.repeats} ({' then '.join(order)})", flush=True)
            for name in order:
                if args.only and name != args.only:
                    continue
                runs[model][name].append(one_run(name, data, args.work / f"{model}.{name}.r{rep}", refs, args, model))
    if args.only:
        print(json.dumps(runs, indent=1))
        return
    tables = {}
    for model in args.models:
        rows = table(runs[model], rows_for(args.beams, model))
        tables[model] = rows
        print(f"\n{model}: {os.cpu_count()} CPUs, {args.threads} threads, {args.budget_min:g}-min training budget, "
              f"{args.repeats} repeats, commit {commit()}")
        print(f"{'measure':30s} {'ours min / med / max':>24s} {'peer min / med / max':>24s} {'ours/peer':>9s}")
        for row in rows:
            ours, peer, ratio = spread(row["ours"]), spread(row["peer"]), row["ratio_ours_over_peer"]
            print(f"{row['measure']:30s} {ours:>24s} {peer:>24s} {ratio:>9.2f}")
        if model == "transformer" and 1 in args.beams:
            same = [r["nocache"]["identical_to_cached"] for r in runs[model]["ours"]]
            print(f"ours greedy with and without the cache: {min(same)}-{max(same)} of {len(refs)} outputs identical")
    report = {
        "date": datetime.date.today().isoformat(), "commit": commit(),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "threads": args.threads, "budget_min": args.budget_min, "repeats": args.repeats,
        "beams": args.beams, "peer": "joeynmt 2.3.0",
        "models": {m: {"config": GRU if m == "gru" else TRANSFORMER,
                       "differences": DIFFERENCES if m == "gru" else DIFFERENCES_TRANSFORMER,
                       "table": tables[m], "runs": runs[m]} for m in args.models},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
