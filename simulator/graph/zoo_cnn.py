"""Convolutional zoo models, built from their layer shapes.

Architectures follow torchvision exactly where torchvision has the model (same layers,
same bias / BatchNorm choices, so the parameter counts match torchvision's to the
unit); MobileNetV1 follows Howard et al. 2017, Table 1. Dropout is the identity at
inference and is omitted. Builders are keyword-only so the zoo can validate options
by signature.
"""

from __future__ import annotations

from simulator.errors import ModelError
from simulator.graph.layers import GraphBuilder, Tensor
from simulator.graph.model import ModelGraph

#: Largest input side accepted, pixels: 16x a 1024-px input, far beyond what these
#: networks run at, but small enough for every layer size to stay a finite float.
MAX_RESOLUTION = 16_384


def _check_common(model: str, resolution: int, num_classes: int, minimum: int) -> None:
    if resolution < minimum:
        raise ModelError(f"option resolution must be >= {minimum} pixels, got {resolution}", model)
    if resolution > MAX_RESOLUTION:  # beyond it sizes overflow floats (found by fuzzing)
        raise ModelError(
            f"option resolution must be <= {MAX_RESOLUTION} pixels, got {resolution}", model
        )
    if num_classes < 1:
        raise ModelError(f"option num_classes must be >= 1, got {num_classes}", model)


def _classifier_pool(b: GraphBuilder, x: Tensor, size: int, name: str) -> Tensor:
    # torchvision's AdaptiveAvgPool2d((size, size)) is the identity when the map already
    # has that size (224-pixel input); emitting it would add a no-op op to chain-split
    # studies that cut at pool5 | fc6, so it is only emitted when it does work.
    if x.shape[1:] == (size, size):
        return x
    return b.adaptive_avgpool(x, size, name=name)


# -- AlexNet -------------------------------------------------------------------------
def alexnet(*, resolution: int = 224, num_classes: int = 1000, dtype: str = "fp32") -> ModelGraph:
    """AlexNet as in torchvision (Krizhevsky 2014 "one weird trick" single-tower widths).

    Parameters
    ----------
    resolution : int
        Input height = width, pixels (torchvision's minimum is 63).
    num_classes : int
        Classifier outputs.
    dtype : str
        Element type of activations and weights.

    Returns
    -------
    ModelGraph
        A chain ``conv1, relu1, pool1, ..., conv5, relu5, pool5, fc6, relu6, fc7, relu7,
        fc8`` (paper / Caffe layer names, so Neurosurgeon-style cuts keep their names).
    """
    _check_common("alexnet", resolution, num_classes, 63)
    b = GraphBuilder(dtype, model="alexnet")
    x = b.input((3, resolution, resolution))
    x = b.relu(b.conv(x, 64, 11, stride=4, padding=2, name="conv1"), name="relu1")
    x = b.maxpool(x, 3, 2, name="pool1")
    x = b.relu(b.conv(x, 192, 5, padding=2, name="conv2"), name="relu2")
    x = b.maxpool(x, 3, 2, name="pool2")
    x = b.relu(b.conv(x, 384, 3, padding=1, name="conv3"), name="relu3")
    x = b.relu(b.conv(x, 256, 3, padding=1, name="conv4"), name="relu4")
    x = b.relu(b.conv(x, 256, 3, padding=1, name="conv5"), name="relu5")
    x = b.maxpool(x, 3, 2, name="pool5")
    x = _classifier_pool(b, x, 6, "avgpool")
    x = b.relu(b.fc(x, 4096, name="fc6"), name="relu6")
    x = b.relu(b.fc(x, 4096, name="fc7"), name="relu7")
    b.fc(x, num_classes, name="fc8")
    return b.build("alexnet")


# -- VGG-16 --------------------------------------------------------------------------
#: VGG configuration "D": output channels per conv, "M" for a 2x2/2 max pool.
_VGG16_STAGES: tuple[tuple[int, ...], ...] = (
    (64, 64),
    (128, 128),
    (256, 256, 256),
    (512, 512, 512),
    (512, 512, 512),
)


