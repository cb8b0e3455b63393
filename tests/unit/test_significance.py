"""p-values of each system against its baseline, as make_table reads them."""

import json

from mmt_repro.tables.significance import table_significance


def test_each_system_is_tested_against_its_own_baseline(tmp_path):
    ref = ["the cat sat on the mat", "a dog runs in the park", "two men play football", "a red car is parked"] * 10
    good = list(ref)
    bad = ["the the the", "a a a", "men men", "car car"] * 10
    (tmp_path / "ref").write_text("\n".join(ref) + "\n", encoding="utf-8")
    files = {}
    for name, lines in (("base", bad), ("mmt", good), ("base_bt", good), ("mmt_bt", good)):
        files[name] = tmp_path / name
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    translations = {
        "nmt|test|congruent|1": str(files["base"]),
        "mmt|test|congruent|1": str(files["mmt"]),
        "mmt|test|shuffled|1": str(files["base"]),
        "nmt_bt|test|congruent|1": str(files["base_bt"]),
        "mmt_bt|test|congruent|1": str(files["mmt_bt"]),
        "mmt_bt|test|congruent|2": str(files["base"]),  # only the first seed is tested
    }
    out = table_significance(
        translations, {"test": str(tmp_path / "ref")},
        baseline={"mmt": "nmt", "nmt_bt": "nmt", "mmt_bt": "nmt_bt"},
        pair="en-de", out_json=tmp_path / "p.json", metrics=("bleu", "ter"), n_samples=200,
    )
    assert json.loads((tmp_path / "p.json").read_text()) == out
    assert out["mmt|en-de|test|congruent|bleu"] < 0.05  # far better than its baseline
    assert out["mmt_bt|en-de|test|congruent|bleu"] == 1.0  # identical to its baseline
    assert "mmt|en-de|test|shuffled|bleu" in out and "nmt|en-de|test|congruent|bleu" not in out
    assert set(k.split("|")[-1] for k in out) == {"bleu", "ter"}


def test_all_seeds_multeval_style_with_meteor(tmp_path):
    """significance_seeds: all. A system better than its baseline in each of three seeds is
    significant on BLEU, METEOR and TER; a system whose seeds are the baseline's own outputs
    in another order (one better, one worse, one equal) is not."""
    ref = ["the cat sat on the mat", "a dog runs in the park", "two men play football", "a red car is parked"] * 12
    bad = ["the the the", "a a a", "men men", "car car"] * 12
    half = ref[:24] + bad[24:]
    (tmp_path / "ref").write_text("\n".join(ref) + "\n", encoding="utf-8")
    outputs = {"base1": half, "base2": bad, "base3": ref, "good1": ref, "good2": half, "good3": ref,
               "swap1": bad, "swap2": half, "swap3": ref}
    for name, lines in outputs.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    translations = {f"{system}|test|congruent|{k}": str(tmp_path / f"{stem}{k}")
                    for system, stem in (("nmt", "base"), ("mmt", "good"), ("other", "swap")) for k in (1, 2, 3)}
    out = table_significance(translations, {"test": str(tmp_path / "ref")}, baseline="nmt", pair="en-de",
                             out_json=tmp_path / "p.json", metrics=("bleu", "meteor", "ter"), n_samples=500,
                             seeds="all", lang="de", ter_lowercase=True, meteor_norm=False)
    for metric in ("bleu", "meteor", "ter"):
        assert out[f"mmt|en-de|test|congruent|{metric}"] < 0.01, metric
        assert out[f"other|en-de|test|congruent|{metric}"] > 0.5, metric
