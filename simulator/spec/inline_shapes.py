"""Shape attributes of inline ops: what the deployment techniques read.

An inline ``conv`` / ``dwconv`` op may declare ``in_channels``, ``out_channels``,
``kernel`` (square), ``groups`` and ``bias``; an ``fc`` op ``in_features``,
``out_features`` and ``bias`` — the keys and meanings of
:class:`~simulator.graph.layers.GraphBuilder`'s ``Op.attrs``. A ``pool`` op may declare
its type (``pool: max`` or ``average``: ``attrs['max']``), which the kernel predictor
reads. Without the shape keys channel
pruning and depthwise-separable substitution cannot act on the op (and say so). They
are checked against the kind (GraphBuilder's rule: a conv with ``groups == in_channels
> 1`` is a ``dwconv``) and against the op's figures: ``params`` defaults to the count
the shape gives and must equal it when written; ``output_elems`` must be whole
channels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.schema import Boolean, Context, Field, Loc, Number, Text

#: Shape keys of a conv / dwconv op, GraphBuilder's names.
CONV_KEYS: tuple[str, ...] = ("in_channels", "out_channels", "kernel", "groups")
#: Shape keys of an fc op.
FC_KEYS: tuple[str, ...] = ("in_features", "out_features")
#: Shape keys by op kind; ``bias`` goes with either.
KEYS_BY_KIND: Mapping[str, tuple[str, ...]] = {
    "conv": CONV_KEYS,
    "dwconv": CONV_KEYS,
    "fc": FC_KEYS,
}
#: The keys every kind needs once it declares a shape (groups has a default).
REQUIRED: Mapping[str, tuple[str, ...]] = {
    "conv": ("in_channels", "out_channels", "kernel"),
    "dwconv": ("in_channels", "out_channels", "kernel"),
    "fc": FC_KEYS,
}

_COUNT = Number(integer=True, ge=1)
#: A pool op's ``pool`` key -> its ``attrs['max']`` (as the ONNX importer marks pools).
POOL_TYPES: tuple[str, ...] = ("max", "average")
#: Schema fields INLINE_OP adds (all optional).
SHAPE_FIELDS: Mapping[str, Field] = {
    "in_channels": Field(_COUNT, default=None, doc="conv / dwconv input channels"),
    "out_channels": Field(_COUNT, default=None, doc="conv / dwconv output channels"),
    "kernel": Field(_COUNT, default=None, doc="conv / dwconv square kernel size k (k x k)"),
    "groups": Field(_COUNT, default=None, doc="conv groups (default 1; dwconv: in_channels)"),
    "in_features": Field(_COUNT, default=None, doc="fc input features"),
    "out_features": Field(_COUNT, default=None, doc="fc output features"),
    "bias": Field(Boolean(), default=None, doc="conv / fc has a bias (default false)"),
    "pool": Field(
        Text(choices=POOL_TYPES, what="pool type"),
        default=None,
        doc="a pool op's type: max (compares) or average (sums); the kernel predictor "
        "reads it (without it a learned model does not predict the op: the roofline does)",
    ),
    "view": Field(
        Boolean(),
        default=False,
        doc="a reshape that aliases its input (costs dispatch only, no activation memory)",
    ),
}

#: What a view may not have: it moves no data and computes nothing (docs/cost-model.md).
_NOT_IN_A_VIEW: tuple[str, ...] = ("flops", "macs", "params", "time_ms")


def shape_attrs(op: dict[str, Any], raw: Mapping[str, Any], loc: Loc, ctx: Context) -> dict | None:
    """Pop the shape keys of the checked op ``op`` and return its ``attrs``.

    Fills ``op['params']`` from the shape when the scenario does not give it. Returns
    ``{}`` when no shape key is given (``{'view': 1}`` for a view), None after reporting a
    problem in ``ctx``.
    """
    view = _view_attrs(op.pop("view", False), op, raw, loc, ctx)
    pooling = _pool_attrs(op.pop("pool", None), op, raw, loc, ctx)
    if view is None or pooling is None:
        return None
    given = {k: op.pop(k) for k in SHAPE_FIELDS if k in op}
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        return {**view, **pooling}
    kind = op["kind"]
    allowed = KEYS_BY_KIND.get(kind)
    if allowed is None:
        key = next(iter(given))
        ctx.problem(loc.child(raw, key), f"shape key '{key}' applies to conv, dwconv and fc ops")
        return None
    for key in given:
        if key not in (*allowed, "bias"):
            ctx.problem(
                loc.child(raw, key),
                f"'{key}' is not a {kind} key; a {kind} declares {', '.join(allowed)}, bias",
            )
            return None
    missing = [k for k in REQUIRED[kind] if k not in given]
    if missing:
        ctx.problem(loc, f"a {kind} with a shape needs {', '.join(missing)} too")
        return None
    attrs = {k: int(given[k]) for k in allowed if k in given}
    attrs["bias"] = int(given.get("bias", False))
    if kind == "fc":
        outputs = attrs["out_features"]
        params = attrs["in_features"] * outputs + attrs["bias"] * outputs
    else:
        if not _conv_groups(attrs, kind, raw, loc, ctx):
            return None
        outputs = attrs["out_channels"]
        per_out = attrs["in_channels"] // attrs["groups"] * attrs["kernel"] ** 2
        params = outputs * (per_out + attrs["bias"])
    return attrs if _figures_agree(op, raw, loc, ctx, params, outputs) else None


def _view_attrs(view: bool, op: dict, raw: Mapping, loc: Loc, ctx: Context) -> dict | None:
    """``{'view': 1}`` for a view (``{}`` for another op), None after reporting why it
    cannot be one: only a ``reshape`` aliases its input (:attr:`Op.is_view`), and a view
    computes nothing, holds no weights and has no tabled time (it costs dispatch only)."""
    if not view:
        return {}
    if not _of_kind(op, "reshape", "view", "only a reshape op can be a view", raw, loc, ctx):
        return None
    for key in _NOT_IN_A_VIEW:
        value = raw.get(key)
        if value:  # 0 / {} / absent: nothing a view cannot have
            ctx.problem(
                loc.child(raw, key),
                f"a view computes nothing and costs dispatch only: it cannot have {key} "
                f"({value!r}); drop {key} or view",
            )
            return None
    return {"view": 1}


def _pool_attrs(pool: str | None, op: dict, raw: Mapping, loc: Loc, ctx: Context) -> dict | None:
    """``{'max': 1}`` for ``pool: max``, ``{'max': 0}`` for ``pool: average`` (``{}``
    without the key), None after reporting that only a pool op has a pool type."""
    if pool is None:
        return {}
    if not _of_kind(op, "pool", "pool", "only a pool op has a pool type", raw, loc, ctx):
        return None
    return {"max": int(pool == "max")}


def _of_kind(
    op: dict, kind: str, key: str, rule: str, raw: Mapping, loc: Loc, ctx: Context
) -> bool:
    """True when ``op`` is of ``kind``; else reports ``rule`` at ``key`` with the fix."""
    if op["kind"] == kind:
        return True
    ctx.problem(
        loc.child(raw, key),
        f"{rule} (this op is a {op['kind']}); set kind: {kind} or drop {key}",
    )
    return False


def _conv_groups(attrs: dict, kind: str, raw: Mapping, loc: Loc, ctx: Context) -> bool:
    """Default ``groups`` by kind and check it divides the channels and fits the kind."""
    c_in, c_out = attrs["in_channels"], attrs["out_channels"]
    groups = attrs.setdefault("groups", c_in if kind == "dwconv" else 1)
    where = loc.child(raw, "groups") if "groups" in raw else loc
    if c_in % groups or c_out % groups:
        ctx.problem(
            where, f"groups {groups} must divide in_channels {c_in} and out_channels {c_out}"
        )
        return False
    depthwise = groups == c_in and groups > 1
    if depthwise != (kind == "dwconv"):
        rule = "groups == in_channels > 1 is a depthwise conv"
        want = "dwconv" if depthwise else "conv"
        ctx.problem(where, f"{rule}: kind must be '{want}' (groups {groups}, in_channels {c_in})")
        return False
    return True


def _figures_agree(
    op: dict, raw: Mapping, loc: Loc, ctx: Context, params: int, outputs: int
) -> bool:
    """``params`` from the shape (filled in or checked); ``output_elems`` whole channels."""
    if "params" not in raw:
        op["params"] = params
    elif op["params"] != params:
        ctx.problem(
            loc.child(raw, "params"),
            f"params {op['params']} disagree with the shape, which gives {params}",
        )
        return False
    if op["output_elems"] % outputs:
        ctx.problem(
            loc.child(raw, "output_elems"),
            f"output_elems {op['output_elems']} is not a whole number of the {outputs} "
            "output channels / features",
        )
        return False
    return True
