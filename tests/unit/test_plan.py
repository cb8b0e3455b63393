"""The plan (mmt_repro.plan), called directly: every planning question answered from config,
settings and manifest in milliseconds, without torch or Snakemake. The wiring into the rules is
checked by a few `snakemake -n` tests (tests/workflow) and by benchmarks/plan_fingerprint.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace as W

import pytest

from mmt_repro.config import ConfigError, deep_update, load_yaml
from mmt_repro.corpora.fetch import sha256_of
from mmt_repro.io import DataError, UnknownNameError
from mmt_repro.plan import (
    AnalyseJob,
    Plan,
    ScoreJob,
    TableJob,
    TrainJob,
    TranslateJob,
    job_from_dict,
)
from mmt_repro.plan.jobs import JOB_KINDS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def full():
    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


@pytest.fixture(scope="module")
def smoke():
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(REPO / "config" / "smoke.yaml"))
    return Plan(config, REPO)


def test_planning_never_imports_torch_or_snakemake():
    code = ("import sys; from pathlib import Path; from mmt_repro.config import load_yaml; from mmt_repro.plan import Plan;"
            f"p = Plan(load_yaml(Path('{REPO}/config/config.yaml')), Path('{REPO}'));"
            "p.targets.all_tables(); p.targets.all_figures(); p.text.recipe_targets();"
            "print('torch' in sys.modules, 'snakemake' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_a_bad_config_stops_the_plan_naming_the_key(tmp_path):
    config = load_yaml(REPO / "config" / "config.yaml")
    config["device"] = "tpu"
    with pytest.raises(ConfigError, match="device"):
        Plan(config, REPO)


def test_train_job_of_calixto_nmt_src_img(full):
    job = full.train_jobs.job(W(paper="doubly_attentive", system="nmt_src_img", dataset="multi30k", pair="en-de", seed="1"))
    files = job.files()
    assert files["train_src"] == "results/text/doubly_attentive/multi30k.en-de/train.norm.tok.bpe.en"
    assert files["src_vocab"] == "results/vocab/doubly_attentive/multi30k.en-de.en.json"  # one vocabulary a side
    assert files["train_npy"] == "results/features/multi30k/resnet50-res4f/train.npy"
    assert files["val_ref"] == "results/text/multi30k/val.norm.tok.de"
    assert job.model == "doubly_attentive.nmt_src_img" and job.train_config["seed"] == 1
    assert job.best == "results/models/doubly_attentive/nmt_src_img/multi30k.en-de.seed1.best.pt"
    assert job.record == "results/models/doubly_attentive/nmt_src_img/multi30k.en-de.seed1.job.json"


def test_every_job_kind_round_trips_through_its_dict(full):
    w = W(paper="visual_agreement", system="soft_bwd", dataset="multi30k", split="test_2016_flickr", pair="de-en",
          seed="1", condition="congruent")
    jobs = [
        full.train_jobs.job(W(paper="visual_agreement", system="hard", dataset="multi30k", pair="en-de", seed="1")),
        full.translate_jobs.job(w),
        full.score_jobs.job(w),
        full.analyse_jobs.job(W(paper="doubly_attentive", system="nmt_src_img", dataset="multi30k",
                           split="test_2016_flickr", pair="en-de", seed="1", analysis="beta_shares")),
        full.table_jobs.job(W(paper="visual_agreement", table="table1_de_en")),
        full.significance_jobs.job(W(paper="doubly_attentive", table="table1")),
        full.protocol_jobs.job(W(paper="bertgen", table="table2_f30k_en")),
        full.probe_jobs.job(W(paper="deepfuse", table="image_use")),
        full.cross_paper_jobs.job(W()),
        full.curves_jobs.job(W(paper="bertgen", table="figure4_en_de")),
        full.alignment_jobs.model_job(W(paper="visual_agreement", dataset="multi30k", pair="en-de")),
        full.alignment_jobs.job(W(paper="visual_agreement", dataset="multi30k", pair="en-de", split="train")),
        full.backtranslation_jobs.job(W(paper="doubly_attentive", dataset="multi30k", pair="en-de")),
    ]
    assert len({job.kind for job in jobs}) == len(jobs) == len(JOB_KINDS)
    for job in jobs:
        data = job.to_dict()
        assert job_from_dict(data) == job == type(job).from_dict(data)
        assert job.settings_hash() == job_from_dict(data).settings_hash()
    with pytest.raises(ValueError, match="has no fields"):
        TrainJob.from_dict({**jobs[0].to_dict(), "lr": 1})
    with pytest.raises(ValueError, match="given to"):
        ScoreJob.from_dict(jobs[0].to_dict())
    with pytest.raises(Exception):  # frozen
        jobs[0].seed = 2


def test_reverse_of_decodes_the_forward_checkpoint_backward(full):
    """Yang et al.: soft_bwd (De->En) is the backward model of soft, trained on En->De."""
    w = W(paper="visual_agreement", system="soft_bwd", dataset="multi30k", split="test_2016_flickr", pair="de-en",
          seed="1", condition="congruent")
    job = full.translate_jobs.job(w)
    assert job.checkpoint == "results/models/visual_agreement/soft/multi30k.en-de.seed1.best.pt"
    assert job.direction == "backward"
    assert job.inputs["src"].endswith("test_2016_flickr.norm.tok.bpe.de") or job.inputs["src"].endswith(".de")
    assert full.score_jobs.job(w).meta["checkpoint"] == job.checkpoint  # the table's runs column names it
    with pytest.raises(ValueError, match="no training of its own"):
        full.train_jobs.job(W(paper="visual_agreement", system="soft_bwd", dataset="multi30k", pair="de-en", seed="1"))


def test_decode_of_decodes_the_same_checkpoint_with_its_own_beam(full, tmp_path):
    """Hirasawa et al.: nmt_beam6 is nmt's checkpoint decoded with beam 6 (the paper's rows:
    greedy); it trains nothing of its own."""
    w = W(paper="emb_pred", system="nmt_beam6", dataset="multi30k", split="test_2016_flickr", pair="fr-en",
          seed="2", condition="congruent")
    job = full.translate_jobs.job(w)
    greedy = full.translate_jobs.job(W(**{**w.__dict__, "system": "nmt"}))
    assert job.checkpoint == greedy.checkpoint == "results/models/emb_pred/nmt/multi30k.fr-en.seed2.best.pt"
    assert job.direction == "forward" and job.decode["beam_size"] == 6 and greedy.decode["beam_size"] == 1
    assert job.out != greedy.out and full.score_jobs.job(w).meta["checkpoint"] == job.checkpoint
    with pytest.raises(ValueError, match="no training of its own"):
        full.train_jobs.job(W(paper="emb_pred", system="nmt_beam6", dataset="multi30k", pair="fr-en", seed="1"))
    from mmt_repro.settings import load_paper

    settings = REPO / "config" / "papers" / "emb_pred.yaml"
    with pytest.raises(ConfigError, match="trains nothing"):
        load_paper("emb_pred", settings, {"systems": {"nmt_beam6": {"model_config": {"emb_dim": 8}}}})
    with pytest.raises(ConfigError, match="unknown system 'nmtt'"):
        load_paper("emb_pred", settings, {"systems": {"nmt_beam6": {"decode_of": "nmtt"}}})


def test_an_overlay_adds_a_system_as_a_variant_of_a_paper_system():
    """``variant_of``: the paper system's block with the variant's keys merged in (model, sizes,
    every other train setting kept); a new name without it is still a typo; it cannot shadow a
    paper system or vary an unknown one."""
    from mmt_repro.settings import load_paper

    settings = REPO / "config" / "papers" / "visual_agreement.yaml"
    paper = load_paper("visual_agreement", settings,
                       {"systems": {"onlytext_b16": {"variant_of": "onlytext", "train": {"batch_size": 16}}}})
    base, var = paper.systems["onlytext"], paper.systems["onlytext_b16"]
    assert var.model == base.model == "visual_agreement.seq2seq_text" and var.model_config == base.model_config
    assert var.train == {**base.train, "batch_size": 16} and base.train["batch_size"] == 64
    assert var.train["lr_schedule"] == "epoch_decay" and var.train["lr"] == 0.0003
    with pytest.raises(ConfigError, match="unknown system 'onlytext_b16'.*variant_of"):
        load_paper("visual_agreement", settings, {"systems": {"onlytext_b16": {"train": {"batch_size": 16}}}})
    with pytest.raises(ConfigError, match="exists already"):
        load_paper("visual_agreement", settings, {"systems": {"mhca": {"variant_of": "onlytext"}}})
    with pytest.raises(ConfigError, match="variant_of names unknown system 'onlytxt'"):
        load_paper("visual_agreement", settings, {"systems": {"x": {"variant_of": "onlytxt"}}})


def test_the_pilot_overlay_plans_its_variants(tmp_path):
    """config/pilot_visual_agreement.yaml: five train jobs, the variants differing from the
    paper's system only where the overlay says (batch 32/16; warm-up 454)."""
    from types import SimpleNamespace

    from mmt_repro.config import deep_update, load_yaml
    from mmt_repro.plan import Plan

    config = deep_update(load_yaml(REPO / "config" / "config.yaml"),
                         load_yaml(REPO / "config" / "pilot_visual_agreement.yaml"))
    plan = Plan(config, REPO)
    jobs = {s: plan.train_jobs.job(SimpleNamespace(paper="visual_agreement", system=s, dataset="multi30k", pair="en-de",
                                              seed="1"))
            for s in ("onlytext", "onlytext_b32", "onlytext_b16", "t_onlytext", "t_onlytext_warmup")}
    assert {s: j.train_config["batch_size"] for s, j in jobs.items()} == {
        "onlytext": 64, "onlytext_b32": 32, "onlytext_b16": 16, "t_onlytext": 64, "t_onlytext_warmup": 64}
    assert jobs["t_onlytext_warmup"].train_config["warmup_steps"] == 454
    assert jobs["t_onlytext"].train_config["warmup_steps"] == 0  # the pilot as it ran (the full config warms up)
    assert {j.train_config["decay_start_epoch"] for j in jobs.values()} == {1}  # the literal halving
    assert jobs["onlytext_b16"].model_config == jobs["onlytext"].model_config
    assert jobs["t_onlytext_warmup"].inputs == jobs["t_onlytext"].inputs


