"""The rehearsal report (mmt_repro.plan_tools.rehearsal): each benchmarked job of a run folder
against what the SLURM profile requests for it at full size."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mmt_repro.plan_tools.cost import store_mem_mb, store_runtime, train_mem_mb, train_runtime
from mmt_repro.plan_tools.rehearsal import format_report, full_plan, rehearsal_jobs, rule_resources

REPO = Path(__file__).resolve().parents[2]
HEAD = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def bench(run: Path, rel: str, seconds: float, rss: str) -> None:
    path = run / "results" / "benchmarks" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD + f"{seconds}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t0\t1\n")


@pytest.fixture(scope="module")
def plan():
    return full_plan(REPO)


def test_rule_resources_read_from_the_rules():
    rules = rule_resources(REPO)
    assert rules["train_model"]["mem_mb"] == "train" and rules["train_model"]["runtime"] == "train"
    assert rules["extract_features"]["mem_mb"] == 8000 and rules["extract_features"]["runtime"] == 600
    assert rules["center_features"]["mem_mb"] == "store_fit"
    assert rules["import_features"]["mem_mb"] == "store"
    assert rules["translate"]["benchmark"] == (
        "results/benchmarks/translate/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.tsv")


def test_report_sets_each_job_against_its_full_size_request(tmp_path, plan):
    bench(tmp_path, "train_model/emb_pred/nmt_pre/multi30k.fr-en.seed2.tsv", 10.7, "838.5")
    bench(tmp_path, "center_features/multi30k/resnet50-pool5/test_2016_flickr.tsv", 1.9, "117")
    bench(tmp_path, "extract_features/multi30k/resnet50-pool5/train.tsv", 30.3, "9100.0")  # over 8000
    bench(tmp_path, "tokenize/multi30k/val.lc.norm.tok.fr.tsv", 3700.0, "-")  # over 60 min, no memory figure
    jobs = {j.rule: j for j in rehearsal_jobs(tmp_path, REPO, plan)}
    assert len(jobs) == 4

    w = SimpleNamespace(paper="emb_pred", system="nmt_pre", dataset="multi30k", pair="fr-en", seed="2")
    train = jobs["train_model"]
    assert (train.mem_mb, train.runtime_min) == (train_mem_mb(plan, w), train_runtime(plan, w))
    assert train.mem_mb >= 1000 and train.runtime_min >= 1 and train.request_from == "train cost"
    assert (train.seconds, train.max_rss_mb) == (10.7, 838.5) and not train.over_memory

    s = SimpleNamespace(dataset="multi30k", feature_set="resnet50-pool5", split="test_2016_flickr")
    store = jobs["center_features"]
    assert (store.mem_mb, store.runtime_min) == (store_mem_mb(plan, s, fit=True), store_runtime(plan, s, fit=True))
    assert store.runtime_min >= 60

    feat = jobs["extract_features"]
    assert (feat.mem_mb, feat.runtime_min, feat.request_from) == (8000, 600, "rule")
    assert feat.over_memory and not feat.over_runtime

    tok = jobs["tokenize"]
    assert (tok.mem_mb, tok.runtime_min, tok.request_from) == (4000, 60, "profile default")
    assert tok.max_rss_mb is None and tok.over_runtime and not tok.over_memory

    text = format_report(list(jobs.values()), slowest=2)
    assert text.splitlines()[0] == ("rehearsal: 4 jobs, 3743 job-seconds, peak 9100 MB; "
                                    "2 over their full-size request, 0 without a known request")
    over = text.split("over the request at full size (2):\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[4] for line in over[1:]] == [
        "extract_features/multi30k/resnet50-pool5/train.tsv", "tokenize/multi30k/val.lc.norm.tok.fr.tsv"]
    slow = text.split("slowest 2:\n")[1].split("\n\n")[0].splitlines()[1:]
    assert slow[0].split()[:4] == ["3700.0", "-", "4000", "60"]


def test_without_a_plan_the_computed_requests_are_unknown(tmp_path):
    bench(tmp_path, "train_model/emb_pred/nmt_pre/multi30k.fr-en.seed2.tsv", 1.0, "10")
    (job,) = rehearsal_jobs(tmp_path, REPO, None)
    assert job.mem_mb is None and job.request_from == "unknown: no full-size plan" and not job.over_memory


def test_cli_prints_the_report_of_a_run_folder(tmp_path, capsys):
    from mmt_repro.cli import main

    bench(tmp_path, "extract_features/multi30k/resnet50-pool5/train.tsv", 30.3, "9100.0")
    assert main(["rehearsal-report", str(tmp_path), "--repo", str(REPO), "--slowest", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rehearsal: 1 jobs, 30 job-seconds, peak 9100 MB; 1 over their full-size request")
    assert "     30.3      9100      8000      600  extract_features/multi30k/resnet50-pool5/train.tsv  (rule)" in out


def test_the_rehearsal_overlay_keeps_every_training_and_model_and_cuts_the_updates():
    """config/rehearsal.yaml over the full configuration: the same 126 trainings, each with the
    full run's model and model_config, stopped after 2 updates."""
    from mmt_repro.config import deep_update, load_yaml
    from mmt_repro.plan import Plan
    from mmt_repro.plan_tools.walk import training_runs

    full_config = load_yaml(REPO / "config" / "config.yaml")
    full = Plan(full_config, REPO)
    rehearsal = Plan(deep_update(full_config, load_yaml(REPO / "config" / "rehearsal.yaml")), REPO)
    runs, _ = training_runs(full, full.targets.default_targets())
    rehearsed, _ = training_runs(rehearsal, rehearsal.targets.default_targets())
    assert len(runs) == 126 and [tuple(vars(w).items()) for w in rehearsed] == [tuple(vars(w).items()) for w in runs]
    for w in runs:
        a, b = full.train_jobs.job(w).to_dict(), rehearsal.train_jobs.job(w).to_dict()
        assert (b["model"], b["model_config"], b["tasks"]) == (a["model"], a["model_config"], a["tasks"])
        assert b["train_config"]["max_steps"] == 2 and b["train_config"]["val_max_len"] == 4
        cut = ("max_steps", "max_epochs", "patience", "val_max_len", "val_batch_size", "log_every")
        assert {k: v for k, v in b["train_config"].items() if k not in cut} == {
            k: v for k, v in a["train_config"].items() if k not in cut}


