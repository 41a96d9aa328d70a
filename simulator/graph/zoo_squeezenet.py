"""SqueezeNet 1.0 (Iandola et al. 2016) as torchvision builds it (``squeezenet1_0``).

A stem conv, eight Fire modules (squeeze 1x1 -> expand 1x1 and expand 3x3, concatenated)
with three max pools, and a conv classifier (1x1 conv to the classes, ReLU, global
average pool). torchvision's max pools round up (``ceil_mode=True``); the builder's pools
round down, so the pool whose input size is even is given padding 1, which yields the
same output size (109 -> 54, 54 -> 27, 27 -> 13 at 224 pixels). Dropout is the identity
at inference and is omitted.
"""

from __future__ import annotations

from simulator.graph.layers import GraphBuilder, Tensor
from simulator.graph.model import ModelGraph
from simulator.graph.zoo_cnn import _check_common

#: (squeeze, expand 1x1, expand 3x3) channels of fire2..fire9, torchvision squeezenet1_0.
_FIRES: tuple[tuple[int, int, int], ...] = (
    (16, 64, 64),
    (16, 64, 64),
    (32, 128, 128),
    (32, 128, 128),
    (48, 192, 192),
    (48, 192, 192),
    (64, 256, 256),
    (64, 256, 256),
)
#: A max pool (3x3, stride 2) comes before these fire modules (after the stem for fire2).
_POOL_BEFORE = (2, 5, 9)


def _fire(b: GraphBuilder, x: Tensor, index: int, squeeze: int, e1: int, e3: int) -> Tensor:
    p = f"fire{index}."
    s = b.relu(b.conv(x, squeeze, 1, name=f"{p}squeeze"), name=f"{p}squeeze_relu")
    left = b.relu(b.conv(s, e1, 1, name=f"{p}expand1x1"), name=f"{p}expand1x1_relu")
    right = b.relu(b.conv(s, e3, 3, padding=1, name=f"{p}expand3x3"), name=f"{p}expand3x3_relu")
    return b.concat(left, right, name=f"{p}concat")


def _ceil_pool(b: GraphBuilder, x: Tensor, name: str) -> Tensor:
    # ceil_mode: an even input side gains one output, as padding 1 gives when rounding down
    padding = 1 if x.shape[1] % 2 == 0 else 0
    return b.maxpool(x, 3, stride=2, padding=padding, name=name)


def squeezenet(
    *, resolution: int = 224, num_classes: int = 1000, dtype: str = "fp32"
) -> ModelGraph:
    """SqueezeNet 1.0 (torchvision ``squeezenet1_0``: 1,248,424 params at 1000 classes).

    Parameters
    ----------
    resolution : int
        Input height = width, pixels (>= 64).
    num_classes : int
        Classifier outputs.
    dtype : str
        Element type.

    Returns
    -------
    ModelGraph
        ``conv1, conv1_relu, pool1, fire2.squeeze, ..., fire9.concat, conv10,
        conv10_relu, avgpool``.

    Raises
    ------
    ModelError
        On a resolution below 64 or above the zoo's maximum, or num_classes < 1.
    """
    model = "squeezenet"
    _check_common(model, resolution, num_classes, 64)
    b = GraphBuilder(dtype, model=model)
    x = b.input((3, resolution, resolution))
    x = b.relu(b.conv(x, 96, 7, stride=2, name="conv1"), name="conv1_relu")
    for index, (squeeze, e1, e3) in enumerate(_FIRES, start=2):
        if index in _POOL_BEFORE:
            x = _ceil_pool(b, x, f"pool{index - 1}")
        x = _fire(b, x, index, squeeze, e1, e3)
    x = b.relu(b.conv(x, num_classes, 1, name="conv10"), name="conv10_relu")
    b.global_avgpool(x, name="avgpool")
    return b.build(model)