def test_train_on_decodes_the_one_multitask_run(full):
    """BertGen: every table decodes the one model trained on multi30k en-de (train_on); a task
    with its own validation (Table 5's MT directions) decodes that task's best checkpoint
    (best_per_task), the others the run's best."""
    assert full.checkpoint_of("bertgen", "bertgen", "iwslt14_de_en", "de-en", 1) == \
        "results/models/bertgen/bertgen/multi30k.en-de.seed1.best.mt_de_en.pt"
    assert full.checkpoint_of("bertgen", "bertgen", "setimes2_en_tr", "en-tr", 2) == \
        "results/models/bertgen/bertgen/multi30k.en-de.seed2.best.mt_en_tr.pt"
    for ds, pair in (("multi30k", "en-de"), ("multi30k", "en-fr"), ("flickr30k_captions", "im-en")):
        assert full.checkpoint_of("bertgen", "bertgen", ds, pair, 1) == \
            "results/models/bertgen/bertgen/multi30k.en-de.seed1.best.pt"
    assert full.checkpoint_of("bertgen", "fairseq", "iwslt14_de_en", "de-en", 1) == \
        "results/models/bertgen/fairseq/iwslt14_de_en.de-en.seed1.best.pt"  # trained per table: its own
    job = full.translate_jobs.job(W(paper="bertgen", system="bertgen", dataset="iwslt14_de_en", split="test",
                               pair="de-en", seed="1", condition="congruent"))
    assert job.checkpoint == job.inputs["checkpoint"] == "results/models/bertgen/bertgen/multi30k.en-de.seed1.best.mt_de_en.pt"
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"),
                         {"papers": {"bertgen": {"overrides": {"systems": {"bertgen": {"train": {"best_per_task": False}}}}}}})
    assert Plan(config, REPO).checkpoint_of("bertgen", "bertgen", "iwslt14_de_en", "de-en", 1) == \
        "results/models/bertgen/bertgen/multi30k.en-de.seed1.best.pt"
    job = full.translate_jobs.job(W(paper="bertgen", system="bertgen", dataset="multi30k", split="test_2016_flickr",
                               pair="en-fr", seed="1", condition="congruent"))
    assert job.inputs["src_vocab"] == job.inputs["tgt_vocab"] == "results/vocab/bertgen/multi30k.en-de.joint.json"