def vgg16(*, resolution: int = 224, num_classes: int = 1000, dtype: str = "fp32") -> ModelGraph:
    """VGG-16 (configuration D, no BatchNorm) as in torchvision.

    Parameters
    ----------
    resolution : int
        Input height = width, pixels (>= 32).
    num_classes : int
        Classifier outputs.
    dtype : str
        Element type.

    Returns
    -------
    ModelGraph
        A chain with paper names ``conv1_1, relu1_1, ..., pool5, fc6, relu6, fc7, relu7,
        fc8``.
    """
    _check_common("vgg16", resolution, num_classes, 32)
    b = GraphBuilder(dtype, model="vgg16")
    x = b.input((3, resolution, resolution))
    for stage, widths in enumerate(_VGG16_STAGES, start=1):
        for i, width in enumerate(widths, start=1):
            x = b.conv(x, width, 3, padding=1, name=f"conv{stage}_{i}")
            x = b.relu(x, name=f"relu{stage}_{i}")
        x = b.maxpool(x, 2, 2, name=f"pool{stage}")
    x = _classifier_pool(b, x, 7, "avgpool")
    x = b.relu(b.fc(x, 4096, name="fc6"), name="relu6")
    x = b.relu(b.fc(x, 4096, name="fc7"), name="relu7")
    b.fc(x, num_classes, name="fc8")
    return b.build("vgg16")


# -- ResNet --------------------------------------------------------------------------
def _conv_bn(
    b: GraphBuilder, x: Tensor, out: int, k: int, stride: int, pad: int, name: str, bn: str
) -> Tensor:
    return b.bn(b.conv(x, out, k, stride=stride, padding=pad, bias=False, name=name), name=bn)


def _resnet_block(
    b: GraphBuilder, x: Tensor, planes: int, stride: int, bottleneck: bool, p: str
) -> Tensor:
    """One BasicBlock / Bottleneck (torchvision V1.5: stride on the 3x3 conv)."""
    in_ch = x.shape[0]
    expansion = 4 if bottleneck else 1
    if bottleneck:
        y = b.relu(_conv_bn(b, x, planes, 1, 1, 0, f"{p}conv1", f"{p}bn1"), name=f"{p}relu1")
        y = b.relu(_conv_bn(b, y, planes, 3, stride, 1, f"{p}conv2", f"{p}bn2"), name=f"{p}relu2")
        y = _conv_bn(b, y, planes * 4, 1, 1, 0, f"{p}conv3", f"{p}bn3")
        last = f"{p}relu3"
    else:
        y = b.relu(_conv_bn(b, x, planes, 3, stride, 1, f"{p}conv1", f"{p}bn1"), name=f"{p}relu1")
        y = _conv_bn(b, y, planes, 3, 1, 1, f"{p}conv2", f"{p}bn2")
        last = f"{p}relu2"
    identity = x
    if stride != 1 or in_ch != planes * expansion:
        identity = _conv_bn(
            b, x, planes * expansion, 1, stride, 0, f"{p}downsample.0", f"{p}downsample.1"
        )
    return b.relu(b.add(y, identity, name=f"{p}add"), name=last)


def _resnet(
    model: str,
    blocks: tuple[int, ...],
    bottleneck: bool,
    resolution: int,
    num_classes: int,
    dtype: str,
) -> ModelGraph:
    _check_common(model, resolution, num_classes, 32)
    b = GraphBuilder(dtype, model=model)
    x = b.input((3, resolution, resolution))
    x = b.relu(_conv_bn(b, x, 64, 7, 2, 3, "conv1", "bn1"), name="relu")
    x = b.maxpool(x, 3, 2, padding=1, name="maxpool")
    for stage, (count, planes) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True), start=1):
        for i in range(count):
            stride = 2 if stage > 1 and i == 0 else 1
            x = _resnet_block(b, x, planes, stride, bottleneck, f"layer{stage}.{i}.")
    x = b.global_avgpool(x, name="avgpool")
    b.fc(x, num_classes, name="fc")
    return b.build(model)


