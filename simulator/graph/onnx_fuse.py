"""Which ONNX nodes run as one kernel: the fusion plans of the importer.

``fuse="none"`` keeps one op per node. ``fuse="ort"`` groups nodes the way
onnxruntime's graph optimizer does at ``ORT_ENABLE_EXTENDED`` on the CPU execution
provider (checked against the optimized model the installed onnxruntime, 1.32 when
written, saves; see ``tests/graph/test_onnx_fusion.py``):

- constant folding: a node whose inputs are all constant (or a ``Shape`` of a tensor
  of static shape) is computed at load and is no op;
- ``Identity`` / ``Dropout`` are removed (unless they produce a graph output);
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
graph output, as onnxruntime requires. A group is named after its anchor (the Conv,
Gemm or MatMul) and has its kind; fused activations add their FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from simulator.graph.layers import FLOPS_PER_ELEMENT
from simulator.graph.onnx_view import NodeView, TensorView

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
    users = _consumers(nodes, set())
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
    _drop_relu_before_clip(nodes, dropped, aliases, graph_outputs)
    rewired: dict[int, dict[str, str]] = {}
    early = _consumers([_through(n, aliases) for n in nodes], dropped)
    scaled = _drop_input_scales(nodes, dropped, aliases, graph_outputs, rewired)
    for name in aliases:  # a removed node may have read another removed node's output
        while aliases[name] in aliases:
            aliases[name] = aliases[aliases[name]]
    nodes = [  # rules see removed nodes bypassed
        _through(node, {**aliases, **{k: aliases.get(v, v) for k, v in rewired.get(i, {}).items()}})
        for i, node in enumerate(nodes)
    ]
    consumers = _consumers(nodes, dropped)
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


def _consumers(nodes: Sequence[NodeView], dropped: set[int]) -> dict[str, list[int]]:
    """Tensor -> the nodes reading it (once per use), removed nodes left out."""
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        if i not in dropped:
            for t in node.inputs:
                if t.name:
                    consumers.setdefault(t.name, []).append(i)
    return consumers


def _drop_relu_before_clip(
    nodes: Sequence[NodeView],
    dropped: set[int],
    aliases: dict[str, str],
    graph_outputs: frozenset[str],
) -> None:
    """Relu -> Clip: onnxruntime removes the Relu (ReluClipFusion raises Clip's min to 0),
    repeatedly, so a chain of Relus before a Clip all go."""
    changed = True
    while changed:
        changed = False
        consumers = _consumers([_through(n, aliases) for n in nodes], dropped)
        for i, node in enumerate(nodes):
            out = node.outputs[0].name if node.outputs else ""
            users = consumers.get(out, [])
            if (
                node.op_type == "Relu"
                and i not in dropped
                and out not in graph_outputs
                and len(users) == 1
                and nodes[users[0]].op_type == "Clip"
                and all(t.is_const for t in nodes[users[0]].inputs[1:2] if t.name)  # min known
            ):
                dropped.add(i)
                aliases[out] = aliases.get(node.inputs[0].name, node.inputs[0].name)
                changed = True
                break  # the consumers changed


def _drop_input_scales(
    nodes: Sequence[NodeView],
    dropped: set[int],
    aliases: dict[str, str],
    graph_outputs: frozenset[str],
    rewired: dict[int, dict[str, str]],
) -> set[int]:
    """MatMulScaleFusion of inputs: a MatMul (directly or through a Transpose it takes in)
    reading a Mul / Div by a constant scalar reads its input instead and takes the factor
    into its ``alpha`` (``rewired``: node -> {tensor: tensor read instead}); the scaling
    is removed when no other node reads it. Returns those MatMuls. A scaling of a
    MatMul's output stays with that MatMul (:func:`_matmul`); MatMuls becoming Gemms take
    none.
    """
    viewed = [_through(n, aliases) for n in nodes]
    readers = _consumers(viewed, dropped)
    producer = {o.name: i for i, n in enumerate(viewed) if i not in dropped for o in n.outputs}

    def sole(tensor: str) -> int | None:
        users = readers.get(tensor, [])
        return users[0] if len(users) == 1 and tensor not in graph_outputs else None

    def plain_matmul(j: int) -> bool:
        if viewed[j].op_type != "MatMul":
            return False
        add = sole(viewed[j].outputs[0].name)
        out = viewed[j].outputs[0].name
        return not (
            add is not None
            and viewed[add].op_type == "Add"
            and _gemm_bias(viewed[j], viewed[add], out) is not None
        )

    def matmul_of(k: int) -> int | None:
        if plain_matmul(k):
            return k
        if viewed[k].op_type == "Transpose" and _swaps_last_axes(viewed[k]):
            users = set(readers.get(viewed[k].outputs[0].name, []))
            if len(users) == 1 and plain_matmul(m := users.pop()):
                return m
        return None

    scaled: set[int] = set()
    changed = True
    while changed:  # onnxruntime repeats the pass: a chain of scalings merges one by one
        changed = False
        for i, node in enumerate(viewed):
            if i in dropped or not node.outputs or node.outputs[0].name in graph_outputs:
                continue
            x, out = _scaled_input(node), node.outputs[0].name
            shape = next((t.shape for t in node.inputs if t.name == x), None)
            if not shape or not _scales(node, x):
                continue
            p = producer.get(x)
            if p is not None and plain_matmul(p) and sole(x) == i:
                continue  # the output scaling of that MatMul
            takers = [k for k in dict.fromkeys(readers.get(out, [])) if matmul_of(k) is not None]
            if not takers:
                continue
            for k in takers:
                rewired.setdefault(k, {})[out] = x
                scaled.add(matmul_of(k))  # type: ignore[arg-type]
                moved = [r for r in readers[out] if r == k]
                readers[out] = [r for r in readers[out] if r != k]
                readers.setdefault(x, []).extend(moved)
            if not readers[out]:  # nobody else reads the scaling: it is gone
                dropped.add(i)
                aliases[out] = x
                readers[x] = [r for r in readers[x] if r != i]
            changed = True
    return scaled


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


def _gemm_bias(node: NodeView, add: NodeView, out: str) -> TensorView | None:
    """The bias ``add`` adds to MatMul ``node``'s output, when Gemm can take it as C:
    shape ``(N,)``, or for a 2-D A also ``(1, N)``, ``(M, 1)`` or ``(M, N)``."""
    a, b = node.inputs[0].shape or (), node.inputs[1].shape or ()
    bias = next((t for t in add.inputs if t.name == _other_input(add, out)), None)
    if bias is None or len(b) != 2 or len(a) < 2:
        return None
    m, n = a[0], b[1]
    valid = [(n,)] + ([(1, n), (m, 1), (m, n)] if len(a) == 2 else [])
    return bias if bias.shape in valid else None


def _matmul(i: int, state: _State) -> Group:
    node = state.nodes[i]
    out = node.outputs[0].name
    j = state.sole_consumer(out)
    if j is not None and state.nodes[j].op_type == "Add":
        bias = _gemm_bias(node, state.nodes[j], out)
        if bias is not None:  # MatMulAddFusion: a Gemm, then as a Gemm
            gemm_out = state.nodes[j].outputs[0].name
            act = _activation(state, gemm_out, GEMM_ACTIVATIONS)
            fused = (*_gemm_transposes(i, gemm_out, state), *act)
            return Group(i, fused, (j,), bias.elems if bias.is_const else 0)
    fused = _input_transposes(i, state)
    scales: list[int] = []  # MatMulScaleFusion of the output, repeated along a chain
    while (j := state.sole_consumer(out)) is not None and _scales(state.nodes[j], out):
        scales.append(j)
        out = state.nodes[j].outputs[0].name
    # all scalings become one factor alpha on the output: one FLOP per output element
    alpha = scales or i in state.scaled
    alpha_flops = float(node.out_elems) * FLOPS_PER_ELEMENT["scale"] if alpha else 0.0
    return Group(i, tuple(fused), tuple(scales), 0, alpha_flops)


def _scaled_input(node: NodeView) -> str:
    """The non-constant operand of a Mul / Div (its first input for anything else)."""
    names = [t.name for t in node.inputs if not t.is_const]
    return names[0] if len(names) == 1 else node.inputs[0].name


def _scales(node: NodeView, tensor: str) -> bool:
    """``node`` multiplies ``tensor`` by, or divides it by, a constant scalar."""
    if node.op_type not in ("Mul", "Div"):
        return False
    scale = _other_input(node, tensor)
    view = next((t for t in node.inputs if t.name == scale), None)
    divides_by = node.op_type == "Mul" or node.inputs[1].name == scale
    return view is not None and view.is_const and view.elems == 1 and divides_by


def _transposed(state: _State, tensor: str, consumer: int) -> int | None:
    """The Transpose (of the last two axes only) producing ``tensor`` for ``consumer``."""
    p = state.producer.get(tensor)
    if p is None or state.nodes[p].op_type != "Transpose" or p in state.claimed:
        return None
    if state.only_reader(tensor) != consumer:
        return None
    return p if _swaps_last_axes(state.nodes[p]) else None


def _swaps_last_axes(node: NodeView) -> bool:
    """A Transpose of the last two axes only (what MatMul's transA / transB express)."""
    perm = list(node.attr("perm") or [])
    rank = len(perm)
    return rank >= 2 and perm == [*range(rank - 2), rank - 1, rank - 2]


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