def test_multitask_tasks_carry_their_files(full):
    tasks = {t["name"]: t for t in full.train_jobs.tasks("bertgen", "bertgen")}
    assert len(tasks) == 12  # the 13 tasks of the paper: the system's own pair plus 12 extra
    ic = tasks["ic_tr"]
    assert ic["pair"] == "im-tr" and ic["src"] is None and ic["features"] is not None
    with pytest.raises(ValueError, match="captions images: it needs images|names its features"):
        full.train_jobs.task_files("bertgen", "fairseq", "x", W(dataset="tasviret", pair="im-tr", split=None, images=None, val=False))


def test_hard_agreement_reads_the_training_alignment(full):
    assert full.train_jobs.extra_files("visual_agreement", "hard", "multi30k", "en-de") == \
        {"align": "results/align/visual_agreement/multi30k.en-de/train.align"}
    assert full.train_jobs.extra_files("visual_agreement", "onlytext", "multi30k", "en-de") == {}
    with pytest.raises(ValueError, match="no `align` block"):
        full.align_file("doubly_attentive", "multi30k", "en-de", "train")


def test_trained_word_vectors_are_a_declared_difference():
    """Vectors trained here (the paper-setting overlay): a delta, and a verdict that says the
    setting differs (never "reproduced"); the systems that read no vectors have no difference."""
    config = deep_update(load_yaml(REPO / "config" / "config.yaml"),
                         load_yaml(REPO / "config" / "paper_multi30k_fr_en.yaml"))
    paper = Plan(config, REPO)
    reasons = paper.table_jobs.differences("emb_pred", "table1")
    assert set(reasons) == {"nmt_pre"}  # of nmt, nmt_pre and their beam-6 decodings: the one that trains on vectors
    assert all("trained here" in r for r in reasons.values())
    assert paper.table_jobs.not_comparable("emb_pred", "table1") == {}
    job = paper.table_jobs.job(W(paper="emb_pred", table="table1"))
    assert job.differences == reasons and type(job).from_dict(job.to_dict()) == job