def resnet18(*, resolution: int = 224, num_classes: int = 1000, dtype: str = "fp32") -> ModelGraph:
    """ResNet-18 as in torchvision (BasicBlocks [2, 2, 2, 2]); a DAG with residual adds.

    Op names follow torchvision modules (``conv1, bn1, relu, maxpool,
    layer1.0.conv1, ..., layer2.0.downsample.0, ..., avgpool, fc``) plus
    ``layerX.Y.add`` and numbered ReLUs (torchvision reuses one ReLU module).

    Parameters
    ----------
    resolution : int
        Input height = width, pixels (>= 32).
    num_classes : int
        Classifier outputs.
    dtype : str
        Element type.
    """
    return _resnet("resnet18", (2, 2, 2, 2), False, resolution, num_classes, dtype)


def resnet50(*, resolution: int = 224, num_classes: int = 1000, dtype: str = "fp32") -> ModelGraph:
    """ResNet-50 V1.5 as in torchvision (Bottlenecks [3, 4, 6, 3], stride on the 3x3).

    Parameters
    ----------
    resolution : int
        Input height = width, pixels (>= 32).
    num_classes : int
        Classifier outputs.
    dtype : str
        Element type.
    """
    return _resnet("resnet50", (3, 4, 6, 3), True, resolution, num_classes, dtype)


# -- MobileNetV1 ---------------------------------------------------------------------
#: Howard et al. 2017, Table 1: (pointwise output channels, depthwise stride) per
#: depthwise-separable layer, at width multiplier 1.
_MOBILENET_V1_LAYERS: tuple[tuple[int, int], ...] = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    *((512, 1),) * 5,
    (1024, 2),
    (1024, 1),
)


def mobilenet_v1(
    *,
    width_multiplier: float = 1.0,
    resolution: int = 224,
    num_classes: int = 1000,
    dtype: str = "fp32",
) -> ModelGraph:
    """MobileNetV1 (Howard et al. 2017, Table 1) with BatchNorm + ReLU after every conv.

    Convs have no bias (BatchNorm follows); the classifier is a global average pool, an
    fc ``1024 * alpha -> num_classes`` and a softmax (the paper's last rows). Channels
    are ``max(8, int(c * alpha))`` as TF-slim's ``min_depth`` rule does.

    Parameters
    ----------
    width_multiplier : float
        The paper's alpha in (0, 4].
    resolution : int
        Input height = width, pixels (>= 32); the paper's rho * 224.
    num_classes : int
        Classifier outputs.
    dtype : str
        Element type.

    Returns
    -------
    ModelGraph
        A chain ``conv1, conv1_bn, conv1_relu, conv_dw_1, conv_dw_1_bn, conv_dw_1_relu,
        conv_pw_1, ..., conv_pw_13_relu, avgpool, fc, softmax`` (Keras layer names).
    """
    model = "mobilenet_v1"
    _check_common(model, resolution, num_classes, 32)
    if not 0.0 < width_multiplier <= 4.0:
        raise ModelError(
            f"option width_multiplier must be in (0, 4], got {width_multiplier}", model
        )

    def width(c: int) -> int:
        return max(8, int(c * width_multiplier))

    b = GraphBuilder(dtype, model=model)
    x = b.input((3, resolution, resolution))
    x = b.bn(
        b.conv(x, width(32), 3, stride=2, padding=1, bias=False, name="conv1"), name="conv1_bn"
    )
    x = b.relu(x, name="conv1_relu")
    for i, (out, stride) in enumerate(_MOBILENET_V1_LAYERS, start=1):
        c = x.shape[0]
        x = b.conv(x, c, 3, stride=stride, padding=1, groups=c, bias=False, name=f"conv_dw_{i}")
        x = b.relu(b.bn(x, name=f"conv_dw_{i}_bn"), name=f"conv_dw_{i}_relu")
        x = b.conv(x, width(out), 1, bias=False, name=f"conv_pw_{i}")
        x = b.relu(b.bn(x, name=f"conv_pw_{i}_bn"), name=f"conv_pw_{i}_relu")
    x = b.global_avgpool(x, name="avgpool")
    b.softmax(b.fc(x, num_classes, name="fc"), name="softmax")
    return b.build(model)


