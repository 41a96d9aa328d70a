"""Which ONNX nodes run as one kernel: the fusion plans of the importer.

``fuse="none"`` keeps one op per node. ``fuse="ort"`` groups nodes the way
onnxruntime's graph optimizer does at ``ORT_ENABLE_EXTENDED`` on the CPU execution
provider (checked against the optimized model onnxruntime 1.23+ writes, see
``tests/graph/test_onnx_fusion.py``):

- constant folding: a node whose inputs are all constant (or a ``Shape`` of a tensor
  of static shape) is computed at load and is no op;
- ``Identity`` / ``Dropout`` are removed (unless they produce a graph output);
- Conv folds: ``Conv -> BatchNormalization``, ``Conv -> Add(constant per-channel)``,
  ``Conv -> Mul(constant per-channel)`` change the conv's weights and bias, so the
  folded nodes cost nothing at run time (a conv without bias gains one);
- ``Conv`` + one of :data:`CONV_ACTIVATIONS` -> ``FusedConv``;
- ``MatMul`` (constant 2-D B) + ``Add`` (constant bias) -> ``Gemm``;
- ``Gemm`` + one of :data:`GEMM_ACTIVATIONS` -> ``FusedGemm``;
- ``MatMul`` + ``Transpose`` of an input (last two axes) and + ``Mul`` / ``Div`` by a
  constant scalar -> ``FusedMatMul``.

Every fusion needs the intermediate tensor to have exactly one consumer and not be a
graph output, as onnxruntime requires. A group is named after its anchor (the Conv,
Gemm or MatMul) and has its kind; fused activations add their FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from simulator.graph.onnx_view import NodeView

#: Activations onnxruntime's ConvActivationFusion folds into FusedConv on CPU.
CONV_ACTIVATIONS = frozenset({"Relu", "Clip", "Sigmoid", "LeakyRelu", "HardSigmoid", "Tanh"})
#: Activations onnxruntime's GemmActivationFusion folds into FusedGemm on CPU.
GEMM_ACTIVATIONS = frozenset({"Relu", "Sigmoid", "LeakyRelu", "HardSigmoid", "Tanh", "Elu"})
#: Nodes onnxruntime removes (their output becomes their input).
ELIMINATED = frozenset({"Identity", "Dropout"})
#: Constant nodes onnxruntime keeps (its QDQ handling needs them).
NOT_FOLDED = frozenset({"QuantizeLinear", "DequantizeLinear"})


@dataclass(frozen=True)
class Group:
    """Nodes (indices) that run as one op.

    Attributes
    ----------
    anchor : int
        The node that names the op and gives its kind.
    fused : tuple of int
        Nodes computed in the anchor's kernel: their FLOPs add up (an activation or
        a scalar scaling holds no weights of its own once fused).
    folded : tuple of int
        Nodes folded into the anchor's weights at load: they cost nothing.
    extra_params : int
        Parameters the folding adds (a bias the conv did not have, a Gemm's bias).
    """

    anchor: int
    fused: tuple[int, ...] = ()
    folded: tuple[int, ...] = ()
    extra_params: int = 0

    @property
    def members(self) -> tuple[int, ...]:
        return (self.anchor, *self.fused, *self.folded)


@dataclass(frozen=True)
class Plan:
    """A fusion plan: the groups in node order, removed nodes' aliases, folded constants."""

    groups: tuple[Group, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)
    constants: frozenset[str] = frozenset()


@dataclass
class _State:
    """Working view of a graph while one plan is computed (local to a call)."""

    nodes: Sequence[NodeView]
    graph_outputs: frozenset[str]
    consumers: dict[str, list[int]]
    producer: dict[str, int]
    constants: set[str]
    claimed: set[int]

    def sole_consumer(self, tensor: str) -> int | None:
        users = self.consumers.get(tensor, [])
        if tensor in self.graph_outputs or len(users) != 1 or users[0] in self.claimed:
            return None
        return users[0]

    def is_const(self, tensor: str) -> bool:
        return tensor in self.constants


def plan_none(nodes: Sequence[NodeView], graph_outputs: frozenset[str]) -> Plan:
    """One op per node."""
    return Plan(tuple(Group(i) for i in range(len(nodes))))


def plan_ort(nodes: Sequence[NodeView], graph_outputs: frozenset[str]) -> Plan:
    """Groups as onnxruntime's ``ORT_ENABLE_EXTENDED`` CPU optimizer forms them."""
    constants = {t.name for n in nodes for t in n.inputs if t.is_const}
    dropped: set[int] = set()
    aliases: dict[str, str] = {}
    for i, node in enumerate(nodes):
        inputs = [aliases.get(t.name, t.name) for t in node.inputs if t.name]
        writes_output = any(o.name in graph_outputs for o in node.outputs)
        foldable = node.op_type == "Shape" or all(t in constants for t in inputs)
        if foldable and node.op_type not in NOT_FOLDED and not writes_output:
            dropped.add(i)
            constants.update(o.name for o in node.outputs if o.name)
        elif node.op_type in ELIMINATED and not writes_output and inputs:
            dropped.add(i)
            aliases[node.outputs[0].name] = inputs[0]
    nodes = [_through(node, aliases) for node in nodes]  # rules see removed nodes bypassed
    state = _State(nodes, graph_outputs, {}, {}, constants, set())
    for i, node in enumerate(nodes):
        if i in dropped:
            continue
        for t in node.inputs:
            if t.name:
                state.consumers.setdefault(t.name, []).append(i)
        state.producer.update((o.name, i) for o in node.outputs if o.name)
    anchored: dict[int, Group] = {}
    for i, node in enumerate(nodes):
        rule = ANCHOR_RULES.get(node.op_type)
        if i in dropped or i in state.claimed or rule is None:
            continue
        group = rule(i, state)
        anchored[i] = group
        state.claimed.update(group.members)
    groups = [
        anchored.get(i, Group(i))
        for i in range(len(nodes))
        if i not in dropped and (i in anchored or i not in state.claimed)
    ]
    return Plan(tuple(groups), MappingProxyType(aliases), frozenset(constants))


def _through(node: NodeView, aliases: Mapping[str, str]) -> NodeView:
    """``node`` reading the inputs of the removed nodes it read."""
    if not any(t.name in aliases for t in node.inputs):
        return node
    inputs = tuple(replace(t, name=aliases.get(t.name, t.name)) for t in node.inputs)
    return replace(node, inputs=inputs)


def _activation(state: _State, tensor: str, allowed: frozenset[str]) -> tuple[int, ...]:
    """The activation consuming ``tensor`` that may fuse, as a 0- or 1-tuple."""
    j = state.sole_consumer(tensor)
    if j is None or state.nodes[j].op_type not in allowed:
        return ()
    bounds = [t.name for t in state.nodes[j].inputs[1:] if t.name]
    return (j,) if all(state.is_const(b) for b in bounds) else ()  # Clip needs constants


def _other_input(node: NodeView, tensor: str) -> str | None:
    names = [t.name for t in node.inputs]
    if len(names) != 2 or names.count(tensor) != 1:
        return None
    return names[1] if names[0] == tensor else names[0]


def _per_channel(node: NodeView, tensor: str, rank: int, channels: int) -> bool:
    """``node`` combines ``tensor`` with a constant of shape ``(C, 1, ...)``."""
    other = _other_input(node, tensor)
    view = next((t for t in node.inputs if t.name == other), None)
    if view is None or not view.is_const or view.shape is None or len(view.shape) > rank:
        return False
    padded = (1,) * (rank - len(view.shape)) + view.shape
    return padded[1] == channels and all(d == 1 for k, d in enumerate(padded) if k != 1)


def _conv_folds(node: NodeView, tensor: str, rank: int, channels: int, state: _State) -> bool:
    if node.op_type == "BatchNormalization":
        return node.inputs[0].name == tensor and all(
            state.is_const(t.name) for t in node.inputs[1:5]
        )
    return node.op_type in ("Add", "Mul") and _per_channel(node, tensor, rank, channels)


def _conv(i: int, state: _State) -> Group:
    node = state.nodes[i]
    out = node.outputs[0].name
    shape = node.outputs[0].shape or ()
    folded: list[int] = []
    weight = node.input(1)
    while weight is not None and weight.is_const and len(shape) >= 2:
        j = state.sole_consumer(out)
        if j is None or not _conv_folds(state.nodes[j], out, len(shape), shape[1], state):
            break
        folded.append(j)
        out = state.nodes[j].outputs[0].name
    gains_bias = node.input(2) is None and any(
        state.nodes[j].op_type in ("BatchNormalization", "Add") for j in folded
    )
    fused = _activation(state, out, CONV_ACTIVATIONS)
    return Group(i, fused, tuple(folded), shape[1] if gains_bias else 0)


def _gemm(i: int, state: _State) -> Group:
    return Group(i, _activation(state, state.nodes[i].outputs[0].name, GEMM_ACTIVATIONS))


def _matmul(i: int, state: _State) -> Group:
    node = state.nodes[i]
    out = node.outputs[0].name
    b, a = node.inputs[1], node.inputs[0]
    j = state.sole_consumer(out)
    if (
        b.is_const
        and len(b.shape or ()) == 2
        and len(a.shape or ()) >= 2
        and j is not None
        and state.nodes[j].op_type == "Add"
    ):
        bias = next(
            (t for t in state.nodes[j].inputs if t.name == _other_input(state.nodes[j], out)), None
        )
        if bias is not None and bias.is_const and bias.shape in ((b.shape[1],), (1, b.shape[1])):
            fused = _activation(state, state.nodes[j].outputs[0].name, GEMM_ACTIVATIONS)
            return Group(i, fused, (j,), bias.elems)
    fused = [p for p in (_transposed(state, t.name, i) for t in node.inputs) if p is not None]
    j = state.sole_consumer(out)
    if j is not None and state.nodes[j].op_type in ("Mul", "Div"):
        scale = _other_input(state.nodes[j], out)
        view = next((t for t in state.nodes[j].inputs if t.name == scale), None)
        if (
            view is not None
            and view.is_const
            and view.elems == 1
            and (state.nodes[j].op_type == "Mul" or state.nodes[j].inputs[1].name == scale)
        ):
            fused.append(j)
    return Group(i, tuple(fused))


def _transposed(state: _State, tensor: str, consumer: int) -> int | None:
    """The Transpose (of the last two axes only) producing ``tensor`` for ``consumer``."""
    p = state.producer.get(tensor)
    if p is None or state.nodes[p].op_type != "Transpose" or p in state.claimed:
        return None
    if state.sole_consumer(tensor) != consumer:
        return None
    perm = list(state.nodes[p].attr("perm") or [])
    rank = len(perm)
    swap = [*range(rank - 2), rank - 1, rank - 2]
    return p if rank >= 2 and perm == swap else None


def ort_anchor(ort_name: str) -> str:
    """The anchor (op name under ``fuse="ort"``) of a node onnxruntime's optimizer made.

    onnxruntime calls a FusedGemm ``fused <gemm>``, a Gemm made from MatMul + Add
    ``<matmul>/MatMulAddFusion`` and a FusedMatMul
    ``<matmul>/MatmulTransposeFusion//MatMulScaleFusion/``; a FusedConv keeps the conv's
    name. Joins profiled node times of an optimized model with the ops of
    ``load_onnx(original, fuse="ort")``.
    """
    return ort_name.removeprefix("fused ").split("/")[0]


#: Fusion rule per anchor op type: ``(node index, state) -> Group``.
ANCHOR_RULES: Mapping[str, Callable[[int, _State], Group]] = MappingProxyType(
    {"Conv": _conv, "Gemm": _gemm, "MatMul": _matmul}
)

#: Fusion plans by the ``fuse`` option of :func:`simulator.graph.onnx_import.load_onnx`.
PLANS: Mapping[str, Callable[[Sequence[NodeView], frozenset[str]], Plan]] = MappingProxyType(
    {"ort": plan_ort, "none": plan_none}
)