def test_every_smoke_table_is_not_comparable(smoke):
    """The smoke run is a synthetic check: no row of it may get a delta against a paper."""
    for paper, table, _ in smoke.enabled:
        assert smoke.table(paper, table).get("comparable") is False, f"{paper}/{table} lacks comparable: false"
    job = smoke.table_jobs.job(W(paper="deepfuse", table="table1"))
    assert set(job.not_comparable) == {"lstm", "vatex", "transformer", "deepfuse"}


def test_backtranslation_reads_the_reverse_model_of_every_description(full):
    files = full.backtranslation_jobs.inputs(W(paper="doubly_attentive", dataset="multi30k", pair="en-de"))
    assert len(files["synthetic"]) == 5 and all("/bt_reverse/" in f and ".de-en." in f for f in files["synthetic"])
    with pytest.raises(ValueError, match="no `backtranslation` block"):
        full.backtranslation_jobs.settings("emb_pred")


def test_table_runs_of_the_smoke_grounded_table(smoke):
    runs = smoke.table_runs("doubly_attentive", "grounded")
    assert ("nmt", "test", 1, "congruent") in runs and ("nmt_src_img", "test", 1, "shuffled") in runs
    assert ("nmt", "test", 1, "shuffled") not in runs  # text-only systems have no image condition
    job = smoke.table_jobs.job(W(paper="doubly_attentive", table="grounded"))
    # and the colour-masking probe's runs (masked_words: colours; tests/unit/test_masked_words.py)
    masked = ["nmt.masked", "nmt_src_img.masked", "nmt_src_img.masked_shuffled"]
    assert isinstance(job, TableJob) and len(job.inputs["scores"]) == len(runs) + len(masked)
    assert [f for f in job.inputs["scores"] if ".masked" in f] == [
        f"results/scores/doubly_attentive/{r.split('.')[0]}/grounded.test.en-de.seed1.{r.split('.')[1]}.json"
        for r in masked]


