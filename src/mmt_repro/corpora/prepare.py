"""Plans of the prepared corpora beyond Multi30k: which fetched files a dataset reads and which
``results/data/<dataset>/`` files it writes, and the one step that makes them.

A dataset of the config (``datasets.<name>``) names its ``source`` (the recipe below) and its
manifest ``input``; :func:`corpus_plan` turns that into ``(inputs, outputs)``, used both by the
Snakemake rule ``prepare_corpus`` (to declare them) and by :func:`prepare_corpus` (to make
them), so the two cannot drift apart. Sources:

``iwslt14``      IWSLT'14 TED talks (BertGen): the raw archive through fairseq's recipe
                 (:func:`~mmt_repro.corpora.iwslt.prepare_iwslt14`), or its prepared output.
``newstest``     WMT news test sets, concatenated per split (SETIMES2 En-Tr dev/test, WMT19
                 De-Fr test), plus SETIMES2 training pairs when ``train_input`` is set.
``vatex``        VATEX parallel captions (DeepFuse): the official JSON or the prepared pairs.
``coco_captions``  COCO Karpathy test references, 5 per image in Karpathy order (BertGen).
``tasviret``     BertGen's Flickr8k/TasvirEt image split (seeded) and, when the TasvirEt
                 archive is configured, its Turkish captions.
``multi30k_captions``  Multi30k task 2 as captioning data (BertGen's F30k En/De captioning):
                 ``<split>.<k>.<lang>`` (k = 1..5) and ``image_splits/<split>.txt``.
``karpathy``     a Karpathy caption JSON (``json``, e.g. ``dataset_coco.json``) from the
                 ``caption_datasets.zip`` archive: ``<split>.<k>.en`` and image lists of
                 train (with restval), val and test (BertGen's COCO Karpathy test).
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from ..io import DataError, read_lines, write_lines
from . import captions
from . import iwslt
from . import newstest
from . import vatex
from .preparers import extract_member
from .manifest import Manifest, load_manifest

log = logging.getLogger(__name__)

SOURCES = ("iwslt14", "newstest", "vatex", "coco_captions", "tasviret", "multi30k_captions", "karpathy")
M30K_CAPTION_SPLITS = ("train", "val", "test_2016")
COCO_CAPTIONS_PER_IMAGE = 5
VATEX_JSON = {"train": "vatex_training_v1.0.json", "val": "vatex_validation_v1.0.json"}
FLICKR8K_LISTS = ("Flickr_8k.trainImages.txt", "Flickr_8k.devImages.txt", "Flickr_8k.testImages.txt")


def _res(input_name: str, file: str) -> str:
    return f"resources/{input_name}/{file}"


def _langs(settings: dict) -> list[str]:
    return settings["pair"].split("-")


def corpus_plan(name: str, settings: dict, manifest: Manifest | None = None) -> tuple[dict[str, str], list[str]]:
    """``(inputs, outputs)`` of dataset ``name``: inputs keyed by role (paths under
    ``resources/``), outputs relative to ``results/data/<name>/``."""
    manifest = manifest or load_manifest()
    source, inp = settings["source"], settings.get("input")
    entry = manifest.input(inp) if inp else None
    inputs: dict[str, str] = {}
    outputs: list[str] = []
    if source == "iwslt14":
        src, tgt = _langs(settings)
        splits = settings.get("splits", ["train", "valid", "test"])
        if entry.form == "raw":
            inputs["archive"] = _res(inp, f"{src}-{tgt}.tgz")
        else:
            for f in entry.files:
                if f.startswith("IWSLT14.") or f.split(".")[0] in splits:
                    inputs[f] = _res(inp, f)
        outputs = [f"{s}.{lang}" for s in splits for lang in (src, tgt)]
    elif source == "newstest":
        src, tgt = _langs(settings)
        for split, sets in settings["sets"].items():
            for k, test_set in enumerate(sets):
                for lang in (src, tgt):
                    inputs[f"{split}|{k}|{lang}"] = _res(inp, f"{test_set}.{settings['pair']}.{lang}")
            outputs += [f"{split}.{src}", f"{split}.{tgt}"]
        if settings.get("train_input"):
            train = manifest.input(settings["train_input"])
            inputs["train_zip"] = _res(train.name, next(iter(train.files)))
            outputs += [f"train.{src}", f"train.{tgt}"]
    elif source == "vatex":
        splits = settings.get("splits", ["train", "val"])
        for split in splits:
            if entry.form == "raw":
                inputs[split] = _res(inp, VATEX_JSON[split])
            else:
                for lang in ("en", "zh", "id"):
                    inputs[f"{split}.{lang}"] = _res(inp, f"{split}.{lang}")
        # split_by_video: the `splits` read are re-split by video into these (vatex.split_by_video)
        made = list(settings.get("split_by_video") or splits)
        outputs += [f for split in made for f in (f"{split}.en", f"{split}.zh", f"{split}.id", f"image_splits/{split}.txt")]
    elif source == "coco_captions":
        inputs["captions"] = _res(inp, next(iter(entry.files)))
        outputs = [f"test.{k}.en" for k in range(1, COCO_CAPTIONS_PER_IMAGE + 1)]
    elif source == "tasviret":
        for f in FLICKR8K_LISTS:
            inputs[f] = _res("flickr8k_text", f)
        inputs["multi30k_train"] = _res("multi30k_task1", "image_splits/train.txt")
        outputs = [f"image_splits/{s}.txt" for s in ("train", "val", "test")]
        if inp:
            inputs["archive"] = _res(inp, next(iter(entry.files)))
            outputs += [f"{s}.{k}.tr" for s in ("train", "val", "test") for k in (1, 2)]
    elif source == "multi30k_captions":
        k = int(settings.get("captions_per_image", 5))
        for split in settings.get("splits", M30K_CAPTION_SPLITS):
            for lang in settings.get("langs", ["en", "de"]):
                for j in range(1, k + 1):
                    inputs[f"{split}.{j}.{lang}"] = _res(inp, f"raw/{split}.{j}.{lang}.gz")
                    outputs.append(f"{split}.{j}.{lang}")
            inputs[f"{split}|images"] = _res(inp, f"image_splits/{split}_images.txt")
            outputs.append(f"image_splits/{split}.txt")
    elif source == "karpathy":
        inputs["archive"] = _res(inp, next(iter(entry.files)))
        k = int(settings.get("captions_per_image", 5))
        for split in ("train", "val", "test"):
            outputs.append(f"image_splits/{split}.txt")
            outputs += [f"{split}.{j}.en" for j in range(1, k + 1)]
    else:
        raise DataError(None, f"dataset {name!r} has source {settings['source']!r}, which prepare_corpus does not know",
                        f"use one of {', '.join(SOURCES)}")
    return inputs, outputs


def text_outputs(name: str, settings: dict, manifest: Manifest | None = None) -> list[str]:
    """The text files among a dataset's outputs (what the stats count)."""
    return [o for o in corpus_plan(name, settings, manifest)[1] if not o.startswith("image_splits/") and not o.endswith(".id")]


