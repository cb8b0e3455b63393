"""What can be built (``python -m mmt_repro list [paper]``): every paper's tables with their
dataset, language pair, systems and test sets, what each needs besides the text (images,
videos, pretrained features, model weights: their config key and whether it is set), and the
target path to ask Snakemake for. Torch-free, from the config and the settings alone.

A need is *configured* when its folder or file is given in the config (a request-only input's
key is set, a pretrained feature set's ``src`` is set) or the workflow makes it (generated
grounded data, downloadable inputs, features the workflow extracts from configured images).
A table whose feature set is ``kind: pretrained`` needs that set's files, not the dataset's
images; the listing names the published release (manifest input) the workflow fetches for it.
:mod:`mmt_repro.plan_tools.preflight` checks further that the files are really there.
"""

from __future__ import annotations

from ..plan.commute import IMAGES_INPUT, images_folder, is_commute_table, needs_images
from ..plan.paths import path

MEDIA = {"images": "images", "videos": "videos"}


def _media_need(plan, dataset: str) -> dict | None:
    """The dataset's image or video folder, when the dataset reads media the workflow does not make."""
    cfg = plan.dataset_config(dataset)
    if cfg["source"] in ("grounded", "grounded_video"):
        return None
    for key in MEDIA:
        if key in cfg:
            value = cfg.get(key)
            return {"need": key, "key": f"datasets.{dataset}.{key}", "configured": bool(value),
                    "input": cfg.get(f"{key}_input") or ""}
    return None


def _feature_need(plan, dataset: str, feature_set: str) -> dict | None:
    """A pretrained feature set's files: its ``src``, and the manifest input (a published release)
    whose archive the workflow fetches and unpacks there, when ``src`` lies in such a folder."""
    fs = plan.feature_set_config(dataset, feature_set)
    if fs.get("kind") != "pretrained":
        return None
    folder = plan.unpacked_folder(fs.get("src"))
    return {"need": f"pretrained features {feature_set}", "key": f"datasets.{dataset}.features.{feature_set}.src",
            "configured": bool(fs.get("src")), "input": folder.split("/")[1] if folder else ""}


def _weight_needs(plan, paper: str, systems) -> list[dict]:
    """Manifest inputs a system reads as resources (``resources/<input>/<file>``), e.g. BertGen's
    VL-BERT and M-BERT weights: configured when anyone may download them."""
    needs, seen = [], set()
    for system in systems:
        for value in plan.system_settings(paper, system).resources.values():
            value = str(value)
            if not value.startswith("resources/") or value in seen:
                continue
            seen.add(value)
            name = value.split("/")[1]
            try:
                entry = plan.manifest.input(name)
            except (KeyError, ValueError):
                continue
            local = (plan.config.get("inputs") or {}).get("local", {}).get(name)
            configured = entry.access == "download" or bool(local) or bool((plan.config.get("inputs") or {}).get("mirror"))
            needs.append({"need": f"weights {name}", "key": f"inputs.local.{name}" if entry.access != "download" else "",
                          "configured": configured, "input": name})
    return needs


def catalogue(plan, paper: str | None = None) -> list[dict]:
    """One row per table of the config (enabled or not), in the config's order."""
    papers = [paper] if paper else list(plan.config["papers"])
    rows = []
    for p in papers:
        tables = plan.paper_config(p)["tables"]
        for name, t in tables.items():
            enabled = t.get("enabled", True)
            systems = list(t.get("systems") or [])
            needs = []
            if enabled and any(plan.multimodal(p, s) for s in systems):
                # pretrained features (a release of extracted regions) stand in for the media
                feat = _feature_need(plan, t["dataset"], t["features"]) if t.get("features") else None
                media = None if feat else _media_need(plan, t["dataset"])
                needs += [n for n in (media, feat) if n]
            if enabled and is_commute_table(t) and needs_images(plan, p, t):
                needs.append({"need": f"CoMMuTE images (manual input {IMAGES_INPUT})", "key": "datasets.commute.images",
                              "configured": images_folder(plan) is not None, "input": IMAGES_INPUT})
            if enabled:
                needs += _weight_needs(plan, p, systems)
            rows.append({
                "paper": p, "table": name, "enabled": enabled, "kind": t.get("kind", "translation"),
                "dataset": t.get("dataset"), "pair": t.get("pair"), "systems": systems,
                "test_sets": list(t.get("test_sets") or []), "needs": needs,
                "configured": all(n["configured"] for n in needs),
                "target": path("table", paper=p, table=name),
            })
    return rows


def format_catalogue(rows: list[dict]) -> str:
    """The listing as text: one block per paper, one line per table, then its needs."""
    out, current = [], None
    for r in rows:
        if r["paper"] != current:
            current = r["paper"]
            out.append(f"{current}")
        state = "disabled in this config" if not r["enabled"] else ("ready" if r["configured"] else "NEEDS INPUT")
        out.append(f"  {r['table']:<16} {state:<24} {r['target']}")
        out.append(f"      {r['dataset']} {r['pair'] or ''}, test sets: {', '.join(r['test_sets']) or '-'}; "
                   f"systems: {', '.join(r['systems'])}")
        for n in r["needs"]:
            mark = "set" if n["configured"] else "NOT SET"
            release = f"; published release {n['input']}" if n["need"].startswith("pretrained") and n["input"] else ""
            where = f" ({n['key']}{release})" if n["key"] else ""
            out.append(f"      needs {n['need']}: {mark}{where}")
    return "\n".join(out)
