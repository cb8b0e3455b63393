"""Region (object-detection) features: per-box pooled features, boxes and box geometry.

Yang et al. (2020) keep the 36 most confident Faster R-CNN regions of each image; BertGen
(Mitzalis et al., 2021) keeps between 10 and 100 bottom-up-attention regions "depending on
the confidence score" and adds a box-geometry embedding. Both follow the bottom-up-attention
recipe (Anderson et al., 2018), which this module implements over interchangeable backends:

1. run the detector: image -> backbone -> region proposals -> per-proposal class scores
   (softmax over the classes, background excluded) and per-class boxes;
2. per class, non-maximum suppression (IoU ``nms_thresh``, 0.3) over the proposals; each
   proposal's confidence is its highest score among the classes that kept it;
3. :func:`select_boxes`: the proposals with confidence >= ``conf_thresh`` (0.2), but at
   least ``min_boxes`` and at most ``max_boxes`` of them, most confident first. Top-K is
   ``min_boxes = max_boxes = K`` (K=36, Yang et al.); BertGen is 10..100 at 0.2.

===========  ====  ===========================================================================
backend      D     what
===========  ====  ===========================================================================
torchvision  1024  ``fasterrcnn_resnet50_fpn_v2`` (COCO, 91 classes). Boxes are the final
                   (class-regressed, clipped) boxes of the selected proposals' best classes;
                   features are ``box_roi_pool`` + ``box_head`` on those boxes.
detectron2   2048  bottom-up-attention Faster R-CNN (ResNet-101 C4, Visual Genome) through
                   detectron2, given its config file and weights (local paths). Boxes are the
                   selected proposals and features their mean-pooled res5 output, as in the
                   original release. detectron2 is imported only by this backend.
===========  ====  ===========================================================================

``weights`` (torchvision): ``"coco"`` = ``FasterRCNN_ResNet50_FPN_V2_Weights.COCO_V1``
through torchvision's download-and-cache mechanism (offline without a cached copy:
:class:`~mmt_repro.io.DataError` saying how to pre-download it); ``"random"`` = seeded random
init (smoke tests; the untrained detector's confidences are all tiny, so ``min_boxes`` decides
the count); or a local ``.pth`` state_dict (optionally under ``"model"``/``"state_dict"``).
The weights and their description are recorded in the store's metadata.

Store (:func:`extract_regions`; layout shared with ``import_pretrained("butd")``):

* ``out_npy``: float16 ``(N, K, D)``; row ``i`` = line ``i`` of the image list, slot ``j`` =
  the j-th most confident region; slots ``n_boxes[i]..K-1`` are zeros;
* ``out_boxes``: float32 ``(N, K, 4)``: ``x1, y1, x2, y2`` in pixels of the original image
  (zeros in padding slots);
* ``out_index``: Parquet ``row``, ``image``, ``n_boxes``, ``width``, ``height`` (int32) plus
  metadata (backend, weights, weights_desc, feature_dim, max/min_boxes, conf_thresh, ...).

With ``full_image=True`` slot 0 holds the whole image as one more box (BertGen's full-image
RoI feature) and K = ``max_boxes + 1``. With ``given_boxes`` (a feature set's ``boxes: given``)
the boxes come from a file instead of the detector and :meth:`RegionBackend.pool` runs the
same backbone and RoI pooling on them (the grounded set's objects). :class:`RegionStore` reads the three files;
:func:`box_geometry` gives the normalised ``x1, y1, x2, y2, w, h`` per box.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError

from mmt_repro.features.extractors import FrozenModel
from mmt_repro.features.grid import check_images, load_image, resolve_device
from mmt_repro.features.store import (
    ChunkedWriter,
    FeatureStore,
    list_problems,
    names_digest,
    raise_for_status,
    read_item_list,
    row_status,
    to_float16,
    weights_fingerprint,
    write_index,
)
from mmt_repro.io import DataError, atomic_path

_log = logging.getLogger(__name__)


class MissingBackendError(DataError, ImportError):
    """An optional backend's package is not installed (also an ImportError)."""


@dataclass
class Regions:
    """Regions of one image, most confident first."""

    features: np.ndarray  # (n, D) float32
    boxes: np.ndarray  # (n, 4) float32, x1 y1 x2 y2 in pixels of the original image
    scores: np.ndarray  # (n,) float32 confidence (0 for a full-image box)
    width: int
    height: int


