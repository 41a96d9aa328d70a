"""A shape-tracking builder that turns layer shapes into a :class:`ModelGraph`.

Every figure of an op (MACs, FLOPs, parameters, element counts) is computed here from
the layer's shape, so the zoo models are described by their architecture, never by
hard-coded totals.

Conventions
-----------
- Shapes are per request (batch 1): ``(C, H, W)`` for feature maps, ``(S, D)`` for
  token sequences, ``(H, S, D)`` for per-head attention tensors, ``(N,)`` for vectors.
- A multiply-add is 1 MAC and 2 FLOPs. Conv / fc / matmul have ``flops = 2 * macs``
  (bias adds are not counted, as the usual MAC-based counts do not count them).
- Ops that do no multiply-accumulate (pooling, norms, activations, ...) have
  ``macs = 0`` and a per-element FLOP count from :data:`FLOPS_PER_ELEMENT`.
- Conv kinds: ``dwconv`` when ``groups == in_channels > 1`` (depthwise, with any depth
  multiplier ``out_channels / in_channels``); every other conv, grouped or not, is
  ``conv``.
- Views (``view``, the implicit flatten in :meth:`GraphBuilder.fc`) cost nothing and
  emit no op, as in PyTorch where ``flatten`` / ``reshape`` of a contiguous tensor is a
  view. :meth:`GraphBuilder.flatten` emits an explicit zero-FLOP ``reshape`` op for
  graphs that want one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from simulator.errors import ModelError
from simulator.graph.kind_figures import DEFAULT_PARALLEL_FRACTION, FLOPS_PER_ELEMENT
from simulator.graph.model import DTYPE_BYTES, Edge, ModelGraph, Op

# the per-kind figures (kind_figures) are re-exported: tests and users import them here
__all__ = [
    "DEFAULT_PARALLEL_FRACTION",
    "FLOPS_PER_ELEMENT",
    "GraphBuilder",
    "Tensor",
    "conv_output_size",
]


@dataclass(frozen=True)
class Tensor:
    """A symbolic activation: its shape and the op that produced it.

    Attributes
    ----------
    shape : tuple of int
        Per-request shape (no batch dimension).
    producer : str or None
        Name of the producing op; ``None`` for the model input.
    """

    shape: tuple[int, ...]
    producer: str | None = None

    @property
    def elems(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


def conv_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output length of a conv / pool window: ``floor((size + 2p - k) / s) + 1``."""
    return (size + 2 * padding - kernel) // stride + 1


