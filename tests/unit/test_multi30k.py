"""Multi30k fetching (mirror and URL), its integrity checks, and check_parallel."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from mmt_repro.data.multi30k import (
    MIRROR_KEY,
    SPLIT_SIZES,
    check_parallel,
    fetch_multi30k,
    fetch_multi30k_image_list,
)
from mmt_repro.io import DataError, read_lines

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
MIRROR = DATASETS / "multi30k"


@pytest.fixture(scope="module")
def mirror():
    if not (MIRROR / "task1" / "raw").is_dir():
        pytest.skip(f"shared data not found: {MIRROR / 'task1' / 'raw'} (expected ../shared/datasets beside the repository)")
    return MIRROR


def _make_mirror(root: Path, split: str, lang: str, payload: bytes) -> Path:
    f = root / "task1" / "raw" / f"{split}.{lang}.gz"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(payload)
    return f


def _gz(lines: list[str], encoding: str = "utf-8") -> bytes:
    return gzip.compress("".join(f"{line}\n" for line in lines).encode(encoding))


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# --- real data --------------------------------------------------------------------------------


@pytest.mark.parametrize("split", list(SPLIT_SIZES))
def test_fetch_from_shared_mirror_gives_published_counts(mirror, tmp_path, split):
    outs = [fetch_multi30k(split, lang, tmp_path / f"{split}.{lang}", mirror=mirror) for lang in ("en", "de", "fr")]
    images = fetch_multi30k_image_list(split, tmp_path / f"{split}.images.txt", mirror=mirror)
    assert check_parallel([*outs, images], expected=SPLIT_SIZES[split]) == SPLIT_SIZES[split]
    # decompressed text, identical to the gzip's content
    assert outs[0].read_bytes() == gzip.decompress((mirror / "task1" / "raw" / f"{split}.en.gz").read_bytes())
    assert re.fullmatch(r"\S+\.jpg(#\d+)?", read_lines(images)[0])


def test_mirror_key_is_the_config_key():
    # the key users must set; it is spelled this way in config/config.yaml
    assert MIRROR_KEY == "datasets.multi30k.mirror"


def test_published_sizes():
    assert SPLIT_SIZES == {"train": 29000, "val": 1014, "test_2016_flickr": 1000, "test_2017_flickr": 1000, "test_2017_mscoco": 461}


def test_download_path_with_file_url(mirror, tmp_path):
    # urllib also opens file:// URLs, which exercises the download code without a network
    base = (mirror / "task1").as_uri()
    out = fetch_multi30k("val", "de", tmp_path / "dl" / "val.de", base_url=base)
    assert len(read_lines(out)) == 1014
    assert len(read_lines(fetch_multi30k_image_list("val", tmp_path / "dl" / "val.txt", base_url=base))) == 1014
    assert _leftovers(tmp_path / "dl") == ["val.de", "val.txt"]  # the temporary download is gone


# --- failures (synthetic files) ----------------------------------------------------------------


def test_unknown_split_or_language_lists_valid_ones(tmp_path):
    with pytest.raises(DataError, match="valid splits: train, val, test_2016_flickr"):
        fetch_multi30k("test_2099", "en", tmp_path / "x", mirror=tmp_path)
    with pytest.raises(DataError, match="valid languages: en, de, fr"):
        fetch_multi30k("val", "xx", tmp_path / "x", mirror=tmp_path)
    with pytest.raises(DataError, match="valid languages"):
        fetch_multi30k("test_2017_mscoco", "cs", tmp_path / "x", mirror=tmp_path)
    with pytest.raises(DataError, match="valid splits"):
        fetch_multi30k_image_list("dev", tmp_path / "x", mirror=tmp_path)


def test_missing_mirror_file_names_file_and_config_key(tmp_path):
    root = tmp_path / "mirror"
    (root / "task1" / "raw").mkdir(parents=True)
    out = tmp_path / "out" / "val.en"
    with pytest.raises(DataError) as info:
        fetch_multi30k("val", "en", out, mirror=root)
    msg = str(info.value)
    assert str(root / "task1" / "raw" / "val.en.gz") in msg
    assert MIRROR_KEY in msg
    with pytest.raises(DataError, match=re.escape(str(root / "task1" / "image_splits" / "val.txt"))):
        fetch_multi30k_image_list("val", out, mirror=root)
    with pytest.raises(DataError, match=re.escape(MIRROR_KEY)):
        fetch_multi30k("val", "en", out, mirror=tmp_path / "no_such_dir")
    assert not out.exists()


def test_truncated_gzip_names_file(tmp_path):
    full = _gz([f"sentence {i}" for i in range(1014)])
    bad = _make_mirror(tmp_path / "mirror", "val", "en", full[: len(full) // 2])
    out = tmp_path / "out" / "val.en"
    with pytest.raises(DataError, match="truncated or corrupt") as info:
        fetch_multi30k("val", "en", out, mirror=tmp_path / "mirror")
    assert str(bad) in str(info.value)
    assert _leftovers(out.parent) == []


def test_non_utf8_names_file(tmp_path):
    lines = [f"phrase {i}" for i in range(1014)]
    lines[500] = "un garçon à la fenêtre"
    bad = _make_mirror(tmp_path / "mirror", "val", "fr", _gz(lines, encoding="latin-1"))
    with pytest.raises(DataError, match="not valid UTF-8") as info:
        fetch_multi30k("val", "fr", tmp_path / "out" / "val.fr", mirror=tmp_path / "mirror")
    assert str(bad) in str(info.value)
    assert _leftovers(tmp_path / "out") == []


def test_wrong_line_count_names_file_expected_and_got(tmp_path):
    bad = _make_mirror(tmp_path / "mirror", "test_2017_mscoco", "de", _gz(["ein satz"] * 460))
    with pytest.raises(DataError) as info:
        fetch_multi30k("test_2017_mscoco", "de", tmp_path / "out.de", mirror=tmp_path / "mirror")
    msg = str(info.value)
    assert str(bad) in msg and "expected 461" in msg and "got 460" in msg
    assert not (tmp_path / "out.de").exists()


def test_download_failure_mentions_mirror_key(tmp_path):
    base = (tmp_path / "nothing_here").as_uri()
    with pytest.raises(DataError, match=re.escape(MIRROR_KEY)) as info:
        fetch_multi30k("val", "en", tmp_path / "out" / "val.en", base_url=base)
    assert f"{base}/raw/val.en.gz" in str(info.value)
    assert _leftovers(tmp_path / "out") == []


def test_corrupt_download_names_url(tmp_path):
    site = tmp_path / "site"
    (site / "raw").mkdir(parents=True)
    (site / "raw" / "val.en.gz").write_bytes(_gz([f"line {i}" for i in range(1014)])[:-100])
    with pytest.raises(DataError, match="truncated or corrupt") as info:
        fetch_multi30k("val", "en", tmp_path / "out" / "val.en", base_url=site.as_uri())
    assert (site / "raw" / "val.en.gz").as_uri() in str(info.value)
    assert _leftovers(tmp_path / "out") == []


# --- check_parallel ----------------------------------------------------------------------------


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_check_parallel_equal_files(tmp_path):
    a = _write(tmp_path / "a.en", ["one", "two", "three"])
    b = _write(tmp_path / "a.de", ["eins", "zwei", "drei"])
    assert check_parallel([a, b]) == 3
    assert check_parallel([a, b], expected=3) == 3


def test_check_parallel_unequal_lists_every_file(tmp_path):
    a = _write(tmp_path / "a.en", ["one", "two", "three"])
    b = _write(tmp_path / "a.de", ["eins", "zwei"])
    with pytest.raises(DataError, match="different numbers of lines") as info:
        check_parallel([a, b])
    msg = str(info.value)
    assert f"{a}: 3 lines" in msg and f"{b}: 2 lines" in msg


def test_check_parallel_expected_count(tmp_path):
    a = _write(tmp_path / "a.en", ["one", "two"])
    with pytest.raises(DataError, match="expected 1014") as info:
        check_parallel([a], expected=1014)
    assert str(a) in str(info.value)


def test_check_parallel_empty_line_names_file_and_line(tmp_path):
    a = _write(tmp_path / "a.en", ["one", "two", "three"])
    b = _write(tmp_path / "a.de", ["eins", "  ", "drei"])
    with pytest.raises(DataError, match="line 2 is empty") as info:
        check_parallel([a, b])
    assert str(b) in str(info.value)
    assert check_parallel([a, b], allow_empty_lines=True) == 3


def test_check_parallel_non_utf8_names_file(tmp_path):
    a = tmp_path / "a.fr"
    a.write_bytes("garçon\n".encode("latin-1"))
    with pytest.raises(DataError, match="not valid UTF-8") as info:
        check_parallel([a])
    assert str(a) in str(info.value)


def test_comparable_descriptions_from_the_mirror():
    """Multi30k task 2 (M30k_C): five German descriptions per training image, 29,000 lines each."""
    from mmt_repro.data.multi30k import fetch_multi30k_comparable, fetch_multi30k_comparable_image_list

    mirror = MIRROR
    if not (mirror / "task2").exists():
        pytest.skip(f"needs Multi30k task 2 at {mirror / 'task2'}")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = fetch_multi30k_comparable(3, "de", Path(tmp) / "c3.de", mirror=mirror)
        lines = out.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 29000 and lines[0] == "Zwei Männer gucken sich einen Busch im Garten an."
        images = fetch_multi30k_comparable_image_list(Path(tmp) / "imgs.txt", mirror=mirror)
        assert images.read_text().splitlines()[:2] == ["1000092795.jpg", "10002456.jpg"]
    with pytest.raises(DataError, match="1-5"):
        fetch_multi30k_comparable(6, "de", Path("unused"), mirror=mirror)