def box_geometry(boxes: np.ndarray, width, height) -> np.ndarray:
    """``(..., 4)`` pixel boxes -> ``(..., 6)`` normalised ``x1/W, y1/H, x2/W, y2/H, w/W, h/H``.

    ``width``/``height`` are scalars or arrays over the leading dimensions: ``(N,)`` for boxes
    ``(N, K, 4)``."""
    b = np.asarray(boxes, dtype=np.float32)

    def lead(x):
        x = np.asarray(x, dtype=np.float32)
        return x.reshape(x.shape + (1,) * (b.ndim - x.ndim))

    w, h = lead(width), lead(height)
    x1, y1, x2, y2 = b[..., 0:1] / w, b[..., 1:2] / h, b[..., 2:3] / w, b[..., 3:4] / h
    return np.concatenate([x1, y1, x2, y2, x2 - x1, y2 - y1], axis=-1)


def select_boxes(conf: torch.Tensor, min_boxes: int, max_boxes: int, conf_thresh: float) -> torch.Tensor:
    """Indices of the kept proposals, most confident first: those with ``conf >= conf_thresh``,
    at least ``min_boxes`` and at most ``max_boxes`` (fewer only if fewer proposals exist)."""
    order = torch.argsort(conf, descending=True, stable=True)
    n_conf = int((conf >= conf_thresh).sum())
    n = min(max(n_conf, int(min_boxes)), int(max_boxes), int(conf.numel()))
    return order[:n]


