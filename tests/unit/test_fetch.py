"""The input manifest (config/manifest.yaml) and the fetcher: sources, sha256, line counts,
request-only inputs, atomic writes."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
import yaml

from mmt_repro.corpora.fetch import fetch_input_file, request_only_path, sha256_of
from mmt_repro.corpora.manifest import MANIFEST, load_manifest, manifest_table
from mmt_repro.io import DataError

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
PAPERS = {"doubly_attentive", "emb_pred", "visual_agreement", "bertgen", "deepfuse"}


# ------------------------------------------------------------------ the real manifest
def test_manifest_declares_every_input_the_papers_need():
    m = load_manifest()
    for name in ("multi30k_task1", "multi30k_task2", "flickr30k_images", "karpathy_splits", "coco_karpathy_test_captions",
                 "flickr8k_text", "tasviret", "iwslt14_de_en", "iwslt14_fr_en", "setimes2_en_tr", "wmt_newstest",
                 "wmt15_en_de", "vatex", "vatex_videos", "fasttext_cc", "multi30k_features_resnet50",
                 "multi30k_features_butd", "vatex_i3d", "mbert_vocab", "mbert_weights", "vl_bert_base"):
        assert name in m, name
    assert set().union(*(set(i.papers) for i in m.values())) == PAPERS
    # Multi30k task 1: 5 splits x en/de/fr + cs for the 2016 splits, plus 5 image lists.
    t1 = m["multi30k_task1"].files
    assert len(t1) == 5 * 3 + 3 + 5
    assert t1["raw/train.en.gz"].sha256 == "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f"
    assert t1["raw/test_2017_mscoco.de.gz"].lines == 461
    assert t1["raw/val.de.gz"].urls[0].startswith("https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d")
    assert m["wmt15_en_de"].files["europarl-v7-de-en.tgz"].urls == ("https://www.statmt.org/europarl/v7/de-en.tgz",)
    for inp in m.values():
        if inp.access != "download":  # files only where a copy put in place is fetched from inputs.local
            assert inp.request and inp.config_key, inp.name
            assert not inp.files or inp.config_key == f"inputs.local.{inp.name}", inp.name
    rows = manifest_table(m)
    assert sum(r["sha256"] != "unknown" for r in rows) >= 80


def test_every_file_of_the_shared_mirror_matches_its_declared_sha256():
    """The manifest's hashes against the real copies in ../shared/datasets (the mirror layout)."""
    if not SHARED.is_dir():
        pytest.skip(f"needs {SHARED} (../shared/datasets beside the repository)")
    checked = 0
    for inp in load_manifest().values():
        for f in inp.files.values():
            path = SHARED / (inp.mirror_dir or "-") / f.name
            if f.sha256 and path.is_file():
                assert sha256_of(path) == f.sha256, f"{inp.name}/{f.name}"
                checked += 1
    assert checked >= 80, checked


def test_manifest_with_a_bad_entry_names_it(tmp_path):
    bad = tmp_path / "manifest.yaml"
    bad.write_text(yaml.safe_dump({"inputs": {"x": {
        "title": "X", "papers": ["bertgen"], "access": "download", "licence": "-", "homepage": "-",
        "urls": ["file:///nowhere"], "files": {"a.txt": {"sha256": "abc"}}, "checksum": "no"}}}))
    with pytest.raises(DataError) as info:
        load_manifest(bad)
    msg = str(info.value)
    assert str(bad) in msg and "'checksum' was unexpected" in msg and "inputs.x.files.a.txt.sha256" in msg


# ------------------------------------------------------------------ fetching, on a toy manifest
def _manifest(tmp_path: Path, content: bytes, lines: int | None = None, urls=None) -> Path:
    spec = {"sha256": hashlib.sha256(content).hexdigest()}
    if lines is not None:
        spec["lines"] = lines
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump({"inputs": {
        "toy": {"title": "Toy corpus", "papers": ["emb_pred"], "access": "download", "licence": "CC0",
                "homepage": "https://example.org", "urls": urls or ["https://example.invalid/toy"],
                "mirror_dir": "toy-copy", "files": {"raw/train.en.gz": spec}},
        "pics": {"title": "Toy pictures", "papers": ["emb_pred"], "access": "request", "licence": "research only",
                 "homepage": "https://example.org", "request": "ask at https://example.org/form",
                 "config_key": "datasets.toy.images"}}}))
    return path


