"""Published ImageNet architectures for the **fit** set (seeded random weights, batch 1).

The zoo's six CNNs are plain, residual and inverted-residual networks only. Real CNNs
also use grouped convolutions (ResNeXt, RegNet), dense connectivity with concatenated
branches (PeleeNet), squeeze-excitation with hard-swish (MobileNetV3) and
pre-activation BatchNorms on concatenated paths (DPN-68): kernels whose
cache context the sweeps cannot give (docs/calibration.md, "Sweep context"). These
networks add those motifs to the fit set. None of them is, or belongs to the family
of, a hold-out architecture (calibration/nets.py: VGG, ResNet, DenseNet, Inception,
SqueezeNet, ShuffleNet, MnasNet), and ``build_corpus`` also compares architectures.

Written after their published definitions; :data:`PUBLISHED` holds the published
parameters and MACs, checked in tests/calibration/test_real_corpus.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from calibration.onnxbuild import Builder


def resnext50_32x4d(b: Builder, res: int = 224) -> None:
    """ResNeXt-50 32x4d (torchvision): ResNet-50's bottlenecks with a 32-group 3x3 conv
    of twice the width, blocks [3, 4, 6, 3], projection shortcuts on each stage's first."""
    x = b.conv_bn_relu(b.input([1, 3, res, res]), 3, 64, 7, 2, pad=3, bias=False)
    x, c = b.pool(x, "MaxPool", 3, 2, pad=1), 64
    for stage, (planes, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
        width, out = planes * 2, planes * 4
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            y = b.conv_bn_relu(x, c, width, 1, bias=False)
            y = b.conv_bn_relu(y, width, width, 3, stride, group=32, bias=False)
            y = b.conv_bn_relu(y, width, out, 1, bias=False, relu=False)
            x, c = b.residual(x, y, c, out, stride), out  # each stage's first projects
    b.head(x, c, 1000)


def regnet_x_400mf(b: Builder, res: int = 224) -> None:
    """RegNetX-400MF (torchvision): widths [32, 64, 160, 400], depths [1, 2, 7, 12],
    group width 16, bottleneck ratio 1; every stage starts with a stride-2 block."""
    x, c = b.conv_bn_relu(b.input([1, 3, res, res]), 3, 32, 3, 2, bias=False), 32
    for width, depth in ((32, 1), (64, 2), (160, 7), (400, 12)):
        for i in range(depth):
            stride = 2 if i == 0 else 1
            y = b.conv_bn_relu(x, c, width, 1, bias=False)
            y = b.conv_bn_relu(y, width, width, 3, stride, group=width // 16, bias=False)
            y = b.conv_bn_relu(y, width, width, 1, bias=False, relu=False)
            x, c = b.residual(x, y, c, width, stride), width
    b.head(x, c, 1000)


def peleenet(b: Builder, res: int = 224) -> None:
    """PeleeNet (Wang, Li and Ling, NeurIPS 2018, Table 1 and the authors' code): a
    two-branch stem, two-way dense layers (growth 32: a 1x1-3x3 and a 1x1-3x3-3x3
    branch of 16 channels each, concatenated to the input), blocks [3, 4, 8, 6] with
    bottleneck widths [1, 2, 4, 4] x 16, a 1x1 transition after each block (2x2
    average pool after the first three). Every conv is conv (no bias) + BN + ReLU."""

    def cbr(x: str, c_in: int, c_out: int, k: int, stride: int = 1) -> str:
        return b.conv_bn_relu(x, c_in, c_out, k, stride, bias=False)

    x = cbr(b.input([1, 3, res, res]), 3, 32, 3, 2)
    branch = cbr(cbr(x, 32, 16, 1), 16, 32, 3, 2)
    x, c = cbr(b.concat([branch, b.pool(x, "MaxPool", 2, 2)]), 64, 32, 1), 32
    for block, (layers, bottleneck) in enumerate(((3, 1), (4, 2), (8, 4), (6, 4))):
        for _ in range(layers):
            inter = 16 * bottleneck
            if inter > c / 2:  # the authors' cap on narrow inputs
                inter = int(c / 8) * 4
            left = cbr(cbr(x, c, inter, 1), inter, 16, 3)
            right = cbr(cbr(cbr(x, c, inter, 1), inter, 16, 3), 16, 16, 3)
            x, c = b.concat([x, left, right]), c + 32
        x = cbr(x, c, c, 1)
        if block < 3:
            x = b.pool(x, "AveragePool", 2, 2)
    b.head(x, c, 1000)


def dpn68(b: Builder, res: int = 224) -> None:
    """DPN-68 (Chen et al., "Dual Path Networks", NeurIPS 2017; timm's ``dpn68``, which
    loads the authors' MXNet weights): a 3x3 stem of 10 channels, then dual-path
    blocks [3, 4, 12, 3] whose input is the concat of a residual path (64, 128, 256,
    512 channels) and a dense path growing by [16, 32, 32, 64] per block. Every block
    conv is pre-activation (BN, ReLU, conv; 32 groups in the 3x3); a stage's first
    block projects the input to both paths (stride 2 from stage 2). Its output is
    sliced into a residual part, added, and a dense part, concatenated. The standalone
    BatchNorms on a widening concat are DenseNet's pattern, which no other fit network
    has (every other BN follows a conv, into which ORT folds it)."""

    def bn_relu_conv(x: str, c_in: int, c_out: int, k: int, stride: int = 1, group: int = 1):
        y = b.relu(b.bn(x, c_in, eps=1e-3))
        return b.conv(y, c_in, c_out, k, stride, group, bias=False)

    def take(x: str, start: int, end: int) -> str:
        return b.node(
            "Slice", [x, b.const([start], "int64"), b.const([end], "int64"),
                      b.const([1], "int64")],
        )  # fmt: skip

    x = b.conv_bn_relu(b.input([1, 3, res, res]), 3, 10, 3, 2, eps=1e-3, bias=False)
    x, c = b.pool(x, "MaxPool", 3, 2, pad=1), 10
    resid = dense = ""
    for stage, (blocks, inc) in enumerate(((3, 16), (4, 32), (12, 32), (3, 64))):
        bw = 64 * 2**stage
        r = 2 * bw  # k_r = 128 with bw_factor 1: r = 128 * bw / 64
        for i in range(blocks):
            x_in = x if stage == 0 and i == 0 else b.concat([resid, dense])
            if i == 0:
                proj = bn_relu_conv(x_in, c, bw + 2 * inc, 1, 2 if stage else 1)
                resid, dense = take(proj, 0, bw), take(proj, bw, bw + 2 * inc)
            y = bn_relu_conv(x_in, c, r, 1)
            y = bn_relu_conv(y, r, r, 3, 2 if stage and i == 0 else 1, group=32)
            y = bn_relu_conv(y, r, bw + inc, 1)
            resid = b.node("Add", [resid, take(y, 0, bw)])
            dense = b.concat([dense, take(y, bw, bw + inc)])
            c = (bw + 3 * inc) if i == 0 else c + inc
    x = b.node("Elu", [b.bn(b.concat([resid, dense]), c, eps=1e-3)])
    y = b.conv(b.node("GlobalAveragePool", [x]), c, 1000, 1)  # the classifier: a 1x1 conv
    b.node("Flatten", [y], axis=1)


#: MobileNetV3-Large's bottlenecks (torchvision): (in, kernel, expanded, out, SE,
#: hard-swish, stride).
_MBV3_LARGE = (
    (16, 3, 16, 16, False, False, 1),
    (16, 3, 64, 24, False, False, 2),
    (24, 3, 72, 24, False, False, 1),
    (24, 5, 72, 40, True, False, 2),
    (40, 5, 120, 40, True, False, 1),
    (40, 5, 120, 40, True, False, 1),
    (40, 3, 240, 80, False, True, 2),
    (80, 3, 200, 80, False, True, 1),
    (80, 3, 184, 80, False, True, 1),
    (80, 3, 184, 80, False, True, 1),
    (80, 3, 480, 112, True, True, 1),
    (112, 3, 672, 112, True, True, 1),
    (112, 5, 672, 160, True, True, 2),
    (160, 5, 960, 160, True, True, 1),
    (160, 5, 960, 160, True, True, 1),
)


def _divisible8(v: float) -> int:
    """torchvision's ``_make_divisible(v, 8)``: the nearest multiple of 8, at least 8,
    never below 90 % of ``v``."""
    rounded = max(8, int(v + 4) // 8 * 8)
    return rounded + 8 if rounded < 0.9 * v else rounded


def mobilenet_v3_large(b: Builder, res: int = 224) -> None:
    """MobileNetV3-Large (torchvision): inverted residuals with ReLU or hard-swish,
    squeeze-excitation (global pool, 1x1 conv, ReLU, 1x1 conv, hard-sigmoid, scale) on
    some, a 960-channel 1x1 conv, a 1280-wide hard-swish FC and the classifier."""

    def cba(x: str, c_in: int, c_out: int, k: int, stride: int, group: int, act: str) -> str:
        y = b.conv_bn_relu(x, c_in, c_out, k, stride, group, relu=False, eps=1e-3, bias=False)
        if act == "relu":
            return b.relu(y)
        return b.node("HardSwish", [y]) if act == "hswish" else y

    x = cba(b.input([1, 3, res, res]), 3, 16, 3, 2, 1, "hswish")
    for c_in, k, mid, c_out, se, hswish, stride in _MBV3_LARGE:
        act = "hswish" if hswish else "relu"
        y = cba(x, c_in, mid, 1, 1, 1, act) if mid != c_in else x
        y = cba(y, mid, mid, k, stride, mid, act)
        if se:
            squeeze = _divisible8(mid // 4)
            s = b.relu(b.conv(b.node("GlobalAveragePool", [y]), mid, squeeze, 1))
            s = b.node("HardSigmoid", [b.conv(s, squeeze, mid, 1)], alpha=1 / 6, beta=0.5)
            y = b.node("Mul", [y, s])
        y = cba(y, mid, c_out, 1, 1, 1, "none")
        x = b.node("Add", [x, y]) if stride == 1 and c_in == c_out else y
    x = cba(x, 160, 960, 1, 1, 1, "hswish")
    y = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    b.gemm(b.node("HardSwish", [b.gemm(y, 960, 1280)]), 1280, 1000)


#: Fit architecture -> builder.
FIT_NETS: Mapping[str, Callable[..., None]] = MappingProxyType(
    {
        "resnext50_32x4d": resnext50_32x4d,
        "regnet_x_400mf": regnet_x_400mf,
        "peleenet": peleenet,
        "mobilenet_v3_large": mobilenet_v3_large,
        "dpn68": dpn68,
    }
)

#: Published (params, GMACs at 224 x 224, decimals the source prints): torchvision's
#: model docs ("Params", "GFLOPS" = multiply-adds) for the torchvision networks;
#: PeleeNet's paper (Table 4: 2.8 M parameters, 508 M FLOPs, which it counts as
#: multiply-adds) [Wang et al., "Pelee", NeurIPS 2018]; DPN-68: osmr/imgclsmob's model
#: table (12,611,602 parameters, 2,338.71 M FLOPs counting BN, activations and adds
#: with the convolutions; the convolutions alone are 2.326 G).
PUBLISHED: Mapping[str, tuple[float, float, int]] = MappingProxyType(
    {
        "resnext50_32x4d": (25_028_904, 4.23, 2),
        "regnet_x_400mf": (5_495_976, 0.41, 2),
        "peleenet": (2.8e6, 0.508, 3),
        "mobilenet_v3_large": (5_483_032, 0.22, 2),
        "dpn68": (12_611_602, 2.34, 2),
    }
)


def build_fit_net(name: str, seed: int, res: int = 224, weights: bool = True):
    """The ``onnx.ModelProto`` of fit architecture ``name`` (weights seeded by ``seed``;
    ``weights=False``: shapes only)."""
    b = Builder(seed, weights)
    FIT_NETS[name](b, res)
    return b.model(name)
