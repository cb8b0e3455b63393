"""The workflow itself: lint, dry runs of the full config, config errors, and the smoke
reproduction end to end on CPU (the grounded check: the image really carries information)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
MARGIN = 10.0  # BLEU by which NMT_SRC+IMG must beat text-only NMT on the grounded set


def snakemake(*args, cwd=REPO, timeout=1500):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run(
        [*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
    )


# One environment runs every rule (envs/mmt-repro.yaml = pyproject.toml; README, "Full
# reproduction"): per-rule conda envs drifted and broke (issue 27, item 7), so Snakemake's lint
# asking for a conda env or container per rule is the one lint accepted.
ACCEPTED_LINTS = ("Specify a conda environment or container for each rule.",)


def test_lint_is_clean():
    res = snakemake("--lint", "--configfile", "config/smoke.yaml")
    out = res.stdout + res.stderr
    found = [line.strip().lstrip("* ").rstrip(":") for line in out.splitlines() if line.strip().startswith("* ")]
    other = sorted({lint for lint in found if lint not in {a.rstrip(":") for a in ACCEPTED_LINTS}})
    assert other == [], out[-5000:]
    assert res.returncode == 0 or found, out[-3000:]


def test_rules_are_snakefmt_formatted():
    files = [str(REPO / "Snakefile"), *map(str, sorted((REPO / "workflow" / "rules").glob("*.smk")))]
    res = subprocess.run([sys.executable, "-m", "snakefmt", "--check", *files], capture_output=True, text=True)
    assert res.returncode == 0, f"run: .venv/bin/snakefmt Snakefile workflow/rules/*.smk\n{res.stdout}{res.stderr}"


@pytest.mark.slow  # over 10 s idle: `make test` runs it, `make test-fast` leaves it out
def test_dry_run_of_full_config_resolves_every_target(tmp_path):
    res = snakemake("results/tables/all.tsv", "-n", "--directory", str(tmp_path), "--quiet", "rules")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    for rule in ("fetch_input", "prepare_multi30k", "prepare_multi30k_image_list", "generate_grounded", "tokenize", "learn_bpe",
                 "apply_bpe", "build_vocab", "extract_features", "train_model", "translate", "score",
                 "make_table", "gather_tables"):
        assert rule in out, f"{rule} missing from the full plan:\n{out}"


@pytest.mark.slow
@pytest.mark.parametrize("configs", [(), ("--configfile", str(REPO / "config" / "smoke.yaml"))], ids=["full", "smoke"])
def test_dry_run_of_all_plans_every_papers_vocab_report(tmp_path, configs):
    """`all` (what make smoke and the e2e lane build) plans with every paper's tables, the
    vocabulary reports included: captioning pairs (im-<lang>) and `train_on` systems have no
    vocabulary of their own there (a planning error here stopped the whole smoke run once)."""
    res = snakemake("all", "-n", "--directory", str(tmp_path), *configs)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    for paper in ("doubly_attentive", "emb_pred", "visual_agreement", "deepfuse", "bertgen"):
        assert f"results/data/vocab/{paper}.tsv" in out, f"no vocabulary report of {paper} planned"


def test_unknown_config_key_stops_the_run_naming_it(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("papers:\n  doubly_attentive:\n    overrides:\n      decode: {beamsize: 3}\n", encoding="utf-8")
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "papers.doubly_attentive.overrides.decode.beamsize: unknown key" in out and "'beam_size'" in out


def test_wrong_type_stops_the_run_naming_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("device: gpu\n", encoding="utf-8")
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    assert "config key 'device'" in res.stdout + res.stderr


def test_unknown_model_key_in_override_is_refused_before_any_job_runs(tmp_path):
    """A model_config key typo in an override stops the run at planning (the preflight reads
    the models' dataclass fields without torch), blamed on the override's key path."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "papers:\n  doubly_attentive:\n    overrides:\n      systems:\n        nmt:\n"
        "          model_config: {emb_dimm: 3}\n",
        encoding="utf-8",
    )
    target = "results/data/grounded/train.en"
    res = snakemake(target, "--cores", "1", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "overrides.systems.nmt.model_config.emb_dimm: unknown key" in out and "Valid:" in out
    assert "Traceback" not in out
    assert not (tmp_path / target).exists()


@pytest.mark.e2e
def test_smoke_all_tsv_has_the_expected_rows(smoke_run, wf):
    table = pd.read_csv(smoke_run / "results" / "tables" / "all.tsv", sep="\t", keep_default_na=False)
    assert list(table.columns[:8]) == ["paper", "table", "system", "pair", "test_set", "condition", "metric", "ours"]
    enabled = {(paper, name) for paper, block in wf.smoke_config()["papers"].items()
               for name, t in block["tables"].items() if t.get("enabled", True)}
    assert set(zip(table.paper, table.table)) == enabled
    calixto = table[table.paper == "doubly_attentive"]  # other papers have tables of the same names
    grounded = calixto[calixto.table == "grounded"]
    rows = set(zip(grounded.system, grounded.condition, grounded.metric))
    for metric in ("bleu", "meteor", "chrf3", "ter"):
        assert ("nmt", "congruent", metric) in rows
        assert ("nmt_src_img", "congruent", metric) in rows
        assert ("nmt_src_img", "shuffled", metric) in rows
    assert ("nmt", "shuffled", "bleu") not in rows  # text-only systems have no image to shuffle
    assert (grounded.paper_value == "").all()  # smoke rows carry no paper value
    assert (grounded.n_seeds.astype(int) == 1).all()
    unmasked = ~grounded.condition.str.startswith("masked")
    assert grounded[unmasked].signature.str.contains("version|meteor-1.5").all()
    # the colour-masking probe: BLEU and colour accuracy, per masked condition and their gain
    for metric in ("bleu", "colour_acc"):
        assert ("nmt", "masked", metric) in rows and ("nmt", "masked_shuffled", metric) not in rows
        for condition in ("masked", "masked_shuffled", "masked_gain"):
            assert ("nmt_src_img", condition, metric) in rows
    assert grounded[grounded.metric == "colour_acc"].signature.str.contains("masked:colours").all()
    # METEOR on German runs offline without paraphrases, and its signature says so.
    assert grounded[grounded.metric == "meteor"].signature.str.contains("paraphrase:missing").all()
    # p-values against the baseline for the image model only.
    p = grounded[(grounded.metric == "bleu") & (grounded.system == "nmt_src_img") & (grounded.condition == "congruent")]
    assert float(p.p_value.iloc[0]) < 0.05

    t1 = calixto[calixto.table == "table1"]
    ours = t1[t1.ours != ""]
    assert set(ours.system) == {"nmt", "nmt_src_img", "nmt_bt", "nmt_src_img_bt", "nmt_wmt", "nmt_src_img_wmt"}
    assert ours.note.str.contains("grounded synthetic stand-in").all()
    pbsmt = t1[t1.system.str.startswith("pbsmt")]
    assert len(pbsmt) > 0 and (pbsmt.ours == "").all() and pbsmt.note.str.contains("Moses").all()
    # The paper's numbers are kept for reference on its own test set, never in our column.
    published = t1[t1.test_set == "test_2016_flickr"]
    assert (published.ours == "").all() and (published.paper_value != "").all()

    f2 = calixto[(calixto.table == "figure2") & (calixto.ours != "")]
    assert set(f2.metric) == {"beta_gt_0.5", "beta_gt_0.8"}
    shares = dict(zip(f2.metric, f2.ours.astype(float)))
    assert 0 <= shares["beta_gt_0.8"] <= shares["beta_gt_0.5"] <= 100


@pytest.mark.e2e
def test_smoke_vocabulary_covers_every_training_corpus(smoke_run, wf):
    """Issue 11: one vocabulary per paper and dataset, learnt on every corpus its systems train
    on (M30k_T, the real side of the back-translated corpus, the WMT'15 stand-in): the <unk>
    rate of every training corpus, the synthetic back-translated pairs included, stays <= 0.1 %."""
    report = pd.read_csv(smoke_run / "results" / "data" / "vocab" / "doubly_attentive.tsv", sep="\t")
    corpora = set(zip(report.corpus, report.split))
    assert {("train", "train"), ("backtranslated", "train_c1"), ("backtranslated", "synthetic.src"),
            ("grounded_general", "train")} <= corpora
    assert (report.unk_rate <= 0.001).all(), report[report.unk_rate > 0.001]
    assert (report.sentences_over_max_len == 0).all()
    assert set(report.vocab) == {"grounded.en-de.en.json", "grounded.en-de.de.json"}  # both directions share them


@pytest.mark.e2e
def test_smoke_figures_and_report(smoke_run):
    figures = smoke_run / "results" / "figures" / "doubly_attentive"
    for name in ("grounded.scores", "table1.scores", "figure2.scores", "figure2.attention"):
        assert (figures / f"{name}.png").stat().st_size > 1000
        assert (figures / f"{name}.pdf").exists()
    res = snakemake("--directory", str(smoke_run), "--configfile", str(REPO / "config" / "smoke.yaml"),
                    "--report", str(smoke_run / "report.html"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    html = (smoke_run / "report.html").read_text(errors="replace")
    assert "figure2.attention.png" in html and "table1.html" in html
    # the report as a zip: every table, all.tsv and the data reports are HTML pages in it
    # (shown inline; a TSV would only be a download button), each labelled by paper and table
    import zipfile

    res = snakemake("--directory", str(smoke_run), "--configfile", str(REPO / "config" / "smoke.yaml"),
                    "--report", str(smoke_run / "report.zip"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    names = zipfile.ZipFile(smoke_run / "report.zip").namelist()
    pages = sorted(n.rsplit("/", 1)[-1] for n in names if n.startswith("report/data/raw/") and n.endswith(".html"))
    gathered = pd.read_csv(smoke_run / "results" / "tables" / "all.tsv", sep="\t", keep_default_na=False)
    n_tables = len(gathered[["paper", "table"]].drop_duplicates())
    assert len(pages) == n_tables + 2 + 5  # every table, all.html, stats.html, five vocabulary reports
    assert {"all.html", "stats.html", "table1.html", "grounded.html"} <= set(pages)
    assert not any(n.endswith(".tsv") for n in names if n.startswith("report/data/raw/"))


@pytest.mark.e2e
def test_smoke_image_model_beats_text_only_and_shuffling_removes_the_gain(smoke_run):
    table = pd.read_csv(smoke_run / "results" / "tables" / "all.tsv", sep="\t", keep_default_na=False)
    grounded = table[(table.table == "grounded") & (table.metric == "bleu")]
    bleu = {(r.system, r.condition): float(r.ours) for r in grounded.itertuples()}
    nmt, mmt, shuffled = bleu[("nmt", "congruent")], bleu[("nmt_src_img", "congruent")], bleu[("nmt_src_img", "shuffled")]
    print(f"grounded BLEU: text-only {nmt:.2f}, NMT_SRC+IMG {mmt:.2f}, shuffled images {shuffled:.2f}")
    assert mmt - nmt >= MARGIN
    assert shuffled - nmt < 0.5 * (mmt - nmt)  # most of the gain is gone with the wrong images


@pytest.mark.e2e
def test_smoke_probe_separates_the_image_model_from_the_text_only_one(smoke_run):
    """The grounded check's image-use probe (docs/probes.md): NMT_SRC+IMG beats NMT by MARGIN BLEU,
    and shuffled images and the training split's average image (blank_mean) each take most of the
    gain away; its congruent and shuffled figures are the table's."""
    row = _probe(smoke_run, "doubly_attentive", "grounded")["nmt_src_img"]
    assert row["counterpart"] == "nmt" and row["blank_zero"] == ""  # the smoke decodes blank_mean only
    gain = float(row["gain"])
    assert gain >= MARGIN, row
    assert float(row["use_shuffled"]) >= gain / 2 and float(row["use_blank_mean"]) >= gain / 2, row
    assert row["verdict"] in ("uses the image", "partly"), row
    table = pd.read_csv(smoke_run / "results" / "tables" / "all.tsv", sep="\t", keep_default_na=False)
    grounded = table[(table.table == "grounded") & (table.metric == "bleu") & (table.system == "nmt_src_img")
                     & table.condition.isin(["congruent", "shuffled"])]  # not the colour-masking probe's runs
    assert {r.condition: f"{float(r.ours):.2f}" for r in grounded.itertuples()} == \
        {"congruent": row["congruent"], "shuffled": row["shuffled"]}


def _probe(smoke_run, paper, table):
    """The rows of a table's image-use probe (results/tables/<paper>/<table>.probe.tsv), by system."""
    from mmt_repro.tables.probe import read_probe

    return {r["system"]: r for r in read_probe(smoke_run / "results" / "tables" / paper / f"{table}.probe.tsv")}


@pytest.mark.e2e
def test_smoke_cross_paper_table_shows_each_image_models_shuffled_drop(smoke_run):
    """The cross-paper table (docs/scoring.md) on the grounded set: every paper's grounded systems side
    by side under one BLEU protocol, each probed image model with a positive shuffled drop (what
    shuffled images take away, read from its paper's probe table), except Hirasawa et al.'s Ours,
    whose images train the encoder only (decoding reads none: the drop is 0, docs/probes.md)."""
    from mmt_repro.tables.cross_paper import read_cross_paper

    rows = read_cross_paper(smoke_run / "results" / "tables" / "cross_paper.tsv")
    assert {r["paper"] for r in rows} == {"doubly_attentive", "emb_pred", "visual_agreement", "bertgen"}
    assert all(r["test_set"] == "test" and float(r["bleu"]) > 0 and r["meteor"] == "not scored" for r in rows)
    probed = {(r["paper"], r["system"]): r for r in rows if r["probe_table"]}
    assert set(probed) == {("doubly_attentive", "nmt_src_img"), ("visual_agreement", "mhca"),
                           ("visual_agreement", "t_mhca"), ("bertgen", "grounded"), ("emb_pred", "ours")}
    for key, r in probed.items():
        drop = float(r["use_shuffled"])
        assert drop == 0.0 if key == ("emb_pred", "ours") else drop > 0, r
    assert {r["use_shuffled"] for r in rows if r["system"] in ("nmt", "onlytext", "t_onlytext")} == {"text-only"}
    probe = _probe(smoke_run, "doubly_attentive", "grounded")["nmt_src_img"]
    assert probed["doubly_attentive", "nmt_src_img"]["use_shuffled"] == probe["use_shuffled"]


@pytest.mark.e2e
def test_smoke_image_model_recovers_masked_colours_from_its_own_image(smoke_run):
    """The colour-masking probe on Calixto et al.'s grounded table: with the source's colour words
    masked, NMT_SRC+IMG names more of them with each caption's own image than with another's."""
    table = pd.read_csv(smoke_run / "results" / "tables" / "all.tsv", sep="\t", keep_default_na=False)
    grounded = table[(table.paper == "doubly_attentive") & (table.table == "grounded") & (table.metric == "colour_acc")]
    acc = {(r.system, r.condition): float(r.ours) for r in grounded.itertuples()}
    print(f"grounded colour accuracy, masked source: NMT {acc[('nmt', 'masked')]:.2f}, NMT_SRC+IMG "
          f"{acc[('nmt_src_img', 'masked')]:.2f}, with shuffled images {acc[('nmt_src_img', 'masked_shuffled')]:.2f}")
    assert acc[("nmt_src_img", "masked")] > acc[("nmt_src_img", "masked_shuffled")]
    assert acc[("nmt_src_img", "masked_gain")] == pytest.approx(
        acc[("nmt_src_img", "masked")] - acc[("nmt_src_img", "masked_shuffled")], abs=0.011)


@pytest.mark.e2e
def test_smoke_outputs_have_logs_benchmarks_and_curves(smoke_run, wf):
    results = smoke_run / "results"
    assert any((results / "logs" / "train_model").rglob("*.log"))
    assert any((results / "benchmarks" / "train_model").rglob("*.tsv"))
    curves = list((results / "models").rglob("*.curve.tsv"))
    found = {str(c.relative_to(results / "models")).removesuffix(".curve.tsv") for c in curves}
    assert found == wf.expected_models(wf.smoke_config())  # table systems, what they start from, the reverse model
    for curve in curves:
        rows = curve.read_text().splitlines()
        assert rows[0].startswith("epoch\tstep\ttrain_loss\tval_bleu") and len(rows) >= 2
    store = pd.read_parquet(results / "features" / "grounded" / "resnet50-res4f" / "test.index.parquet")
    assert len(store) == 300


@pytest.mark.e2e
def test_smoke_builds_a_protocol_grid_per_translation_table(smoke_run, wf):
    """Rule all's protocol grids (BLEU only in the smoke): one per translation table, its
    marked column the table's own BLEU, each job about a second of CPU (no METEOR JVM)."""
    from mmt_repro.tables.build import read_table
    from mmt_repro.tables.protocols import read_grid

    config = wf.smoke_config()
    tables = [(p, t) for p, block in config["papers"].items() for t, cfg in block["tables"].items()
              if cfg.get("enabled", True) and cfg.get("kind", "translation") == "translation"]
    for paper, table in tables:
        ids, marked, rows = read_grid(smoke_run / "results" / "tables" / paper / f"{table}.protocols.tsv")
        assert not [pid for pid in ids if pid.startswith("meteor_")]
        ours = read_table(smoke_run / "results" / "tables" / paper / f"{table}.tsv").set_index(
            ["system", "test_set", "condition", "metric"])["ours"]
        paper_bleu = next(pid for pid in ids if marked[pid])
        for r in rows:
            assert r[paper_bleu] == f"{ours[(r['system'], r['test_set'], r['condition'], 'bleu')]:.2f}"
        bench = pd.read_csv(smoke_run / "results" / "benchmarks" / "protocol_grid" / paper / f"{table}.tsv", sep="\t")
        assert bench["cpu_time"].iloc[-1] < 5, (paper, table)  # measured 0.7-1.8 s on 2 cores


@pytest.mark.slow
def test_without_kept_checkpoints_a_decoded_models_checkpoints_are_gone(tmp_path, wf):
    """keep_checkpoints: false (the rehearsal): the checkpoint is a temp output, deleted once the
    jobs that read it have run, and the finished training's resume state goes with its job; the
    curve and the job record stay."""
    (tmp_path / "keep.yaml").write_text("keep_checkpoints: false\n", encoding="utf-8")
    stem = "results/models/doubly_attentive/nmt/grounded.en-de.seed1"
    target = "results/translations/doubly_attentive/nmt/grounded.test.en-de.seed1.congruent.txt"
    args = wf.reduced_args(tmp_path, target)
    res = snakemake(*args, str(tmp_path / "keep.yaml"), "--cores", "2")
    assert res.returncode == 0, wf.failure_report(res, tmp_path)
    assert len((tmp_path / target).read_text(encoding="utf-8").splitlines()) == 30  # the reduced test split
    for kept in (".curve.tsv", ".job.json"):
        assert (tmp_path / f"{stem}{kept}").stat().st_size > 0
    for gone in (".best.pt", ".last.pt", ".last.best.pt"):
        assert not (tmp_path / f"{stem}{gone}").exists(), gone
    # nothing left to do: the deleted checkpoint is not needed again
    again = snakemake(*args, str(tmp_path / "keep.yaml"), "--cores", "2", "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]


@pytest.mark.slow
def test_multi30k_from_the_mirror_through_the_dag_matches_the_official_tokenised_text(tmp_path):
    shared = REPO.parent / "shared" / "datasets"
    mirror, official = shared / "multi30k", shared / "multi30k-extra" / "task1" / "tok"
    if not mirror.exists() or not official.exists():
        pytest.skip(f"needs real Multi30k at {mirror} and {official} (../shared/datasets beside the repo)")
    cfg = tmp_path / "mirror.yaml"
    cfg.write_text(f"inputs:\n  mirror: {shared}\n", encoding="utf-8")
    targets = ["results/text/multi30k/val.lc.norm.tok.de", "results/data/multi30k/image_splits/test_2016_flickr.txt",
               "results/data/multi30k/test_2016_flickr.en"]
    res = snakemake(*targets, "--directory", str(tmp_path), "--configfile", str(cfg), "--cores", "2")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    ours = (tmp_path / targets[0]).read_text(encoding="utf-8").splitlines()
    assert ours == (official / "val.lc.norm.tok.de").read_text(encoding="utf-8").splitlines()
    assert len((tmp_path / targets[1]).read_text().splitlines()) == 1000
    assert len((tmp_path / targets[2]).read_text().splitlines()) == 1000


def test_request_only_images_fail_with_where_to_request_them(tmp_path):
    shared = REPO.parent / "shared" / "datasets" / "multi30k"
    if not shared.exists():
        pytest.skip(f"needs real Multi30k at {shared}")
    cfg = tmp_path / "mirror.yaml"
    cfg.write_text(f"inputs:\n  mirror: {shared.parent}\n", encoding="utf-8")
    res = snakemake("results/features/multi30k/resnet50-res4f/val.npy", "--directory", str(tmp_path),
                    "--configfile", str(cfg), "--cores", "1")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "(flickr30k_images) is request-only" in out and "https://forms.illinois.edu/sec/229675" in out
    assert "set `datasets.multi30k.images`" in out
    # found at planning, before anything runs (no download, no text preparation first)
    assert not (tmp_path / "results").exists()


@pytest.mark.e2e  # every real input through its DAG stage (~20 s): not for the fast lane
def test_every_extractor_runs_through_the_dag_on_real_media(tmp_path):
    """Issue 4: on ../shared/datasets/sample-media (3 COCO images, 1 video clip) every extractor
    produces a store of its declared shape, through the same rules the smoke run uses."""
    import numpy as np

    media = REPO.parent / "shared" / "datasets" / "sample-media"
    if not media.exists():
        pytest.skip(f"needs the real media at {media} (../shared/datasets/sample-media beside the repo)")
    sets = {"resnet50-res4f": (3, 196, 1024), "resnet50-pool5": (3, 1, 2048),
            "torchvision-regions36": (3, 36, 1024), "i3d-segments": (1, 4, 2048)}
    targets = [f"results/features/sample_media/{name}/all.npy" for name in sets]
    res = snakemake(*targets, "--directory", str(tmp_path), "--configfile", str(REPO / "config" / "sample_media.yaml"),
                    "--cores", "2")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for name, shape in sets.items():
        arr = np.load(tmp_path / "results" / "features" / "sample_media" / name / "all.npy", mmap_mode="r")
        assert arr.shape == shape and arr.dtype == np.float16, name
        assert np.isfinite(arr).all()
        index = pd.read_parquet(tmp_path / "results" / "features" / "sample_media" / name / "all.index.parquet")
        assert len(index) == shape[0]
    boxes = np.load(tmp_path / "results/features/sample_media/torchvision-regions36/all.boxes.npy")
    assert boxes.shape == (3, 36, 4)
    log = (tmp_path / "results/logs/extract_features/sample_media/resnet50-res4f/all.log").read_text()
    assert "random-init" in log  # the log says which weights were used


@pytest.mark.e2e  # every real input through its DAG stage (~20 s): not for the fast lane
def test_every_corpus_with_a_shared_copy_is_prepared_and_has_its_published_size(tmp_path):
    """Issue 3: with config/shared_mirror.yaml (inputs.mirror = ../shared/datasets) the DAG
    fetches (sha256-checked), prepares, checks and counts every corpus that has a copy there."""
    shared = REPO.parent / "shared" / "datasets"
    if not (shared / "multi30k").exists():
        pytest.skip(f"needs the real corpora in {shared} (../shared/datasets beside the repo)")
    res = snakemake("results/data/stats.tsv", "--directory", str(tmp_path), "--configfile",
                    str(REPO / "config" / "shared_mirror.yaml"), "--cores", "2")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    stats = pd.read_csv(tmp_path / "results" / "data" / "stats.tsv", sep="\t")
    sizes = {(r.corpus, r.split, r.lang): r.sentences for r in stats.itertuples()}
    published = {
        ("multi30k", "train", "de"): 29000, ("multi30k", "val", "fr"): 1014, ("multi30k", "test_2016_flickr", "en"): 1000,
        ("multi30k", "test_2017_flickr", "de"): 1000, ("multi30k", "test_2017_mscoco", "fr"): 461,
        ("iwslt14_de_en", "test", "de"): 6750, ("iwslt14_de_en", "valid", "en"): 7283,
        ("setimes2_en_tr", "valid", "tr"): 6007, ("setimes2_en_tr", "test", "en"): 3000,
        ("wmt19_de_fr", "test", "fr"): 1701, ("coco_karpathy_test", "test.5", "en"): 5000,
        ("tasviret", "train", "images"): 6914, ("tasviret", "val", "images"): 543, ("tasviret", "test", "images"): 543,
        ("vatex", "val", "zh"): 2810 * 5,
    }
    for key, n in published.items():
        assert sizes[key] == n, key
    m30k = stats[stats.corpus == "multi30k"].set_index(["split", "lang"])
    assert m30k.loc[("train", "en"), "tokens"] == 345020 and m30k.loc[("train", "en"), "oov_rate"] == 0
    assert 0 < m30k.loc[("test_2016_flickr", "de"), "oov_rate"] < 0.1
    # the TasvirEt split keeps every Multi30k val/test image out of its train split
    train_images = set((tmp_path / "results/data/tasviret/image_splits/train.txt").read_text().split())
    m30k_test = {n.split(".")[0] for n in (tmp_path / "results/data/multi30k/image_splits/test_2016_flickr.txt").read_text().split()}
    assert not {n.split("_")[0] for n in train_images} & m30k_test


@pytest.mark.e2e  # a detector through the DAG (~15 s): not for the fast lane
def test_grounded_object_regions_through_the_dag(tmp_path):
    """`boxes: given` on the grounded set: generate_grounded writes each object's box,
    extract_regions pools exactly those (random detector), standardize_regions keeps the boxes;
    a row has one region per object, the rest masked."""
    import json

    import numpy as np

    cfg = tmp_path / "regions.yaml"
    cfg.write_text(
        "datasets:\n  grounded:\n    sizes: {train: 12, val: 4, test: 4}\n    features:\n"
        "      frcnn-objects: {kind: regions, backend: torchvision, weights: random, boxes: given,\n"
        "                      max_boxes: 3, full_image: true, min_size: 64, max_size: 64, standardize: true}\n",
        encoding="utf-8")
    target = "results/features/grounded/frcnn-objects.std/test"
    res = snakemake(f"{target}.npy", "--directory", str(tmp_path), "--configfile", str(REPO / "config" / "smoke.yaml"),
                    str(cfg), "--cores", "2")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    from mmt_repro.features.store import open_features

    store = open_features(tmp_path / f"{target}.npy", tmp_path / f"{target}.index.parquet")
    given = json.loads((tmp_path / "results/data/grounded/boxes/test.json").read_text())
    labels = (tmp_path / "results/data/grounded/labels/test.tsv").read_text().splitlines()[1:]
    assert store.shape == (4, 4, 1024) and type(store).__name__ == "RegionStore"
    for row, line in enumerate(labels):
        image, count = line.split("\t")[:2]
        assert store.images[row] == image and int(store.lengths[row]) == 1 + int(count)
        assert store.mask(row).tolist() == [True] * (1 + int(count)) + [False] * (3 - int(count))
        np.testing.assert_allclose(store.regions(row)[1][1:], given[image], atol=1e-4)
        np.testing.assert_allclose(store.regions(row)[1][0], [0, 0, 64, 64], atol=1e-4)
    assert abs(float(np.asarray(store.array[:, :, :], dtype=np.float64)[store.masks(range(4))].mean())) < 1.0


@pytest.mark.e2e
def test_every_row_names_its_runs_and_each_run_its_job(smoke_run):
    """From a number to its equation in three hops: the row's runs -> <model>.job.json -> the
    model (its registry key and resolved config); reverse_of rows name the forward checkpoint."""
    import json

    from mmt_repro.plan_tools.version import code_version

    table = pd.read_csv(smoke_run / "results" / "tables" / "all.tsv", sep="\t", keep_default_na=False)
    ours = table[(table["ours"] != "") & (table["table"] != "grounded_vad")]
    translation_rows = ours[~ours["metric"].str.startswith(("vad", "beta", "retrieval", "rare", "direction"))]
    assert len(translation_rows) > 50
    for runs in set(translation_rows["runs"]):
        assert runs, "a row we produced names no run"
        for checkpoint in runs.split():
            record = json.loads((smoke_run / checkpoint.replace(".best.pt", ".job.json")).read_text())
            assert record["job"]["kind"] == "train" and record["job"]["best"] == checkpoint
            assert record["model_config_resolved"] and record["settings_hash"]
            # the rule's `code` param as planned (run_job.py passes it; recomputing cost each job ~0.7 s)
            assert record["code_version"] == code_version("train", record["job"]["model"], record["job"]["paper"],
                                                         script=REPO / "workflow" / "scripts" / "run_job.py")
            assert record["code"]["trained_by"] == [record["code_version"]] and record["code"]["restored_by"] is None
    bwd = table[(table["paper"] == "visual_agreement") & (table["system"] == "soft_bwd") & (table["ours"] != "")]
    assert set(bwd["runs"]) == {"results/models/visual_agreement/soft/grounded.en-de.seed1.best.pt"}


def _edit_function(file, name):
    """One statement more at the top of function ``name``'s body: a change to what it does."""
    import ast

    text = file.read_text(encoding="utf-8")
    node = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == name)
    first = node.body[0]
    doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant)
    lines = text.splitlines(keepends=True)
    lines.insert(first.end_lineno if doc else first.lineno - 1, " " * first.col_offset + "_edited = 1\n")
    file.write_text("".join(lines), encoding="utf-8")


def _planned_jobs(dry_run_output: str) -> list[tuple[str, str, str]]:
    """(rule, outputs, reason) of every job a `snakemake -n` prints (not the target rule `all`)."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", dry_run_output):
        head = re.match(r"(?:local)?rule (\w+):", block)
        if head and head.group(1) != "all":
            output = re.search(r"^\s+output: (.*)$", block, flags=re.M)
            reason = re.search(r"^\s+reason: (.*)$", block, flags=re.M)
            jobs.append((head.group(1), output.group(1) if output else "", reason.group(1) if reason else ""))
    return jobs


def re_planned(smoke_run, src, target="all"):
    """The jobs a dry run of ``target`` plans in ``smoke_run`` with the package at ``src``:
    (those whose params, the code version among them, changed; every job)."""
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONUNBUFFERED="1")
    res = subprocess.run([*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), target, "-n", "--directory",
                          str(smoke_run), "--configfile", str(REPO / "config" / "smoke.yaml")], cwd=REPO,
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    jobs = _planned_jobs(res.stdout)
    return [j for j in jobs if j[2].startswith("Params have changed")], jobs


@pytest.mark.e2e
def test_re_runs_follow_the_code_that_decides_each_output(smoke_run, tmp_path):
    """Snakemake re-runs a job whose `code` param changed (mmt_repro.plan_tools.version), on a copy of
    the package edited three ways: a METEOR function re-plans the score, significance and
    protocol-grid jobs only; text/moses.py the tokenisation and, through its new outputs,
    everything downstream; DeepFuse's model DeepFuse's jobs only."""
    import shutil

    src = tmp_path / "src"
    pkg = src / "mmt_repro"
    shutil.copytree(REPO / "src" / "mmt_repro", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "config").symlink_to(REPO / "config")  # the package reads the repository's manifest beside src/
    assert re_planned(smoke_run, src) == ([], [])

    def edited(rel, function):
        _edit_function(pkg / rel, function)
        try:
            return re_planned(smoke_run, src)
        finally:
            shutil.copy2(REPO / "src" / "mmt_repro" / rel, pkg / rel)

    changed, jobs = edited("models/deepfuse.py", "forward")
    # (a job whose inputs are new says that first: its changed params may go unmentioned)
    assert "train_model" in {rule for rule, _, _ in changed} <= {"train_model", "translate", "dump_attention", "analyse"}
    assert changed and all("/deepfuse/" in out for _, out, _ in changed)
    assert all("/deepfuse/" in out or rule == "gather_tables" or "tables/all" in out for rule, out, _ in jobs), jobs
    changed, jobs = edited("metrics/meteor.py", "meteor_score")
    assert changed and {rule for rule, _, _ in changed} <= {"score", "test_significance", "protocol_grid",
                                                            "make_cross_paper_table"}
    assert not {"train_model", "translate", "tokenize"} & {rule for rule, _, _ in jobs}
    changed, jobs = edited("text/moses.py", "preprocess_lines")
    assert "tokenize" in {rule for rule, _, _ in changed}
    assert not {"train_model", "translate"} & {rule for rule, _, _ in changed}
    assert {"tokenize", "train_model", "translate", "score", "make_table"} <= {rule for rule, _, _ in jobs}


@pytest.mark.e2e
def test_a_fresh_checkout_elsewhere_re_runs_nothing(smoke_run, tmp_path):
    """The smoke run's folder planned from a copy of the checkout at another path, every file of
    it newer than every output (a fresh clone): nothing to do. Code versions hash modules and
    scripts by their text, the repository's files are read through the run folder's copies
    (rule repo_file), where the inputs are fetched from is not compared, and Snakemake's
    script-newer-than-output trigger is off (profiles/default)."""
    checkout = tmp_path / "elsewhere" / "checkout"
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            capture_output=True, text=True, timeout=60, check=True).stdout.split("\0")
    for rel in filter(None, listed):
        src, dst = REPO / rel, checkout / rel
        if not (src.is_symlink() or src.is_file()):
            continue  # deleted in the work tree
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy(src, dst)  # content, not times: every file is new
    if (REPO.parent / "shared").exists():
        (checkout.parent / "shared").symlink_to(REPO.parent / "shared")
    env = dict(os.environ, PYTHONPATH=str(checkout / "src"), PYTHONUNBUFFERED="1")
    res = subprocess.run([*SNAKEMAKE, "--snakefile", str(checkout / "Snakefile"), "all", "-n", "--directory",
                          str(smoke_run), "--configfile", str(checkout / "config" / "smoke.yaml")], cwd=checkout,
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    assert "workflow specific profile" in res.stderr, res.stderr[-2000:]
    assert _planned_jobs(res.stdout) == [], res.stdout[-3000:]


@pytest.mark.e2e
def test_each_papers_smoke_jobs_stay_in_its_budget(smoke_run):
    """Job-seconds of each paper's jobs in the smoke run (its benchmark files) against
    papers.<paper>.smoke_budget_s of config/smoke.yaml: CI's time as papers join."""
    import importlib.util

    import yaml

    spec = importlib.util.spec_from_file_location("bench_smoke", REPO / "benchmarks" / "bench_smoke.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    papers = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text(encoding="utf-8"))["papers"]
    totals = bench.paper_seconds(smoke_run, list(papers))
    over = {p: f"{totals.get(p, 0.0):.0f} s of {b['smoke_budget_s']}" for p, b in papers.items()
            if totals.get(p, 0.0) > b["smoke_budget_s"]}
    assert not over, (f"over their smoke budget (benchmarks/bench_smoke.py shows the slowest jobs): {over}; "
                      f"every paper: { {p: round(s) for p, s in totals.items()} }")
