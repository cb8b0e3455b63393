"""Figures: our scores next to the papers', attention maps (Calixto et al. 2017, Fig. 2),
word F-score by training frequency (Hirasawa et al. 2019, Fig. 1), and beta-gate statistics.

Every plot is drawn with matplotlib's Agg backend and written twice, ``<name>.png`` and
``<name>.pdf``, each atomically (a failed job leaves no half-written figure). The functions
return the paths written.

Attention dumps are what :func:`mmt_repro.decode.translate.translate` writes with
``attention_out``: a ``torch.save`` list with one dict per sentence, holding
``alpha_src (T, S)`` (source attention per target step), and for models with images
``alpha_img (T, L)`` (attention over the ``L = 14 x 14`` res4f grid) and ``beta (T,)`` (the
gate of eq. 8). ``T`` counts the emitted tokens plus the ``<eos>`` step; ``S`` may include
padding columns (zero weight).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mmt_repro.io import DataError, atomic_path  # noqa: E402

#: The beta thresholds reported by :func:`beta_shares`.
BETA_THRESHOLDS = (0.5, 0.8)


def _save(fig, out_png: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``fig`` as PNG and as PDF next to it, each atomically; close the figure."""
    png = Path(out_png)
    if png.suffix.lower() != ".png":
        raise ValueError(f"out_png must end in .png, got {png}")
    pdf = png.with_suffix(".pdf")
    try:
        for path, fmt in ((png, "png"), (pdf, "pdf")):
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight")
    finally:
        plt.close(fig)
    return png, pdf


# --------------------------------------------------------------------------- scores vs paper


