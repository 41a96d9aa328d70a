"""The per-op-kind modelling figures every graph source shares (the zoo's
:class:`~simulator.graph.layers.GraphBuilder`, ONNX and TFLite import and export, the
graph transforms and techniques), so that an imported model and the same zoo model agree.

- :data:`DEFAULT_PARALLEL_FRACTION`: the Amdahl parallel fraction ``p`` an op of each
  kind gets when nothing else is known (a modelling assumption; calibration fits the
  real values per device).
- :data:`FLOPS_PER_ELEMENT`: FLOPs per output element of the ops that do no
  multiply-accumulate (documented approximations).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from simulator.graph.model import OP_KINDS

#: Amdahl parallel fraction ``p`` per op kind. These are MODELLING ASSUMPTIONS, not
#: measurements: dense linear algebra parallelises almost perfectly; memory-bound
#: per-element ops a little less (bandwidth, not lanes, limits them); softmax has two
#: reductions; data-movement ops are dominated by serial copy/launch overhead.
#: Calibration fits the real values per device.
DEFAULT_PARALLEL_FRACTION: Mapping[str, float] = MappingProxyType(
    {
        "conv": 0.95,
        "dwconv": 0.95,
        "fc": 0.95,
        "matmul": 0.95,
        "attention": 0.95,
        "pool": 0.9,
        "elementwise": 0.9,
        "activation": 0.9,
        "norm": 0.9,
        "lrn": 0.9,
        "softmax": 0.8,
        "embedding": 0.5,
        "concat": 0.5,
        "reshape": 0.5,
        "custom": 0.5,
    }
)
assert set(DEFAULT_PARALLEL_FRACTION) == set(OP_KINDS), "one fraction per op kind"

#: FLOPs per output element of the non-MAC ops (documented approximations).
FLOPS_PER_ELEMENT: Mapping[str, float] = MappingProxyType(
    {
        "batchnorm": 2.0,  # inference BN folds to one scale and one shift
        "layernorm": 8.0,  # mean 1, variance 3, normalise 2, affine 2
        "relu": 1.0,  # one compare
        "relu6": 2.0,  # min and max
        "gelu": 8.0,  # tanh approximation: ~8 ops counting tanh as one
        "softmax": 5.0,  # max, subtract, exp, sum, divide
        "add": 1.0,  # per extra input
        "scale": 1.0,  # the 1/sqrt(d_head) scaling folded into the scores matmul
    }
)
