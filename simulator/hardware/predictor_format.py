"""Reading and checking a kernel-predictor artifact (docs/predictors.md has the spec).

The artifact is JSON (optionally gzip'd): numbers, strings, lists and objects only.
Reading it parses data and checks it; nothing in it is executed, imported or unpickled.
Every check failure is a :class:`PredictorFormatError` naming the file, the JSON path
of the offending value and what was expected.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator.errors import SocsimError
from simulator.graph.model import DTYPE_BYTES, OP_KINDS
from simulator.hardware.kernel_features import FEATURES

FORMAT = "socsim-kernel-predictor"
VERSION = 1
#: Largest artifact read, decompressed (B): a guard against a gzip bomb.
MAX_ARTIFACT_BYTES = 64_000_000
TARGETS = ("log_time", "log_ratio")
COMBINES = ("sum", "mean")
TREE_ARRAYS = ("feature", "threshold", "left", "right", "value")


class PredictorFormatError(SocsimError):
    """A predictor artifact is unreadable or malformed.

    Attributes
    ----------
    file : str
        The artifact.
    where : str
        JSON path of the offending value (``models[2].trees[7].left``), '' for the file.
    message : str
        What is wrong and what was expected.
    """

    def __init__(self, file: str, where: str, message: str):
        self.file, self.where, self.message = str(file), where, message
        super().__init__(f"predictor {self.file}: {where + ': ' if where else ''}{message}")

    def __reduce__(self):
        return (type(self), (self.file, self.where, self.message))


@dataclass(frozen=True)
class Forest:
    """One kind's trees, flattened for a vectorised walk.

    Leaves point to themselves (``left = right = own index``, threshold ``+inf``), so
    ``depth`` steps of ``node = left if x[feature] <= threshold else right`` from the
    roots land every tree on its leaf.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int


@dataclass(frozen=True)
class KindModel:
    """The checked model of one (kind, dtype, threads)."""

    kind: str
    dtype: str
    threads: int
    features: tuple[str, ...]
    target: str
    fixed_s: float
    flop_rate_per_s: float
    byte_rate_per_s: float
    combine: str
    offset: float
    scale: float
    forest: Forest
    low: np.ndarray
    high: np.ndarray
    training: Mapping[str, Any]