def test_analysis_job_names_its_inputs(smoke):
    job = smoke.analyse_jobs.job(W(paper="visual_agreement", system="soft", dataset="grounded", split="test",
                              pair="en-de", seed="1", analysis="vad"))
    assert isinstance(job, AnalyseJob) and job.name == "visual_agreement.vad"
    assert job.meta["checkpoint"] == "results/models/visual_agreement/soft/grounded.en-de.seed1.best.pt"


def test_translate_job_of_dump_attention_writes_no_stats(smoke):
    w = W(paper="doubly_attentive", system="nmt_src_img", dataset="grounded", split="test", pair="en-de", seed="1")
    job = smoke.attention_jobs.job(w)
    assert isinstance(job, TranslateJob) and job.stats is None and job.out.endswith(".pt")


def test_the_alignment_stage_reads_the_models_text_of_both_sides(full):
    job = full.alignment_jobs.job(W(paper="visual_agreement", dataset="multi30k", pair="en-de", split="test_2016_flickr"))
    assert job.inputs["fwd"] == "results/align/visual_agreement/multi30k.en-de/model.fwd"
    assert job.inputs["src"].endswith("test_2016_flickr.norm.tok.bpe.en") or job.inputs["src"].endswith(".en")
    assert job.out == "results/align/visual_agreement/multi30k.en-de/test_2016_flickr.align"
    model = full.alignment_jobs.model_job(W(paper="visual_agreement", dataset="multi30k", pair="en-de"))
    assert set(model.settings) >= {"iterations", "favor_diagonal", "optimize_tension", "variational_bayes"}


def test_significance_compares_every_run_of_the_table_with_its_baseline(full):
    job = full.significance_jobs.job(W(paper="doubly_attentive", table="table1"))
    runs = full.table_runs("doubly_attentive", "table1")
    assert len(job.translations) == len(runs) and sorted(job.translations.values()) == job.inputs["translations"]
    assert job.baseline and job.out == "results/significance/doubly_attentive/table1.json"


