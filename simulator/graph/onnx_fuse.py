"""Which ONNX nodes run as one kernel: the fusion plans of the importer.

``fuse="none"`` keeps one op per node. ``fuse="ort"`` groups nodes the way
onnxruntime's graph optimizer does at ``ORT_ENABLE_EXTENDED`` on the CPU execution
provider (checked against the optimized model the installed onnxruntime, 1.32 when
written, saves; see ``tests/graph/test_onnx_fusion.py``):

- constant folding: a node whose inputs are all constant (or a ``Shape`` of a tensor
  of static shape) is computed at load and is no op;
- ``Identity`` / ``Dropout`` are removed (unless they produce a graph output), and
  a ``Relu`` before a ``Clip`` (:mod:`simulator.graph.onnx_removals`);
- Conv folds: ``Conv -> BatchNormalization``, ``Conv -> Add(constant per-channel)``,
  ``Conv -> Mul(constant per-channel)`` change the conv's weights and bias, so the
  folded nodes cost nothing at run time (a conv without bias gains one);
- ``Conv`` + one of :data:`CONV_ACTIVATIONS` -> ``FusedConv``;
- ``MatMul`` (2-D B) + ``Add`` (a bias Gemm can broadcast) -> ``Gemm``;
- ``Transpose`` (of the last two axes) into a ``Gemm`` -> its ``transA`` / ``transB``;
- ``Gemm`` + one of :data:`GEMM_ACTIVATIONS` -> ``FusedGemm``;
- ``MatMul`` + ``Transpose`` of an input (last two axes) and + ``Mul`` / ``Div`` of an
  input or the output by a constant scalar -> ``FusedMatMul``.

Every fusion needs the intermediate tensor to have exactly one consumer and not be a
graph output, as onnxruntime requires (input scalings of a MatMul excepted, see
:func:`simulator.graph.onnx_removals.drop_input_scales`). A group is named after its
anchor (the Conv, Gemm or MatMul) and has its kind; fused activations add their FLOPs.
docs/onnx.md lists the rules with onnxruntime's names for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from simulator.graph.kind_figures import FLOPS_PER_ELEMENT
from simulator.graph.onnx_patterns import (
    gemm_bias,
    is_scalar_scaling,
    other_input,
    readers_by_tensor,
    swaps_last_axes,
    through,
)
from simulator.graph.onnx_removals import drop_input_scales, drop_relu_before_clip
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
    extra_flops : float
        FLOPs the folding adds (a FusedMatMul's single scaling factor).
    """

    anchor: int
    fused: tuple[int, ...] = ()
    folded: tuple[int, ...] = ()
    extra_params: int = 0
    extra_flops: float = 0.0

    @property
    def members(self) -> tuple[int, ...]:
        return (self.anchor, *self.fused, *self.folded)


@dataclass(frozen=True)
class Plan:
    """A fusion plan: the groups in node order, removed nodes' aliases, folded constants,
    and the nodes as the groups see them (reading past removed nodes; empty: as given)."""

    groups: tuple[Group, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)
    constants: frozenset[str] = frozenset()
    views: tuple[NodeView, ...] = ()


@dataclass
class _State:
    """Working view of a graph while one plan is computed (local to a call)."""

    nodes: Sequence[NodeView]
    graph_outputs: frozenset[str]
    consumers: dict[str, list[int]]
    producer: dict[str, int]
    constants: set[str]
    claimed: set[int]
    scaled: set[int] = field(default_factory=set)  # MatMuls that took in input scalings
    #: Readers before the MatMul input scalings went (level-1 rules saw those).
    early_consumers: dict[str, list[int]] = field(default_factory=dict)

    def sole_consumer(self, tensor: str) -> int | None:
        users = self.consumers.get(tensor, [])
        if tensor in self.graph_outputs or len(users) != 1 or users[0] in self.claimed:
            return None
        return users[0]

    def only_reader(self, tensor: str) -> int | None:
        """The one node reading ``tensor`` (perhaps as several of its inputs)."""
        users = set(self.consumers.get(tensor, []))
        if tensor in self.graph_outputs or len(users) != 1 or users & self.claimed:
            return None
        return users.pop()

    def is_const(self, tensor: str) -> bool:
        return tensor in self.constants


