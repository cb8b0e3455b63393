"""Writers shared by the stand-in generators: deterministic archives (``.tgz``, ``.tar.bz2``,
``.zip`` with fixed member times), gzip with no time stamp, seeded sentences (or the first lines
of a local copy of the real file), JPEG images at a given size, ``.npy``/``.npz`` bytes.

Everything written from the same seed and the same local copies is byte-identical, so the
stand-in manifest's sha256 values are stable across runs and machines.
"""

from __future__ import annotations

import gzip
import io
import itertools
import tarfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np


#: Member time of every archive member (2015-01-01 00:00:00 UTC): no wall clock in the bytes.
EPOCH = 1420070400

WORDS = {
    "en": "a man woman child dog girl boy two people is are in on the with of at street water red blue "
          "white black young playing running sitting standing walking holding looking near front".split(),
    "de": "ein eine mann frau kind hund mädchen junge zwei leute ist sind in auf der die das mit von "
          "straße wasser rot blau weiß schwarz jung spielt läuft sitzt steht geht hält".split(),
    "fr": "un une homme femme enfant chien fille garçon deux personnes est sont dans sur le la les avec de "
          "rue eau rouge bleu blanc noir jeune joue court assis debout marche tient".split(),
    "cs": "muž žena dítě pes dívka chlapec dva lidé je jsou v na s ulice voda červený modrý bílý".split(),
    "tr": "bir adam kadın çocuk köpek kız oğlan iki insanlar sokakta suda kırmızı mavi beyaz siyah "
          "genç oynuyor koşuyor oturuyor duruyor yürüyor tutuyor bakıyor".split(),
    "zh": list("一个男人女人孩子狗在街上水里红色蓝色白色黑色年轻正玩跑坐站走拿看着"),
}


def head_lines(path: Path, n: int) -> list[str]:
    """The first ``n`` lines of a text file (gzip read as text), without reading the rest."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        return [line.rstrip("\n").rstrip("\r") for line in itertools.islice(fh, n)]


class Texts:
    """Sentences per language: the first lines of a local copy of the real file when one is
    given (``shared`` root + relative path), else seeded sentences from a small word list."""

    def __init__(self, seed: int, shared: Path | None):
        self.rng = np.random.default_rng(seed)
        self.shared = Path(shared) if shared else None

    def real(self, rel: str, n: int, skip: int = 0) -> list[str] | None:
        """The lines ``skip .. skip + n`` of ``shared/rel`` (gzip read as text), or None when
        there is no such copy or it is shorter."""
        if self.shared is None or not (self.shared / rel).is_file():
            return None
        lines = head_lines(self.shared / rel, skip + n)[skip:]
        return lines if len(lines) == n and all(x.strip() for x in lines) else None

    def sentence(self, lang: str, lo: int = 4, hi: int = 12) -> str:
        words = WORDS[lang]
        k = int(self.rng.integers(lo, hi + 1))
        picked = [words[int(i)] for i in self.rng.integers(0, len(words), size=k)]
        if lang == "zh":
            return "".join(picked) + "。"
        text = " ".join(picked)
        return text[0].upper() + text[1:] + " ."

    def lines(self, lang: str, n: int, rel: str | None = None, skip: int = 0) -> list[str]:
        got = self.real(rel, n, skip) if rel else None
        return got if got is not None else [self.sentence(lang) for _ in range(n)]

    def hex_id(self, n: int, alphabet: str = "0123456789abcdef") -> str:
        return "".join(alphabet[int(i)] for i in self.rng.integers(0, len(alphabet), size=n))


def text_bytes(lines: Iterable[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode("utf-8")


def gz_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="", compresslevel=6) as fh:
        fh.write(data)
    return buf.getvalue()


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def npz_bytes(**arrays: np.ndarray) -> bytes:
    """An ``.npz`` as ``np.savez`` writes it, with fixed member times (byte-stable)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(2015, 1, 1, 0, 0, 0))
            zf.writestr(info, npy_bytes(np.asarray(arr)))
    return buf.getvalue()


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def write_tar(path: Path, members: Mapping[str, bytes], mode: str = "w:gz", folders: Iterable[str] = ()) -> Path:
    """A tarball of ``members`` (name -> bytes) in the given order, folders first, fixed times,
    owner 0 (``mode``: ``w:gz`` for ``.tgz``, ``w:bz2`` for ``.tar.bz2``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for folder in folders:
            info = tarfile.TarInfo(folder.rstrip("/"))
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, EPOCH
            tar.addfile(info)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, EPOCH
            tar.addfile(info, io.BytesIO(data))
    body = raw.getvalue()
    if mode == "w:gz":
        body = gz_bytes(body)
    elif mode == "w:bz2":
        import bz2

        body = bz2.compress(body, 9)
    return write(path, body)


def write_zip(path: Path, members: Mapping[str, bytes], folders: Iterable[str] = (), stored: bool = False) -> Path:
    """A zip of ``members`` with fixed member times (folders as ``name/`` entries first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buf, "w", method) as zf:
        for folder in folders:
            zf.writestr(zipfile.ZipInfo(folder.rstrip("/") + "/", date_time=(2015, 1, 1, 0, 0, 0)), b"")
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(2015, 1, 1, 0, 0, 0)), data, compress_type=method)
    return write(path, buf.getvalue())


def jpeg_bytes(rng: np.random.Generator, width: int, height: int) -> bytes:
    """A ``width`` x ``height`` RGB JPEG (quality 85): a colour gradient with a few filled
    rectangles, so a detector or a CNN sees edges; a few kB to tens of kB."""
    from PIL import Image, ImageDraw

    c0, c1 = rng.integers(0, 256, size=3), rng.integers(0, 256, size=3)
    t = np.linspace(0.0, 1.0, width)[None, :, None]
    row = (c0[None, None, :] * (1 - t) + c1[None, None, :] * t).astype(np.uint8)
    img = Image.fromarray(np.repeat(row, height, axis=0), "RGB")
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(2, 5))):
        x0, y0 = int(rng.integers(0, width * 3 // 4)), int(rng.integers(0, height * 3 // 4))
        x1, y1 = x0 + int(rng.integers(width // 8, width // 3)), y0 + int(rng.integers(height // 8, height // 3))
        draw.rectangle((x0, y0, x1, y1), fill=tuple(int(v) for v in rng.integers(0, 256, size=3)))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=85)
    return buf.getvalue()
