"""Lists of the images and videos in a folder, for feature extraction on media that come
without captions (e.g. ``../shared/datasets/sample-media``)."""

from __future__ import annotations

from pathlib import Path

from ..io import DataError, write_lines

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
VIDEO_SUFFIXES = (".mp4", ".webm", ".mkv", ".avi", ".mov")


def list_media(folder: Path, out_images: Path, out_videos: Path) -> dict:
    """Write the sorted image and video file names found directly in ``folder``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(folder, "media folder does not exist", "set the dataset's images/videos key to an existing folder")
    files = sorted(p.name for p in folder.iterdir() if p.is_file())
    images = [f for f in files if f.lower().endswith(IMAGE_SUFFIXES)]
    videos = [f for f in files if f.lower().endswith(VIDEO_SUFFIXES)]
    if not images and not videos:
        raise DataError(folder, "no image or video files found", f"expected {IMAGE_SUFFIXES + VIDEO_SUFFIXES}")
    write_lines(out_images, images)
    write_lines(out_videos, videos)
    return {"images": len(images), "videos": len(videos)}