@pytest.fixture
def toy(tmp_path):
    content = gzip.compress(b"a dog .\na cat .\n", mtime=0)
    mirror = tmp_path / "mirror"
    (mirror / "toy-copy" / "raw").mkdir(parents=True)
    (mirror / "toy-copy" / "raw" / "train.en.gz").write_bytes(content)
    return mirror, load_manifest(_manifest(tmp_path, content, lines=2)), content


def test_fetch_from_mirror_verifies_sha256_and_lines(toy, tmp_path):
    mirror, manifest, content = toy
    got = fetch_input_file("toy", "raw/train.en.gz", tmp_path / "out" / "train.en.gz", mirror_root=mirror, manifest=manifest)
    assert got["verified"] and got["lines"] == 2 and got["sha256"] == hashlib.sha256(content).hexdigest()
    assert (tmp_path / "out" / "train.en.gz").read_bytes() == content


def test_checksum_mismatch_names_the_file_and_keeps_the_previous_output(toy, tmp_path):
    mirror, manifest, _ = toy
    src = mirror / "toy-copy" / "raw" / "train.en.gz"
    src.write_bytes(gzip.compress(b"a dog .\na cow .\n", mtime=0))
    out = tmp_path / "out" / "train.en.gz"
    out.parent.mkdir()
    out.write_bytes(b"built before")
    with pytest.raises(DataError) as info:
        fetch_input_file("toy", "raw/train.en.gz", out, mirror_root=mirror, manifest=manifest)
    err = info.value
    assert err.path == str(src) and "sha256 mismatch for toy/raw/train.en.gz: expected" in err.problem
    assert "fetch it again" in err.fix
    assert out.read_bytes() == b"built before"  # nothing already built is lost
    assert sorted(p.name for p in out.parent.iterdir()) == ["train.en.gz"]  # no temporary left behind


def test_truncated_copy_with_a_known_checksum_is_refused(toy, tmp_path):
    mirror, manifest, content = toy
    (mirror / "toy-copy" / "raw" / "train.en.gz").write_bytes(content[:-6])
    with pytest.raises(DataError, match="sha256 mismatch"):
        fetch_input_file("toy", "raw/train.en.gz", tmp_path / "x.gz", mirror_root=mirror, manifest=manifest)
    assert not (tmp_path / "x.gz").exists()


def test_missing_mirror_file_names_the_path_and_the_key(toy, tmp_path):
    mirror, manifest, _ = toy
    (mirror / "toy-copy" / "raw" / "train.en.gz").unlink()
    with pytest.raises(DataError) as info:
        fetch_input_file("toy", "raw/train.en.gz", tmp_path / "x.gz", mirror_root=mirror, manifest=manifest)
    assert info.value.path == str(mirror / "toy-copy" / "raw" / "train.en.gz")
    assert "missing from the local copy set by `inputs.mirror`" in info.value.problem
    assert "https://example.invalid/toy/raw/train.en.gz" in info.value.fix


def test_missing_mirror_root_and_local_dir_override(toy, tmp_path):
    mirror, manifest, content = toy
    with pytest.raises(DataError, match="the mirror folder does not exist"):
        fetch_input_file("toy", "raw/train.en.gz", tmp_path / "x.gz", mirror_root=tmp_path / "nowhere", manifest=manifest)
    # a per-input folder wins over the mirror
    got = fetch_input_file("toy", "raw/train.en.gz", tmp_path / "y.gz", mirror_root=tmp_path / "nowhere",
                           local_dir=mirror / "toy-copy", manifest=manifest)
    assert got["source"] == str(mirror / "toy-copy" / "raw" / "train.en.gz")


def test_download_tries_urls_in_order(tmp_path):
    content = gzip.compress(b"x y\n", mtime=0)
    site = tmp_path / "site"
    (site / "raw").mkdir(parents=True)
    (site / "raw" / "train.en.gz").write_bytes(content)
    manifest = load_manifest(_manifest(tmp_path, content, lines=1, urls=[(tmp_path / "dead").as_uri(), site.as_uri()]))
    got = fetch_input_file("toy", "raw/train.en.gz", tmp_path / "out.gz", manifest=manifest)
    assert got["source"] == f"{site.as_uri()}/raw/train.en.gz" and got["verified"]