def read_artifact(path: str | Path) -> dict:
    """The JSON object of the artifact at ``path`` (gzip'd when it starts with gzip's magic).

    Raises
    ------
    PredictorFormatError
        Unreadable, too large, not JSON, NaN/Infinity literals, duplicate keys, or not an
        object at the top.
    """
    name = str(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_ARTIFACT_BYTES + 1)
        if raw[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as handle:
                raw = handle.read(MAX_ARTIFACT_BYTES + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise PredictorFormatError(name, "", f"cannot read: {exc}") from None
    if len(raw) > MAX_ARTIFACT_BYTES:
        raise PredictorFormatError(name, "", f"larger than {MAX_ARTIFACT_BYTES:,} bytes")
    try:
        data = json.loads(raw, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PredictorFormatError(name, "", f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PredictorFormatError(name, "", f"expected a JSON object, got {type(data).__name__}")
    return data


def _no_constant(word: str) -> Any:
    raise ValueError(f"{word} is not a number JSON allows")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key '{key}'")
        out[key] = value
    return out


class _Checker:
    """Typed accessors that raise a PredictorFormatError at a JSON path."""

    def __init__(self, file: str):
        self.file = file

    def fail(self, where: str, message: str) -> PredictorFormatError:
        return PredictorFormatError(self.file, where, message)

    def get(self, obj: Mapping, key: str, where: str, kind: type | tuple, what: str) -> Any:
        if key not in obj:
            raise self.fail(where, f"missing key '{key}' ({what})")
        value = obj[key]
        bad_bool = isinstance(value, bool) and kind is not bool
        if bad_bool or not isinstance(value, kind):
            raise self.fail(f"{where}.{key}".lstrip("."), f"expected {what}, got {value!r:.60}")
        return value

    def number(self, obj: Mapping, key: str, where: str, low: float = -math.inf) -> float:
        value = float(self.get(obj, key, where, (int, float), "a number"))
        if not math.isfinite(value) or value < low:
            raise self.fail(f"{where}.{key}", f"expected a finite number >= {low}, got {value}")
        return value

    def choice(self, obj: Mapping, key: str, where: str, choices: tuple) -> str:
        value = self.get(obj, key, where, str, f"one of {', '.join(map(str, choices))}")
        if value not in choices:
            raise self.fail(
                f"{where}.{key}", f"expected one of {', '.join(choices)}, got {value!r}"
            )
        return value


def check_artifact(data: Mapping, file: str) -> tuple[float, Mapping, tuple[KindModel, ...]]:
    """(overhead_s, provenance, models) of an artifact's JSON object, all checked.

    Raises
    ------
    PredictorFormatError
        Wrong format or version, a missing or mistyped field, an unknown feature, kind or
        dtype, a repeated (kind, dtype, threads), or inconsistent tree arrays.
    """
    c = _Checker(file)
    if data.get("format") != FORMAT:
        raise c.fail("format", f"expected '{FORMAT}', got {data.get('format')!r}")
    if data.get("version") != VERSION:
        raise c.fail("version", f"this socsim reads version {VERSION}, got {data.get('version')!r}")
    defined = c.get(data, "features", "", dict, "an object: feature name -> definition")
    for name in defined:
        if name not in FEATURES:
            raise c.fail(
                f"features.{name}", f"unknown feature; this socsim has {', '.join(FEATURES)}"
            )
    provenance = c.get(data, "provenance", "", dict, "an object: date, host, runtime, ...")
    overhead_s = c.number(data, "overhead_s", "", low=0.0)
    raw_models = c.get(data, "models", "", list, "a list of per-kind models")
    models, seen = [], set()
    for i, raw in enumerate(raw_models):
        where = f"models[{i}]"
        if not isinstance(raw, dict):
            raise c.fail(where, "expected an object")
        model = check_model(raw, defined, file, where)
        key = (model.kind, model.dtype, model.threads)
        if key in seen:
            raise c.fail(where, f"a second model for kind/dtype/threads {key}")
        seen.add(key)
        models.append(model)
    return overhead_s, provenance, tuple(models)


def check_model(
    raw: Mapping, defined: Mapping, file: str = "<artifact>", where: str = "model"
) -> KindModel:
    """One checked entry of an artifact's ``models`` list (``defined``: the artifact's
    feature definitions).

    Raises
    ------
    PredictorFormatError
    """
    c = _Checker(file)
    kind = c.choice(raw, "kind", where, OP_KINDS)
    dtype = c.choice(raw, "dtype", where, tuple(DTYPE_BYTES))
    threads = c.get(raw, "threads", where, int, "an integer >= 1")
    if threads < 1:
        raise c.fail(f"{where}.threads", f"expected an integer >= 1, got {threads}")
    names = c.get(raw, "features", where, list, "a list of feature names")
    for j, name in enumerate(names):
        if name not in defined:
            raise c.fail(
                f"{where}.features[{j}]", f"'{name}' is not defined in the top-level 'features'"
            )
    if not names or len(set(names)) != len(names):
        raise c.fail(f"{where}.features", "expected distinct feature names, at least one")
    target = c.choice(raw, "target", where, TARGETS)
    base = c.get(raw, "baseline", where, dict, "an object: fixed_s, flop/byte rates")
    rates = [c.number(base, k, f"{where}.baseline", low=0.0) for k in _BASELINE_KEYS]
    if target == "log_ratio" and not (rates[1] > 0 and rates[2] > 0):
        raise c.fail(f"{where}.baseline", "a log_ratio target needs flop and byte rates > 0")
    ens = c.get(raw, "ensemble", where, dict, "an object: combine, offset, scale")
    combine = c.choice(ens, "combine", f"{where}.ensemble", COMBINES)
    offset = c.number(ens, "offset", f"{where}.ensemble")
    scale = c.number(ens, "scale", f"{where}.ensemble")
    trees = c.get(raw, "trees", where, list, "a non-empty list of trees")
    if not trees:
        raise c.fail(f"{where}.trees", "expected at least one tree")
    forest = _flatten(c, trees, f"{where}.trees", len(names))
    span = c.get(raw, "range", where, dict, "an object: feature -> [min, max] seen in training")
    low, high = [], []
    for name in names:
        pair = c.get(span, name, f"{where}.range", list, "[min, max]")
        ok = len(pair) == 2 and all(_finite(v) for v in pair) and pair[0] <= pair[1]
        if not ok:
            raise c.fail(f"{where}.range.{name}", f"expected [min, max] finite, got {pair!r:.60}")
        low.append(float(pair[0]))
        high.append(float(pair[1]))
    training = c.get(raw, "training", where, dict, "an object: rows, cross-validated error")
    return KindModel(
        kind,
        dtype,
        threads,
        tuple(names),
        target,
        *rates,
        combine,
        offset,
        scale,
        forest,
        np.array(low),
        np.array(high),
        training,
    )


_BASELINE_KEYS = ("fixed_s", "flop_rate_per_s", "byte_rate_per_s")


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _flatten(c: _Checker, trees: list, where: str, n_features: int) -> Forest:
    """Check every tree and concatenate them (children re-based to global indices)."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in TREE_ARRAYS}
    roots, depth, base = [], 0, 0
    for t, tree in enumerate(trees):
        here = f"{where}[{t}]"
        if not isinstance(tree, dict):
            raise c.fail(here, f"expected an object with {', '.join(TREE_ARRAYS)}")
        arrays = {k: _array(c, tree, k, here) for k in TREE_ARRAYS}
        n = arrays["feature"].size
        if n == 0 or any(a.size != n for a in arrays.values()):
            sizes = {k: a.size for k, a in arrays.items()}
            raise c.fail(here, f"expected arrays of one non-zero length, got {sizes}")
        depth = max(depth, _check_tree(c, arrays, here, n_features))
        leaf = arrays["left"] == -1
        own = np.arange(n)
        roots.append(base)
        parts["feature"].append(np.where(leaf, 0, arrays["feature"]))
        parts["threshold"].append(np.where(leaf, math.inf, arrays["threshold"]))
        parts["left"].append(base + np.where(leaf, own, arrays["left"]))
        parts["right"].append(base + np.where(leaf, own, arrays["right"]))
        parts["value"].append(arrays["value"])
        base += n
    flat = {k: np.concatenate(v) for k, v in parts.items()}
    return Forest(
        flat["feature"].astype(np.intp),
        flat["threshold"].astype(np.float64),
        flat["left"].astype(np.intp),
        flat["right"].astype(np.intp),
        flat["value"].astype(np.float64),
        np.array(roots, dtype=np.intp),
        depth,
    )


_INTEGER_ARRAYS = ("feature", "left", "right")


def _array(c: _Checker, tree: Mapping, key: str, where: str) -> np.ndarray:
    """A tree's array ``key``: integers (feature, left, right) or finite numbers."""
    values = c.get(tree, key, where, list, "a list")
    types = {type(v) for v in values}
    allowed = {int} if key in _INTEGER_ARRAYS else {int, float}
    if not types <= allowed:
        what = "integers" if key in _INTEGER_ARRAYS else "numbers"
        bad = sorted(t.__name__ for t in types - allowed)
        raise c.fail(f"{where}.{key}", f"expected a list of {what}, got {', '.join(bad)} values")
    array = np.array(values, dtype=np.int64 if key in _INTEGER_ARRAYS else np.float64)
    if key not in _INTEGER_ARRAYS and not np.isfinite(array).all():
        raise c.fail(f"{where}.{key}[{int(np.argmin(np.isfinite(array)))}]", "expected finite")
    return array


def _check_tree(c: _Checker, arrays: Mapping[str, np.ndarray], where: str, n_features: int) -> int:
    """Check one tree's arrays; its depth (edges on the longest root-to-leaf path).

    A leaf has ``left = right = -1``; an internal node's children have larger indices
    than it (as scikit-learn numbers them), which rules out cycles, and every node but
    the root has exactly one parent.
    """
    left, right, feature = arrays["left"], arrays["right"], arrays["feature"]
    n = left.size
    own = np.arange(n)
    leaf = (left == -1) & (right == -1)
    for side, child in (("left", left), ("right", right)):
        bad = ~leaf & ~((child > own) & (child < n))
        if bad.any():
            i = int(np.argmax(bad))
            raise c.fail(
                f"{where}.{side}[{i}]",
                f"expected -1 (leaf, with the other child -1) or a node index in "
                f"({i}, {n}), got {int(child[i])}",
            )
    bad = ~leaf & ~((feature >= 0) & (feature < n_features))
    if bad.any():
        i = int(np.argmax(bad))
        raise c.fail(
            f"{where}.feature[{i}]",
            f"expected a feature index in [0, {n_features}), got {int(feature[i])}",
        )
    parents = np.bincount(np.concatenate([left[~leaf], right[~leaf]]), minlength=n)
    wrong = np.flatnonzero(parents != (own > 0))
    if wrong.size:
        node = int(wrong[0])
        raise c.fail(
            where,
            f"node {node} has {int(parents[node])} parents; every node but the root has one",
        )
    depth, frontier = 0, np.array([0])
    while True:  # children have larger indices: at most n levels
        inner = frontier[~leaf[frontier]]
        if not inner.size:
            return depth
        frontier = np.concatenate([left[inner], right[inner]])
        depth += 1
