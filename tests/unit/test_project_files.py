"""The project's own files: LICENSE (MIT, as pyproject.toml says), CITATION.cff (this workflow and
the five papers it reproduces) and config/README.md (generated from config/schema.yaml, so it
cannot drift: regenerate it with `python -m mmt_repro config-docs --out config/README.md`)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from mmt_repro.config import schema_reference

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO.parent / "shared" / "papers"  # the papers' text, beside the repository when present

# (first author's family name, year) of the five reproduced papers
FIVE = {("Mitzalis", 2021), ("Calixto", 2017), ("Hirasawa", 2019), ("Wu", 2020), ("Yang", 2020)}
# reference types of the Citation File Format 1.2.0 that these references may use
CFF_TYPES = {"article", "conference-paper", "proceedings", "report", "software", "thesis", "generic"}


@pytest.fixture(scope="module")
def pyproject():
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


@pytest.fixture(scope="module")
def cff():
    return yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))


def test_license_is_mit_as_the_package_metadata_says(pyproject):
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert pyproject["license"] == {"text": "MIT"}
    assert text.startswith("MIT License\n")
    assert re.search(r"^Copyright \(c\) \d{4} the mmt-repro authors$", text, re.M)
    assert "Permission is hereby granted, free of charge" in text and 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def check_authors(authors, where):
    assert isinstance(authors, list) and authors, f"{where}: authors must be a non-empty list"
    for a in authors:
        assert a.get("name") or (a.get("family-names") and a.get("given-names")), f"{where}: author {a}"


def test_citation_cff_has_the_required_keys_and_matches_the_package(cff, pyproject):
    for key in ("cff-version", "message", "title", "authors"):  # required by CFF 1.2.0
        assert cff.get(key), f"CITATION.cff lacks {key}"
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    check_authors(cff["authors"], "CITATION.cff")
    assert str(cff["version"]) == pyproject["version"]
    assert cff["license"] == "MIT"


def test_citation_cff_references_the_five_papers(cff):
    refs = cff["references"]
    for ref in refs:
        where = f"reference {ref.get('title')!r}"
        assert ref.get("type") in CFF_TYPES and ref.get("title"), where
        check_authors(ref["authors"], where)
        assert isinstance(ref["year"], int), where
        if "doi" in ref:
            assert re.fullmatch(r"10\.\d{4,9}/\S+", str(ref["doi"])), where
        if "start" in ref:
            assert int(ref["start"]) < int(ref["end"]), where
    assert {(r["authors"][0]["family-names"], r["year"]) for r in refs} == FIVE


def test_citation_titles_are_the_papers_titles(cff):
    if not PAPERS.is_dir():
        pytest.skip(f"needs the papers' text in {PAPERS} (../shared/papers beside the repo); not present")

    def norm(text):
        return re.sub(r"\s+", " ", text.replace("\u2019", "'")).lower()

    heads = [norm(p.read_text(encoding="utf-8", errors="replace")[:400]) for p in sorted(PAPERS.glob("*.txt"))]
    for ref in cff["references"]:
        assert any(norm(ref["title"]) in head for head in heads), f"{ref['title']!r} is not a paper's title"


def test_config_readme_is_the_generators_output():
    committed = (REPO / "config" / "README.md").read_text(encoding="utf-8")
    assert committed == schema_reference(REPO / "config" / "schema.yaml"), (
        "config/README.md differs from config/schema.yaml: "
        "run `python -m mmt_repro config-docs --out config/README.md`")


def test_config_readme_lists_every_key_of_the_schema():
    """Every property of the schema (top level and each $defs block) has its row."""
    schema = yaml.safe_load((REPO / "config" / "schema.yaml").read_text(encoding="utf-8"))
    text = (REPO / "config" / "README.md").read_text(encoding="utf-8")
    keys = set(re.findall(r"^\| `([^`]+)` \|", text, re.M))
    leaves = {k.rsplit(".", 1)[-1] for k in keys}
    for block in [schema, *schema["$defs"].values()]:
        for name in block.get("properties") or {}:
            assert name in leaves, f"config/README.md lacks the key {name}"
    assert "papers.<paper>.tables.<table>.features" in keys and "datasets.<dataset>.features.<set>.kind" in keys