# -- MobileNetV2 ---------------------------------------------------------------------
def _make_divisible(value: float, divisor: int = 8) -> int:
    """Round channels to a multiple of ``divisor``, never down by more than 10 % (torchvision)."""
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * value else new


#: Sandler et al. 2018, Table 2 / torchvision: (expansion t, channels c, repeats n, stride s).
_MOBILENET_V2_SETTING: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def mobilenet_v2(
    *,
    width_multiplier: float = 1.0,
    resolution: int = 224,
    num_classes: int = 1000,
    dtype: str = "fp32",
) -> ModelGraph:
    """MobileNetV2 as in torchvision (inverted residuals, ReLU6, linear bottlenecks).

    Block ``blockN`` is torchvision's ``features[N]``: ops ``blockN.expand`` (1x1,
    omitted when t = 1), ``blockN.dw`` (3x3 depthwise), ``blockN.project`` (1x1), each
    with ``_bn`` (and ``_relu6`` except after project), plus ``blockN.add`` when
    stride = 1 and channels match. Then ``conv_last`` (features[18]), ``avgpool``,
    ``fc`` (classifier[1]).

    Parameters
    ----------
    width_multiplier : float
        torchvision's ``width_mult`` in (0, 4]; channels rounded by ``_make_divisible``.
    resolution : int
        Input height = width, pixels (>= 32).
    num_classes : int
        Classifier outputs.
    dtype : str
        Element type.
    """
    model = "mobilenet_v2"
    _check_common(model, resolution, num_classes, 32)
    if not 0.0 < width_multiplier <= 4.0:
        raise ModelError(
            f"option width_multiplier must be in (0, 4], got {width_multiplier}", model
        )
    b = GraphBuilder(dtype, model=model)
    x = b.input((3, resolution, resolution))
    x = _conv_bn(b, x, _make_divisible(32 * width_multiplier), 3, 2, 1, "conv1", "conv1_bn")
    x = b.relu6(x, name="conv1_relu6")
    index = 1
    for t, c, n, s in _MOBILENET_V2_SETTING:
        out = _make_divisible(c * width_multiplier)
        for i in range(n):
            p = f"block{index}."
            stride = s if i == 0 else 1
            in_ch = x.shape[0]
            hidden = round(in_ch * t)
            y = x
            if t != 1:
                y = b.relu6(
                    _conv_bn(b, y, hidden, 1, 1, 0, f"{p}expand", f"{p}expand_bn"),
                    name=f"{p}expand_relu6",
                )
            y = b.conv(
                y, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False, name=f"{p}dw"
            )
            y = b.relu6(b.bn(y, name=f"{p}dw_bn"), name=f"{p}dw_relu6")
            y = _conv_bn(b, y, out, 1, 1, 0, f"{p}project", f"{p}project_bn")
            x = b.add(x, y, name=f"{p}add") if stride == 1 and in_ch == out else y
            index += 1
    last = _make_divisible(1280 * max(1.0, width_multiplier))
    x = b.relu6(_conv_bn(b, x, last, 1, 1, 0, "conv_last", "conv_last_bn"), name="conv_last_relu6")
    x = b.global_avgpool(x, name="avgpool")
    b.fc(x, num_classes, name="fc")
    return b.build(model)
