"""Word alignment: fast_align (Dyer, Chahuneau and Smith 2013) through its maintained binding
``systran-align`` (PyPI), symmetrised; gold alignments and the alignment error rate.

The alignment stage of the DAG (``workflow/rules/align.smk``) runs in two steps:

- :func:`learn_alignment`: fast_align's forward (source -> target) and backward
  (target -> source) models on a paper's training text, ``iterations`` EM passes with the
  diagonal prior (fast_align's ``-d -o -v`` are ``favor_diagonal``, ``optimize_tension``,
  ``variational_bayes``). fast_align's own report of every iteration (log-likelihood,
  cross-entropy, perplexity) goes to the log.
- :func:`align_files`: both models on one split; each sentence pair gets the symmetrised
  links (``systran-align`` intersects the two directional alignments and grows them with
  ``grow-diag-final-and``, as Moses' ``symal``), written in the Pharaoh format fast_align
  writes (``"0-0 1-2 ..."``, source index first), and the sum of the forward and backward
  log-probabilities of the split goes to the log.

Text is aligned as the model reads it (the recipe's tokens, or subwords where the recipe has
them), so link ``i-j`` names source token ``i`` and target token ``j`` of the model's input.

Gold alignments (the grounded generator's ``align/{split}.{a}-{b}.gold``) mark sure links
``i-j`` and possible links ``i?j``; :func:`aer` is Och and Ney (2003)'s alignment error rate
``1 - (|A & S| + |A & P|) / (|A| + |S|)`` with ``S`` (sure) a subset of ``P`` (sure and
possible), pooled over the corpus.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..io import DataError, atomic_write, read_lines

log = logging.getLogger(__name__)

_LINK = re.compile(r"^(\d+)([-?])(\d+)$")


def _binding():
    try:
        import systran_align
    except ImportError as err:  # pragma: no cover - a dependency of the package
        raise ImportError("word alignment needs the fast_align binding systran-align: pip install systran-align") from err
    return systran_align


def _check_parallel(src: Path, tgt: Path) -> tuple[list[str], list[str]]:
    s, t = read_lines(src), read_lines(tgt)
    if len(s) != len(t):
        raise DataError(tgt, f"has {len(t)} lines but {src} has {len(s)}", "align parallel files of one split")
    return s, t


class _CaptureStderr:
    """Everything written to file descriptor 2 (C++ code included) while inside, as ``text``."""

    def __enter__(self):
        self._tmp = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(2)
        os.dup2(self._tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._tmp.seek(0)
        self.text = self._tmp.read().decode("utf-8", errors="replace")
        self._tmp.close()
        return False


def learn_alignment(
    src: Path,
    tgt: Path,
    fwd_out: Path,
    bwd_out: Path,
    iterations: int = 5,
    favor_diagonal: bool = True,
    optimize_tension: bool = True,
    variational_bayes: bool = False,
) -> dict:
    """fast_align's forward and backward models on the parallel files ``src``/``tgt``
    (``fwd_out``, ``bwd_out``: systran-align's probability tables). Returns the log-likelihood,
    cross-entropy and perplexity of the last iteration of each direction, as fast_align reports
    them (also logged, with every iteration's report)."""
    s, t = _check_parallel(Path(src), Path(tgt))
    if not s:
        raise DataError(src, "no sentences to learn an alignment model from", "check the training split")
    sa = _binding()
    Path(fwd_out).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(fwd_out).parent) as tmp:
        corpus = Path(tmp) / "corpus.txt"
        with corpus.open("w", encoding="utf-8") as fh:
            for a, b in zip(s, t):
                fh.write(f"{a.strip()} ||| {b.strip()}\n")
        fwd_tmp, bwd_tmp = Path(tmp) / "fwd", Path(tmp) / "bwd"
        with _CaptureStderr() as cap:
            sa.generate_alignment_probabilities(str(corpus), str(fwd_tmp), str(bwd_tmp), verbose=True,
                                                iterations=int(iterations), favor_diagonal=bool(favor_diagonal),
                                                optimize_tension=bool(optimize_tension),
                                                variational_bayes=bool(variational_bayes))
        os.replace(fwd_tmp, fwd_out)
        os.replace(bwd_tmp, bwd_out)
    for line in cap.text.splitlines():
        if line.strip() and not set(line.strip()) <= {"."}:
            log.info("fast_align: %s", line.rstrip())
    summary = {"sentences": len(s), "iterations": int(iterations), **_final_report(cap.text)}
    log.info("alignment models %s, %s from %d sentence pairs: %s", fwd_out, bwd_out, len(s), summary)
    return summary


def _final_report(text: str) -> dict:
    """The last log-likelihood / cross-entropy / perplexity of each direction in fast_align's report
    (it trains the forward model first, then the backward one)."""
    blocks = re.split(r"conditional probabilities:", text)
    out = {}
    for name, block in zip(("forward", "backward"), blocks):
        for key, pattern in (("log_likelihood", r"log_e likelihood:\s*(\S+)"), ("cross_entropy", r"cross entropy:\s*(\S+)"),
                             ("perplexity", r"perplexity:\s*(\S+)")):
            values = re.findall(pattern, block)
            if values:
                out[f"{name}_{key}"] = float(values[-1])
    return out


def align_files(fwd: Path, bwd: Path, src: Path, tgt: Path, out: Path, batch_size: int = 10000) -> dict:
    """Symmetrised links of every sentence pair of ``src``/``tgt`` with the models of
    :func:`learn_alignment`, one Pharaoh line per pair in ``out``; returns (and logs) the summed
    forward ``log p(tgt | src)`` and backward ``log p(src | tgt)`` of the split."""
    s, t = _check_parallel(Path(src), Path(tgt))
    for path in (fwd, bwd):
        if not Path(path).is_file():
            raise DataError(path, "alignment model does not exist", "run the learn_alignment rule")
    aligner = _binding().Aligner(str(fwd), str(bwd))
    lines, fwd_lp, bwd_lp, links = [], 0.0, 0.0, 0
    for start in range(0, len(s), batch_size):
        src_tok = [line.split() for line in s[start : start + batch_size]]
        tgt_tok = [line.split() for line in t[start : start + batch_size]]
        for a, b, res in zip(src_tok, tgt_tok, aligner.align_batch(src_tok, tgt_tok)):
            pairs = sorted(set(res["alignments"])) if a and b else []
            lines.append(" ".join(f"{i}-{j}" for i, j in pairs))
            links += len(pairs)
            fwd_lp += float(res["forward_log_prob"])
            bwd_lp += float(res["backward_log_prob"])
    with atomic_write(out) as fh:
        fh.write("".join(line + "\n" for line in lines))
    summary = {"sentences": len(lines), "links": links, "forward_log_likelihood": round(fwd_lp, 3),
               "backward_log_likelihood": round(bwd_lp, 3)}
    log.info("aligned %s / %s -> %s: %s", src, tgt, out, summary)
    return summary


# ----------------------------------------------------------------------------- gold and AER
def parse_links(line: str) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """``"0-0 1?2"`` -> (sure links, possible links) with the sure ones in both sets."""
    sure, possible = set(), set()
    for item in line.split():
        m = _LINK.match(item)
        if not m:
            raise ValueError(f"not an alignment link: {item!r} (expected i-j or i?j)")
        link = (int(m.group(1)), int(m.group(3)))
        possible.add(link)
        if m.group(2) == "-":
            sure.add(link)
    return sure, possible


def aer(hypotheses: Iterable[str], gold: Iterable[str]) -> dict:
    """Alignment error rate of Pharaoh ``hypotheses`` against ``gold`` lines (sure ``i-j``,
    possible ``i?j``), pooled over the corpus; also precision (against P) and recall (of S)."""
    a_s = a_p = n_a = n_s = 0
    n = 0
    for hyp_line, gold_line in zip(hypotheses, gold, strict=True):
        hyp = parse_links(hyp_line)[1]
        sure, possible = parse_links(gold_line)
        a_s += len(hyp & sure)
        a_p += len(hyp & possible)
        n_a += len(hyp)
        n_s += len(sure)
        n += 1
    if n_a + n_s == 0:
        raise ValueError("no links in the hypotheses nor sure links in the gold alignment")
    return {"aer": 1.0 - (a_s + a_p) / (n_a + n_s), "precision": a_p / n_a if n_a else 0.0,
            "recall": a_s / n_s if n_s else 0.0, "sentences": n}


def aer_files(hypothesis: Path, gold: Path) -> dict:
    """:func:`aer` of two files with one line per sentence."""
    hyp, ref = read_lines(hypothesis), read_lines(gold)
    if len(hyp) != len(ref):
        raise DataError(hypothesis, f"has {len(hyp)} lines, the gold alignment {gold} has {len(ref)}",
                        "align the same split the gold alignment covers")
    return aer(hyp, ref)


def reverse_links(line: str) -> str:
    """A Pharaoh line with source and target swapped (``i-j`` -> ``j-i``), e.g. for the backward model."""
    sure, possible = parse_links(line)
    return " ".join(f"{j}{'-' if (i, j) in sure else '?'}{i}" for i, j in sorted(possible, key=lambda x: (x[1], x[0])))
