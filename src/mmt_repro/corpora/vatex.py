"""VATEX v1.0 English-Chinese parallel video captions (DeepFuse, Wu et al. 2020).

Input: the official ``vatex_training_v1.0.json`` / ``vatex_validation_v1.0.json``, a JSON list
of ``{"videoID": "<ytid>_<start>_<end>", "enCap": [10 str], "chCap": [10 str]}``. Of the 10
captions per language, the first 5 are independent descriptions and the *last 5* are
parallel translations: ``enCap[5 + k]`` <-> ``chCap[5 + k]``, k = 0..4. DeepFuse "follows the
official split" (training 26k videos, validation 3k) and evaluates on the validation set.

Output (:func:`prepare_vatex`): ``out_dir/{split}.en``, ``{split}.zh`` and ``{split}.id``,
one parallel pair per line, and ``image_splits/{split}.txt``, the video of each line (the list
feature import reads); the id line is ``<videoID>&<k>`` (k = 0..4), the form of the
prepared mirror ``../shared/datasets/vatex-val-parallel`` (ZhishenYang/eval_on_vatex_dataset).
Text is the raw caption with whitespace runs collapsed and both ends trimmed; tokenisation is
a later stage. :func:`read_vatex_prepared` / :func:`prepare_vatex_prepared` read and check
that mirror form (already lowercased/tokenised English, character-split Chinese).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from .checks import VATEX_VIDEOS, check_lines
from ..io import DataError, read_json, read_lines, write_lines

PAIRS_PER_VIDEO = 5
CAPTIONS_PER_VIDEO = 10
_WS = re.compile(r"\s+")
_ID = re.compile(r"^(?P<video>\S+)&(?P<k>[0-9]+)$")


def _clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def prepare_vatex(
    json_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    split: str,
    keep: Iterable[str] | None = None,
    check_sizes: bool = True,
) -> dict[str, int]:
    """Write the parallel pairs of a VATEX v1.0 JSON to ``out_dir/{split}.{en,zh,id}``.

    ``keep``: optional video ids to keep (e.g. the videos still downloadable; the mirror has
    2,810 of the 3,000 val videos); order stays that of the JSON. Without ``keep`` and with
    ``check_sizes``, the number of videos must equal the official count for ``split``
    (:data:`~mmt_repro.corpora.checks.VATEX_VIDEOS`: train 25,991, val 3,000). Returns
    ``{"videos": n, "pairs": 5n}``.
    """
    json_path = Path(json_path)
    data = read_json(json_path, "download vatex_{training,validation}_v1.0.json from the VATEX site")
    if not isinstance(data, list) or not data:
        raise DataError(json_path, "expected a non-empty JSON list of videos", "pass vatex_*_v1.0.json")
    wanted = None if keep is None else {str(x).strip() for x in keep}
    en, zh, ids = [], [], []
    seen: set[str] = set()
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not {"videoID", "enCap", "chCap"} <= set(item):
            raise DataError(json_path, f"entry {i} lacks videoID/enCap/chCap",
                            "pass a VATEX file with Chinese captions (train or validation, not the public test)")
        vid = str(item["videoID"])
        if vid in seen:
            raise DataError(json_path, f"video {vid} is listed twice", "fetch the JSON again")
        seen.add(vid)
        if wanted is not None and vid not in wanted:
            continue
        for key in ("enCap", "chCap"):
            if len(item[key]) != CAPTIONS_PER_VIDEO:
                raise DataError(json_path, f"video {vid}: {key} has {len(item[key])} captions, not {CAPTIONS_PER_VIDEO}",
                                "pass the official v1.0 JSON")
        for k in range(PAIRS_PER_VIDEO):
            e = _clean(item["enCap"][CAPTIONS_PER_VIDEO - PAIRS_PER_VIDEO + k])
            c = _clean(item["chCap"][CAPTIONS_PER_VIDEO - PAIRS_PER_VIDEO + k])
            if not e or not c:
                raise DataError(json_path, f"video {vid}: parallel caption {k} is empty", "fetch the JSON again")
            en.append(e)
            zh.append(c)
            ids.append(f"{vid}&{k}")
    if wanted is not None:
        missing = wanted - seen
        if missing:
            raise DataError(json_path, f"{len(missing)} videos of `keep` are not in the JSON (e.g. {sorted(missing)[0]})",
                            "pass video ids of this split")
    videos = len(ids) // PAIRS_PER_VIDEO
    if check_sizes and wanted is None and split in VATEX_VIDEOS and videos != VATEX_VIDEOS[split]:
        raise DataError(json_path, f"{videos} videos, but the official VATEX {split} split has {VATEX_VIDEOS[split]}",
                        "pass the official JSON of this split (or check_sizes=False for a subset)")
    check_lines({"en": en, "zh": zh, "id": ids}, source=json_path)
    out_dir = Path(out_dir)
    write_lines(out_dir / f"{split}.en", en)
    write_lines(out_dir / f"{split}.zh", zh)
    write_lines(out_dir / f"{split}.id", ids)
    write_video_list(out_dir, split, ids)
    return {"videos": videos, "pairs": len(ids)}


def write_video_list(out_dir: Path, split: str, ids: list[str]) -> Path:
    """``out_dir/image_splits/{split}.txt``: the video of every sentence (``<videoID>`` of its
    ``<videoID>&<k>`` id), one line per sentence, the list that feature import reads (sentence
    ``i`` reads store row ``i``, so a video's features appear once per parallel pair)."""
    path = Path(out_dir) / "image_splits" / f"{split}.txt"
    write_lines(path, [i.rsplit("&", 1)[0] for i in ids])
    return path


def read_vatex_prepared(folder: str | os.PathLike, split: str = "val") -> dict[str, list[str]]:
    """Read the prepared mirror form ``folder/{split}.{en,zh,id}`` and check it.

    The three files must be parallel with no empty line; ids must be ``<videoID>&<k>`` with
    k = 0..4 in order for each video. Text lines are whitespace-trimmed and inner runs
    collapsed (the mirror starts every line with a space; tokens are unchanged). Returns
    ``{"en": [...], "zh": [...], "id": [...]}``.
    """
    folder = Path(folder)
    paths = {lang: folder / f"{split}.{lang}" for lang in ("en", "zh", "id")}
    data = {lang: [_clean(x) for x in read_lines(p)] for lang, p in paths.items()}
    check_lines(data, source=paths["id"])
    for i, line in enumerate(data["id"]):
        m = _ID.match(line)
        if not m or int(m["k"]) != i % PAIRS_PER_VIDEO or (
                i % PAIRS_PER_VIDEO and m["video"] != _ID.match(data["id"][i - 1])["video"]):
            raise DataError(paths["id"], f"line {i + 1} is {line!r}; expected <videoID>&{i % PAIRS_PER_VIDEO} "
                            f"(5 consecutive lines &0..&4 per video)", "re-create the id file from the VATEX JSON")
    return data


def prepare_vatex_prepared(folder: str | os.PathLike, out_dir: str | os.PathLike, split: str = "val") -> dict[str, int]:
    """Copy the checked mirror form (:func:`read_vatex_prepared`) to ``out_dir/{split}.{en,zh,id}``."""
    data = read_vatex_prepared(folder, split)
    out_dir = Path(out_dir)
    for lang, lines in data.items():
        write_lines(out_dir / f"{split}.{lang}", lines)
    write_video_list(out_dir, split, data["id"])
    return {"videos": len(data["id"]) // PAIRS_PER_VIDEO, "pairs": len(data["id"])}


def split_by_video(data: dict[str, list[str]], sizes: dict[str, int], seed: int,
                   source: str | os.PathLike = "") -> dict[str, dict[str, list[str]]]:
    """Split parallel pairs ``{"en", "zh", "id"}`` into new splits by *video* (all 5 pairs of a
    video land in the same split), e.g. ``{"train": 2300, "val": 100, "test": 410}`` videos.

    The videos, in order of first appearance, are shuffled with ``random.Random(seed)`` and
    dealt out in the order of ``sizes``; each split keeps its pairs in the original order. The
    sizes must not exceed the videos there are (videos left over are dropped)."""
    import random

    videos: list[str] = []
    of_line = [i.rsplit("&", 1)[0] for i in data["id"]]
    for v in of_line:
        if not videos or videos[-1] != v:
            videos.append(v)
    if len(set(videos)) != len(videos):
        raise DataError(source, "the pairs of a video are not consecutive", "re-create the id file from the VATEX JSON")
    if sum(sizes.values()) > len(videos):
        raise DataError(source, f"split_by_video asks for {sum(sizes.values())} videos, there are {len(videos)}",
                        "lower the sizes in datasets.<name>.split_by_video")
    order = list(videos)
    random.Random(seed).shuffle(order)
    owner: dict[str, str] = {}
    start = 0
    for split, n in sizes.items():
        owner.update({v: split for v in order[start:start + int(n)]})
        start += int(n)
    out = {split: {lang: [] for lang in data} for split in sizes}
    for i, v in enumerate(of_line):
        if v in owner:
            for lang in data:
                out[owner[v]][lang].append(data[lang][i])
    return out


def prepare_vatex_split(inputs: dict[str, str], form: str, from_splits: list[str], sizes: dict[str, int], seed: int,
                        out_dir: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Read the ``from_splits`` of a VATEX input (the official JSON, ``form="raw"``, or the
    prepared mirror) and write them re-split by video (:func:`split_by_video`) as
    ``out_dir/{split}.{en,zh,id}`` and ``image_splits/{split}.txt``."""
    import tempfile

    data: dict[str, list[str]] = {"en": [], "zh": [], "id": []}
    for split in from_splits:
        if form == "raw":
            with tempfile.TemporaryDirectory() as tmp:
                prepare_vatex(inputs[split], tmp, split, check_sizes=False)
                part = {lang: read_lines(Path(tmp) / f"{split}.{lang}") for lang in data}
        else:
            part = read_vatex_prepared(Path(inputs[f"{split}.en"]).parent, split)
        for lang in data:
            data[lang] += part[lang]
    out_dir = Path(out_dir)
    counts = {}
    for split, part in split_by_video(data, sizes, seed, source=next(iter(inputs.values()))).items():
        for lang, lines in part.items():
            write_lines(out_dir / f"{split}.{lang}", lines)
        write_video_list(out_dir, split, part["id"])
        counts[split] = {"videos": len(part["id"]) // PAIRS_PER_VIDEO, "pairs": len(part["id"])}
    return counts