def test_every_translation_table_gets_exactly_one_protocol_grid(full, smoke):
    """Rule all builds one protocol grid per enabled translation table (analyses and curves have
    none); its job reads every run's translation and score file and each test set's references
    (all five caption files of a captioning set), with the protocols of the table's target
    language and the paper's own marked. The smoke's grids leave METEOR out (a JVM start each)."""
    translation = [(p, t) for p, t, _ in full.enabled if full.table_kind(p, t) == "translation"]
    grids = [g for g in full.targets.default_targets() if g.endswith(".protocols.tsv")]
    assert grids == full.targets.all_protocol_grids()
    assert sorted(grids) == sorted(f"results/tables/{p}/{t}.protocols.tsv" for p, t in translation)
    assert len(set(grids)) == len(grids) == 45  # the 39 of the papers' tables, 6 image-use probe tables
    for p, t in translation:
        job = full.protocol_jobs.job(W(paper=p, table=t))
        runs = full.table_runs(p, t)
        assert len(job.translations) == len(job.scores) == len(runs) == len(job.inputs["translations"])
        assert job.out == f"results/tables/{p}/{t}.protocols.tsv" and job.legend.endswith(".protocols.json")
        assert job.table_metrics["bleu"] in job.protocols and job.protocols == list(dict.fromkeys(job.protocols))
        assert ("meteor" in job.table_metrics) == ("meteor" in full.settings[p].scoring.metrics)
        assert any(x.startswith("jieba_") for x in job.protocols) == (job.lang == "zh")
    captions = full.protocol_jobs.job(W(paper="bertgen", table="table2_coco"))
    assert len(captions.references["test"]) == 5 and "tok_multibleu_1ref" in captions.protocols
    assert captions.table_metrics["meteor"] == "meteor_en_norm"  # coco-caption: -l en -norm
    with pytest.raises(ValueError, match="only translation tables"):
        full.protocol_jobs.job(W(paper="doubly_attentive", table="figure2"))
    full.targets.check_targets(grids[:1])  # a grid is a known target, not a table named "<table>.protocols"
    smoke_grids = smoke.targets.all_protocol_grids()
    assert len(smoke_grids) == len([1 for p, t, _ in smoke.enabled if smoke.table_kind(p, t) == "translation"]) == 12
    assert set(smoke_grids) <= set(smoke.targets.default_targets())
    for g in smoke_grids:
        job = smoke.protocol_jobs.job(W(paper=g.split("/")[2], table=g.split("/")[3].split(".")[0]))
        assert not [x for x in job.protocols if x.startswith("meteor_")]
    off = Plan(deep_update(load_yaml(REPO / "config" / "config.yaml"), {"protocol_grids": {"all": False}}), REPO)
    assert not [g for g in off.targets.default_targets() if g.endswith(".protocols.tsv")]


OVERLAYS = sorted(p.name for p in (REPO / "config").glob("*.yaml")
                  if p.name.startswith(("cpu_", "paper_")) or p.name in ("shared_mirror.yaml", "sample_media.yaml"))


@pytest.mark.parametrize("name", OVERLAYS)
def test_an_overlay_config_plans_only_its_own_targets(name):
    """Issue 27 (6): `--configfile config/cpu_multi30k.yaml` without a target planned the whole
    reproduction (935 jobs, 87 trainings). Every overlay names its targets; rule all builds them."""
    overlay = load_yaml(REPO / "config" / name)
    assert overlay.get("targets"), f"config/{name} names no `targets`"
    plan = Plan(deep_update(load_yaml(REPO / "config" / "config.yaml"), overlay), REPO)
    assert plan.targets.default_targets() == overlay["targets"]
    assert all(t.startswith("results/") for t in overlay["targets"]) and len(overlay["targets"]) <= 8


def test_the_full_config_builds_everything_by_default(full):
    targets = full.targets.default_targets()
    assert targets[:2] == ["results/tables/all.tsv", "results/data/stats.tsv"]
    assert "results/figures/emb_pred/figure1.rare_words.png" in targets


def test_the_vector_diagnostic_overlay_changes_only_the_vectors_epochs():
    """config/diag_emb_pred_vectors50.yaml, stacked on the paper-setting overlay: Table 3 alone,
    one seed of "Ours - Images", vectors trained 50 epochs, everything else as the paper setting."""
    base = deep_update(load_yaml(REPO / "config" / "config.yaml"),
                       load_yaml(REPO / "config" / "paper_multi30k_fr_en.yaml"))
    paper_setting = Plan(base, REPO)
    diag = Plan(deep_update(base, load_yaml(REPO / "config" / "diag_emb_pred_vectors50.yaml")), REPO)
    assert diag.targets.default_targets() == ["results/tables/emb_pred/table3.tsv"]
    from mmt_repro.plan_tools.walk import training_runs

    runs, _ = training_runs(diag, diag.targets.default_targets())
    assert [(w.system, str(w.seed)) for w in runs] == [("ours_text", "1")]
    w = W(paper="emb_pred", dataset="multi30k", lang="en")
    assert paper_setting.vectors.training(w)["epoch"] == 5
    assert diag.vectors.training(w) == {**paper_setting.vectors.training(w), "epoch": 50}
    t = W(paper="emb_pred", system="ours_text", dataset="multi30k", pair="fr-en", seed="1")
    assert diag.train_jobs.job(t).to_dict() == paper_setting.train_jobs.job(t).to_dict()


