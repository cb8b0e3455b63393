"""Stand-ins of the media and model inputs: image folders and image archives, video clips,
the published feature releases, the pre-trained checkpoints. Signatures as in
:mod:`mmt_repro.standins.text_inputs`; what each was checked against is in
:data:`mmt_repro.standins.CHECKED_AGAINST`.

Checkpoints have every real key name; their shapes are the real ones with ``real_shapes``
(M-BERT ~ 0.7 GB, VL-BERT ~ 0.45 GB) and otherwise the real ones with the hidden size, the
feed-forward size and the WordPiece count shrunk (:data:`SHRUNK`), the layer count kept (12).
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from .common import jpeg_bytes, npy_bytes, npz_bytes, write, write_tar, write_zip
from .world import World

#: Sizes of the shrunk checkpoints: hidden, feed-forward, layers (the real count), VL-BERT's
#: English WordPieces; the real ones are 768, 3072, 12, 30,522.
SHRUNK = {"hidden": 16, "ffn": 32, "layers": 12, "vl_vocab": 64}
REAL = {"hidden": 768, "ffn": 3072, "layers": 12, "vl_vocab": 30522}
#: Image sizes (width, height) the stand-in photos take: Flickr's 500-px sides, COCO's 640.
FLICKR_SIZES = ((500, 375), (500, 333), (333, 500), (500, 400))
COCO_SIZES = ((640, 480), (480, 640), (640, 427))


def image_size(name: str) -> tuple[int, int]:
    """(width, height) of the stand-in image ``name``: fixed by the name, so the image files and
    the region files that describe them agree."""
    sizes = COCO_SIZES if name.startswith("COCO_") else FLICKR_SIZES
    return sizes[zlib.crc32(name.encode("utf-8")) % len(sizes)]


def _images(w: World, names: list[str]) -> dict[str, bytes]:
    return {name: jpeg_bytes(w.rng, *image_size(name)) for name in names}


def write_flickr30k_images(w: World, folder: Path) -> dict:
    """``flickr30k-images/<id>.jpg`` for every Flickr30k name of the stand-in lists, and the COCO
    images of Multi30k's ``test_2017_mscoco`` beside them (the one image folder that
    ``datasets.multi30k.images`` names holds both)."""
    for name, data in _images(w, w.flickr30k_names()).items():
        write(folder / name, data)
    for name, data in _images(w, [n.split("#")[0] for n in w.m30k_images["test_2017_mscoco"]]).items():
        write(folder / name, data)
    return {}


def write_flickr8k_images(w: World, folder: Path) -> dict:
    for name, data in _images(w, w.f8k_all).items():
        write(folder / name, data)
    return {}


def write_mscoco_images(w: World, folder: Path) -> dict:
    """``val2014.zip`` (``val2014/COCO_val2014_<12 digits>.jpg``) and ``train2014.zip``."""
    names = w.coco_names()
    for part in ("val2014", "train2014"):
        picked = [n for n in names if n.startswith(f"COCO_{part}_")]
        members = {f"{part}/{n}": data for n, data in _images(w, picked).items()}
        write_zip(folder / f"{part}.zip", members, folders=[f"{part}/"], stored=True)
    return {}


def write_vatex_videos(w: World, folder: Path) -> dict:
    """``<videoID>.mp4`` for every VATEX video of the stand-in JSON: H.264 (MPEG-4 part 2
    where the encoder is missing), 640x360, ``w.video_seconds`` s at ``w.video_fps``."""
    import av

    for vid in w.vatex["train"] + w.vatex["val"]:
        path = folder / f"{vid}.mp4"
        path.parent.mkdir(parents=True, exist_ok=True)
        with av.open(str(path), "w", format="mp4") as box:
            try:
                stream = box.add_stream("libx264", rate=w.video_fps)
                stream.options = {"preset": "ultrafast", "crf": "35"}
            except Exception:  # noqa: BLE001 - an av build without libx264
                stream = box.add_stream("mpeg4", rate=w.video_fps)
            stream.width, stream.height, stream.pix_fmt = 640, 360, "yuv420p"
            x0, colour = int(w.rng.integers(0, 500)), w.rng.integers(0, 256, size=3).astype(np.uint8)
            for t in range(int(w.video_seconds * w.video_fps)):
                frame = np.full((360, 640, 3), 40, dtype=np.uint8)
                x = (x0 + 12 * t) % 560
                frame[140:220, x:x + 80] = colour  # a square moving right: the frames carry motion
                for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                    box.mux(packet)
            for packet in stream.encode():
                box.mux(packet)
    return {}


# ----------------------------------------------------------------------------- feature releases
def write_multi30k_features_resnet50(w: World, folder: Path) -> dict:
    """``multi30k_resnet50_features.tar.bz2``: ``resnet50-256x256/<split>-resnet50-res5c_relu-r256-c256-l2norm.npy``,
    one (N, 2048, H, W) float32 array per split (channels first, each cell L2-normalised over the
    channels), rows in the split's image-list order. The release's grid is 8 x 8 (256 px);
    stand-ins are 2 x 2 unless ``real_shapes`` (a split of a few dozen images is then ~0.5 MB an
    image)."""
    side = 8 if w.real_shapes else 2
    members = {}
    for split, names in w.m30k_images.items():
        x = np.abs(w.rng.standard_normal((len(names), 2048, side, side))).astype(np.float32)
        members[f"resnet50-256x256/{split}-resnet50-res5c_relu-r256-c256-l2norm.npy"] = npy_bytes(
            x / np.linalg.norm(x, axis=1, keepdims=True))
    write_tar(folder / "multi30k_resnet50_features.tar.bz2", members, mode="w:bz2", folders=["resnet50-256x256/"])
    return {}


#: LIUM's WMT17 pool5 file stem of each Multi30k split: train, val and test2017 as the
#: lium-lst/wmt17-mmt configs name them; test2016 and testcoco (in the tarball by its README, their
#: names not given) as mmt_repro.features.release_files.SPLIT_ALIASES spells them.
LIUM_SPLITS = {"train": "train", "val": "val", "test_2016_flickr": "test2016", "test_2017_flickr": "test2017",
               "test_2017_mscoco": "testcoco"}


def write_multi30k_features_pool5_lium(w: World, folder: Path) -> dict:
    """``wmt17-mmt-resnet50-imagenet-pool5.tar.bz2``: ``resnet50-imagenet-pool5/flickr30k_ResNet50_pool5_<split>.npy``,
    one (N, 2048) float32 array per split (post-ReLU averages: non-negative), rows in the split's
    image-list order."""
    members = {}
    for split, names in w.m30k_images.items():
        x = np.abs(w.rng.standard_normal((len(names), 2048))).astype(np.float32)
        members[f"resnet50-imagenet-pool5/flickr30k_ResNet50_pool5_{LIUM_SPLITS[split]}.npy"] = npy_bytes(x)
    write_tar(folder / "wmt17-mmt-resnet50-imagenet-pool5.tar.bz2", members, mode="w:bz2",
              folders=["resnet50-imagenet-pool5/"])
    return {}


def write_multi30k_features_butd(w: World, folder: Path) -> dict:
    """``multi30k_butd_features.tar.bz2``: ``multi30k_butd_features/<split>_obj36.npz`` per split
    (``valid_obj36.npz`` for val)
    with the arrays pysimt's ``ObjectDetectionsDataset`` reads: ``order`` (N,), ``features``
    (N, 36, 2048), ``objects_id`` and ``attrs_id`` (N, 36), ``boxes_and_areas`` (N, 36, 5)."""
    members = {}
    for split, names in w.m30k_images.items():
        n = len(names)
        feats = np.maximum(w.rng.standard_normal((n, 36, 2048)) - 2.0, 0).astype(np.float16)  # post-ReLU, ~2 % non-zero
        xy = np.sort(w.rng.random((n, 36, 2, 2)), axis=2).astype(np.float32)  # x1 < x2, y1 < y2 (fractions)
        boxes = np.stack([xy[..., 0, 0], xy[..., 0, 1], xy[..., 1, 0], xy[..., 1, 1]], axis=-1)
        area = ((boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1]))[..., None]
        name = "valid" if split == "val" else split  # pysimt's configs read valid_obj36.npz
        members[f"multi30k_butd_features/{name}_obj36.npz"] = npz_bytes(
            order=np.arange(n), features=feats, objects_id=w.rng.integers(0, 1600, (n, 36)).astype(np.int32),
            attrs_id=w.rng.integers(0, 400, (n, 36)).astype(np.int32),
            boxes_and_areas=np.concatenate([boxes, area], axis=-1).astype(np.float32))
    write_tar(folder / "multi30k_butd_features.tar.bz2", members, mode="w:bz2", folders=["multi30k_butd_features/"])
    return {}


def write_vatex_i3d(w: World, folder: Path) -> dict:
    """``trainval.zip`` (``trainval/<videoID>.npy``, train and val videos) and ``public_test.zip``
    (``public_test/<videoID>.npy``): one (1, n_segments, 1024) float32 array per video (the VATEX
    baseline's ``load_video_features`` takes ``np.load(path)[0]``)."""
    for archive, top, videos in (("trainval.zip", "trainval", w.vatex["train"] + w.vatex["val"]),
                                 ("public_test.zip", "public_test", w.vatex_test)):
        members = {f"{top}/{vid}.npy": npy_bytes(w.rng.standard_normal((1, int(w.rng.integers(20, 41)), 1024))
                                                 .astype(np.float32)) for vid in videos}
        write_zip(folder / archive, members, folders=[f"{top}/"])
    return {}


def write_butd_regions(w: World, folder: Path) -> dict:
    """Bottom-up-attention region files of every stand-in image (Flickr30k, the COCO images,
    Flickr8k), one ``<image stem>.npz`` each with 10-100 boxes (BertGen's setting) in the
    spelling of bottom-up-attention.pytorch's ``extract_features.py``: ``x`` (n, 2048),
    ``bbox`` (n, 4) pixels of the image, ``num_bbox``, ``image_w``, ``image_h``. Not a manifest
    input: BertGen's 10-100-box features are extracted, not downloaded (the feature sets'
    ``butd-regions.src``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in list(dict.fromkeys(w.flickr30k_names() + w.coco_names() + w.f8k_all)):
        width, height = image_size(name)
        n = int(w.rng.integers(10, 101))
        x = np.maximum(w.rng.standard_normal((n, 2048)) - 2.0, 0).astype(np.float32)
        xy = np.sort(w.rng.random((n, 2, 2)), axis=1) * np.array([width - 1, height - 1], dtype=np.float64)
        bbox = np.stack([xy[:, 0, 0], xy[:, 0, 1], xy[:, 1, 0], xy[:, 1, 1]], axis=1).astype(np.float32)
        np.savez_compressed(folder / f"{Path(name).stem}.npz", x=x, bbox=bbox, num_bbox=np.int64(n),
                            image_w=np.int64(width), image_h=np.int64(height))
    return {}


# ----------------------------------------------------------------------------- checkpoints
def _encoder(prefix: str, h: int, ffn: int, layers: int) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for i in range(layers):
        p = f"{prefix}.layer.{i}"
        for name in ("query", "key", "value"):
            shapes[f"{p}.attention.self.{name}.weight"], shapes[f"{p}.attention.self.{name}.bias"] = (h, h), (h,)
        shapes[f"{p}.attention.output.dense.weight"], shapes[f"{p}.attention.output.dense.bias"] = (h, h), (h,)
        shapes[f"{p}.attention.output.LayerNorm.weight"], shapes[f"{p}.attention.output.LayerNorm.bias"] = (h,), (h,)
        shapes[f"{p}.intermediate.dense.weight"], shapes[f"{p}.intermediate.dense.bias"] = (ffn, h), (ffn,)
        shapes[f"{p}.output.dense.weight"], shapes[f"{p}.output.dense.bias"] = (h, ffn), (h,)
        shapes[f"{p}.output.LayerNorm.weight"], shapes[f"{p}.output.LayerNorm.bias"] = (h,), (h,)
    return shapes


def mbert_shapes(h: int, ffn: int, layers: int, vocab: int) -> dict[str, tuple[int, ...]]:
    """Key -> shape of bert-base-multilingual-cased (``BertForPreTraining``), LayerNorm spelt
    ``gamma``/``beta`` as in Google's original port."""
    shapes = {"bert.embeddings.word_embeddings.weight": (vocab, h),
              "bert.embeddings.position_embeddings.weight": (512, h),
              "bert.embeddings.token_type_embeddings.weight": (2, h), "bert.embeddings.LayerNorm.gamma": (h,),
              "bert.embeddings.LayerNorm.beta": (h,)}
    shapes.update({k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
                   for k, v in _encoder("bert.encoder", h, ffn, layers).items()})
    shapes.update({"bert.pooler.dense.weight": (h, h), "bert.pooler.dense.bias": (h,), "cls.predictions.bias": (vocab,),
                   "cls.predictions.transform.dense.weight": (h, h), "cls.predictions.transform.dense.bias": (h,),
                   "cls.predictions.transform.LayerNorm.gamma": (h,), "cls.predictions.transform.LayerNorm.beta": (h,),
                   "cls.predictions.decoder.weight": (vocab, h), "cls.seq_relationship.weight": (2, h),
                   "cls.seq_relationship.bias": (2,)})
    return shapes


def vlbert_shapes(h: int, ffn: int, layers: int, vocab: int) -> dict[str, tuple[int, ...]]:
    """Key -> shape of VL-BERT base's pre-training checkpoint (``vl-bert-base-prec.model``:
    ``ResNetVLBERTForPretrainingMultitask`` saved through DataParallel, ``module.`` prefix;
    2048-d RoI features + 2048-d box embedding into ``obj_downsample``; 1,601 VG classes)."""
    m = "module."
    shapes = {f"{m}image_feature_extractor.obj_downsample.1.weight": (h, 4096),
              f"{m}image_feature_extractor.obj_downsample.1.bias": (h,),
              f"{m}object_linguistic_embeddings.weight": (1, h), f"{m}object_mask_visual_embedding.weight": (1, 2048),
              f"{m}object_mask_word_embedding.weight": (1, h), f"{m}aux_text_visual_embedding.weight": (1, h),
              f"{m}vlbert.word_embeddings.weight": (vocab, h), f"{m}vlbert.end_embedding.weight": (1, h),
              f"{m}vlbert.position_embeddings.weight": (512, h), f"{m}vlbert.token_type_embeddings.weight": (3, h),
              f"{m}vlbert.embedding_LayerNorm.weight": (h,), f"{m}vlbert.embedding_LayerNorm.bias": (h,),
              f"{m}vlbert.visual_ln_text.weight": (h,), f"{m}vlbert.visual_ln_text.bias": (h,),
              f"{m}vlbert.visual_ln_object.weight": (h,), f"{m}vlbert.visual_ln_object.bias": (h,)}
    shapes.update(_encoder(f"{m}vlbert.encoder", h, ffn, layers))
    shapes.update({f"{m}vlbert.mlm_head.predictions.bias": (vocab,),
                   f"{m}vlbert.mlm_head.predictions.transform.dense.weight": (h, h),
                   f"{m}vlbert.mlm_head.predictions.transform.dense.bias": (h,),
                   f"{m}vlbert.mlm_head.predictions.transform.LayerNorm.weight": (h,),
                   f"{m}vlbert.mlm_head.predictions.transform.LayerNorm.bias": (h,),
                   f"{m}vlbert.mlm_head.predictions.decoder.weight": (vocab, h),
                   f"{m}vlbert.mvrc_head.transform.dense.weight": (h, h),
                   f"{m}vlbert.mvrc_head.transform.dense.bias": (h,),
                   f"{m}vlbert.mvrc_head.region_cls_pred.weight": (1601, h),
                   f"{m}vlbert.mvrc_head.region_cls_pred.bias": (1601,)})
    return shapes


def _random(w: World, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    return {k: (w.rng.standard_normal(s) * 0.02).astype(np.float32) for k, s in shapes.items()}


def write_mbert_weights(w: World, folder: Path) -> dict:
    from safetensors.numpy import save_file

    from .text_inputs import _vocab

    size = REAL if w.real_shapes else SHRUNK
    tensors = _random(w, mbert_shapes(size["hidden"], size["ffn"], size["layers"], len(_vocab(w, bertgen=False))))
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return {}


def write_vl_bert_base(w: World, folder: Path) -> dict:
    """``vl-bert-base-prec.model``: ``torch.save({"epoch", "state_dict"})`` as VL-BERT's
    checkpoint callback writes it (the optimiser state left out)."""
    import torch

    size = REAL if w.real_shapes else SHRUNK
    state = {k: torch.from_numpy(v) for k, v in
             _random(w, vlbert_shapes(size["hidden"], size["ffn"], size["layers"], size["vl_vocab"])).items()}
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"epoch": 19, "state_dict": state}, folder / "vl-bert-base-prec.model")
    return {}


def write_commute_images(w: World, folder: Path) -> dict:
    """The CoMMuTE images as ``images.tar.gz`` unpacks them: one JPEG per name of the splits'
    ``img.order`` (:func:`mmt_repro.standins.text_inputs.commute_splits`), in one folder."""
    from .text_inputs import commute_splits

    names = sorted({name for data in commute_splits(w).values() for name in data["images"]})
    for name, data in _images(w, names).items():
        write(folder / name, data)
    return {}
