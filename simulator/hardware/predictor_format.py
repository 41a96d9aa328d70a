"""Reading and checking a kernel-predictor artifact (docs/predictors.md has the spec).

The artifact is JSON (optionally gzip'd): numbers, strings, lists and objects only.
Reading it parses data and checks it; nothing in it is executed, imported or unpickled.
Every check failure is a :class:`PredictorFormatError` naming the file, the JSON path
of the offending value and what was expected.
"""

from __future__ import annotations

import gzip
import hashlib
import io
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


def read_artifact(path: str | Path, raw: bytes | None = None) -> tuple[dict, str]:
    """The JSON object of the artifact at ``path`` (gzip'd when it starts with gzip's
    magic) and the SHA-256 of its JSON text.

    ``raw``: the file's bytes when the caller has read them already (a scenario-named
    file is read once through :func:`simulator.spec.paths.read_user_file`); ``path``
    then only names it in errors.

    Raises
    ------
    PredictorFormatError
        Unreadable, too large, not JSON, NaN/Infinity literals, duplicate keys, or not an
        object at the top.
    """
    name = str(path)
    try:
        if raw is None:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_ARTIFACT_BYTES + 1)
        if raw[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as handle:
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
    return data, hashlib.sha256(raw).hexdigest()


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
    fixed_s, flop_rate, byte_rate = (
        c.number(base, k, f"{where}.baseline", low=0.0) for k in _BASELINE_KEYS
    )
    if target == "log_ratio" and not (flop_rate > 0 and byte_rate > 0):
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
        fixed_s,
        flop_rate,
        byte_rate,
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
    """Check every tree and concatenate them (children re-based to global indices).

    A leaf has ``left = right = -1``; an internal node's children have larger indices
    than it within its tree (as scikit-learn numbers them), which rules out cycles, and
    every node but a root has exactly one parent. The checks run on all trees at once.
    """
    columns: dict[str, list] = {k: [] for k in TREE_ARRAYS}
    sizes = []
    for t, tree in enumerate(trees):
        if not isinstance(tree, dict):
            raise c.fail(f"{where}[{t}]", f"expected an object with {', '.join(TREE_ARRAYS)}")
        arrays = {k: c.get(tree, k, f"{where}[{t}]", list, "a list") for k in TREE_ARRAYS}
        n = len(arrays["feature"])
        if n == 0 or any(len(a) != n for a in arrays.values()):
            lengths = {k: len(a) for k, a in arrays.items()}
            raise c.fail(f"{where}[{t}]", f"expected arrays of one non-zero length, got {lengths}")
        sizes.append(n)
        for key, values in arrays.items():
            columns[key].extend(values)
    roots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    tree_of = np.repeat(np.arange(len(sizes)), sizes)
    local = np.arange(tree_of.size) - roots[tree_of]

    def at(index: int, key: str) -> str:  # the JSON path of a node's array entry
        t = int(tree_of[index])
        return f"{where}[{t}].{key}[{int(local[index])}]"

    flat = {k: _array(c, columns[k], k, tree_of, local, where) for k in TREE_ARRAYS}
    left, right, feature = flat["left"], flat["right"], flat["feature"]
    leaf = (left == -1) & (right == -1)
    end = (roots + np.asarray(sizes))[tree_of]  # one past the last node of each tree
    own = np.arange(tree_of.size)
    for side, child in (("left", left), ("right", right)):
        bad = ~leaf & ~((child > local) & (child < end - roots[tree_of]))
        if bad.any():
            i = int(np.argmax(bad))
            raise c.fail(
                at(i, side),
                f"expected -1 (leaf, with the other child -1) or a node index in "
                f"({int(local[i])}, {sizes[tree_of[i]]}), got {int(child[i])}",
            )
    bad = ~leaf & ~((feature >= 0) & (feature < n_features))
    if bad.any():
        i = int(np.argmax(bad))
        raise c.fail(
            at(i, "feature"),
            f"expected a feature index in [0, {n_features}), got {int(feature[i])}",
        )
    left = np.where(leaf, own, left + roots[tree_of])
    right = np.where(leaf, own, right + roots[tree_of])
    parents = np.bincount(np.concatenate([left[~leaf], right[~leaf]]), minlength=own.size)
    wrong = np.flatnonzero(parents != (local > 0))
    if wrong.size:
        i = int(wrong[0])
        raise c.fail(
            f"{where}[{int(tree_of[i])}]",
            f"node {int(local[i])} has {int(parents[i])} parents; every node but the root has one",
        )
    depth, frontier = 0, roots
    while True:  # children have larger indices: at most max(sizes) levels
        inner = frontier[~leaf[frontier]]
        if not inner.size:
            break
        frontier = np.concatenate([left[inner], right[inner]])
        depth += 1
    return Forest(
        np.where(leaf, 0, feature).astype(np.intp),
        np.where(leaf, math.inf, flat["threshold"]),
        left.astype(np.intp),
        right.astype(np.intp),
        flat["value"],
        roots,
        depth,
    )


_INTEGER_ARRAYS = ("feature", "left", "right")


def _array(c: _Checker, values: list, key: str, tree_of, local, where: str) -> np.ndarray:
    """All trees' ``key`` arrays as one: integers (feature, left, right) or finite numbers."""
    integer = key in _INTEGER_ARRAYS
    allowed = (int,) if integer else (int, float)
    types = {type(v) for v in values}
    if not types <= set(allowed):
        i = next(j for j, v in enumerate(values) if type(v) not in allowed)
        what = "an integer" if integer else "a number"
        raise c.fail(
            f"{where}[{int(tree_of[i])}].{key}[{int(local[i])}]",
            f"expected {what}, got {values[i]!r:.40}",
        )
    try:
        array = np.array(values, dtype=np.int64 if integer else np.float64)
    except OverflowError:
        raise c.fail(f"{where}[*].{key}", "a value does not fit a 64-bit number") from None
    if not integer and not np.isfinite(array).all():
        i = int(np.argmin(np.isfinite(array)))
        raise c.fail(f"{where}[{int(tree_of[i])}].{key}[{int(local[i])}]", "expected finite")
    return array
