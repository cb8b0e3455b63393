"""Image checks and reading shared by every image extractor (:mod:`mmt_repro.features.grid`,
:mod:`mmt_repro.features.regions`): :func:`check_images` lists every missing or unreadable image
before any work starts, :func:`load_image` reads one as RGB, :func:`image_path` finds the file of
an image-list entry.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, UnidentifiedImageError

from mmt_repro.features.store import list_problems
from mmt_repro.io import DataError


def image_path(image_dir: Path, name: str) -> Path:
    """The file of an image-list entry: ``image_dir/name``, or, when that does not exist and the
    name carries a ``#<caption id>`` suffix (Multi30k's ``test_2017_mscoco`` list names
    ``COCO_val2014_000000398076.jpg#657409``), ``image_dir/<name without the suffix>``."""
    path = Path(image_dir) / name
    if "#" in name and not path.is_file():
        bare = Path(image_dir) / name.rsplit("#", 1)[0]
        if bare.is_file():
            return bare
    return path


def check_images(names: list[str], image_dir: Path) -> None:
    """Every image must exist and have a readable header; list ALL that do not."""
    problems = []
    for name in names:
        path = image_path(image_dir, name)
        if not path.is_file():
            problems.append(f"{name} (missing)")
            continue
        try:
            with Image.open(path) as im:
                im.size  # noqa: B018 -- header parsed lazily
        except (UnidentifiedImageError, OSError) as err:
            problems.append(f"{name} (unreadable: {err})")
    if problems:
        raise DataError(
            image_dir,
            list_problems("missing or unreadable", problems, image_dir),
            "fetch or regenerate those images, or remove them from the image list and the parallel text files",
        )


def load_image(path: Path) -> Image.Image:
    """The image at ``path``, fully read and converted to RGB."""
    with Image.open(path) as im:
        im.load()
        return im.convert("RGB")
