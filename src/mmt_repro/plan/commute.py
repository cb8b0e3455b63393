"""CoMMuTE tables (``kind: analysis``, ``analysis: commute``): what a run's CoMMuTE analysis
reads, and which rows cannot be produced yet and why.

A CoMMuTE table is an analysis table of the paper's own runs (its ``dataset``, ``pair`` and
``features`` say which trained systems; ``test_sets`` names the split whose model inputs the
analysis job shares with decoding). Its ``files`` name CoMMuTE's text (manifest input
``commute``, ``resources/commute/<split>/...``); a multimodal system also reads the CoMMuTE
images, the folder ``datasets.commute.images`` (manual input ``commute_images``), and turns
them into its own kind of features (:func:`mmt_repro.decode.system.extract_for_system`: the
extractor and scaling it was trained with). A row cannot be produced when the images are not
configured, or when the system's features were imported from someone else's release
(``kind: pretrained``), which covers none of the CoMMuTE images: :func:`pending` gives each such
system its reason, shown in the table where the number would be. ``look`` is the plan's
:class:`~mmt_repro.plan.lookup.Lookup` (which calls :func:`restrict`, so this module does not import it).
"""

from __future__ import annotations


ANALYSIS = "commute"
IMAGES_INPUT = "commute_images"
#: Models that give a translation no probability (:func:`mmt_repro.decode.forced.scoring_capable`
#: refuses them, and a test holds this table to it), and why. BertGen, which decodes itself, scores
#: a translation under its own factorisation (``models.bertgen_scoring.target_nll``) and is not here.
NOT_SCORING = {
    "emb_pred.ours": "outputs a word embedding and decodes by nearest neighbour: it gives no probability of a "
                     "translation to rank CoMMuTE's pair by",
    "emb_pred.ours_text": "outputs a word embedding and decodes by nearest neighbour: it gives no probability of a "
                          "translation to rank CoMMuTE's pair by",
}


def is_commute_table(table: dict) -> bool:
    return table.get("kind") == "analysis" and table.get("analysis") == ANALYSIS


def restrict(tables: list[tuple[str, str, dict]]) -> list[tuple[str, str, dict]]:
    """The enabled tables ``(paper, name, config)`` with each CoMMuTE table cut to the runs the
    paper's other enabled tables plan: its systems that one of them runs on the same dataset and
    pair, and the seeds every such system runs. A CoMMuTE table adds no training to a
    configuration (an overlay that keeps one system of Table 1 scores that system); one left
    with nothing to score is off."""
    runs: dict[tuple, set] = {}
    for paper, _, t in tables:
        if not is_commute_table(t):
            for system in t["systems"]:
                runs.setdefault((paper, t["dataset"], t["pair"], system), set()).update(t["seeds"])
    out = []
    for paper, name, t in tables:
        if is_commute_table(t):
            systems = [s for s in t["systems"] if (paper, t["dataset"], t["pair"], s) in runs]
            seeds = [k for k in t["seeds"] if all(k in runs[(paper, t["dataset"], t["pair"], s)] for s in systems)]
            if not systems or not seeds:
                continue
            t = {**t, "systems": systems, "seeds": seeds}
        out.append((paper, name, t))
    return out


def images_folder(look) -> str | None:
    """The configured folder of the CoMMuTE images (``datasets.commute.images``), or None."""
    if "commute" not in look.config.get("datasets", {}):
        return None
    return look.config_path("datasets", "commute", "images")


def pending(look, paper: str, table: dict) -> dict[str, str]:
    """system -> why its CoMMuTE accuracy cannot be produced in this configuration (none for a
    system that can: a text-only system, or a multimodal one with the images configured and
    features this package extracts)."""
    out: dict[str, str] = {}
    fs = table.get("features")
    kind = look.feature_set_config(table["dataset"], fs).get("kind", "grid") if fs else None
    for system in table["systems"]:
        model = look.model_of(paper, system)
        if model in NOT_SCORING:
            out[system] = f"not scoring-capable: {model} {NOT_SCORING[model]}"
            continue
        if not look.multimodal(paper, system):
            continue
        if kind == "pretrained":
            out[system] = (f"needs {fs} features of the CoMMuTE images: the system reads features imported from a "
                           "published release, which does not cover them, and this package cannot extract them")
        elif images_folder(look) is None:
            inp = look.manifest.input(IMAGES_INPUT)
            out[system] = (f"needs the CoMMuTE images (manual input {IMAGES_INPUT}: {' '.join(inp.request.split())}; "
                           f"then set {inp.config_key})")
    return out


def needs_images(look, paper: str, table: dict) -> bool:
    """Whether a system of the table would read the CoMMuTE images: a multimodal one with a
    probability of a translation and features this package extracts."""
    fs = table.get("features")
    if fs and look.feature_set_config(table["dataset"], fs).get("kind", "grid") == "pretrained":
        return False
    return any(look.multimodal(paper, s) and look.model_of(paper, s) not in NOT_SCORING for s in table["systems"])


def analysis_files(look, paper: str, system: str) -> dict:
    """The images folder a multimodal system's CoMMuTE analysis reads (none for text-only)."""
    folder = images_folder(look)
    return {"images": folder} if folder and look.multimodal(paper, system) else {}


def pending_rows(look, paper: str, table: dict) -> list[dict]:
    """One table row per pending system and test set: ``{system, pair, test_set, metric, reason}``."""
    return [{"system": system, "pair": table["pair"], "test_set": test_set, "metric": "commute_acc",
             "reason": reason}
            for system, reason in pending(look, paper, table).items() for test_set in table["test_sets"]]


__all__ = ["ANALYSIS", "IMAGES_INPUT", "NOT_SCORING", "analysis_files", "images_folder", "is_commute_table", "needs_images",
           "pending", "pending_rows", "restrict"]
