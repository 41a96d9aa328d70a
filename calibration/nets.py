"""Published ImageNet architectures as ONNX graphs (seeded random weights, batch 1).

Written after torchvision's definitions (``torchvision.models``) so that parameters and
multiply-accumulates match torchvision's published figures (:data:`PUBLISHED`, checked
in tests/test_calibration_nets.py). Inference graphs: dropout and auxiliary heads are
left out, BatchNorm is the ONNX inference op.

These are the calibration's **hold-out** architectures (never fitted on); the fit uses
the zoo's own architectures (``socsim zoo NAME --onnx``) and the published networks of
calibration/fitnets.py, different networks and families.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from calibration.onnxbuild import Builder


def vgg19(b: Builder, res: int = 224) -> None:
    """VGG-19 (configuration E, no BatchNorm): 16 conv 3x3 + ReLU, 5 max-pools, 3 FCs."""
    x, c = b.input([1, 3, res, res]), 3
    for width, convs in ((64, 2), (128, 2), (256, 4), (512, 4), (512, 4)):
        for _ in range(convs):
            x, c = b.relu(b.conv(x, c, width, 3)), width
        x = b.pool(x, "MaxPool", 2, 2)
    side = res // 32
    x = b.node("Flatten", [x], axis=1)
    x = b.relu(b.gemm(x, 512 * side * side, 4096))
    x = b.relu(b.gemm(x, 4096, 4096))
    b.gemm(x, 4096, 1000)


def _stem(b: Builder, res: int, width: int = 64, eps: float = 1e-5) -> str:
    """ResNet/DenseNet stem: conv 7x7/2 (no bias) + BN + ReLU, max-pool 3/2."""
    x = b.conv_bn_relu(b.input([1, 3, res, res]), 3, width, 7, 2, pad=3, bias=False, eps=eps)
    return b.pool(x, "MaxPool", 3, 2, pad=1)


def resnet34(b: Builder, res: int = 224) -> None:
    """ResNet-34: BasicBlocks [3, 4, 6, 3], 1x1 projection shortcuts where shapes change."""
    x, c = _stem(b, res), 64
    for stage, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            y = b.conv_bn_relu(x, c, width, 3, stride, bias=False)
            y = b.conv_bn_relu(y, width, width, 3, bias=False, relu=False)
            x, c = b.residual(x, y, c, width, stride), width
    b.head(x, c, 1000)


def densenet121(b: Builder, res: int = 224) -> None:
    """DenseNet-121: growth 32, blocks (6, 12, 24, 16), BN-ReLU-conv layers, transitions."""
    x, c = _stem(b, res), 64
    for block, layers in enumerate((6, 12, 24, 16)):
        features = [x]
        for _ in range(layers):
            inp = b.concat(features) if len(features) > 1 else features[0]
            width = c + 32 * (len(features) - 1)
            y = b.conv(b.relu(b.bn(inp, width)), width, 128, 1, bias=False)
            y = b.conv(b.relu(b.bn(y, 128)), 128, 32, 3, bias=False)
            features.append(y)
        x, c = b.concat(features), c + 32 * layers
        if block < 3:
            x = b.conv(b.relu(b.bn(x, c)), c, c // 2, 1, bias=False)
            x, c = b.pool(x, "AveragePool", 2, 2), c // 2
    b.head(b.relu(b.bn(x, c)), c, 1000)


#: GoogLeNet's inception modules: (in, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj).
_INCEPTION = {
    "3a": (192, 64, 96, 128, 16, 32, 32),
    "3b": (256, 128, 128, 192, 32, 96, 64),
    "4a": (480, 192, 96, 208, 16, 48, 64),
    "4b": (512, 160, 112, 224, 24, 64, 64),
    "4c": (512, 128, 128, 256, 24, 64, 64),
    "4d": (512, 112, 144, 288, 32, 64, 64),
    "4e": (528, 256, 160, 320, 32, 128, 128),
    "5a": (832, 256, 160, 320, 32, 128, 128),
    "5b": (832, 384, 192, 384, 48, 128, 128),
}


def googlenet(b: Builder, res: int = 224) -> None:
    """GoogLeNet (Inception v1) as torchvision builds it (its "5x5" branch is 3x3)."""

    def basic(x: str, c_in: int, c_out: int, k: int, stride: int = 1) -> str:
        return b.conv_bn_relu(x, c_in, c_out, k, stride, bias=False, eps=1e-3)

    x = basic(b.input([1, 3, res, res]), 3, 64, 7, 2)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = basic(basic(x, 64, 64, 1), 64, 192, 3)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    for name, (c_in, c1, r3, c3, r5, c5, proj) in _INCEPTION.items():
        branches = [
            basic(x, c_in, c1, 1),
            basic(basic(x, c_in, r3, 1), r3, c3, 3),
            basic(basic(x, c_in, r5, 1), r5, c5, 3),
            basic(b.pool(x, "MaxPool", 3, 1, pad=1, ceil=True), c_in, proj, 1),
        ]
        x = b.concat(branches)
        if name in ("3b", "4e"):
            x = b.pool(x, "MaxPool", 3 if name == "3b" else 2, 2, ceil=True)
    b.head(x, 1024, 1000)


def inception_v3(b: Builder, res: int = 299) -> None:
    """Inception v3 as torchvision builds it (no auxiliary head): factorised 5 x 5 and
    7 x 7 convolutions (1 x 7 then 7 x 1), 1 x 3 / 3 x 1 pairs in the last blocks.

    Every conv is torchvision's ``BasicConv2d`` (no bias, BatchNorm eps 1e-3, ReLU); its
    average-pool branches count the padding, as torchvision's ``avg_pool2d`` does."""

    def basic(x: str, c_in: int, c_out: int, k, stride: int = 1, pad: int | None = None):
        return b.conv_bn_relu(x, c_in, c_out, k, stride, pad=pad, bias=False, eps=1e-3)

    def avg_branch(x: str, c_in: int, c_out: int) -> str:
        pool = b.node(
            "AveragePool",
            [x],
            kernel_shape=[3, 3],
            strides=[1, 1],
            pads=[1] * 4,
            count_include_pad=1,
        )
        return basic(pool, c_in, c_out, 1)

    def block_a(x: str, c_in: int, pool_features: int) -> str:  # 35 x 35
        b5 = basic(basic(x, c_in, 48, 1), 48, 64, 5)
        b3 = basic(basic(basic(x, c_in, 64, 1), 64, 96, 3), 96, 96, 3)
        return b.concat([basic(x, c_in, 64, 1), b5, b3, avg_branch(x, c_in, pool_features)])

    def block_b(x: str, c_in: int) -> str:  # 35 -> 17
        b3 = basic(x, c_in, 384, 3, 2, pad=0)
        dbl = basic(basic(basic(x, c_in, 64, 1), 64, 96, 3), 96, 96, 3, 2, pad=0)
        return b.concat([b3, dbl, b.pool(x, "MaxPool", 3, 2)])

    def block_c(x: str, c7: int) -> str:  # 17 x 17, 768 channels
        b7 = basic(basic(basic(x, 768, c7, 1), c7, c7, (1, 7)), c7, 192, (7, 1))
        dbl = basic(x, 768, c7, 1)
        for k in ((7, 1), (1, 7), (7, 1)):
            dbl = basic(dbl, c7, c7, k)
        dbl = basic(dbl, c7, 192, (1, 7))
        return b.concat([basic(x, 768, 192, 1), b7, dbl, avg_branch(x, 768, 192)])

    def block_d(x: str) -> str:  # 17 -> 8
        b3 = basic(basic(x, 768, 192, 1), 192, 320, 3, 2, pad=0)
        b7 = basic(basic(basic(x, 768, 192, 1), 192, 192, (1, 7)), 192, 192, (7, 1))
        return b.concat([b3, basic(b7, 192, 192, 3, 2, pad=0), b.pool(x, "MaxPool", 3, 2)])

    def block_e(x: str, c_in: int) -> str:  # 8 x 8
        b3 = basic(x, c_in, 384, 1)
        dbl = basic(basic(x, c_in, 448, 1), 448, 384, 3)
        pairs = [
            b.concat([basic(y, 384, 384, (1, 3)), basic(y, 384, 384, (3, 1))]) for y in (b3, dbl)
        ]
        return b.concat([basic(x, c_in, 320, 1), *pairs, avg_branch(x, c_in, 192)])

    x = basic(b.input([1, 3, res, res]), 3, 32, 3, 2, pad=0)
    x = basic(basic(x, 32, 32, 3, pad=0), 32, 64, 3)
    x = b.pool(x, "MaxPool", 3, 2)
    x = basic(basic(x, 64, 80, 1), 80, 192, 3, pad=0)
    x = b.pool(x, "MaxPool", 3, 2)
    for c_in, pool_features in ((192, 32), (256, 64), (288, 64)):
        x = block_a(x, c_in, pool_features)
    x = block_b(x, 288)
    for c7 in (128, 160, 160, 192):
        x = block_c(x, c7)
    x = block_e(block_e(block_d(x), 1280), 2048)
    b.head(x, 2048, 1000)