def plot_scores(table_tsv: str | os.PathLike, out_png: str | os.PathLike, title: str | None = None) -> tuple[Path, Path]:
    """Bar chart of ours (with the seed standard deviation) vs the paper's value.

    One panel per metric (metrics have different scales); in each, one pair of bars per row
    label, the label being the system plus whatever else varies in the table (language pair,
    test set, image condition). Reads a results table (``results/tables/<paper>/<table>.tsv``
    or ``all.tsv``): columns ``system, metric, ours, paper_value`` and optionally
    ``ours_std, pair, test_set, condition``. Missing values leave their bar out.
    """
    path = Path(table_tsv)
    if not path.exists():
        raise DataError(path, "results table does not exist", "re-run the make_table rule")
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    need = [c for c in ("system", "metric", "ours", "paper_value") if c not in df.columns]
    if need:
        raise DataError(path, f"results table lacks columns {need}", "plot a table written by make_table")
    if df.empty:
        raise DataError(path, "results table has no rows", "check that the score rules ran")
    for c in ("ours", "ours_std", "paper_value"):
        df[c] = pd.to_numeric(df[c], errors="coerce") if c in df.columns else math.nan
    varying = [c for c in ("paper", "pair", "test_set", "condition") if c in df.columns and df[c].nunique() > 1]
    df["label"] = df[["system", *varying]].astype(str).agg("\n".join, axis=1)
    metrics = list(dict.fromkeys(df["metric"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(max(4.0, 0.9 * df["label"].nunique() + 1.5) * len(metrics), 4.2),
                             squeeze=False)
    width = 0.4
    for ax, metric in zip(axes[0], metrics):
        sub = df[df["metric"] == metric].reset_index(drop=True)
        x = np.arange(len(sub))
        ax.bar(x - width / 2, sub["ours"], width, yerr=sub["ours_std"].fillna(0.0), capsize=3, label="ours", color="#4C72B0")
        ax.bar(x + width / 2, sub["paper_value"], width, label="paper", color="#DD8452")
        for xi, (o, p) in enumerate(zip(sub["ours"], sub["paper_value"])):
            for dx, v in ((-width / 2, o), (width / 2, p)):
                if not math.isnan(v):
                    ax.annotate(f"{v:.2f}", (xi + dx, v), ha="center", va="bottom", fontsize=7,
                                xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(x, sub["label"], fontsize=8)
        ax.set_title(metric)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, out_png)


# --------------------------------------------------------------------------- attention


def _load_dump(attention_dump) -> list[dict]:
    if isinstance(attention_dump, (str, os.PathLike)):
        import torch

        path = Path(attention_dump)
        if not path.exists():
            raise DataError(path, "attention dump does not exist", "run translate with attention_out")
        return torch.load(path, map_location="cpu", weights_only=True)
    return list(attention_dump)


def _np(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().float().numpy()
    return np.asarray(x, dtype=np.float64)


def _tokens(tokens: str | Sequence[str]) -> list[str]:
    return tokens.split() if isinstance(tokens, str) else list(tokens)


def plot_attention(
    attention_dump,
    index: int,
    src_tokens: str | Sequence[str],
    hyp_tokens: str | Sequence[str],
    out_png: str | os.PathLike,
    grid: tuple[int, int] = (14, 14),
    image: str | os.PathLike | None = None,
    ncols: int = 6,
) -> tuple[Path, Path]:
    """Calixto et al. (2017) Fig. 2 for sentence ``index`` of an attention dump.

    Top: one panel per target token with its image attention over the ``grid`` (overlaid on
    ``image`` when given), titled ``token (beta)``. Bottom: the source-target attention matrix.
    ``src_tokens``/``hyp_tokens`` are the tokens the model saw and emitted (sub-words if it
    used BPE); a trailing ``<eos>`` row/column is shown when the matrices have one.
    """
    dump = _load_dump(attention_dump)
    if not 0 <= index < len(dump):
        raise IndexError(f"index {index} outside the dump's {len(dump)} sentences")
    item = dump[index]
    src, hyp = _tokens(src_tokens), _tokens(hyp_tokens)
    a_src = _np(item["alpha_src"])
    T, S = a_src.shape
    if len(hyp) > T or len(src) > S:
        raise ValueError(f"{len(hyp)} target / {len(src)} source tokens but alpha_src is {T} x {S}: wrong sentence index?")
    rows = hyp + (["<eos>"] if T > len(hyp) else [])
    extra_col = S > len(src) and a_src[:, len(src)].sum() > 0  # <eos> column; padding has zero weight
    cols = src + (["<eos>"] if extra_col else [])
    a_src = a_src[: len(rows), : len(cols)]
    a_img = _np(item["alpha_img"])[: len(rows)] if "alpha_img" in item else None
    beta = _np(item["beta"]).reshape(-1)[: len(rows)] if "beta" in item else None
    if a_img is not None and a_img.shape[1] != grid[0] * grid[1]:
        raise ValueError(f"alpha_img has {a_img.shape[1]} regions, not grid {grid[0]} x {grid[1]}")
    picture = None
    if image is not None and a_img is not None:
        from PIL import Image

        picture = np.asarray(Image.open(image).convert("RGB"))

    n_img = len(rows) if a_img is not None else 0
    ncols = max(1, min(ncols, n_img or 1))
    img_rows = math.ceil(n_img / ncols) if n_img else 0
    mat_h = max(2.5, 0.3 * len(rows) + 1)
    fig = plt.figure(figsize=(max(2.0 * ncols, 0.45 * len(cols) + 2.5), 2.2 * img_rows + mat_h))
    heights = [2.0] * img_rows + [mat_h]
    gs = fig.add_gridspec(img_rows + 1, ncols, height_ratios=heights)
    for t in range(n_img):
        ax = fig.add_subplot(gs[t // ncols, t % ncols])
        att = a_img[t].reshape(grid)
        if picture is not None:
            h, w = picture.shape[:2]
            ax.imshow(picture)
            ax.imshow(att, cmap="gray", alpha=0.6, extent=(0, w, h, 0), interpolation="bilinear")
        else:
            ax.imshow(att, cmap="viridis", interpolation="nearest")
        title = rows[t] if beta is None else f"{rows[t]} ({beta[t]:.2f})"
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    ax = fig.add_subplot(gs[img_rows, :])
    im = ax.imshow(a_src, cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    return _save(fig, out_png)


def beta_shares(attention_dump, hyp_lengths: Sequence[int] | None = None) -> dict[str, float]:
    """Share of target steps whose gate beta exceeds 0.5 and 0.8: ``{"gt_0.5": .., "gt_0.8": ..}``.

    Counts every step of every sentence in the dump, which includes each sentence's ``<eos>``
    step; pass ``hyp_lengths`` (tokens per hypothesis) to count only the emitted tokens.
    """
    dump = _load_dump(attention_dump)
    if hyp_lengths is not None and len(hyp_lengths) != len(dump):
        raise ValueError(f"{len(hyp_lengths)} lengths for {len(dump)} sentences")
    values = []
    for k, item in enumerate(dump):
        if "beta" not in item:
            raise DataError(None, f"sentence {k} of the attention dump has no beta", "dump a model with the image gate")
        b = _np(item["beta"]).reshape(-1)
        values.append(b if hyp_lengths is None else b[: int(hyp_lengths[k])])
    all_b = np.concatenate(values) if values else np.zeros(0)
    if all_b.size == 0:
        raise ValueError("no beta values in the attention dump")
    return {f"gt_{t}": float((all_b > t).mean()) for t in BETA_THRESHOLDS}


# --------------------------------------------------------------------------- rare words


def plot_rare_words(
    tables: Mapping[str, str | os.PathLike | pd.DataFrame],
    out_png: str | os.PathLike,
    column: str = "fscore",
) -> tuple[Path, Path]:
    """Hirasawa et al. (2019) Fig. 1: word F-score per training-frequency bin, one bar per system.

    ``tables`` maps a system name to a :func:`mmt_repro.metrics.rare_words.rare_word_fscore`
    table (or its TSV)."""
    frames = {}
    for name, t in tables.items():
        if isinstance(t, pd.DataFrame):
            frames[name] = t
        else:
            if not Path(t).exists():
                raise DataError(t, "rare-word table does not exist", "re-run the rare-word rule")
            frames[name] = pd.read_csv(t, sep="\t")
    if not frames:
        raise ValueError("no tables to plot")
    bins = list(next(iter(frames.values()))["bin"].astype(str))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(bins) * max(1, len(frames)) / 2 + 2), 3.8))
    width = 0.8 / len(frames)
    x = np.arange(len(bins))
    for k, (name, df) in enumerate(frames.items()):
        if list(df["bin"].astype(str)) != bins:
            raise ValueError(f"system {name} uses bins {list(df['bin'])}, not {bins}")
        ax.bar(x - 0.4 + width * (k + 0.5), df[column].astype(float), width, label=name)
    ax.set_xticks(x, bins)
    ax.set_xlabel("frequency in the training corpus")
    ax.set_ylabel(f"word {column}")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _save(fig, out_png)


#: Metric names of the rare-word analysis rows: ``f_freq_<bin>`` (e.g. ``f_freq_5-9``, ``f_freq_1000+``).
RARE_WORD_PREFIX = "f_freq_"


def _bin_low(label: str) -> int:
    return int(label.rstrip("+").split("-")[0])


#: The published rare-word gain (Hirasawa et al.'s abstract: +7.67 F-score), a row of the figure's table.
RARE_GAIN_METRIC = "f_rare_gain"


def plot_rare_words_table(table_tsv: str | os.PathLike, out_png: str | os.PathLike,
                          baseline: str = "nmt", system: str = "ours") -> tuple[Path, Path]:
    """Hirasawa et al. (2019) Fig. 1 from a results table of the rare-word analysis (rows
    ``metric = f_freq_<bin>``, ``ours`` = F in %, mean over seeds): one bar per system and
    bin, the seed standard deviation as error bars; bins ordered by training frequency.

    When the table holds the published gain (metric ``f_rare_gain``: the abstract's "+7.67
    F-score for rare word translation", bins not stated) and both ``system`` and ``baseline``
    have rows, a second panel shows our gain of ``system`` over ``baseline`` per bin with the
    published figure as a dashed line."""
    path = Path(table_tsv)
    if not path.exists():
        raise DataError(path, "results table does not exist", "re-run the make_table rule")
    full = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if "metric" not in full.columns or "system" not in full.columns:
        raise DataError(path, "not a results table (no metric/system column)", "plot a table written by make_table")
    df = full[full["metric"].str.startswith(RARE_WORD_PREFIX) & (full["ours"] != "")]
    if df.empty:
        raise DataError(path, f"no {RARE_WORD_PREFIX}<bin> rows with values", "run the rare-word analysis table")
    df = df.assign(bin=df["metric"].str[len(RARE_WORD_PREFIX):], ours=pd.to_numeric(df["ours"]),
                   ours_std=pd.to_numeric(df.get("ours_std", ""), errors="coerce"))
    varying = [c for c in ("test_set", "pair") if c in df.columns and df[c].nunique() > 1]
    df["label"] = df[["system", *varying]].astype(str).agg(" ".join, axis=1)
    bins = sorted(set(df["bin"]), key=_bin_low)
    labels = list(dict.fromkeys(df["label"]))
    published = full[(full["metric"] == RARE_GAIN_METRIC) & (full.get("paper_value", "") != "")] \
        if "paper_value" in full.columns else full.iloc[0:0]
    gain = None
    if len(published) and {system, baseline} <= set(df["system"]) and not varying:
        mine = df[df["system"] == system].set_index("bin")["ours"]
        base = df[df["system"] == baseline].set_index("bin")["ours"]
        gain = [float(mine[b] - base[b]) if b in mine.index and b in base.index else math.nan for b in bins]
    panels = 2 if gain is not None else 1
    width_in = max(5.0, 0.45 * len(bins) * len(labels) + 2)
    fig, axes = plt.subplots(1, panels, figsize=(width_in * (1.6 if panels == 2 else 1), 3.8), squeeze=False)
    ax = axes[0][0]
    width = 0.8 / len(labels)
    x = np.arange(len(bins))
    for k, label in enumerate(labels):
        sub = df[df["label"] == label].set_index("bin")
        vals = [float(sub.loc[b, "ours"]) if b in sub.index else math.nan for b in bins]
        errs = [float(sub.loc[b, "ours_std"]) if b in sub.index and not math.isnan(sub.loc[b, "ours_std"]) else 0.0
                for b in bins]
        ax.bar(x - 0.4 + width * (k + 0.5), vals, width, yerr=errs, capsize=2, label=label)
    ax.set_xticks(x, bins)
    ax.set_xlabel("frequency in the training corpus")
    ax.set_ylabel("word F-score (%)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    if gain is not None:
        value = float(published["paper_value"].iloc[0])
        ax2 = axes[0][1]
        ax2.bar(x, gain, 0.6, color="tab:green", label=f"ours: {system} - {baseline}")
        ax2.axhline(value, color="black", linestyle="--", label=f"paper (abstract): +{value:g}, bins not stated")
        ax2.axhline(0.0, color="grey", linewidth=0.8)
        ax2.set_xticks(x, bins)
        ax2.set_xlabel("frequency in the training corpus")
        ax2.set_ylabel("F-score gain (points)")
        ax2.legend(fontsize=8)
        ax2.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _save(fig, out_png)


# --------------------------------------------------------------------------- beta per word


def plot_beta_words(hyp_tokens, beta, out_png: str | os.PathLike, source=None) -> tuple[Path, Path]:
    """Yang et al. (2020) Figure 4: the dependence ``beta_{y_t}`` (eq. 17) of each generated
    word on the image, one bar per word (``beta`` covers the words and the ``<eos>`` step)."""
    words = [*_tokens(hyp_tokens), "</s>"]
    values = _np(beta).reshape(-1)[: len(words)]
    words = words[: len(values)]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(words) + 1.5), 3.0))
    ax.bar(range(len(values)), values, color="#4477aa")
    ax.set_xticks(range(len(values)), words, rotation=60, ha="right")
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("beta (eq. 17)")
    if source is not None:
        ax.set_title("source: " + " ".join(_tokens(source)), fontsize=8)
    return _save(fig, out_png)
