"""The product docs: generated from the committed evidence, about the product (not about how it
was built), a README that stays a first page, and its cluster recipe runnable as written.

To forbid another phrase in README and docs/, add a pattern to PROCESS_WORDS with the reason."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from mmt_repro.cli import main
from mmt_repro.tables.pages import BLOCK, doc_files, generate_docs

REPO = Path(__file__).resolve().parents[2]
README_MAX_LINES = 150

# pattern -> why it has no place in product docs (history goes to CHANGELOG.md)
PROCESS_WORDS = {
    r"\bsessions?\b": "rounds of work",
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
    r"fourteenth|fifteenth) (round|sitting|call|lease)\b": "numbered rounds of work",
    r"\brounds? of work\b": "rounds of work",
    r"\b(lease|leases|leased|lent)\b": "machine loans",
    r"\bthis machine\b": "the machine the docs were written on",
    r"\bissue #?\d+\b": "issue numbers",
    r"(?<![\w/&])#\d+\b": "issue numbers",
    r"heavy-job lock|\.heavy\.lock": "the development lock file",
    r"other engineers": "how the work was organised",
    r"\.\./shared/": "a path only the developers have",
}
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def process_words(text: str) -> list[tuple[int, str, str]]:
    """(line number, phrase, why) of every process word in ``text``; dates count in headings."""
    hits = []
    for n, line in enumerate(text.splitlines(), start=1):
        for pattern, why in PROCESS_WORDS.items():
            hits += [(n, m.group(0), why) for m in re.finditer(pattern, line, flags=re.I)]
        if line.startswith("#") and DATE.search(line):
            hits.append((n, DATE.search(line).group(0), "a dated heading"))
    return hits


def _prose(file: Path) -> str:
    """The hand-written part of a doc: generated blocks blanked (their lines kept for numbering)."""
    text = file.read_text(encoding="utf-8")
    return BLOCK.sub(lambda m: m.group(1) + "\n" * m.group("body").count("\n") + m.group(4), text)


def test_the_process_word_check_finds_a_planted_word():
    planted = "# Results (2026-11-27)\nOn this machine the fifth session's lease ran out; see issue 44 and #45.\n"
    found = {(n, word.lower()) for n, word, _ in process_words(planted)}
    assert found == {(1, "2026-11-27"), (2, "this machine"), (2, "session"), (2, "lease"), (2, "issue 44"),
                     (2, "#45")}
    assert process_words("Released under the MIT licence; see docs/results/smoke.md#tables.\n") == []


def test_readme_and_docs_speak_of_the_product():
    hits = [f"{f.relative_to(REPO)}:{n}: {word!r} ({why})"
            for f in doc_files(REPO) for n, word, why in process_words(_prose(f))]
    assert hits == [], "history belongs in CHANGELOG.md:\n" + "\n".join(hits)


def test_hand_written_docs_carry_no_run_dates():
    """A date in prose is a diary entry; the generated pages may say when their evidence was built."""
    hits = [f"{f.relative_to(REPO)}:{n}" for f in doc_files(REPO) if "results" not in f.parts
            for n, line in enumerate(_prose(f).splitlines(), start=1) if DATE.search(line)]
    assert hits == []


def test_readme_is_a_first_page():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES
    first_screen = "\n".join(lines[:45])
    assert "make smoke" in first_screen and "make test" in first_screen and "<!-- generated: status -->" in first_screen
    assert (REPO / "CHANGELOG.md").read_text(encoding="utf-8").startswith("# Changelog")


def test_generated_docs_are_what_the_command_writes():
    """`python -m mmt_repro docs --check`: every results page and generated block equals what the
    committed evidence gives (run `python -m mmt_repro docs` after changing it)."""
    assert [str(f.relative_to(REPO)) for f in generate_docs(REPO, check=True)] == []


def test_docs_check_fails_on_a_hand_edited_figure(tmp_path, capsys):
    """The same check on a copy of the docs where one generated figure was typed over."""
    repo = tmp_path / "repo"
    for part in ("README.md", "docs", "reference", "config"):
        src, dst = REPO / part, repo / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copyfile)(src, dst)
    page = repo / "docs" / "results" / "paper_multi30k_fr_en.md"
    page.write_text(page.read_text(encoding="utf-8").replace("51.44", "51.30", 1), encoding="utf-8")
    assert main(["docs", "--check", "--repo", str(repo)]) == 1
    assert "differs: " in capsys.readouterr().out
    assert main(["docs", "--repo", str(repo)]) == 0
    assert page.read_text(encoding="utf-8") == (REPO / "docs" / "results" / "paper_multi30k_fr_en.md").read_text(
        encoding="utf-8")
    assert main(["docs", "--check", "--repo", str(repo)]) == 0


def test_every_relative_link_in_the_docs_resolves():
    link = re.compile(r"\]\((?!https?:|mailto:|#)([^)#\s]+)(#[^)]*)?\)")
    code = re.compile(r"```.*?```|`[^`\n]*`", re.S)  # links inside code are code
    broken = [f"{f.relative_to(REPO)}: {m.group(1)}" for f in doc_files(REPO)
              for m in link.finditer(code.sub("", f.read_text(encoding="utf-8")))
              if not (f.parent / m.group(1)).exists()]
    assert broken == []


def _recipe_commands() -> list[str]:
    """The `python -m mmt_repro` commands of the README's numbered cluster recipe, as written."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    recipe = text.split("## Reproduce a table on a SLURM cluster", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`\.venv/bin/python -m mmt_repro ([^`]+)`", recipe)


def test_the_readme_cluster_recipe_runs_as_written(tmp_path, capsys, monkeypatch):
    commands = _recipe_commands()
    verbs = [c.split()[0] for c in commands]
    assert verbs == ["check", "plan", "show", "reference"]
    site = tmp_path / "site.yaml"  # step 3: cp config/site.example.yaml site.yaml
    shutil.copyfile(REPO / "config" / "site.example.yaml", site)
    monkeypatch.chdir(REPO)
    argv = {v: c.replace("site.yaml", str(site)).split() for v, c in zip(verbs, commands)}

    assert main(argv["check"]) == 1  # the example's paths are placeholders: the check names them
    err = capsys.readouterr().err
    assert "/path/to/flickr30k-images" in err and "configuration file does not exist" not in err
    assert main(argv["plan"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"= emb_pred\s+\d+ jobs", out) and "doubly_attentive" not in out  # the target's jobs only

    monkeypatch.chdir(REPO / "reference" / "paper_multi30k_fr_en")  # a folder holding that table
    assert main(argv["show"]) == 0
    assert "51.44 (51.0, +0.44)" in capsys.readouterr().out


@pytest.mark.parametrize("verb", ["check", "plan", "progress", "list"])
def test_targets_may_follow_configfile_in_every_verb(verb, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    overlay = "config/paper_multi30k_fr_en.yaml"
    target = "emb_pred" if verb == "list" else "results/tables/emb_pred/table3.tsv"
    assert main([verb, "--configfile", overlay, target]) == 0
    out = capsys.readouterr().out
    assert {"check": "of 1 target(s)", "plan": "ours_text", "progress": "ours_text",
            "list": "table3"}[verb] in out
    if verb == "plan":
        assert "nmt_pre" not in out  # table3 alone: not table1's systems