class GraphBuilder:
    """Build a model DAG layer by layer while tracking tensor shapes.

    Parameters
    ----------
    dtype : str
        Element type of every op, one of :data:`DTYPE_BYTES`.
    parallel_fraction : mapping of str to float, optional
        Per-kind overrides of :data:`DEFAULT_PARALLEL_FRACTION`.
    model : str
        Name used in error messages.
    """

    def __init__(
        self,
        dtype: str = "fp32",
        parallel_fraction: Mapping[str, float] | None = None,
        model: str = "model",
    ):
        if dtype not in DTYPE_BYTES:
            raise ModelError(f"unknown dtype '{dtype}'; valid: {tuple(DTYPE_BYTES)}", model)
        self.dtype = dtype
        self.model = model
        self._fractions = dict(DEFAULT_PARALLEL_FRACTION)
        self._fractions.update(parallel_fraction or {})
        self._ops: list[Op] = []
        self._names: set[str] = set()
        self._edges: dict[tuple[str, str], Edge] = {}
        self._output_elems: dict[str, int] = {}
        self._input_uses: list[str] = []
        self._counter = 0

    # -- plumbing --------------------------------------------------------------------
    def _fail(self, message: str) -> ModelError:
        return ModelError(message, self.model)

    def _emit(
        self,
        kind: str,
        name: str | None,
        inputs: Sequence[Tensor],
        out_shape: tuple[int, ...],
        *,
        macs: int = 0,
        flops: float = 0.0,
        params: int = 0,
        attrs: Mapping[str, int] | None = None,
    ) -> Tensor:
        if name is None:
            self._counter += 1
            name = f"{kind}{self._counter}"
        if name in self._names:
            raise self._fail(f"duplicate op name '{name}'")
        if any(d <= 0 for d in out_shape):
            raise self._fail(f"op '{name}': impossible output shape {out_shape}")
        op = Op(
            name=name,
            kind=kind,
            flops=float(max(flops, 2 * macs)),
            macs=float(macs),
            params=int(params),
            input_elems=sum(t.elems for t in inputs),
            output_elems=math.prod(out_shape),
            dtype=self.dtype,
            parallel_fraction=self._fractions[kind],
            attrs=attrs or {},
        )
        self._names.add(name)
        self._ops.append(op)
        self._output_elems[name] = op.output_elems
        for t in inputs:
            if t.producer is None:
                self._input_uses.append(name)
            elif (t.producer, name) not in self._edges:  # x op x moves the tensor once
                nbytes = self._output_elems[t.producer] * DTYPE_BYTES[self.dtype]
                self._edges[t.producer, name] = Edge(t.producer, name, nbytes)
        return Tensor(tuple(out_shape), name)

    def _chw(self, x: Tensor, what: str) -> tuple[int, ...]:
        if len(x.shape) != 3:
            raise self._fail(f"{what} needs a (C, H, W) input, got shape {x.shape}")
        return x.shape

    # -- sources and views -----------------------------------------------------------
    def input(self, shape: Sequence[int], name: str | None = None) -> Tensor:
        """The model input, of per-request ``shape`` (elements).

        Without ``name`` the input is a source tensor and exactly one op may read it
        (that op reads the request input from the source node). With ``name`` an
        explicit zero-FLOP ``reshape`` op of that name is emitted, so several ops can
        share the input through edges (e.g. the Q, K, V projections of a transformer).
        """
        source = Tensor(tuple(int(d) for d in shape), None)
        if any(d <= 0 for d in source.shape):
            raise self._fail(f"input shape must be positive, got {source.shape}")
        if name is None:
            return source
        return self._emit("reshape", name, [source], source.shape, attrs={"view": 1})

    def view(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        """Reinterpret ``x`` with a new shape of the same element count (free, no op)."""
        shape = tuple(int(d) for d in shape)
        if math.prod(shape) != x.elems:
            raise self._fail(f"cannot view {x.shape} as {shape}: element counts differ")
        return Tensor(shape, x.producer)

    # -- convolution and linear ------------------------------------------------------
    def conv(
        self,
        x: Tensor,
        out_channels: int,
        kernel: int,
        stride: int = 1,
        padding: int = 0,
        groups: int = 1,
        bias: bool = True,
        name: str | None = None,
    ) -> Tensor:
        """2-D convolution (square kernel).

        MACs = ``C_out * H_out * W_out * (C_in / groups) * k * k``; params =
        ``C_out * (C_in / groups) * k * k`` (+ ``C_out`` with bias). Kind ``dwconv``
        when ``groups == C_in > 1``, else ``conv``.
        """
        c, h, w = self._chw(x, f"conv '{name}'")
        if min(out_channels, kernel, stride, groups) < 1 or padding < 0:
            raise self._fail(f"conv '{name}': sizes must be >= 1 and padding >= 0")
        if c % groups or out_channels % groups:
            raise self._fail(
                f"conv '{name}': channels {c}->{out_channels} not divisible by groups {groups}"
            )
        ho = conv_output_size(h, kernel, stride, padding)
        wo = conv_output_size(w, kernel, stride, padding)
        per_out = (c // groups) * kernel * kernel
        macs = out_channels * ho * wo * per_out
        params = out_channels * per_out + (out_channels if bias else 0)
        kind = "dwconv" if groups == c and groups > 1 else "conv"
        shape = {
            "in_channels": c,
            "out_channels": out_channels,
            "kernel": kernel,
            "groups": groups,
            "bias": int(bias),
        }
        return self._emit(
            kind, name, [x], (out_channels, ho, wo), macs=macs, params=params, attrs=shape
        )

    def fc(
        self, x: Tensor, out_features: int, bias: bool = True, name: str | None = None
    ) -> Tensor:
        """Fully connected layer (kind ``fc``).

        A ``(C, H, W)`` input is flattened first, as ``torch.flatten(x, 1)`` does (a free
        view); a ``(S, D)`` input is transformed token by token (``nn.Linear`` over the
        last dimension). MACs = ``tokens * D_in * D_out``; params = ``D_in * D_out``
        (+ ``D_out`` with bias).
        """
        if len(x.shape) == 2:
            tokens, d_in = x.shape
            out_shape: tuple[int, ...] = (tokens, out_features)
        else:
            tokens, d_in = 1, x.elems
            out_shape = (out_features,)
        macs = tokens * d_in * out_features
        params = d_in * out_features + (out_features if bias else 0)
        shape = {"in_features": d_in, "out_features": out_features, "bias": int(bias)}
        return self._emit("fc", name, [x], out_shape, macs=macs, params=params, attrs=shape)

    linear = fc

    def matmul(
        self,
        a: Tensor,
        b: Tensor,
        transpose_b: bool = False,
        scale: bool = False,
        name: str | None = None,
    ) -> Tensor:
        """Batched matrix product of two activations (kind ``matmul``, no params).

        ``a`` is ``(..., M, K)``; ``b`` is ``(..., K, N)`` or, with ``transpose_b``,
        ``(..., N, K)``; leading (batch/head) dimensions must match. MACs =
        ``batch * M * N * K``. ``scale`` adds one FLOP per output element for a folded
        scalar scaling (attention's ``1/sqrt(d_head)``).
        """
        if len(a.shape) < 2 or a.shape[:-2] != b.shape[:-2] or len(a.shape) != len(b.shape):
            raise self._fail(f"matmul '{name}': incompatible shapes {a.shape} @ {b.shape}")
        m, k = a.shape[-2:]
        kb, n = (b.shape[-1], b.shape[-2]) if transpose_b else b.shape[-2:]
        if k != kb:
            raise self._fail(f"matmul '{name}': inner dimensions differ ({k} vs {kb})")
        out_shape = (*a.shape[:-2], m, n)
        macs = math.prod(out_shape) * k
        extra = math.prod(out_shape) * FLOPS_PER_ELEMENT["scale"] if scale else 0.0
        return self._emit("matmul", name, [a, b], out_shape, macs=macs, flops=2 * macs + extra)

    # -- per-element ops -------------------------------------------------------------
    def _pointwise(
        self, kind: str, per_elem: str, x: Tensor, name: str | None, params: int = 0
    ) -> Tensor:
        flops = x.elems * FLOPS_PER_ELEMENT[per_elem]
        return self._emit(kind, name, [x], x.shape, flops=flops, params=params)

    def bn(self, x: Tensor, name: str | None = None) -> Tensor:
        """BatchNorm over channels (kind ``norm``): params ``2 * C`` (gamma, beta)."""
        c = x.shape[0]
        return self._pointwise("norm", "batchnorm", x, name, params=2 * c)

    def layernorm(self, x: Tensor, name: str | None = None) -> Tensor:
        """LayerNorm over the last dimension (kind ``norm``): params ``2 * D``."""
        return self._pointwise("norm", "layernorm", x, name, params=2 * x.shape[-1])

    def relu(self, x: Tensor, name: str | None = None) -> Tensor:
        """ReLU (kind ``activation``)."""
        return self._pointwise("activation", "relu", x, name)

    def relu6(self, x: Tensor, name: str | None = None) -> Tensor:
        """ReLU6 (kind ``activation``)."""
        return self._pointwise("activation", "relu6", x, name)

    def gelu(self, x: Tensor, name: str | None = None) -> Tensor:
        """GELU (kind ``activation``)."""
        return self._pointwise("activation", "gelu", x, name)

    def softmax(self, x: Tensor, name: str | None = None) -> Tensor:
        """Softmax over the last dimension (kind ``softmax``)."""
        return self._pointwise("softmax", "softmax", x, name)

    def add(self, *xs: Tensor, name: str | None = None) -> Tensor:
        """Element-wise sum of equal-shaped tensors (kind ``elementwise``)."""
        if len(xs) < 2 or any(t.shape != xs[0].shape for t in xs):
            raise self._fail(f"add '{name}' needs >= 2 equal shapes, got {[t.shape for t in xs]}")
        flops = xs[0].elems * (len(xs) - 1) * FLOPS_PER_ELEMENT["add"]
        return self._emit("elementwise", name, list(xs), xs[0].shape, flops=flops)

    def lrn(self, x: Tensor, size: int = 5, name: str | None = None) -> Tensor:
        """Local response normalisation across ``size`` channels (kind ``lrn``).

        FLOPs per element: ``2 * size`` (square and accumulate over the window) + 3
        (scale, power, divide).
        """
        return self._emit("lrn", name, [x], x.shape, flops=x.elems * (2 * size + 3))

    # -- pooling ---------------------------------------------------------------------
    def maxpool(
        self,
        x: Tensor,
        kernel: int,
        stride: int | None = None,
        padding: int = 0,
        name: str | None = None,
    ) -> Tensor:
        """Max pooling (kind ``pool``, ``attrs['max'] = 1``); ``stride`` defaults to
        ``kernel``.

        FLOPs: ``k * k`` per output element (k*k compares).
        """
        return self._window_pool(x, kernel, stride, padding, name, is_max=True)

    def avgpool(
        self,
        x: Tensor,
        kernel: int,
        stride: int | None = None,
        padding: int = 0,
        name: str | None = None,
    ) -> Tensor:
        """Average pooling (kind ``pool``, ``attrs['max'] = 0``): :meth:`maxpool`'s shape
        rule and FLOP count (k*k - 1 adds and a divide per output element)."""
        return self._window_pool(x, kernel, stride, padding, name, is_max=False)

    def _window_pool(
        self, x: Tensor, kernel: int, stride: int | None, padding: int, name: str | None,
        *, is_max: bool,
    ) -> Tensor:  # fmt: skip
        c, h, w = self._chw(x, f"pool '{name}'")
        stride = kernel if stride is None else stride
        ho = conv_output_size(h, kernel, stride, padding)
        wo = conv_output_size(w, kernel, stride, padding)
        flops = c * ho * wo * kernel * kernel
        return self._emit("pool", name, [x], (c, ho, wo), flops=flops, attrs={"max": int(is_max)})

    def adaptive_avgpool(self, x: Tensor, size: int, name: str | None = None) -> Tensor:
        """Adaptive average pooling to ``size x size`` (kind ``pool``).

        Every input element is summed once and every output divided once, so FLOPs =
        input elements + output elements (exact only for divisible sizes, close
        otherwise).
        """
        c, _, _ = self._chw(x, f"adaptive pool '{name}'")
        flops = x.elems + c * size * size
        return self._emit("pool", name, [x], (c, size, size), flops=flops, attrs={"max": 0})

    def global_avgpool(self, x: Tensor, name: str | None = None) -> Tensor:
        """Global average pooling to ``(C, 1, 1)`` (kind ``pool``)."""
        return self.adaptive_avgpool(x, 1, name=name)

    # -- data movement ---------------------------------------------------------------
    def concat(self, *xs: Tensor, axis: int = 0, name: str | None = None) -> Tensor:
        """Concatenate along ``axis`` (channels by default); a copy, zero FLOPs."""
        ref = xs[0].shape
        same = all(len(t.shape) == len(ref) for t in xs) and all(
            t.shape[:axis] + t.shape[axis + 1 :] == ref[:axis] + ref[axis + 1 :] for t in xs
        )
        if len(xs) < 2 or not same:
            raise self._fail(f"concat '{name}': incompatible shapes {[t.shape for t in xs]}")
        out = list(ref)
        out[axis] = sum(t.shape[axis] for t in xs)
        return self._emit("concat", name, list(xs), tuple(out))

    def flatten(self, x: Tensor, name: str | None = None) -> Tensor:
        """Explicit flatten op (kind ``reshape``, zero FLOPs) to a vector; it carries
        ``attrs['flatten'] = 1`` (channel pruning passes through it to an fc)."""
        return self._emit("reshape", name, [x], (x.elems,), attrs={"flatten": 1, "view": 1})

    # -- composite helpers -----------------------------------------------------------
    def multi_head_attention(self, x: Tensor, heads: int, prefix: str) -> Tensor:
        """Self-attention over a ``(S, D)`` input, as separate ops.

        Emits ``{prefix}q_proj``, ``k_proj``, ``v_proj`` (fc, D->D with bias),
        ``scores`` (matmul, MACs ``heads * S^2 * d_head``, scaling folded in),
        ``softmax``, ``context`` (matmul, MACs ``heads * S^2 * d_head``) and
        ``out_proj`` (fc, D->D with bias). Returns the ``out_proj`` output ``(S, D)``.
        """
        if len(x.shape) != 2:
            raise self._fail(f"attention '{prefix}' needs a (S, D) input, got {x.shape}")
        seq, d = x.shape
        if d % heads:
            raise self._fail(f"attention '{prefix}': d_model {d} not divisible by heads {heads}")
        per_head = (heads, seq, d // heads)  # the head split is a free view
        q = self.view(self.fc(x, d, name=f"{prefix}q_proj"), per_head)
        k = self.view(self.fc(x, d, name=f"{prefix}k_proj"), per_head)
        v = self.view(self.fc(x, d, name=f"{prefix}v_proj"), per_head)
        scores = self.matmul(q, k, transpose_b=True, scale=True, name=f"{prefix}scores")
        probs = self.softmax(scores, name=f"{prefix}softmax")
        context = self.view(self.matmul(probs, v, name=f"{prefix}context"), (seq, d))
        return self.fc(context, d, name=f"{prefix}out_proj")

    # -- result ----------------------------------------------------------------------
    def build(self, name: str | None = None) -> ModelGraph:
        """The finished :class:`ModelGraph` (named ``name``, default the builder's).

        Raises
        ------
        ModelError
            When the source input feeds more than one op, or an op that also has
            predecessors: the engine sends the request input only to entry ops.
        """
        name = name or self.model
        preds = {dst for _, dst in self._edges}
        if len(self._input_uses) > 1 or any(n in preds for n in self._input_uses):
            raise ModelError(
                f"the model input feeds {self._input_uses}; only one entry op may read it "
                "(give input() a name to share it through an explicit op)",
                name,
            )
        return ModelGraph(name, self._ops, self._edges.values())