def plan_none(nodes: Sequence[NodeView], graph_outputs: frozenset[str]) -> Plan:
    """One op per node."""
    return Plan(tuple(Group(i) for i in range(len(nodes))))


def plan_ort(nodes: Sequence[NodeView], graph_outputs: frozenset[str]) -> Plan:
    """Groups as onnxruntime's ``ORT_ENABLE_EXTENDED`` CPU optimizer forms them."""
    constants = {t.name for n in nodes for t in n.inputs if t.is_const}
    produced = {o.name for n in nodes for o in n.outputs}
    users = readers_by_tensor(nodes, set())
    dropped: set[int] = set()
    aliases: dict[str, str] = {}
    for i, node in enumerate(nodes):
        inputs = [aliases.get(t.name, t.name) for t in node.inputs if t.name]
        writes_output = any(o.name in graph_outputs for o in node.outputs)
        foldable = node.op_type == "Shape" or all(t in constants for t in inputs)
        # an Identity writing a graph output hands it to its producer when it is the
        # producer's only reader (onnxruntime's EliminateIdentity)
        hands_over = (
            node.op_type == "Identity"
            and bool(inputs)
            and inputs[0] in produced
            and inputs[0] not in graph_outputs
            and len(users.get(node.inputs[0].name, [])) == 1
        )
        if foldable and node.op_type not in NOT_FOLDED and not writes_output:
            dropped.add(i)
            constants.update(o.name for o in node.outputs if o.name)
        elif node.op_type in ELIMINATED and inputs and (hands_over or not writes_output):
            dropped.add(i)
            aliases[node.outputs[0].name] = inputs[0]
    drop_relu_before_clip(nodes, dropped, aliases, graph_outputs)
    rewired: dict[int, dict[str, str]] = {}
    early = readers_by_tensor([through(n, aliases) for n in nodes], dropped)
    scaled = drop_input_scales(nodes, dropped, aliases, graph_outputs, rewired)
    for name in aliases:  # a removed node may have read another removed node's output
        while aliases[name] in aliases:
            aliases[name] = aliases[aliases[name]]
    nodes = [  # rules see removed nodes bypassed
        through(node, {**aliases, **{k: aliases.get(v, v) for k, v in rewired.get(i, {}).items()}})
        for i, node in enumerate(nodes)
    ]
    consumers = readers_by_tensor(nodes, dropped)
    state = _State(nodes, graph_outputs, consumers, {}, constants, set(), scaled, early)
    for i, node in enumerate(nodes):
        if i not in dropped:
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
    return Plan(tuple(groups), MappingProxyType(aliases), frozenset(constants), tuple(nodes))


def _activation(state: _State, tensor: str, allowed: frozenset[str]) -> tuple[int, ...]:
    """The activation consuming ``tensor`` that may fuse, as a 0- or 1-tuple."""
    j = state.sole_consumer(tensor)
    if j is None or state.nodes[j].op_type not in allowed:
        return ()
    bounds = [t.name for t in state.nodes[j].inputs[1:] if t.name]
    return (j,) if all(state.is_const(b) for b in bounds) else ()  # Clip needs constants


def _per_channel(node: NodeView, tensor: str, rank: int, channels: int) -> bool:
    """``node`` combines ``tensor`` with a constant of shape ``(C, 1, ...)``."""
    other = other_input(node, tensor)
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


def _input_transposes(i: int, state: _State) -> list[int]:
    """Transposes of the last two axes feeding node ``i`` (as transA / transB)."""
    found = [_transposed(state, t.name, i) for t in state.nodes[i].inputs[:2]]
    return list(dict.fromkeys(p for p in found if p is not None))


def _gemm_transposes(i: int, out: str, state: _State) -> list[int]:
    """GemmTransposeFusion (a level-1 rule): input Transposes, when the Gemm's output
    ``out`` fed at most one input of one node before the level-2 rules ran."""
    return _input_transposes(i, state) if len(state.early_consumers.get(out, [])) <= 1 else []


def _gemm(i: int, state: _State) -> Group:
    """Gemm + transposed inputs (GemmTransposeFusion) + activation (FusedGemm)."""
    out = state.nodes[i].outputs[0].name
    act = _activation(state, out, GEMM_ACTIVATIONS)
    return Group(i, (*_gemm_transposes(i, out, state), *act))