def squeezenet1_1(b: Builder, res: int = 224) -> None:
    """SqueezeNet 1.1: Fire modules (squeeze 1x1, expand 1x1 and 3x3), conv classifier."""

    def fire(x: str, c_in: int, squeeze: int, expand: int) -> str:
        s = b.relu(b.conv(x, c_in, squeeze, 1))
        return b.concat(
            [b.relu(b.conv(s, squeeze, expand, 1)), b.relu(b.conv(s, squeeze, expand, 3))]
        )

    x = b.relu(b.conv(b.input([1, 3, res, res]), 3, 64, 3, 2, pad=0))
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = fire(fire(x, 64, 16, 64), 128, 16, 64)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = fire(fire(x, 128, 32, 128), 256, 32, 128)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    for c_in, squeeze, expand in ((256, 48, 192), (384, 48, 192), (384, 64, 256), (512, 64, 256)):
        x = fire(x, c_in, squeeze, expand)
    x = b.relu(b.conv(x, 512, 1000, 1))
    b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)


def shufflenet_v2_x1_0(b: Builder, res: int = 224) -> None:
    """ShuffleNetV2 x1.0: channel split, two branches, concat and channel shuffle."""
    side = res // 4

    def shuffle(x: str, c: int, hw: int) -> str:
        y = b.node("Reshape", [x, b.const([1, 2, c // 2, hw, hw], "int64")])
        y = b.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
        return b.node("Reshape", [y, b.const([1, c, hw, hw], "int64")])

    x = b.conv_bn_relu(b.input([1, 3, res, res]), 3, 24, 3, 2, bias=False)
    x, c = b.pool(x, "MaxPool", 3, 2, pad=1), 24
    for width, repeats in ((116, 4), (232, 8), (464, 4)):
        half = width // 2
        for i in range(repeats):
            if i == 0:
                side //= 2
                left = b.conv_bn_relu(x, c, c, 3, 2, group=c, bias=False, relu=False)
                left = b.conv_bn_relu(left, c, half, 1, bias=False)
                right_in, c_right = x, c
            else:
                left, right_in = b.multi("Split", [x, b.const([half, half], "int64")], 2, axis=1)
                c_right = half
            right = b.conv_bn_relu(right_in, c_right, half, 1, bias=False)
            right = b.conv_bn_relu(
                right, half, half, 3, 2 if i == 0 else 1, group=half, bias=False, relu=False
            )
            right = b.conv_bn_relu(right, half, half, 1, bias=False)
            x, c = shuffle(b.concat([left, right]), width, side), width
    x = b.conv_bn_relu(x, c, 1024, 1, bias=False)
    b.head(x, 1024, 1000)


def mnasnet1_0(b: Builder, res: int = 224) -> None:
    """MnasNet-A1 1.0 without squeeze-excitation, as torchvision's ``mnasnet1_0``."""

    def cbr(
        x: str, c_in: int, c_out: int, k: int, stride: int = 1, group: int = 1, relu: bool = True
    ) -> str:
        return b.conv_bn_relu(x, c_in, c_out, k, stride, group, bias=False, relu=relu, eps=1e-5)

    x = cbr(b.input([1, 3, res, res]), 3, 32, 3, 2)
    x = cbr(x, 32, 32, 3, group=32)
    x, c = cbr(x, 32, 16, 1, relu=False), 16
    stacks = (
        (24, 3, 2, 3, 3),
        (40, 5, 2, 3, 3),
        (80, 5, 2, 6, 3),
        (96, 3, 1, 6, 2),
        (192, 5, 2, 6, 4),
        (320, 3, 1, 6, 1),
    )
    for c_out, k, stride, expand, repeats in stacks:
        for i in range(repeats):
            s = stride if i == 0 else 1
            mid = c * expand
            y = cbr(cbr(x, c, mid, 1), mid, mid, k, s, group=mid)
            y = cbr(y, mid, c_out, 1, relu=False)
            x = b.node("Add", [x, y]) if s == 1 and c == c_out else y
            c = c_out
    x = cbr(x, 320, 1280, 1)
    b.head(x, 1280, 1000)


#: Hold-out architecture -> builder.
NETS: Mapping[str, Callable[..., None]] = MappingProxyType(
    {
        "vgg19": vgg19,
        "resnet34": resnet34,
        "densenet121": densenet121,
        "googlenet": googlenet,
        "squeezenet1_1": squeezenet1_1,
        "shufflenet_v2_x1_0": shufflenet_v2_x1_0,
        "mnasnet1_0": mnasnet1_0,
        "inception_v3": inception_v3,
    }
)

#: Published (params, GMACs at the published input) per architecture: torchvision's model docs
#: ("Params" and "GFLOPS", which torchvision counts as multiply-adds) [R, see the test].
PUBLISHED: Mapping[str, tuple[int, float]] = MappingProxyType(
    {
        "vgg19": (143_667_240, 19.63),
        "resnet34": (21_797_672, 3.66),
        "densenet121": (7_978_856, 2.83),
        "googlenet": (6_624_904, 1.50),
        "squeezenet1_1": (1_235_496, 0.35),
        "shufflenet_v2_x1_0": (2_278_604, 0.14),
        "mnasnet1_0": (4_383_312, 0.31),
        # torchvision's 27,161,264 less its auxiliary head (3,326,696: 768x128 1x1 and
        # 128x768 5x5 convs with their BatchNorms, a 768 -> 1000 FC); at 299 x 299
        "inception_v3": (23_834_568, 5.71),
    }
)


def build_net(name: str, seed: int, res: int | None = None, weights: bool = True):
    """The ``onnx.ModelProto`` of architecture ``name`` at ``res`` x ``res`` (None: its
    published input, 224, Inception v3's 299; weights seeded by ``seed``;
    ``weights=False``: shapes only, see :class:`~calibration.onnxbuild.Builder`)."""
    b = Builder(seed, weights)
    if res is None:
        NETS[name](b)
    else:
        NETS[name](b, res)
    return b.model(name)