def test_failed_download_lists_every_url_and_the_offline_keys(tmp_path):
    manifest = load_manifest(_manifest(tmp_path, b"x", urls=[(tmp_path / "a").as_uri(), (tmp_path / "b").as_uri()]))
    with pytest.raises(DataError) as info:
        fetch_input_file("toy", "raw/train.en.gz", tmp_path / "out.gz", manifest=manifest)
    assert "download failed from every declared URL" in info.value.problem
    assert (tmp_path / "a").as_uri() in info.value.problem and (tmp_path / "b").as_uri() in info.value.problem
    assert "`inputs.mirror` or `inputs.local.toy`" in info.value.fix
    assert not (tmp_path / "out.gz").exists()


def test_wrong_line_count_with_unknown_checksum(tmp_path):
    content = gzip.compress(b"one\ntwo\nthree\n", mtime=0)
    path = _manifest(tmp_path, content, lines=4)
    raw = yaml.safe_load(path.read_text())
    raw["inputs"]["toy"]["files"]["raw/train.en.gz"]["sha256"] = None
    path.write_text(yaml.safe_dump(raw))
    mirror = tmp_path / "m"
    (mirror / "toy-copy" / "raw").mkdir(parents=True)
    (mirror / "toy-copy" / "raw" / "train.en.gz").write_bytes(content)
    with pytest.raises(DataError, match="has 3 lines, the manifest expects 4"):
        fetch_input_file("toy", "raw/train.en.gz", tmp_path / "o.gz", mirror_root=mirror, manifest=load_manifest(path))


def test_request_only_input_says_where_to_ask_and_which_key_to_set(toy, tmp_path):
    _, manifest, _ = toy
    with pytest.raises(DataError) as info:
        fetch_input_file("pics", "anything.jpg", tmp_path / "x", manifest=manifest)
    assert "Toy pictures (pics) is request-only" in info.value.problem
    assert "ask at https://example.org/form" in info.value.fix and "`datasets.toy.images`" in info.value.fix
    with pytest.raises(DataError, match="request-only"):
        request_only_path("pics", None, manifest=manifest)
    with pytest.raises(DataError, match="the path set as `datasets.toy.images` does not exist"):
        request_only_path("pics", tmp_path / "nope", manifest=manifest)
    assert request_only_path("pics", tmp_path, manifest=manifest) == tmp_path


def test_unknown_input_or_file_lists_the_declared_ones(toy, tmp_path):
    _, manifest, _ = toy
    with pytest.raises(DataError, match="declared inputs: pics, toy"):
        fetch_input_file("tyo", "raw/train.en.gz", tmp_path / "x", manifest=manifest)
    with pytest.raises(DataError, match="it declares: raw/train.en.gz"):
        fetch_input_file("toy", "raw/train.de.gz", tmp_path / "x", manifest=manifest)


def test_manifest_path_is_the_repository_file():
    assert MANIFEST == Path(__file__).resolve().parents[2] / "config" / "manifest.yaml"


# ------------------------------------------------------------------ downloads over HTTP (a local server)
class _Site:
    """A local HTTP server (http.server in a thread, 127.0.0.1) serving ``files``, with Range
    support, a request log (path, Range header), and ``cut``: bytes to send of the next responses
    before the connection drops (a download cut off mid-way)."""

    def __init__(self):
        import http.server
        import threading

        site = self
        self.files: dict[str, bytes] = {}
        self.log: list[tuple[str, str | None]] = []
        self.cut: list[int] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                rng = self.headers.get("Range")
                site.log.append((self.path, rng))
                data = site.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                start = int(rng.split("=")[1].rstrip("-")) if rng else 0
                self.send_response(206 if rng else 200)
                if rng:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if site.cut:
                    self.wfile.write(body[: site.cut.pop(0)])
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()


@pytest.fixture
def site():
    s = _Site()
    yield s
    s.server.shutdown()
    s.server.server_close()


def _http_toy(tmp_path, site, lines=200):
    content = gzip.compress("".join(f"line {i} of the toy corpus\n" for i in range(lines)).encode(), mtime=0)
    site.files["/toy/raw/train.en.gz"] = content
    return content, load_manifest(_manifest(tmp_path, content, lines=lines, urls=[f"{site.url}/toy"]))


def test_http_download_shows_progress_and_checks_sha256(tmp_path, site, capsys):
    content, manifest = _http_toy(tmp_path, site)
    got = fetch_input_file("toy", "raw/train.en.gz", tmp_path / "out.gz", manifest=manifest)
    assert got["source"] == f"{site.url}/toy/raw/train.en.gz" and got["verified"] and got["lines"] == 200
    assert (tmp_path / "out.gz").read_bytes() == content
    assert site.log == [("/toy/raw/train.en.gz", None)]
    err = capsys.readouterr().err  # the progress bar (tqdm) on stderr, named after the file
    assert "toy/raw/train.en.gz" in err and "100%" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.yaml", "out.gz"]  # no part, no temporary