def test_the_vocabulary_report_serves_the_back_translated_pairs_whatever_the_table_order(smoke):
    """Calixto et al.'s grounded check (no back-translation) is planned before Table 1 in the
    smoke run; the one vocabulary of (grounded, en-de) still serves Table 1's synthetic pairs."""
    tables = [t for p, t, _ in smoke.enabled if p == "doubly_attentive"]
    assert tables.index("grounded") < tables.index("table1")
    rows = {(r["corpus"], r["split"], r["lang"]) for r in smoke.text.vocab_report_rows(W(paper="doubly_attentive"))}
    assert {("backtranslated", "synthetic.src", "en"), ("backtranslated", "synthetic.tgt", "de"),
            ("backtranslated", "train_c1", "de"), ("train", "train", "en")} <= rows


# ---------------------------------------------------------------------------- declared differences


def _overlay_plan(overlay: dict) -> Plan:
    return Plan(deep_update(load_yaml(REPO / "config" / "config.yaml"), overlay), REPO)


def test_a_table_declares_a_difference_and_its_rows_verdict_says_so():
    """A table may state how its runs differ from the paper's setting (one reason for every
    system, or per system); the table job carries it and the verdict reads `(differs)`."""
    from mmt_repro.tables.build import verdict

    plan = _overlay_plan({"papers": {"emb_pred": {"tables": {"table1": {
        "systems": ["nmt", "nmt_pre"], "differences": {"nmt": "trained on a CPU in fp32, not a GPU"}}}}}})
    job = plan.table_jobs.job(W(paper="emb_pred", table="table1"))
    assert job.differences == {"nmt": "trained on a CPU in fp32, not a GPU"}
    _, word, why = verdict(0.3, None, differs=job.differences["nmt"])
    assert (word, why) == ("within (differs)", "verdict: |delta| 0.30 vs ±0.5 (the paper gives no spread), "
                                               "not the paper's setting")
    assert verdict(0.3, None)[1] == "reproduced"  # the same delta without the difference
    assert verdict(0.8, None, differs="x")[1] == "outside (differs)"
    # one reason for every system of the table, joined with the word vectors' own
    plan = _overlay_plan({"papers": {"emb_pred": {
        "overrides": {"word_vectors": {"source": "trained"}},
        "tables": {"table1": {"systems": ["nmt", "nmt_pre"], "differences": "one seed, not three"}}}}})
    differences = plan.table_jobs.job(W(paper="emb_pred", table="table1")).differences
    assert differences["nmt"] == "one seed, not three"
    assert differences["nmt_pre"].startswith("one seed, not three; word vectors: fastText cbow 300-d trained here")


def test_a_declared_difference_must_name_a_system_of_its_table():
    with pytest.raises(UnknownNameError, match=r"differences"):
        _overlay_plan({"papers": {"emb_pred": {"tables": {"table1": {
            "systems": ["nmt"], "differences": {"nmt_typo": "x"}}}}}})