def proposal_confidence(scores: torch.Tensor, boxes: torch.Tensor, nms_thresh: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Bottom-up-attention confidence per proposal.

    ``scores`` (P, C) class probabilities with background in column 0; ``boxes`` (P, C, 4)
    per-class boxes or (P, 4) shared ones. For every foreground class, NMS over the proposals
    at ``nms_thresh``; a proposal's confidence is its best score among the classes whose NMS
    kept it. Returns ``(confidence (P,), best class (P,))``."""
    from torchvision.ops import nms

    P, C = scores.shape
    conf = torch.zeros(P, dtype=scores.dtype, device=scores.device)
    best = torch.ones(P, dtype=torch.long, device=scores.device)
    for c in range(1, C):
        cls_boxes = boxes[:, c] if boxes.dim() == 3 else boxes
        keep = nms(cls_boxes, scores[:, c], nms_thresh)
        better = scores[keep, c] > conf[keep]
        idx = keep[better]
        conf[idx] = scores[idx, c]
        best[idx] = c
    return conf, best


class RegionBackend:
    """A detector turning PIL images into :class:`Regions` (``feature_dim``-d features)."""

    name: str
    feature_dim: int
    weights_desc: str
    default_sizes: tuple[int, int]

    def __call__(self, images: list[Image.Image], min_boxes: int, max_boxes: int, conf_thresh: float,
                 full_image: bool = False) -> list[Regions]:
        raise NotImplementedError

    def pool(self, images: list[Image.Image], boxes: list[np.ndarray], full_image: bool = False) -> list[Regions]:
        """Features of given boxes (``(k, 4)`` x1 y1 x2 y2 in pixels of each original image),
        through the same backbone and RoI pooling as detected regions; no detection. With
        ``full_image`` the whole image comes first. Scores are 1 (given) and 0 (full image)."""
        raise NotImplementedError

    def to(self, device: str | torch.device) -> RegionBackend:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(feature_dim={self.feature_dim}, weights={self.weights_desc!r})"


def _full_box(width: float, height: float, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor([[0.0, 0.0, float(width), float(height)]], dtype=like.dtype, device=like.device)


class TorchvisionRegions(FrozenModel, RegionBackend):
    """``fasterrcnn_resnet50_fpn_v2`` regions with 1024-d ``box_head`` features."""

    name = "torchvision"
    feature_dim = 1024
    default_sizes = (800, 1333)  # the detector's own training/test scale

    def __init__(self, weights: str = "coco", seed: int = 0, min_size: int | None = None,
                 max_size: int | None = None, proposals: int = 300, nms_thresh: float = 0.3):
        self.min_size = int(min_size or self.default_sizes[0])
        self.max_size = int(max_size or max(self.default_sizes[1], self.min_size))
        self.proposals = int(proposals)
        self.nms_thresh = float(nms_thresh)
        self._freeze(*_build_fasterrcnn(weights, seed, self.min_size, self.max_size, self.proposals))

    def __call__(self, images, min_boxes, max_boxes, conf_thresh, full_image=False):
        from torchvision.ops import boxes as box_ops
        from torchvision.transforms import functional as TF

        m = self.model
        rh = m.roi_heads
        with torch.inference_mode():
            tensors = [TF.to_tensor(im.convert("RGB")).to(self.device) for im in images]
            batch, _ = m.transform(tensors)
            feats = m.backbone(batch.tensors)
            proposals, _ = m.rpn(batch, feats)
            head = rh.box_head(rh.box_roi_pool(feats, proposals, batch.image_sizes))
            logits, deltas = rh.box_predictor(head)
            all_boxes = rh.box_coder.decode(deltas, proposals)  # (sum P, C, 4)
            all_scores = torch.softmax(logits, dim=-1)
            counts = [len(p) for p in proposals]
            chosen, chosen_scores = [], []
            for boxes, scores, size in zip(all_boxes.split(counts), all_scores.split(counts), batch.image_sizes):
                boxes = box_ops.clip_boxes_to_image(boxes, size)
                if len(boxes):
                    conf, best = proposal_confidence(scores, boxes, self.nms_thresh)
                    keep = select_boxes(conf, min_boxes, max_boxes, conf_thresh)
                    sel, sel_scores = boxes[keep, best[keep]], conf[keep]
                else:
                    sel, sel_scores = boxes.new_zeros((0, 4)), scores.new_zeros((0,))
                if full_image or not len(sel):  # no proposal at all: the whole image is the one region
                    sel = torch.cat([_full_box(size[1], size[0], sel), sel])
                    sel_scores = torch.cat([sel_scores.new_zeros(1), sel_scores])
                chosen.append(sel)
                chosen_scores.append(sel_scores)
            pooled = rh.box_head(rh.box_roi_pool(feats, chosen, batch.image_sizes)).float().cpu()
        out = []
        for im, boxes, scores, size, f in zip(images, chosen, chosen_scores, batch.image_sizes,
                                              pooled.split([len(c) for c in chosen])):
            w, h = im.size
            scale = torch.tensor([w / size[1], h / size[0], w / size[1], h / size[0]])
            out.append(Regions(f.numpy(), (boxes.float().cpu() * scale).numpy().astype(np.float32),
                               scores.float().cpu().numpy(), w, h))
        return out


    def pool(self, images, boxes, full_image=False):
        from torchvision.transforms import functional as TF

        m, rh = self.model, self.model.roi_heads
        with torch.inference_mode():
            tensors = [TF.to_tensor(im.convert("RGB")).to(self.device) for im in images]
            batch, _ = m.transform(tensors)
            feats = m.backbone(batch.tensors)
            scaled, originals = [], []
            for im, b, size in zip(images, boxes, batch.image_sizes):
                w, h = im.size
                orig = torch.as_tensor(np.asarray(b, dtype=np.float32).reshape(-1, 4), device=self.device)
                if full_image:
                    orig = torch.cat([_full_box(w, h, orig), orig])
                to_input = torch.tensor([size[1] / w, size[0] / h, size[1] / w, size[0] / h], device=self.device)
                scaled.append(orig * to_input)
                originals.append(orig)
            pooled = rh.box_head(rh.box_roi_pool(feats, scaled, batch.image_sizes)).float().cpu()
        return [_given_regions(im, orig, f, full_image) for im, orig, f in
                zip(images, originals, pooled.split([len(o) for o in originals]))]


def _given_regions(im: Image.Image, boxes: torch.Tensor, features: torch.Tensor, full_image: bool) -> Regions:
    scores = np.ones(len(boxes), dtype=np.float32)
    if full_image:
        scores[0] = 0.0
    return Regions(features.float().cpu().numpy(), boxes.float().cpu().numpy().astype(np.float32), scores,
                   im.size[0], im.size[1])


def _load_state_dict(path: Path, what: str, fix: str) -> dict:
    if not path.is_file():
        raise DataError(path, "weights file does not exist" if not path.exists() else "weights path is not a file", fix)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise DataError(path, f"cannot read weights file ({type(err).__name__}: {err})",
                        "save the weights with torch.save(model.state_dict(), path)") from err
    for key in ("model", "state_dict", "model_state"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
            break
    if not isinstance(state, dict):
        raise DataError(path, f"expected a {what} state_dict, found {type(state).__name__}",
                        "save the weights with torch.save(model.state_dict(), path)")
    return state


def _load_strict(model: torch.nn.Module, state: dict, path: Path, what: str) -> None:
    try:
        result = model.load_state_dict(state, strict=False)
    except RuntimeError as err:
        raise DataError(path, f"not a {what} state_dict ({str(err).splitlines()[0]} ...)",
                        f"convert the checkpoint to {what} key names and shapes") from err
    if result.missing_keys or result.unexpected_keys:
        raise DataError(path, f"not a {what} state_dict: {len(result.missing_keys)} missing keys "
                        f"(e.g. {result.missing_keys[:3]}), {len(result.unexpected_keys)} unexpected keys "
                        f"(e.g. {result.unexpected_keys[:3]})", f"convert the checkpoint to {what} key names")


def _build_fasterrcnn(weights: str, seed: int, min_size: int, max_size: int, proposals: int):
    from torchvision.models.detection import FasterRCNN_ResNet50_FPN_V2_Weights, fasterrcnn_resnet50_fpn_v2

    kwargs = dict(weights_backbone=None, min_size=min_size, max_size=max_size, box_score_thresh=0.0,
                  rpn_post_nms_top_n_test=proposals, rpn_pre_nms_top_n_test=max(1000, proposals))
    key = str(weights)
    if key.lower() in ("coco", "coco_v1"):
        try:
            model = fasterrcnn_resnet50_fpn_v2(weights=FasterRCNN_ResNet50_FPN_V2_Weights.COCO_V1, **kwargs)
        except Exception as err:  # URLError, OSError, hash mismatch, ...
            cache = Path(torch.hub.get_dir()) / "checkpoints"
            raise DataError(
                "torchvision FasterRCNN_ResNet50_FPN_V2_Weights.COCO_V1",
                f"could not load the pretrained detector ({type(err).__name__}: {err})",
                "pre-download it on a machine with network access (python -c \"from torchvision.models.detection "
                "import fasterrcnn_resnet50_fpn_v2 as f, FasterRCNN_ResNet50_FPN_V2_Weights as W; "
                f"f(weights=W.COCO_V1)\") and copy the .pth file into {cache} (or set TORCH_HOME), or set weights "
                "to a local state_dict .pth path; weights: random gives untrained regions for smoke tests",
            ) from err
        return model, "torchvision COCO_V1"
    if key.lower() in ("random", "random-init", "none"):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            model = fasterrcnn_resnet50_fpn_v2(weights=None, num_classes=91, **kwargs)
        return model, f"random-init seed {int(seed)}"
    path = Path(key)
    state = _load_state_dict(path, "fasterrcnn_resnet50_fpn_v2",
                             "set weights to 'coco', 'random' or the path of a fasterrcnn_resnet50_fpn_v2 state_dict")
    head = state.get("roi_heads.box_predictor.cls_score.weight")
    num_classes = int(head.shape[0]) if head is not None else 91
    model = fasterrcnn_resnet50_fpn_v2(weights=None, num_classes=num_classes, **kwargs)
    _load_strict(model, state, path, "torchvision fasterrcnn_resnet50_fpn_v2")
    return model, str(path)


class Detectron2Regions(RegionBackend):
    """Bottom-up-attention regions (2048-d) through detectron2 (a ResNet C4 model whose ROI
    heads have ``_shared_roi_transform``, e.g. the Visual Genome ``faster_rcnn_R_101_C4``
    config of the bottom-up-attention ports). Needs local ``config_file`` and ``weights``."""

    name = "detectron2"
    feature_dim = 2048
    default_sizes = (600, 1000)  # bottom-up-attention test scale

    def __init__(self, weights: str, config_file: str | None = None, seed: int = 0, min_size: int | None = None,
                 max_size: int | None = None, proposals: int = 300, nms_thresh: float = 0.3):
        try:
            from detectron2.checkpoint import DetectionCheckpointer
            from detectron2.config import get_cfg
            from detectron2.modeling import build_model
        except ImportError as err:
            raise MissingBackendError(
                None,
                f"region backend 'detectron2' needs the Python package 'detectron2', which cannot be imported ({err})",
                "install detectron2 (https://github.com/facebookresearch/detectron2, built against this torch) "
                "together with a bottom-up-attention config and weights, or use backend: torchvision "
                "(fasterrcnn_resnet50_fpn_v2, 1024-d region features, no extra package)",
            ) from err
        if not config_file or not Path(config_file).is_file():
            raise DataError(config_file, "the detectron2 backend needs its model config file (.yaml)",
                            "set config_file to the bottom-up-attention detectron2 config (e.g. "
                            "faster_rcnn_R_101_C4_caffe.yaml of a bottom-up-attention port)")
        if not Path(str(weights)).is_file():
            raise DataError(weights, "the detectron2 backend needs a local weights file",
                            "set weights to the bottom-up-attention checkpoint (.pkl/.pth) matching config_file")
        cfg = get_cfg()
        cfg.merge_from_file(str(config_file))
        cfg.MODEL.WEIGHTS = str(weights)
        cfg.MODEL.DEVICE = "cpu"
        cfg.MODEL.RPN.POST_NMS_TOPK_TEST = int(proposals)
        self.min_size = int(min_size or self.default_sizes[0])
        self.max_size = int(max_size or self.default_sizes[1])
        self.nms_thresh = float(nms_thresh)
        self.cfg = cfg
        self.model = build_model(cfg).eval()
        DetectionCheckpointer(self.model).load(str(weights))
        if not hasattr(self.model.roi_heads, "_shared_roi_transform"):
            raise DataError(config_file, "the detectron2 model is not a C4 (Res5ROIHeads) model",
                            "use the bottom-up-attention ResNet-101 C4 config")
        self.weights_desc = f"detectron2 {weights} ({Path(config_file).name})"

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device):
        self.model.to(device)
        return self

    def __call__(self, images, min_boxes, max_boxes, conf_thresh, full_image=False):
        from detectron2.structures import Boxes

        m, rh = self.model, self.model.roi_heads
        inputs, scales = [], []
        for im in images:
            w, h = im.size
            s = min(self.min_size / min(w, h), self.max_size / max(w, h))
            resized = im.convert("RGB").resize((max(1, round(w * s)), max(1, round(h * s))), Image.BILINEAR)
            arr = np.asarray(resized)[:, :, ::-1].copy()  # detectron2 caffe models read BGR
            inputs.append({"image": torch.from_numpy(arr).permute(2, 0, 1), "height": h, "width": w})
            scales.append((w / resized.width, h / resized.height))
        with torch.inference_mode():
            batch = m.preprocess_image(inputs)
            feats = m.backbone(batch.tensor)
            proposals, _ = m.proposal_generator(batch, feats, None)
            in_feats = [feats[f] for f in rh.in_features]
            out = []
            for k, (im, prop, (sx, sy)) in enumerate(zip(images, proposals, scales)):
                boxes = prop.proposal_boxes.tensor
                pooled = rh._shared_roi_transform([f[k:k + 1] for f in in_feats], [Boxes(boxes)]).mean(dim=(2, 3))
                probs = torch.softmax(rh.box_predictor(pooled)[0], dim=-1)
                probs = torch.cat([probs[:, -1:], probs[:, :-1]], dim=1)  # detectron2 puts background last
                conf, _ = proposal_confidence(probs, boxes, self.nms_thresh)
                keep = select_boxes(conf, min_boxes, max_boxes, conf_thresh)
                sel, f, sc = boxes[keep], pooled[keep], conf[keep]
                if full_image or not len(sel):
                    whole = _full_box(batch.image_sizes[k][1], batch.image_sizes[k][0], boxes)
                    fw = rh._shared_roi_transform([f_[k:k + 1] for f_ in in_feats], [Boxes(whole)]).mean(dim=(2, 3))
                    sel, f, sc = torch.cat([whole, sel]), torch.cat([fw, f]), torch.cat([sc.new_zeros(1), sc])
                scale = torch.tensor([sx, sy, sx, sy], device=sel.device)
                out.append(Regions(f.float().cpu().numpy(), (sel * scale).float().cpu().numpy(),
                                   sc.float().cpu().numpy(), im.size[0], im.size[1]))
        return out


    def pool(self, images, boxes, full_image=False):
        from detectron2.structures import Boxes

        m, rh = self.model, self.model.roi_heads
        inputs, scales = [], []
        for im in images:
            w, h = im.size
            s = min(self.min_size / min(w, h), self.max_size / max(w, h))
            resized = im.convert("RGB").resize((max(1, round(w * s)), max(1, round(h * s))), Image.BILINEAR)
            arr = np.asarray(resized)[:, :, ::-1].copy()
            inputs.append({"image": torch.from_numpy(arr).permute(2, 0, 1), "height": h, "width": w})
            scales.append((resized.width / w, resized.height / h))
        out = []
        with torch.inference_mode():
            batch = m.preprocess_image(inputs)
            in_feats = [m.backbone(batch.tensor)[f] for f in rh.in_features]
            for k, (im, b, (sx, sy)) in enumerate(zip(images, boxes, scales)):
                orig = torch.as_tensor(np.asarray(b, dtype=np.float32).reshape(-1, 4), device=self.device)
                if full_image:
                    orig = torch.cat([_full_box(im.size[0], im.size[1], orig), orig])
                scaled = orig * torch.tensor([sx, sy, sx, sy], device=orig.device)
                f = rh._shared_roi_transform([f_[k:k + 1] for f_ in in_feats], [Boxes(scaled)]).mean(dim=(2, 3))
                out.append(_given_regions(im, orig, f, full_image))
        return out


_BACKENDS: dict[str, type[RegionBackend]] = {"torchvision": TorchvisionRegions, "detectron2": Detectron2Regions}


def available_backends() -> dict[str, int]:
    """Backend names with their declared feature dimension."""
    return {name: cls.feature_dim for name, cls in _BACKENDS.items()}


def get_region_backend(name: str, weights: str, seed: int = 0, min_size: int | None = None,
                       max_size: int | None = None, proposals: int = 300, nms_thresh: float = 0.3,
                       config_file: str | None = None) -> RegionBackend:
    """Build the region backend ``name``; see the module docstring."""
    if name not in _BACKENDS:
        valid = ", ".join(f"{n} ({c.feature_dim}-d)" for n, c in _BACKENDS.items())
        raise ValueError(f"unknown region backend {name!r}; valid backends: {valid}")
    kwargs = dict(weights=weights, seed=seed, min_size=min_size, max_size=max_size, proposals=proposals,
                  nms_thresh=nms_thresh)
    if name == "detectron2":
        kwargs["config_file"] = config_file
    return _BACKENDS[name](**kwargs)


# --------------------------------------------------------------------------------------
# Store
# --------------------------------------------------------------------------------------


def extract_regions(
    image_list: Path,
    image_dir: Path,
    out_npy: Path,
    out_boxes: Path,
    out_index: Path,
    backend: str = "torchvision",
    weights: str = "coco",
    max_boxes: int = 36,
    min_boxes: int | None = None,
    conf_thresh: float = 0.2,
    full_image: bool = False,
    min_size: int | None = None,
    max_size: int | None = None,
    proposals: int = 300,
    nms_thresh: float = 0.3,
    config_file: str | None = None,
    batch_size: int = 2,
    chunk_size: int = 256,
    seed: int = 0,
    device: str = "auto",
    log: Callable[[str], None] = _log.info,
    missing_dir_fix: str = "set the dataset's image folder in the config",
    given_boxes: Path | None = None,
) -> dict:
    """Region features of every image of ``image_list`` into a region store (module docstring).

    ``min_boxes`` defaults to ``max_boxes`` (fixed top-K). ``given_boxes``: a JSON file
    ``{image: [[x1, y1, x2, y2], ...]}`` (pixels of the original image, at most ``max_boxes``
    per image, in slot order) whose boxes are pooled instead of detected ones
    (:meth:`RegionBackend.pool`: the same backbone and RoI pooling, no detection; e.g. the
    grounded generator's object boxes). Resumable in chunks of
    ``chunk_size`` images like :func:`~mmt_repro.features.grid.extract_features`; the same
    checks (every missing/unreadable image listed, NaN/Inf or float16 overflow named).
    Returns a summary dict (n_images, shape, mean_boxes, weights_desc, seconds, images_per_s).
    """
    if not image_dir:
        raise DataError(image_list, "no image folder is configured for these images", missing_dir_fix)
    min_boxes = int(max_boxes if min_boxes is None else min_boxes)
    if not 1 <= min_boxes <= int(max_boxes):
        raise ValueError(f"need 1 <= min_boxes <= max_boxes, got {min_boxes} and {max_boxes}")
    image_list, image_dir = Path(image_list), Path(image_dir)
    out_npy, out_boxes, out_index = Path(out_npy), Path(out_boxes), Path(out_index)
    names = read_item_list(image_list)
    check_images(names, image_dir)
    given = None if given_boxes is None else read_given_boxes(Path(given_boxes), names, int(max_boxes))
    dev = resolve_device(device)
    det = get_region_backend(backend, weights, seed=seed, min_size=min_size, max_size=max_size,
                             proposals=proposals, nms_thresh=nms_thresh, config_file=config_file).to(dev)
    n, D = len(names), det.feature_dim
    K = int(max_boxes) + (1 if full_image else 0)
    boxes_desc = (f"given boxes from {given_boxes}" if given is not None
                  else f"{min_boxes}..{max_boxes} boxes at conf >= {conf_thresh}")
    log(f"[regions] {backend} ({D}-d) weights: {det.weights_desc}; {boxes_desc}{' + full image' if full_image else ''}; "
        f"sizes {det.min_size}/{det.max_size}; {n} images; device {dev}")
    settings = {"backend": backend, "weights": str(weights), "weights_desc": det.weights_desc, "feature_dim": D,
                "max_boxes": int(max_boxes), "min_boxes": min_boxes, "conf_thresh": float(conf_thresh),
                "full_image": bool(full_image), "min_size": det.min_size, "max_size": det.max_size,
                "proposals": int(proposals), "nms_thresh": float(nms_thresh), "seed": int(seed),
                "given_boxes": None if given_boxes is None else str(given_boxes)}
    fingerprint = dict(settings, weights=weights_fingerprint(weights), names=names_digest(names),
                       image_dir=str(image_dir.resolve()), config_file=str(config_file),
                       given_boxes=None if given is None else names_digest([json.dumps(given[k]) for k in names]))
    arrays = {"features": (out_npy, (n, K, D), "float16"), "boxes": (out_boxes, (n, K, 4), "float32"),
              "n_boxes": (None, (n,), "int32"), "size": (None, (n, 2), "int32"), "status": (None, (n,), "uint8")}
    t0 = time.perf_counter()
    unreadable: list[str] = []
    done_now = 0
    with atomic_path(out_index) as tmp_index, ChunkedWriter(out_npy, arrays, chunk_size, fingerprint, log=log,
                                                            tag="regions") as w:
        A = w.arrays
        for _, a, b in w.pending():
            for start in range(a, b, batch_size):
                chunk = names[start:min(b, start + batch_size)]
                ims = []
                for name in chunk:
                    try:
                        ims.append(load_image(image_dir / name))
                    except (UnidentifiedImageError, OSError, ValueError) as err:
                        unreadable.append(f"{name} (unreadable: {err})")
                if unreadable:
                    continue
                if given is not None:
                    found = det.pool(ims, [given[name] for name in chunk], full_image)
                else:
                    found = det(ims, min_boxes, int(max_boxes), float(conf_thresh), full_image)
                for i, r in enumerate(found):
                    row, k = start + i, len(r.features)
                    if r.features.ndim != 2 or r.features.shape[1] != D or k > K or r.boxes.shape != (k, 4):
                        raise DataError(out_npy, f"backend {det!r} returned features {r.features.shape} and boxes "
                                        f"{r.boxes.shape} for {chunk[i]}, expected (<= {K}, {D}) and (<= {K}, 4)",
                                        "the backend's feature_dim or box selection is wrong: fix the backend")
                    padded = np.zeros((1, K, D), dtype=np.float32)
                    padded[0, :k] = r.features
                    A["status"][row] = row_status(padded)[0]
                    A["features"][row] = to_float16(padded[0])
                    A["boxes"][row] = 0
                    A["boxes"][row, :k] = r.boxes
                    A["n_boxes"][row] = k
                    A["size"][row] = (r.width, r.height)
                done_now += len(chunk)
        if unreadable:
            raise DataError(image_dir, list_problems("unreadable", unreadable, image_dir),
                            "fetch or regenerate those images, or remove them from the image list")
        raise_for_status(np.asarray(A["status"]), names, out_npy, "image",
                         f"check the detector weights ({det.weights_desc}) and the images")
        n_boxes, size = np.array(A["n_boxes"]), np.array(A["size"])
        seconds = time.perf_counter() - t0
        meta = dict(settings, kind="regions", shape=[n, K, D], dtype="float16", boxes_file=out_boxes.name,
                    box_format="x1,y1,x2,y2 pixels of the original image, float32",
                    image_list=str(image_list), torch_version=torch.__version__, config_file=config_file)
        write_index(tmp_index, names, meta, columns={"n_boxes": n_boxes, "width": size[:, 0], "height": size[:, 1]})
        resumed = w.resumed
        w.commit()
    ips = done_now / max(seconds, 1e-9)
    log(f"[regions] wrote {out_npy} ({n}, {K}, {D}) float16 + {out_boxes.name}, {n_boxes.mean():.1f} boxes/image "
        f"in {seconds:.1f}s, {ips:.2f} images/s" + (f" ({resumed} chunks resumed)" if resumed else ""))
    return {"n_images": n, "shape": (n, K, D), "mean_boxes": float(n_boxes.mean()), "weights_desc": det.weights_desc,
            "device": dev, "seconds": seconds, "images_per_s": ips, "resumed_chunks": resumed,
            "npy": str(out_npy), "boxes": str(out_boxes), "index": str(out_index)}


def read_given_boxes(path: Path, names: list[str], max_boxes: int) -> dict[str, list[list[float]]]:
    """The boxes of every image of ``names`` from a JSON file ``{image: [[x1, y1, x2, y2], ...]}``,
    checked: every image present, 1..``max_boxes`` boxes each, ``x1 < x2``, ``y1 < y2``, no
    negative coordinate. (Boxes beyond the image are clipped by the RoI pooling.)"""
    if not path.is_file():
        raise DataError(path, "the given-boxes file does not exist", "re-run the rule that writes it (for the "
                        "grounded set: generate_grounded), or drop `boxes: given` from the feature set")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(path, f"not a JSON file of boxes ({err})", "write {image: [[x1, y1, x2, y2], ...]}") from err
    if not isinstance(data, dict):
        raise DataError(path, "not a JSON object of image -> boxes", "write {image: [[x1, y1, x2, y2], ...]}")
    missing = [n for n in names if n not in data]
    if missing:
        raise DataError(path, list_problems("without boxes", missing, path), "give boxes for every image of the list")
    bad = []
    for name in names:
        b = np.asarray(data[name], dtype=np.float64)
        if (b.ndim != 2 or b.shape[1] != 4 or not 1 <= len(b) <= max_boxes or not np.isfinite(b).all()
                or (b < 0).any() or (b[:, 2] <= b[:, 0]).any() or (b[:, 3] <= b[:, 1]).any()):
            bad.append(f"{name} ({data[name]!r:.80})")
    if bad:
        raise DataError(path, f"{len(bad)} image(s) with bad boxes, e.g. {'; '.join(bad[:5])}",
                        f"give 1..{max_boxes} boxes x1 < x2, y1 < y2 (pixels, >= 0) per image, or raise max_boxes")
    return {n: [list(map(float, box)) for box in data[n]] for n in names}


class RegionStore(FeatureStore):
    """A region store: features (memory-mapped), boxes (memory-mapped) and the index."""

    def __init__(self, npy: Path, boxes: Path, index: Path):
        super().__init__(npy, index)
        self.boxes_path = Path(boxes)
        if self.lengths is None or not {"width", "height"} <= set(self.columns):
            raise DataError(self.index, "not a region index (needs n_boxes, width, height columns)",
                            "re-run the region extraction rule")
        if not self.boxes_path.is_file():
            raise DataError(self.boxes_path, "boxes file does not exist", "re-run the region extraction rule")
        try:
            self.boxes = np.load(self.boxes_path, mmap_mode="r")
        except Exception as err:
            raise DataError(self.boxes_path, f"cannot memory-map boxes ({type(err).__name__}: {err})",
                            "delete it and re-run the region extraction rule") from err
        if self.boxes.shape != (*self.array.shape[:2], 4):
            raise DataError(self.boxes_path, f"boxes have shape {self.boxes.shape} but features {self.array.shape} "
                            f"need {(*self.array.shape[:2], 4)}", "re-run the region extraction rule")
        self.width = self.columns["width"].astype(np.int64)
        self.height = self.columns["height"].astype(np.int64)

    def regions(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """Unpadded ``(n, D)`` float32 features and ``(n, 4)`` pixel boxes of one row."""
        k = int(self.lengths[row])
        return np.asarray(self.array[row, :k], dtype=np.float32), np.asarray(self.boxes[row, :k], dtype=np.float32)

    def geometry(self, row: int) -> np.ndarray:
        """``(K, 6)`` normalised ``x1, y1, x2, y2, w, h`` of one row (zeros in padding slots)."""
        g = box_geometry(self.boxes[row], self.width[row], self.height[row])
        g[~self.mask(row)] = 0.0
        return g