def test_http_download_cut_off_resumes_from_the_part(tmp_path, site, monkeypatch):
    content, manifest = _http_toy(tmp_path, site)
    # in one run: the first response breaks after 100 bytes, pooch tries again, the rest comes by Range
    site.cut = [100]
    fetch_input_file("toy", "raw/train.en.gz", tmp_path / "a.gz", manifest=manifest)
    assert (tmp_path / "a.gz").read_bytes() == content
    assert site.log == [("/toy/raw/train.en.gz", None), ("/toy/raw/train.en.gz", "bytes=100-")]
    # across runs: every try is cut off, the error lists the URL and the part stays for the next run
    monkeypatch.setattr("mmt_repro.corpora.fetch.RETRIES", 0)
    site.log.clear()
    site.cut = [50]
    with pytest.raises(DataError, match="download failed from every declared URL"):
        fetch_input_file("toy", "raw/train.en.gz", tmp_path / "b.gz", manifest=manifest)
    assert (tmp_path / "b.gz.part").read_bytes() == content[:50] and not (tmp_path / "b.gz").exists()
    got = fetch_input_file("toy", "raw/train.en.gz", tmp_path / "b.gz", manifest=manifest)
    assert site.log[-1] == ("/toy/raw/train.en.gz", "bytes=50-") and got["verified"]
    assert (tmp_path / "b.gz").read_bytes() == content and not (tmp_path / "b.gz.part").exists()


def test_http_download_with_a_wrong_sha256_keeps_the_old_output(tmp_path, site, monkeypatch):
    content, _ = _http_toy(tmp_path, site)
    site.files["/toy/raw/train.en.gz"] = b"another version"
    manifest = load_manifest(tmp_path / "manifest.yaml")
    monkeypatch.setattr("mmt_repro.corpora.fetch.RETRIES", 1)  # a damaged transfer is tried again, then refused
    (tmp_path / "out.gz").write_bytes(b"previous")
    with pytest.raises(DataError) as info:
        fetch_input_file("toy", "raw/train.en.gz", tmp_path / "out.gz", manifest=manifest)
    expected, got = hashlib.sha256(content).hexdigest(), hashlib.sha256(b"another version").hexdigest()
    assert info.value.problem == f"sha256 mismatch for toy/raw/train.en.gz: expected {expected}, got {got}"
    assert "fetch it again from the official source" in info.value.fix
    assert len(site.log) == 2 and (tmp_path / "out.gz").read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.yaml", "out.gz"]


def test_http_404_is_not_retried_and_names_every_url(tmp_path, site):
    _, _ = _http_toy(tmp_path, site)
    manifest = load_manifest(_manifest(tmp_path, b"x", urls=[f"{site.url}/gone", f"{site.url}/also-gone"]))
    with pytest.raises(DataError) as info:
        fetch_input_file("toy", "raw/train.en.gz", tmp_path / "out.gz", manifest=manifest)
    assert f"{site.url}/gone/raw/train.en.gz: HTTP 404" in info.value.problem
    assert f"{site.url}/also-gone/raw/train.en.gz: HTTP 404" in info.value.problem
    assert "`inputs.mirror` or `inputs.local.toy`" in info.value.fix
    assert [p for p, _ in site.log] == ["/gone/raw/train.en.gz", "/also-gone/raw/train.en.gz"]  # one try each


def _md5_manifest(tmp_path: Path, md5: str, url: str) -> Path:
    """An input whose publisher lists only an md5 (as Zenodo does), no sha256."""
    path = tmp_path / "md5.yaml"
    path.write_text(yaml.safe_dump({"inputs": {"feats": {
        "title": "Toy features", "papers": ["visual_agreement"], "access": "download", "licence": "CC0",
        "homepage": "https://example.org", "urls": [url], "mirror_dir": "feats",
        "files": {"feats.tar.bz2": {"sha256": None, "md5": md5}}}}}))
    return path