def test_the_rehearsal_scores_the_first_12_lines_of_each_commute_split():
    """config/rehearsal.yaml cuts every CoMMuTE table to its first 12 lines (`options`), which its
    analysis jobs carry; the full configuration's jobs score every line (no options)."""
    from mmt_repro.config import deep_update, load_yaml
    from mmt_repro.plan import Plan
    from mmt_repro.plan.commute import is_commute_table

    full_config = load_yaml(REPO / "config" / "config.yaml")
    plans = {"full": Plan(full_config, REPO),
             "rehearsal": Plan(deep_update(full_config, load_yaml(REPO / "config" / "rehearsal.yaml")), REPO)}
    for name, plan in plans.items():
        tables = [(p, n, t) for p, n, t in plan.enabled if is_commute_table(t)]
        assert sorted((p, n) for p, n, _ in tables) == [
            ("bertgen", "commute_en_de"), ("bertgen", "commute_en_fr"), ("doubly_attentive", "commute"),
            ("visual_agreement", "commute_en_de"), ("visual_agreement", "commute_en_fr")]
        for paper, _, t in tables:
            w = type("W", (), dict(paper=paper, system=t["systems"][0], dataset=t["dataset"], split=t["test_sets"][0],
                                   pair=t["pair"], seed=str(t["seeds"][0]), analysis="commute"))()
            job = plan.analyse_jobs.build(w)
            assert job.options == ({"lines": 12} if name == "rehearsal" else {})
            assert job.to_dict()["options"] == job.options


def test_every_training_reads_features_of_its_model_img_dim(plan):
    """The full configuration's grounded checks of DeepFuse and Yang et al. train the papers'
    systems (configured for the VATEX I3D 1024-d and bottom-up 2048-d features) on the grounded
    sets' own features (I3D-R50 2048-d, torchvision regions 1024-d). The rehearsal's DeepFuse
    slice stopped there ("features have dimension 2048, model deepfuse.deepfuse expects
    img_dim=1024"); the training job now takes img_dim from the features it reads."""
    from mmt_repro.plan_tools.rehearsal import img_dim_mismatches
    from mmt_repro.plan_tools.walk import training_runs

    assert img_dim_mismatches(plan, plan.targets.default_targets()) == []
    dims = {}
    for w in training_runs(plan, plan.targets.default_targets())[0]:
        dims[(w.paper, w.system, w.dataset)] = plan.train_jobs.job(w).model_config.get("img_dim")
    # the paper's own features keep the paper's width; the grounded checks read their own
    assert dims[("deepfuse", "deepfuse", "vatex")] == 1024
    assert dims[("deepfuse", "deepfuse", "grounded_video")] == 2048
    assert dims[("visual_agreement", "mhca", "multi30k")] == 2048
    assert dims[("visual_agreement", "mhca", "grounded")] == 1024
    assert dims[("visual_agreement", "t_hard", "grounded_distinct")] == 1024
    assert dims[("doubly_attentive", "nmt_src_img", "multi30k")] == 1024  # res4f
    assert dims[("emb_pred", "ours", "multi30k")] == 2048  # pool5: the latent size
    # text-only systems have no img_dim
    assert dims[("visual_agreement", "onlytext", "multi30k")] is None


