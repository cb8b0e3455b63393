"""benchmarks/gpu_paper_run.py, on the CPU.

``prepare`` turns a configuration's planned jobs into a folder that a machine without Snakemake
or data can run; ``run`` executes them through ``run_job`` (here on the CPU, with the packages
the GPU image lacks stubbed as there) and packs what comes back."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_paper_run  # noqa: E402


def _tiny_corpus(work: Path, plan, jobs_wildcards) -> None:
    """Every input the jobs read, as a tiny real corpus (vocabularies built from it)."""
    from mmt_repro.text.vocab import Vocab

    words = "a man rides a red bike on the road while two dogs run".split()
    for w in jobs_wildcards:
        job = plan.train_jobs.job(w)
        for role, f in job.inputs.items():
            target = work / f
            target.parent.mkdir(parents=True, exist_ok=True)
            if role.endswith("vocab"):
                continue
            lines = [" ".join(words[(i + k) % len(words)] for k in range(3 + i % 4)) for i in range(24)]
            target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        for side in ("src_vocab", "tgt_vocab"):
            Vocab.build([work / job.inputs["train_src"], work / job.inputs["train_tgt"]]).save(work / job.inputs[side])


@pytest.mark.slow
def test_prepare_then_run_gives_curves_and_translations(tmp_path, monkeypatch):
    from mmt_repro.config import deep_update, load_yaml
    from mmt_repro.plan import Plan

    config = deep_update(load_yaml(REPO / "config/config.yaml"), load_yaml(REPO / "config/paper_multi30k_fr_en.yaml"))
    plan = Plan(config, REPO)
    work, dest = tmp_path / "work", tmp_path / "dest"
    wc = SimpleNamespace(paper="emb_pred", system="nmt", dataset="multi30k", pair="fr-en", seed="2")
    _tiny_corpus(work, plan, [wc])
    test_src = work / plan.translate_jobs.job(SimpleNamespace(**vars(wc), split="test_2016_flickr",
                                                         condition="congruent")).inputs["src"]
    test_src.write_text("a man rides\ntwo dogs run\n", encoding="utf-8")

    rc = gpu_paper_run.main(["prepare", "--configfile", str(REPO / "config/paper_multi30k_fr_en.yaml"),
                             "--workdir", str(work), "--paper", "emb_pred", "--systems", "nmt", "--decode",
                             "nmt_beam6", "--splits", "test_2016_flickr", "--seeds", "2", "--budget-min", "0.5",
                             "--dest", str(dest)])
    assert rc == 0
    jobs = json.loads((dest / "jobs.json").read_text())
    assert [(j["kind"], j["system"]) for j in jobs] == [("train", "nmt"), ("translate", "nmt_beam6")]
    assert all(j["device"] == "cuda" for j in jobs)
    assert jobs[0]["train_config"]["time_budget_min"] == 0.5 and jobs[0]["train_config"]["seed"] == 2
    assert jobs[1]["decode"]["beam_size"] == 6 and jobs[1]["checkpoint"] == jobs[0]["best"]
    assert (dest / jobs[0]["inputs"]["train_src"]).read_text() == (work / jobs[0]["inputs"]["train_src"]).read_text()
    assert not (dest / jobs[0]["best"]).exists()  # made by the run, not copied

    # the run, on the CPU: tiny model, a few updates
    for j in jobs:
        j["device"] = "cpu"
        if j["kind"] == "train":
            j["model_config"].update(emb_dim=8, enc_dim=8, dec_dim=8)
            j["train_config"].update(max_steps=3, max_epochs=1)
    (dest / "jobs.json").write_text(json.dumps(jobs))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/gpu_paper_run.py"), "run", "--out", str(out)],
                          cwd=dest, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
                               "MMT_STUB_FORCE": "jieba,pycocoevalcap,fasttext,snakemake,pytorchvideo"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:] + "".join(
        p.read_text()[-2000:] for p in (dest / "logs").glob("*.log"))
    with tarfile.open(out / "gpu_run.tar.gz") as tar:
        names = set(tar.getnames())
    assert jobs[0]["curve"] in names and jobs[1]["out"] in names and "logs" in names
    hyps = (dest / jobs[1]["out"]).read_text().splitlines()
    assert len(hyps) == 2
    log = (dest / "logs/00.train.nmt.log").read_text()
    assert "stubbed (not installed here): jieba" in log and "training finished" in log

    # collect: unpacked into a run folder and scored by the plan's score job
    ref = work / plan.score_jobs.job(SimpleNamespace(**vars(wc), split="test_2016_flickr", condition="congruent")
                                ).inputs["ref"][0]
    ref.write_text("a man rides\ntwo dogs run\n", encoding="utf-8")
    (work / jobs[0]["curve"]).parent.mkdir(parents=True, exist_ok=True)
    (work / jobs[0]["curve"]).write_text("kept\n", encoding="utf-8")  # a different file is never overwritten
    rc = gpu_paper_run.main(["collect", "--configfile", str(REPO / "config/paper_multi30k_fr_en.yaml"),
                             "--workdir", str(work), "--archive", str(out / "gpu_run.tar.gz")])
    assert rc == 1 and (work / jobs[0]["curve"]).read_text() == "kept\n"
    assert Path.cwd() != work  # collect works in the run folder and comes back
    assert (work / jobs[1]["out"]).read_text().splitlines() == hyps
    score = json.loads((work / plan.score_jobs.job(SimpleNamespace(**{**vars(wc), "system": "nmt_beam6"}, split="test_2016_flickr",
                                                              condition="congruent")).out).read_text())
    assert score["meta"]["checkpoint"] == jobs[0]["best"] and score["n_sentences"] == 2
    assert (work / "gpu_run/jobs.json").exists() and (work / "gpu_run/logs/00.train.nmt.log").exists()


def test_translations_wait_for_the_training_record(tmp_path, monkeypatch):
    """best.pt alone (an interrupted run writes it at every improvement) is not enough to decode."""
    monkeypatch.chdir(tmp_path)
    jobs = [{"kind": "train", "best": "m.best.pt", "record": "m.job.json"},
            {"kind": "translate", "checkpoint": "m.best.pt", "out": "a.txt", "system": "nmt", "seed": 2, "split": "t"},
            {"kind": "translate", "checkpoint": "m.best.pt", "out": "b.txt", "system": "nmt", "seed": 2, "split": "u"},
            {"kind": "translate", "checkpoint": "other.best.pt", "out": "c.txt", "system": "x", "seed": 1, "split": "t"}]
    Path("m.best.pt").write_text("w")
    todo, waiting = gpu_paper_run.ready_translations(jobs)
    assert todo == [] and len(waiting) == 3 and "m.job.json not written" in waiting[0]
    Path("m.job.json").write_text("{}")
    Path("b.txt").write_text("done\n")  # written by an earlier run: not redone
    Path("other.best.pt").write_text("w")  # trained elsewhere: its checkpoint is enough
    assert gpu_paper_run.ready_translations(jobs) == ([1, 3], [])


def test_each_train_says_whether_it_resumes_and_a_lost_checkpoint_is_flagged(tmp_path, monkeypatch):
    """The fifth lease lost three trains' .last.pt (a carried folder replaced the one on the machine)
    and said nothing: the trains began again from update 0 beside their 21-epoch curves."""
    monkeypatch.chdir(tmp_path)
    jobs = [{"kind": "train", "system": "nmt", "seed": s, "record": f"m{s}.job.json", "curve": f"m{s}.curve.tsv",
             "last": f"m{s}.last.pt"} for s in (1, 2, 3, 4)]
    jobs.insert(2, {"kind": "translate", "out": "a.txt"})
    Path("m1.job.json").write_text("{}")  # finished: not listed
    Path("m2.last.pt").write_text("w")
    Path("m2.curve.tsv").write_text("epoch\tval_bleu\n1\t20.0\n")
    Path("m3.curve.tsv").write_text("epoch\tval_bleu\n1\t20.0\n2\t30.0\n")  # its .last.pt lost
    assert gpu_paper_run.train_states(jobs) == [
        "job 1 train nmt seed 2: resumes from m2.last.pt",
        "job 3 train nmt seed 3: WARNING: its curve has 2 epochs but m3.last.pt is missing: starts again from "
        "update 0 (was the folder replaced?)",
        "job 4 train nmt seed 4: starts from update 0"]


def test_prepare_appends_seeds_without_duplicates(tmp_path):
    from mmt_repro.config import deep_update, load_yaml
    from mmt_repro.plan import Plan

    config = deep_update(load_yaml(REPO / "config/config.yaml"), load_yaml(REPO / "config/paper_multi30k_fr_en.yaml"))
    plan = Plan(config, REPO)
    work, dest = tmp_path / "work", tmp_path / "dest"
    _tiny_corpus(work, plan, [SimpleNamespace(paper="emb_pred", system="nmt", dataset="multi30k", pair="fr-en",
                                              seed=str(s)) for s in (2, 3)])
    base = ["prepare", "--configfile", str(REPO / "config/paper_multi30k_fr_en.yaml"), "--workdir", str(work),
            "--paper", "emb_pred", "--systems", "nmt", "--dest", str(dest)]
    assert gpu_paper_run.main([*base, "--seeds", "2", "3"]) == 0
    assert gpu_paper_run.main([*base, "--seeds", "3", "--append"]) == 0
    jobs = json.loads((dest / "jobs.json").read_text())
    assert [(j["kind"], j["seed"]) for j in jobs] == [("train", 2), ("train", 3)]

