"""Baseline ImageNet top-1 accuracy of the zoo models, with citations, and composition.

Baselines (percent, single 224-pixel centre crop):

=====================  ======  ===============================================
model                  top-1   source
=====================  ======  ===============================================
alexnet                56.522  torchvision AlexNet_Weights.IMAGENET1K_V1 acc@1
vgg16                  71.592  torchvision VGG16_Weights.IMAGENET1K_V1 acc@1
resnet18               69.758  torchvision ResNet18_Weights.IMAGENET1K_V1 acc@1
resnet50               76.130  torchvision ResNet50_Weights.IMAGENET1K_V1 acc@1
mobilenet_v2           71.878  torchvision MobileNet_V2_Weights.IMAGENET1K_V1 acc@1
mobilenet_v1           70.6    Howard et al. 2017, arXiv:1704.04861, Tables 6-7
=====================  ======  ===============================================

MobileNetV1 also has the paper's rows for other widths (Table 6: 0.75 -> 68.4,
0.5 -> 63.7, 0.25 -> 50.6) and resolutions (Table 7: 192 -> 69.1, 160 -> 67.2,
128 -> 64.4). A model built with other options (another class count, resolution or
width) has no published figure: its baseline is unknown unless the scenario gives
``accuracy_top1``. The transformer encoders have no top-1.

A technique list changes the baseline by the sum of its deltas, applied in order: the
deltas are additive in percentage points, but each technique's delta may depend on the
graph it sees (e.g. quantization's table is per family), so the order is kept. One
unknown delta makes the result unknown (None).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

_TV = "torchvision {}_Weights.IMAGENET1K_V1 (pytorch.org/vision/stable/models.html)"
_MOBILENET = "Howard et al. 2017, MobileNets, arXiv:1704.04861"

#: Zoo model -> (top-1 %, citation) at default options.
BASELINE_TOP1: Mapping[str, tuple[float, str]] = MappingProxyType(
    {
        "alexnet": (56.522, _TV.format("AlexNet")),
        "vgg16": (71.592, _TV.format("VGG16")),
        "resnet18": (69.758, _TV.format("ResNet18")),
        "resnet50": (76.130, _TV.format("ResNet50")),
        "mobilenet_v2": (71.878, _TV.format("MobileNet_V2")),
        "mobilenet_v1": (70.6, f"{_MOBILENET}, Table 6"),
    }
)

#: MobileNetV1 rows by the one option that differs from the default.
MOBILENET_V1_ROWS: Mapping[tuple[str, float], float] = MappingProxyType(
    {
        ("width_multiplier", 0.75): 68.4,
        ("width_multiplier", 0.5): 63.7,
        ("width_multiplier", 0.25): 50.6,
        ("resolution", 192): 69.1,
        ("resolution", 160): 67.2,
        ("resolution", 128): 64.4,
    }
)

_DEFAULTS = {"resolution": 224, "num_classes": 1000, "width_multiplier": 1.0}


def baseline_top1(zoo: str, options: Mapping[str, Any] | None = None) -> float | None:
    """Published top-1 (%) of zoo model ``zoo`` built with ``options``, or None."""
    if zoo not in BASELINE_TOP1:
        return None
    changed = {k: v for k, v in (options or {}).items() if _DEFAULTS.get(k) != v}
    if not changed:
        return BASELINE_TOP1[zoo][0]
    if zoo == "mobilenet_v1" and len(changed) == 1:
        return MOBILENET_V1_ROWS.get(next(iter(changed.items())))
    return None


def combined_top1(baseline: float | None, deltas: Iterable[float | None]) -> float | None:
    """``baseline`` plus every delta (pp), or None when any of them is unknown."""
    if baseline is None:
        return None
    total = baseline
    for delta in deltas:
        if delta is None:
            return None
        total += delta
    return round(total, 9)