def test_a_calixto_vocabulary_learnt_without_wmt15_is_declared_beside_its_rows():
    """Calixto et al.'s models share one vocabulary over M30k_T, M30k_C and WMT'15 (recipe
    vocabulary_corpora); a configuration whose table plans no system that trains on WMT'15 (an
    offline run) learns a smaller one, and its rows say so instead of getting a plain verdict."""
    full = _overlay_plan({})
    assert full.table_jobs.job(W(paper="doubly_attentive", table="table1")).differences == {}
    offline = _overlay_plan({"papers": {"doubly_attentive": {"tables": {"table1": {
        "systems": ["nmt", "nmt_src_img"]}, "image_use": {"enabled": False}}}}})  # the probe plans Table 1's systems
    differences = offline.table_jobs.job(W(paper="doubly_attentive", table="table1")).differences
    assert set(differences) == {"nmt", "nmt_src_img"}
    assert differences["nmt"] == ("vocabulary: BPE codes and vocabulary learnt on train only; the paper's cover "
                                  "train, backtranslated, wmt15 (no system here trains on backtranslated, wmt15)")
    # the grounded check is ours, not the paper's data: no vocabulary difference there
    assert full.table_jobs.job(W(paper="doubly_attentive", table="grounded")).differences == {}


def test_repository_files_are_read_through_the_run_folders_copy(smoke):
    """A job names a repository file by its copy under results/repo/ (rule repo_file), the same
    path wherever the checkout is; tools outside a run folder map the copy back; an absolute
    path, or one that leaves the repository, stays as it is."""
    w = W(paper="visual_agreement", system="mhca", dataset="grounded", pair="en-de", seed="1")
    assert smoke.published == "results/repo/config/published_results.tsv"
    assert smoke.repo_source(smoke.published) == REPO / "config" / "published_results.tsv"
    copy = smoke.run_path("config/visual_agreement/visual_words.tsv", w)
    assert copy == "results/repo/config/visual_agreement/visual_words.tsv"
    assert smoke.run_path("results/vocab/{paper}/x.json", w) == "results/vocab/visual_agreement/x.json"
    assert smoke.run_path("/data/words.tsv", w) == "/data/words.tsv"
    assert smoke.run_path("../shared/words.tsv", w) == str(REPO / ".." / "shared" / "words.tsv")
    assert smoke.data.repo_file_sha256(W(file="config/published_results.tsv")) == sha256_of(
        REPO / "config" / "published_results.tsv")
    with pytest.raises(DataError, match="missing"):
        smoke.data.repo_file_sha256(W(file="config/no_such_file.tsv"))


def test_jobs_that_score_meteor_wait_for_the_release_the_workflow_unpacks(full, smoke):
    """config/config.yaml's tools.meteor_jar lies in the `meteor` input's unpacked folder: every
    job that scores METEOR reads that jar by its run-folder path and has the folder as an input
    (rule unpack_input makes it, after fetch_input); a job without METEOR does not wait for it,
    and with `meteor_jar: null` (the offline overlays) no job asks for the release."""
    release, jar = "resources/meteor/meteor-1.5", "resources/meteor/meteor-1.5/meteor-1.5.jar"
    de = W(paper="doubly_attentive", system="nmt_src_img", dataset="multi30k", split="test_2016_flickr",
           pair="en-de", seed="1", condition="congruent")
    jobs = {
        "score": full.score_jobs.job(de),
        "significance": full.significance_jobs.job(W(paper="doubly_attentive", table="table1")),
        "protocols": full.protocol_jobs.job(W(paper="bertgen", table="table2_f30k_en")),
        "cross_paper": full.cross_paper_jobs.job(W()),
    }
    for kind, job in jobs.items():
        assert (kind, job.meteor_jar, job.inputs["meteor"]) == (kind, jar, release)
    assert full.unpacked[release][0] == "resources/meteor/meteor-1.5.tar.gz"
    blank = full.score_jobs.job(W(**{**vars(de), "condition": "blank_mean"}))  # BLEU only: no JVM, no release
    assert blank.scoring["metrics"] == ["bleu"] and "meteor" not in blank.inputs
    deepfuse = full.significance_jobs.job(W(paper="deepfuse", table="table1"))  # BLEU only
    assert "meteor" not in deepfuse.inputs
    offline = smoke.score_jobs.job(W(**{**vars(de), "dataset": "grounded", "split": "test"}))
    assert "meteor" in offline.scoring["metrics"] and offline.meteor_jar is None and "meteor" not in offline.inputs