def _matmul(i: int, state: _State) -> Group:
    node = state.nodes[i]
    out = node.outputs[0].name
    j = state.sole_consumer(out)
    if j is not None and state.nodes[j].op_type == "Add":
        bias = gemm_bias(node, state.nodes[j], out)
        if bias is not None:  # MatMulAddFusion: a Gemm, then as a Gemm
            gemm_out = state.nodes[j].outputs[0].name
            act = _activation(state, gemm_out, GEMM_ACTIVATIONS)
            fused = (*_gemm_transposes(i, gemm_out, state), *act)
            return Group(i, fused, (j,), bias.elems if bias.is_const else 0)
    transposes = _input_transposes(i, state)
    scales: list[int] = []  # MatMulScaleFusion of the output, repeated along a chain
    while (j := state.sole_consumer(out)) is not None and is_scalar_scaling(state.nodes[j], out):
        scales.append(j)
        out = state.nodes[j].outputs[0].name
    # all scalings become one factor alpha on the output: one FLOP per output element
    alpha = scales or i in state.scaled
    alpha_flops = float(node.out_elems) * FLOPS_PER_ELEMENT["scale"] if alpha else 0.0
    return Group(i, tuple(transposes), tuple(scales), 0, alpha_flops)


def _transposed(state: _State, tensor: str, consumer: int) -> int | None:
    """The Transpose (of the last two axes only) producing ``tensor`` for ``consumer``."""
    p = state.producer.get(tensor)
    if p is None or state.nodes[p].op_type != "Transpose" or p in state.claimed:
        return None
    if state.only_reader(tensor) != consumer:
        return None
    return p if swaps_last_axes(state.nodes[p]) else None


def ort_anchor(ort_name: str) -> str:
    """The anchor (op name under ``fuse="ort"``) of a node onnxruntime's optimizer made.

    onnxruntime calls a FusedGemm ``fused <gemm>``, a Gemm made from MatMul + Add
    ``<matmul>/MatMulAddFusion`` and a FusedMatMul
    ``<matmul>/MatmulTransposeFusion//MatMulScaleFusion/``; a FusedConv keeps the conv's
    name. Joins profiled node times of an optimized model with the ops of
    ``load_onnx(original, fuse="ort")``.
    """
    return ort_name.removeprefix("fused ").split("/")[0]


#: onnxruntime's fused kernels (contrib ops): an op running one is ``fused``.
FUSED_KERNELS = frozenset({"FusedConv", "FusedGemm", "FusedMatMul"})


def runs_fused_kernel(group: Group, nodes: Sequence[NodeView]) -> bool:
    """Whether onnxruntime runs ``group`` as one of :data:`FUSED_KERNELS`.

    A Conv or Gemm does when an activation joined it (FusedConv, FusedGemm); folding a
    BatchNormalization or a bias only changes the weights of a plain Conv / Gemm. A
    MatMul does when it took in transposes or scalings (FusedMatMul), unless it became a
    Gemm with its bias Add (then only an activation makes it a FusedGemm). A node that
    already is a fused kernel (an optimized model under ``fuse="none"``) does too.
    """
    types = [nodes[m].op_type for m in (*group.fused, *group.folded)]
    anchor = nodes[group.anchor].op_type
    if anchor in FUSED_KERNELS or any(t in CONV_ACTIVATIONS | GEMM_ACTIVATIONS for t in types):
        return True
    return anchor == "MatMul" and "Add" not in types and bool(types or group.extra_flops)


#: Fusion rule per anchor op type: ``(node index, state) -> Group``.
ANCHOR_RULES: Mapping[str, Callable[[int, _State], Group]] = MappingProxyType(
    {"Conv": _conv, "Gemm": _gemm, "MatMul": _matmul}
)

#: Fusion plans by the ``fuse`` option of :func:`simulator.graph.onnx_import.load_onnx`.
PLANS: Mapping[str, Callable[[Sequence[NodeView], frozenset[str]], Plan]] = MappingProxyType(
    {"ort": plan_ort, "none": plan_none}
)
