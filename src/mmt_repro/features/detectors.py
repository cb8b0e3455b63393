"""Region detectors: an image -> its most confident object regions (pooled features and boxes);
:func:`mmt_repro.features.regions.extract_regions` writes them as a region store.

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
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from mmt_repro.features.extractors import FrozenModel
from mmt_repro.io import DataError


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