def test_feature_shape_widths_are_the_extractors(tmp_path):
    """The planner's torch-free widths (plan.features.feature_shape) against the extractors'
    own: ResNet-50's layers, torchvision and detectron2 regions, pytorchvideo's I3D-R50."""
    from mmt_repro.features.detectors import Detectron2Regions, TorchvisionRegions
    from mmt_repro.features.extractors import ResNet50Extractor
    from mmt_repro.features.video import I3DExtractor
    from mmt_repro.plan.features import feature_shape

    for layer, dim in ResNet50Extractor.LAYERS.items():
        assert feature_shape(f"resnet50-{layer}", {"image_size": 224})[1] == dim
    assert feature_shape("resnet50-res4f", {"image_size": 224}) == (196, 1024)
    assert feature_shape("frcnn", {"kind": "regions", "max_boxes": 3, "full_image": True}) == (
        4, TorchvisionRegions.feature_dim)
    assert feature_shape("b", {"kind": "regions", "backend": "detectron2"})[1] == Detectron2Regions.feature_dim
    assert feature_shape("i3d", {"kind": "video", "n_segments": 1}) == (1, I3DExtractor.feature_dim)
    assert feature_shape("vatex", {"kind": "pretrained", "import": "vatex_i3d"}) == (32, 1024)
    assert feature_shape("obj36", {"kind": "pretrained", "import": "butd"}) == (37, 2048)


def test_the_evidence_round_trips_and_the_docs_block_is_generated_from_it(tmp_path, capsys):
    """rehearsal-report --out: report.tsv and summary.json (commit, Snakemake's steps, wall time
    from the benchmark files' end times), read back as the same jobs; the docs block `rehearsal
    FOLDER` shows the totals, the jobs over request and the slowest jobs from them alone."""
    import json
    import os

    from mmt_repro.cli import main
    from mmt_repro.plan_tools.rehearsal import read_evidence, span_seconds
    from mmt_repro.tables.pages import render_block

    run = tmp_path / "run"
    bench(run, "translate/bertgen/bertgen/multi30k.test_2016_flickr.en-de.seed1.congruent.tsv", 40.0, "2500.5")
    bench(run, "extract_features/multi30k/resnet50-pool5/train.tsv", 30.0, "9100.0")  # over 8000
    bench(run, "tokenize/multi30k/val.lc.norm.tok.fr.tsv", 2.0, "-")
    files = sorted((run / "results" / "benchmarks").rglob("*.tsv"))
    for end, f in zip((1000.0, 1100.0, 1010.0), files):  # extract ends at 1000, translate at 1010, tokenize 1100
        os.utime(f, (end, end))
    logs = run / ".snakemake" / "log"
    logs.mkdir(parents=True)
    (logs / "2026-01-01T000000.000000.snakemake.log").write_text(
        "1 of 4 steps (25%) done\n3 of 4 steps (75%) done\nComplete log(s): x\n", encoding="utf-8")
    (logs / "2026-01-01T010000.000000.snakemake.log").write_text("Nothing to be done.\n", encoding="utf-8")
    (logs / "2026-01-01T020000.000000.snakemake.log").write_text("1 of 1 steps (100%) done\n", encoding="utf-8")
    out = tmp_path / "evidence"
    assert main(["rehearsal-report", str(run), "--repo", str(REPO), "--out", str(out), "--slowest", "2"]) == 0
    text = capsys.readouterr().out
    assert ("wall time: 130 s (2.2 min) from the first job's start to the last job's end; "
            "42 s (0.7 min) with a job running") in text  # 970-1010 and 1098-1100 with nothing between
    assert "     1 jobs        40 s (slowest 40 s)  translate" in text
    summary, jobs = read_evidence(out)
    assert [(r["done"], r["planned"]) for r in summary["invocations"]] == [(3, 4), (1, 1)] and summary["jobs"] == 3
    assert summary["span_s"] == 130.0 == span_seconds(jobs)  # 970 (start of extract) to 1100
    assert summary["busy_s"] == 42.0
    assert summary["over_request"] == ["extract_features/multi30k/resnet50-pool5/train.tsv"]
    assert summary["commit"] and len(summary["commit"]) == 40 and summary["peak_mb"] == 9100.0
    assert [(j.rule, j.seconds, j.max_rss_mb) for j in jobs] == [
        ("extract_features", 30.0, 9100.0), ("tokenize", 2.0, None), ("translate", 40.0, 2500.5)]
    assert json.loads((out / "summary.json").read_text())["job_seconds"] == 72.0
    block = render_block(tmp_path, tmp_path / "docs" / "x.md", "rehearsal evidence")
    assert "- Snakemake: 3 of 4 steps done; then 1 of 1 steps done; 3 benchmarked jobs, 72 job-seconds." in block
    assert "- Wall time, first job's start to last job's end: 2.2 min; with a job running: 0.7 min." in block
    assert "- Jobs over their full-size request: 1\n  - `extract_features/multi30k/resnet50-pool5/train.tsv`" in block
    slow = [line for line in block.splitlines() if line.startswith("| `")]
    assert [line.split(" | ")[:3] for line in slow] == [
        ["| `translate/bertgen/bertgen/multi30k.test_2016_flickr.en-de.seed1.congruent.tsv`", "40.0", "2,500"],
        ["| `extract_features/multi30k/resnet50-pool5/train.tsv`", "30.0", "9,100"], ["| `tokenize/multi30k/val.lc.norm.tok.fr.tsv`", "2.0", "-"]]
    assert slow[1].endswith(" | 8000 | 600 |")  # the rule's request
    assert "| translate | 1 | 40 | 40.0 |" in block and "| tokenize | 1 | 2 | 2.0 |" in block