def test_an_md5_the_publisher_lists_is_checked_where_no_sha256_is_known(tmp_path, site, monkeypatch):
    data = b"BZh9 a toy archive"
    mirror = tmp_path / "mirror"
    (mirror / "feats").mkdir(parents=True)
    (mirror / "feats" / "feats.tar.bz2").write_bytes(data)
    good = load_manifest(_md5_manifest(tmp_path, hashlib.md5(data).hexdigest(), f"{site.url}/f"))
    got = fetch_input_file("feats", "feats.tar.bz2", tmp_path / "a", mirror_root=mirror, manifest=good)
    assert got["verified"] and got["sha256"] == hashlib.sha256(data).hexdigest()
    site.files["/f/feats.tar.bz2"] = data  # downloaded: pooch checks the md5
    assert fetch_input_file("feats", "feats.tar.bz2", tmp_path / "b", manifest=good)["verified"]
    bad = load_manifest(_md5_manifest(tmp_path, "0" * 32, f"{site.url}/f"))
    (tmp_path / "c").write_bytes(b"previous")
    with pytest.raises(DataError, match=f"md5 mismatch for feats/feats.tar.bz2: expected {'0' * 32}, got "):
        fetch_input_file("feats", "feats.tar.bz2", tmp_path / "c", mirror_root=mirror, manifest=bad)
    monkeypatch.setattr("mmt_repro.corpora.fetch.RETRIES", 0)
    with pytest.raises(DataError, match="md5 mismatch for feats/feats.tar.bz2 after 1 tries"):
        fetch_input_file("feats", "feats.tar.bz2", tmp_path / "c", manifest=bad)
    assert (tmp_path / "c").read_bytes() == b"previous"
    broken = tmp_path / "broken.yaml"
    broken.write_text(_md5_manifest(tmp_path, "abc", "x").read_text().replace("md5: abc", "md5: xyz"))
    with pytest.raises(DataError, match="md5"):
        load_manifest(broken)


def test_a_repository_file_is_copied_only_as_the_plan_saw_it(tmp_path):
    """rule repo_file: the copy is checked against the sha256 planned; a file changed since
    leaves no copy and says how to recover; a missing one names itself."""
    from mmt_repro.corpora.fetch import copy_repo_file

    src, out = tmp_path / "published.tsv", tmp_path / "run" / "results" / "repo" / "published.tsv"
    src.write_text("paper\tvalue\n", encoding="utf-8")
    copy_repo_file(src, out, sha256_of(src))
    assert out.read_bytes() == src.read_bytes()
    out.unlink()
    with pytest.raises(DataError, match="changed while the workflow ran"):
        copy_repo_file(src, out, "0" * 64)
    assert not out.exists() and not list(out.parent.iterdir())
    with pytest.raises(DataError, match="missing"):
        copy_repo_file(tmp_path / "gone.tsv", out, "0" * 64)


# ----------------------------------------------------------------------------- stand-in mirror
def test_a_standin_mirror_is_fetched_with_its_own_checksums_and_a_changed_file_is_refused(tmp_path):
    """A stand-in mirror (mmt_repro.standins) with its manifest merged through
    inputs.manifest_extra: each file is checked against the stand-in sha256 and line count, a
    manual-only input (VL-BERT) comes from the mirror folder the stand-in manifest names, and a
    file changed after the manifest was written fails its checksum, naming it."""
    from mmt_repro.standins.mirror import MANIFEST_NAME, write_mirror
    from mmt_repro.standins.world import SIZES

    root = tmp_path / "mirror"
    write_mirror(root, inputs=["wmt_newstest", "coco_karpathy_test_captions"])
    extra = [root / MANIFEST_NAME]
    got = fetch_input_file("wmt_newstest", "newstest2018.en-tr.tr", tmp_path / "r" / "t.tr", mirror_root=root,
                           manifest_extra=extra)
    assert got["verified"] and got["lines"] == SIZES["newstest"] and got["source"] == str(
        root / "wmt-newstest" / "newstest2018.en-tr.tr")
    # the same file against the real manifest: the real checksum refuses the stand-in
    with pytest.raises(DataError, match="sha256 mismatch for wmt_newstest/newstest2018.en-tr.tr"):
        fetch_input_file("wmt_newstest", "newstest2018.en-tr.tr", tmp_path / "r" / "u.tr", mirror_root=root)
    caps = root / "coco-karpathy-test-captions" / "testall_caps.txt"
    caps.write_text(caps.read_text(encoding="utf-8") + "One more caption .\n", encoding="utf-8")
    with pytest.raises(DataError, match="sha256 mismatch for coco_karpathy_test_captions/testall_caps.txt"):
        fetch_input_file("coco_karpathy_test_captions", "testall_caps.txt", tmp_path / "r" / "c.txt",
                         mirror_root=root, manifest_extra=extra)
    assert not (tmp_path / "r" / "c.txt").exists()
