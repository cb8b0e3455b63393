"""Image feature extractors behind one interface.

``get_extractor(name, layer, weights, image_size, seed)`` returns an :class:`Extractor` that
turns PIL images into a ``(B, L, D)`` tensor of L feature vectors of size D per image:

============  ===========  ===================================================  ==============
name          layer        what                                                 shape at 224
============  ===========  ===================================================  ==============
resnet50      res4f        torchvision ``layer3`` output (the last block of     (196, 1024)
                           Caffe's res4 stage, "res4f"), grid flattened row-
                           major: row ``i * W + j`` is grid cell (i, j)
resnet50      res5c        ``layer4`` output, flattened the same way            (49, 2048)
resnet50      pool5        global average pool after ``layer4``                 (1, 2048)
============  ===========  ===================================================  ==============

Calixto et al. (2017) attend over res4f of ResNet-50 at 224x224, i.e. a 14x14 grid of
1024-d vectors (196 x 1024). The grid side is ``ceil(image_size / 16)`` for res4f (4 at 64,
6 at 96, 14 at 224, 28 at 448) and ``ceil(image_size / 32)`` for res5c.

Preprocessing follows torchvision's ImageNet evaluation recipe scaled to ``image_size``:
convert to RGB, resize the shorter side to ``round(image_size * 256 / 224)`` (256 for 224,
bilinear with antialiasing), centre-crop ``image_size`` x ``image_size``, scale to [0, 1] and
normalise with the ImageNet mean and standard deviation.

``weights``:
  * ``"imagenet"``: torchvision's ``IMAGENET1K_V1`` weights, loaded through torchvision's own
    download-and-cache mechanism (``$TORCH_HOME/hub/checkpoints``). ``"imagenet_v2"`` gives
    ``IMAGENET1K_V2``. Without network access and without a cached copy this raises
    :class:`~mmt_repro.io.DataError` saying how to pre-download them. These are not the
    weights Calixto et al. used: He et al.'s original ResNet-50 is a Caffe release, and
    torchvision's ResNet-50 (its own training run) puts the stride of each downsampling block
    in the 3x3 convolution ("v1.5") where the Caffe model has it in the first 1x1, so res4f
    activations differ. The Caffe weights, converted to a PyTorch ``state_dict``, can be given
    as a path (below).
  * ``"random"``: random initialisation, made deterministic by seeding a forked torch RNG with
    ``seed`` (the global torch RNG is left untouched).
  * a path to a local ``.pth``/``.pt`` file holding a ResNet-50 ``state_dict`` (optionally
    under a ``"state_dict"`` key); the classifier (``fc.*``) may be absent.

Models run in eval mode under :func:`torch.inference_mode`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from PIL import Image
from torchvision.transforms import functional as TF

from mmt_repro.io import DataError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

_TORCHVISION_WEIGHTS = {"imagenet": "IMAGENET1K_V1", "imagenet_v1": "IMAGENET1K_V1", "imagenet_v2": "IMAGENET1K_V2"}


def _conv_out(x: int) -> int:
    """Output side of a stride-2 ResNet down-sampling step (k3/p1, k7/p3 and k1 strides agree)."""
    return (x - 1) // 2 + 1


class FrozenModel:
    """A pretrained (or seeded random) network used for inference only: eval mode, no
    gradients, movable between devices. Feature extractors of every kind build on it."""

    model: torch.nn.Module
    weights_desc: str

    def _freeze(self, model: torch.nn.Module, weights_desc: str) -> None:
        self.model, self.weights_desc = model, weights_desc
        self.model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device: str | torch.device):
        self.model.to(device)
        return self


class Extractor:
    """Base class: ``preprocess`` one PIL image, ``__call__`` a batch -> ``(B, L, D)``."""

    name: str
    layer: str
    weights_desc: str
    image_size: int

    def output_shape(self, image_size: int | None = None) -> tuple[int, int]:
        raise NotImplementedError

    def preprocess(self, image: Image.Image) -> torch.Tensor:
        raise NotImplementedError

    def __call__(self, batch: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def to(self, device: str | torch.device) -> Extractor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, layer={self.layer!r}, "
                f"weights={self.weights_desc!r}, image_size={self.image_size})")


def imagenet_preprocess(image: Image.Image, image_size: int) -> torch.Tensor:
    """Resize shorter side to ``round(image_size*256/224)``, centre-crop, normalise -> (3, S, S)."""
    if image.mode != "RGB":
        image = image.convert("RGB")
    resize = int(round(image_size * 256 / 224))
    image = TF.resize(image, resize, interpolation=TF.InterpolationMode.BILINEAR, antialias=True)
    image = TF.center_crop(image, [image_size, image_size])
    tensor = TF.to_tensor(image)
    return TF.normalize(tensor, IMAGENET_MEAN, IMAGENET_STD)


class ResNet50Extractor(FrozenModel, Extractor):
    LAYERS = {"res4f": 1024, "res5c": 2048, "pool5": 2048}

    def __init__(self, layer: str, weights: str = "imagenet", image_size: int = 224, seed: int = 0):
        if layer not in self.LAYERS:
            raise ValueError(f"unknown layer {layer!r} for resnet50; valid layers: {', '.join(self.LAYERS)}")
        if image_size < 32:
            raise ValueError(f"image_size {image_size} is too small for resnet50 (use >= 32)")
        self.name = "resnet50"
        self.layer = layer
        self.image_size = int(image_size)
        self._freeze(*_build_resnet50(weights, seed))

    def output_shape(self, image_size: int | None = None) -> tuple[int, int]:
        s = self.image_size if image_size is None else int(image_size)
        if self.layer == "pool5":
            return 1, 2048
        side = s
        for _ in range(4 if self.layer == "res4f" else 5):  # conv1, maxpool, layer2, layer3[, layer4]
            side = _conv_out(side)
        return side * side, self.LAYERS[self.layer]

    def preprocess(self, image: Image.Image) -> torch.Tensor:
        return imagenet_preprocess(image, self.image_size)

    def __call__(self, batch: torch.Tensor) -> torch.Tensor:
        if batch.dim() == 3:
            batch = batch.unsqueeze(0)
        m = self.model
        with torch.inference_mode():
            x = batch.to(self.device, dtype=torch.float32)
            x = m.maxpool(m.relu(m.bn1(m.conv1(x))))
            x = m.layer3(m.layer2(m.layer1(x)))
            if self.layer != "res4f":
                x = m.layer4(x)
            if self.layer == "pool5":
                return torch.flatten(m.avgpool(x), 1).unsqueeze(1)
            return x.flatten(2).transpose(1, 2).contiguous()  # (B, C, H, W) -> (B, H*W, C)


def _build_resnet50(weights: str, seed: int):
    from torchvision.models import ResNet50_Weights, resnet50

    key = str(weights)
    if key.lower() in _TORCHVISION_WEIGHTS:
        enum_name = _TORCHVISION_WEIGHTS[key.lower()]
        try:
            model = resnet50(weights=ResNet50_Weights[enum_name])
        except Exception as err:  # network errors come in many types (URLError, OSError, ...)
            cache = Path(torch.hub.get_dir()) / "checkpoints"
            raise DataError(
                f"torchvision ResNet50_Weights.{enum_name}",
                f"could not load the pretrained weights ({type(err).__name__}: {err})",
                f"pre-download them on a machine with network access (python -c \"from torchvision.models import "
                f"resnet50, ResNet50_Weights; resnet50(weights=ResNet50_Weights.{enum_name})\") and copy the "
                f".pth file into {cache} (or set TORCH_HOME), or set weights to a local state_dict .pth path; "
                f"weights: random gives untrained features for smoke tests",
            ) from err
        return model, f"torchvision {enum_name}"
    if key.lower() in ("random", "random-init", "none"):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            model = resnet50(weights=None)
        return model, f"random-init seed {int(seed)}"
    path = Path(key)
    if not path.is_file():
        raise DataError(
            path,
            "weights file does not exist" if not path.exists() else "weights path is not a file",
            "set weights to 'imagenet', 'imagenet_v2', 'random' or the path of a ResNet-50 state_dict (.pth)",
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise DataError(path, f"cannot read weights file ({type(err).__name__}: {err})",
                        "save the weights with torch.save(model.state_dict(), path)") from err
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise DataError(path, f"expected a state_dict, found {type(state).__name__}",
                        "save the weights with torch.save(model.state_dict(), path)")
    model = resnet50(weights=None)
    try:
        result = model.load_state_dict(state, strict=False)
    except RuntimeError as err:  # shape mismatches raise even with strict=False
        raise DataError(path, f"not a torchvision ResNet-50 state_dict ({str(err).splitlines()[0]} ...)",
                        "convert the checkpoint to torchvision's resnet50 key names and shapes") from err
    missing = [k for k in result.missing_keys if not k.startswith("fc.")]
    if missing or result.unexpected_keys:
        raise DataError(
            path,
            f"not a torchvision ResNet-50 state_dict: {len(missing)} missing keys (e.g. {missing[:3]}), "
            f"{len(result.unexpected_keys)} unexpected keys (e.g. {result.unexpected_keys[:3]})",
            "convert the checkpoint to torchvision's resnet50 key names",
        )
    return model, str(path)


_REGISTRY: dict[str, tuple[Callable[..., Extractor], tuple[str, ...]]] = {
    "resnet50": (ResNet50Extractor, tuple(ResNet50Extractor.LAYERS)),
}


def available_extractors() -> dict[str, tuple[str, ...]]:
    """Extractor names with their valid layers."""
    return {name: layers for name, (_, layers) in _REGISTRY.items()}


def get_extractor(name: str, layer: str, weights: str = "imagenet", image_size: int = 224, seed: int = 0) -> Extractor:
    """Build the extractor ``name`` returning features of ``layer``; see the module docstring."""
    if name not in _REGISTRY:
        valid = "; ".join(f"{n} (layers: {', '.join(ls)})" for n, (_, ls) in _REGISTRY.items())
        raise ValueError(f"unknown extractor {name!r}; valid extractors: {valid}")
    builder, layers = _REGISTRY[name]
    if layer not in layers:
        raise ValueError(f"unknown layer {layer!r} for extractor {name!r}; valid layers: {', '.join(layers)}")
    return builder(layer=layer, weights=weights, image_size=image_size, seed=seed)