def _coco_captions(src: Path, out_dir: Path, check_sizes: bool = True) -> dict[str, int]:
    lines = read_lines(src, allow_empty_lines=False)
    if len(lines) % COCO_CAPTIONS_PER_IMAGE:
        raise DataError(src, f"{len(lines)} lines is not 5 captions per image", "fetch the file again")
    n = len(lines) // COCO_CAPTIONS_PER_IMAGE
    if check_sizes and n != 5000:
        raise DataError(src, f"{n} images, the Karpathy COCO test split has 5,000", "fetch the file again")
    for k in range(COCO_CAPTIONS_PER_IMAGE):
        write_lines(out_dir / f"test.{k + 1}.en", lines[k::COCO_CAPTIONS_PER_IMAGE])
    return {"images": n, "captions": len(lines)}


def _tasviret(inputs: dict[str, str], out_dir: Path, seed: int, sizes=None) -> dict:
    flickr8k = [name for f in FLICKR8K_LISTS for name in read_lines(inputs[f])]
    m30k_train = read_lines(inputs["multi30k_train"])
    sizes = tuple(int(x) for x in sizes) if sizes else captions.TASVIRET_SIZES
    if "archive" in inputs:
        with tempfile.TemporaryDirectory() as tmp:
            json_path = extract_member(inputs["archive"], "tasviret8k_captions.json", Path(tmp) / "tasviret.json")
            return captions.prepare_tasviret(json_path, out_dir, seed, exclude=m30k_train, restrict_to=flickr8k,
                                             sizes=sizes)
    split = captions.split_tasviret(flickr8k, seed, sizes=sizes, exclude=m30k_train)
    for name, images in split.items():
        write_lines(out_dir / "image_splits" / f"{name}.txt", images)
    log.info("TasvirEt captions not configured (datasets.<name>.input): image split only")
    return {name: len(images) for name, images in split.items()}


def _multi30k_captions(inputs: dict[str, str], out_dir: Path) -> dict[str, int]:
    """Multi30k task 2's descriptions as captioning data: each ``<split>.<k>.<lang>`` as released
    and the split's image list, checked to have one line per image."""
    counts = {}
    for key, src in inputs.items():
        if key.endswith("|images"):
            split = key.split("|")[0]
            images = read_lines(src, allow_empty_lines=False)
            write_lines(out_dir / "image_splits" / f"{split}.txt", images)
            counts[split] = len(images)
    for key, src in inputs.items():
        if key.endswith("|images"):
            continue
        lines = read_lines(src)
        split = key.split(".")[0]
        if len(lines) != counts[split]:
            raise DataError(src, f"has {len(lines)} captions, the {split} image list {counts[split]}",
                            "fetch the Multi30k task 2 files again")
        write_lines(out_dir / key, lines)
    return counts


def _known_corpus(name: str, settings: dict) -> str | None:
    """The key of :data:`~mmt_repro.corpora.checks.KNOWN_SIZES` for a dataset named like
    ``setimes2_en_tr`` (-> ``setimes2_en-tr``), so its published sizes are checked; else None."""
    from .checks import KNOWN_SIZES

    key = f"{name[: -len(settings['pair']) - 1]}_{settings['pair']}" if "pair" in settings else name
    return key if key in KNOWN_SIZES else None


