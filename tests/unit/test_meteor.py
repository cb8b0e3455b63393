"""Tests for mmt_repro.metrics.meteor against the Meteor 1.5 jar itself.

Gold values: Meteor's README example (``example/xray``, ``-l en -norm``) in
../shared/datasets/metric-validation/meteor-xray-example: system1 = 0.3204832379614146,
system2 = 0.3170211680077819 (re-verified with the jar in file mode, see the data README).
Both systems share one JVM (the English paraphrase table takes several seconds to load).
Needs Java and pycocoevalcap==1.2 (or $MMT_REPRO_METEOR_JAR); otherwise the tests skip.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mmt_repro.io import DataError, read_lines
from mmt_repro.metrics import meteor as m

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
XRAY = DATASETS / "metric-validation" / "meteor-xray-example"

# the same two German lines scored by the jar in file mode:
#   java -jar meteor-1.5.jar h.de r.de -l de -norm -m "exact stem"  ->  Final score: 0.5254529767040553
DE_HYP = ["ein mann fährt rad .", "zwei hunde spielen ."]
DE_REF = ["ein mann fährt fahrrad .", "zwei hunde spielen im schnee ."]
DE_GOLD = 0.5254529767040553


def _need_java_and_jar() -> Path:
    if shutil.which("java") is None:
        pytest.skip("Meteor needs Java: no java on PATH")
    jar = m.bundled_jar()
    if jar is None:
        pytest.skip("no Meteor jar: pip install pycocoevalcap==1.2")
    return jar


@pytest.fixture(scope="module")
def xray():
    jar = _need_java_and_jar()
    if not XRAY.exists():
        pytest.skip(f"shared data not found: {XRAY}")
    ref = read_lines(XRAY / "reference")
    systems = {name: read_lines(XRAY / f"{name}.hyp") for name in ("system1", "system2")}
    return m.meteor_scores(systems, [ref], lang="en", jar=jar)


@pytest.mark.slow
def test_xray_example_matches_meteor_readme(xray):
    assert xray["system1"]["details"]["raw"] == pytest.approx(0.3204832379614146, abs=1e-9)
    assert xray["system2"]["details"]["raw"] == pytest.approx(0.3170211680077819, abs=1e-9)
    assert xray["system1"]["value"] == pytest.approx(32.04832379614146, abs=1e-7)


@pytest.mark.slow
def test_xray_signature_is_official_english(xray):
    s = xray["system1"]
    assert s["signature"] == (
        "meteor-1.5|lang:en|modules:exact,stem,synonym,paraphrase|weights:1.0,0.6,0.8,0.6|"
        "params:0.85,0.2,0.6,0.75|paraphrase:yes|norm:yes|nrefs:1|official:yes"
    )
    assert s["details"]["official"] is True
    assert "-stdio -l en -norm" in s["details"]["command"]


def test_without_norm_the_english_defaults_stay_official():
    """-norm is text handling the paper's tool chooses (nmtpytorch, MultEval: without): the
    signature says norm:no and the score is still the official METEOR-en, so a table gives it a
    delta; dropping a module is not official."""
    jar = _need_java_and_jar()
    plan = m._plan("en", False, Path(jar), [])
    assert plan["norm"] == "no" and plan["paraphrase"] == "yes" and plan["official"] is True
    assert m._plan("en", True, Path(jar), [])["official"] is True
    assert m._plan("en", False, Path(jar), ["-m", "exact stem"])["official"] is False


def test_german_without_paraphrases_is_marked_and_equals_file_mode():
    jar = _need_java_and_jar()
    if m.paraphrase_file(jar, "de").exists():
        pytest.skip("this jar has the German paraphrase table; the fallback is not used")
    s = m.meteor_score(DE_HYP, [DE_REF], lang="de", jar=jar)
    assert s["details"]["raw"] == pytest.approx(DE_GOLD, abs=1e-12)
    assert s["signature"] == (
        "meteor-1.5|lang:de|modules:exact,stem|weights:1.0,0.8|params:0.95,1.0,0.55,0.55|"
        "paraphrase:missing|norm:yes|nrefs:1|official:no"
    )


def test_multiple_references_and_awkward_lines():
    jar = _need_java_and_jar()
    # a hypothesis equal to the second reference scores like a perfect match
    # (Meteor keeps the best-scoring reference per segment)
    one = m.meteor_score(["zwei hunde spielen"], [["ein mann lacht"]], lang="de", jar=jar)
    two = m.meteor_score(["zwei hunde spielen"], [["ein mann lacht"], ["zwei hunde spielen"]], lang="de", jar=jar)
    assert one["details"]["raw"] == 0.0
    assert two["details"]["raw"] > 0.99
    assert "|nrefs:2|" in two["signature"]
    # an empty hypothesis and one containing the protocol separator do not derail the stream
    s = m.meteor_scores({"x": ["", "a ||| b"]}, [["ein mann .", "a b"]], lang="de", jar=jar, segments=True)["x"]
    assert s["details"]["segments"][0] == 0.0
    assert s["details"]["segments"][1] > 0.9
    assert s["details"]["n_cleaned_lines"] == 1
    # a language Meteor does not know runs as "other" (exact matches only, lowercasing) and says so
    zh = m.meteor_score(["我 爱 北京", "天安门"], [["我 爱 北京", "天安门 广场"]], lang="zh", jar=jar)
    assert zh["signature"].startswith(
        "meteor-1.5|lang:zh->other|modules:exact|weights:1.0|params:0.75,1.4,0.7,0.5|paraphrase:n/a|norm:lower-only|"
    )
    assert 0.5 < zh["details"]["raw"] < 1.0


@pytest.mark.parametrize("lang", ["de", "fr", "cs", "es"])
def test_language_table_matches_the_jar(lang):
    jar = _need_java_and_jar()
    announced = m.jar_defaults(lang, jar=jar)
    _, spec = m.meteor_language(lang)
    assert announced == {"modules": list(spec.modules), "weights": list(spec.weights), "params": list(spec.params)}


def test_language_lookup():
    assert m.meteor_language("cs")[1].code == "cz"
    assert m.meteor_language("en-GB")[0] == "en"
    assert m.meteor_language("zh") == ("zh", m.LANGUAGES["other"])
    assert not m.LANGUAGES["pt"].normaliser


def test_missing_jar_names_the_download(tmp_path):
    with pytest.raises(DataError) as err:
        m.meteor_score(["a"], [["a"]], lang="en", jar=tmp_path / "meteor-1.5.jar")
    assert m.METEOR_RELEASE_URL in str(err.value)
    assert str(tmp_path / "meteor-1.5.jar") in str(err.value)


def test_missing_java(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(DataError, match="needs Java"):
        m.meteor_score(["a"], [["a"]], lang="en")


def test_extra_args_cannot_override_the_language():
    with pytest.raises(ValueError, match="-l"):
        m._plan("en", True, Path("x.jar"), ["-l", "de"])


def test_the_release_fetched_and_unpacked_by_the_workflow_gives_official_german(standin):
    """The `meteor` input (config/config.yaml's tools.meteor_jar) through fetch and unpack: its jar
    reads data/paraphrase-de.gz beside itself, so METEOR-de runs all three default modules and is
    official; a pair of the table counts as a paraphrase match (more than exact+stem give)."""
    _need_java_and_jar()
    res = standin("meteor")["resources"]
    jar = res / "meteor-1.5" / "meteor-1.5.jar"
    table = res / "meteor-1.5" / "data" / "paraphrase-de.gz"
    assert jar.is_file() and table.is_file() and m.paraphrase_file(jar, "de") == table.resolve()
    entries = read_lines(table)
    phrase, para = next((a, b) for a, b in zip(entries[1::3], entries[2::3]) if " " not in a + b and a[:3] != b[:3])
    hyp, ref = [f"ein {phrase} ist da ."], [[f"ein {para} ist da ."]]
    full = m.meteor_score(hyp, ref, lang="de", norm=False, jar=jar)
    assert full["details"]["paraphrase"] == "yes" and full["details"]["modules"] == ["exact", "stem", "paraphrase"]
    assert full["signature"].endswith("|official:yes") and full["details"]["jar_origin"] == "config"
    without = m.meteor_score(hyp, ref, lang="de", norm=False, jar=m.bundled_jar())  # no paraphrase-de.gz
    assert without["details"]["paraphrase"] == "missing"
    assert full["value"] > without["value"]