def prepare_corpus(name: str, settings: dict, inputs: dict[str, str], out_dir: str | Path) -> dict:
    """Make the outputs of :func:`corpus_plan` in ``out_dir`` from the fetched ``inputs``."""
    out_dir = Path(out_dir)
    source = settings["source"]
    entry = load_manifest().input(settings["input"]) if settings.get("input") else None
    sized = bool(settings.get("check_sizes", True))  # false: a deliberate subset (the stand-in inputs)
    if source == "iwslt14":
        src, tgt = _langs(settings)
        if "archive" in inputs:
            return iwslt.prepare_iwslt14(inputs["archive"], src, tgt, out_dir, check_sizes=sized)
        folder = Path(next(iter(inputs.values()))).parent
        return iwslt.prepare_iwslt14_prepared(folder, src, tgt, out_dir, splits=settings.get("splits"),
                                              check_sizes=sized)
    if source == "newstest":
        src, tgt = _langs(settings)
        counts = {}
        for split, sets in settings["sets"].items():
            sources = {lang: [inputs[f"{split}|{k}|{lang}"] for k in range(len(sets))] for lang in (src, tgt)}
            counts[split] = newstest.prepare_newstest(sources, out_dir, split,
                                                      corpus=_known_corpus(name, settings) if sized else None)
        if "train_zip" in inputs:
            counts["train"] = newstest.prepare_setimes(inputs["train_zip"], out_dir, src, tgt)
        return counts
    if source == "vatex" and settings.get("split_by_video"):
        return vatex.prepare_vatex_split(inputs, entry.form, settings.get("splits", ["train", "val"]),
                                         dict(settings["split_by_video"]), settings.get("split_seed", 1), out_dir)
    if source == "vatex":
        counts = {}
        for split in settings.get("splits", ["train", "val"]):
            if entry.form == "raw":
                counts[split] = vatex.prepare_vatex(inputs[split], out_dir, split, check_sizes=sized)
            else:
                counts[split] = vatex.prepare_vatex_prepared(Path(inputs[f"{split}.en"]).parent, out_dir, split)
        return counts
    if source == "coco_captions":
        return _coco_captions(Path(inputs["captions"]), out_dir, check_sizes=sized)
    if source == "tasviret":
        return _tasviret(inputs, out_dir, settings.get("split_seed", 1), settings.get("split_sizes"))
    if source == "multi30k_captions":
        return _multi30k_captions(inputs, out_dir)
    if source == "karpathy":
        with tempfile.TemporaryDirectory() as tmp:
            json_path = extract_member(inputs["archive"], settings["json"], Path(tmp) / "captions.json")
            return captions.prepare_karpathy(json_path, out_dir, lang="en", check_sizes=sized,
                                             captions_per_image=int(settings.get("captions_per_image", 5)))
    raise DataError(None, f"unknown corpus source {source!r}", f"use one of {', '.join(SOURCES)}")


def prepare_corpus_files(name: str, settings: dict, input_paths: list[str], output_paths: list[str]) -> dict:
    """:func:`prepare_corpus` with inputs and outputs given in :func:`corpus_plan` order (as
    a rule passes them); the output folder is where the plan's outputs are."""
    keys, outs = corpus_plan(name, settings)
    keys = list(keys)
    if len(keys) != len(input_paths) or len(outs) != len(output_paths):
        raise ValueError(f"{name}: {len(input_paths)} inputs / {len(output_paths)} outputs given, "
                         f"the plan has {len(keys)} / {len(outs)}")
    first = Path(output_paths[0])
    out_dir = Path(*first.parts[: len(first.parts) - len(Path(outs[0]).parts)])
    return prepare_corpus(name, settings, dict(zip(keys, input_paths)), out_dir)


def check_and_count(corpus: str, files: dict[str, str], image_lists: dict[str, str], out_tsv: str | Path,
                    train_split: str = "train") -> Path:
    """Check every split of a prepared corpus (parallel line counts, no empty line, strict
    UTF-8, image list length = caption count) and write its stats (sentences, tokens, types,
    OOV rate against the train split) to ``out_tsv``. ``files`` maps ``"split|lang"`` to a
    path; ``image_lists`` maps a split to its image list."""
    from .checks import check_corpus
    from .stats import corpus_stats, write_stats

    by_split: dict[str, dict[str, str]] = {}
    for key, path in files.items():
        split, lang = key.split("|")
        by_split.setdefault(split, {})[lang] = path
    for split, langs in by_split.items():
        check_corpus(langs, image_list=image_lists.get(split))
    split_files = {tuple(key.split("|")): path for key, path in files.items()}
    return write_stats([corpus_stats(corpus, split_files, train_split=train_split)], out_tsv)


def gather_stats(paths: list[str], out_tsv: str | Path) -> Path:
    """Every corpus's stats TSV in one table (``results/data/stats.tsv``)."""
    import pandas as pd

    from .stats import write_stats

    return write_stats([pd.read_csv(p, sep="\t", keep_default_na=False, na_values=[""]) for p in paths], out_tsv)
