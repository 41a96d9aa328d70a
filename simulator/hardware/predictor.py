"""Learned per-kernel latency predictors (the nn-Meter approach), evaluated in numpy.

A unit may name a predictor artifact (``predictor: {file: host_cpu.predictor.json}``)
that calibration trained on measured kernel times (:mod:`calibration.predictor_fit`).
For an op whose (kind, dtype) the artifact has a model for, and whose features that
model needs (:mod:`simulator.hardware.kernel_features`) the op has, the op's time is::

    t = overhead_s + kernel(op) x S(p, m) / S(p, n)
    kernel(op) = exp(raw)                  target "log_time"
               = baseline(op) x exp(raw)   target "log_ratio"
    baseline(op) = fixed_s + max(flops / flop_rate_per_s, bytes / byte_rate_per_s)
    raw = offset + scale x (sum or mean of the trees' leaf values)

with ``m`` the threads the model was measured at (the artifact's model nearest to the
unit's ``n`` op cores) and ``S`` Amdahl's speedup with the op's parallel fraction
(1 when m = n). The unit's ``dispatch_us`` and ``barrier_us`` are not added: measured
kernel times include the kernel's own launch and barrier, and ``overhead_s`` is the
runtime's per-op cost between kernels. Other ops keep the roofline.

Loading (:func:`load_predictor`) reads JSON and checks it
(:mod:`simulator.hardware.predictor_format`); it executes nothing. When an op's
features lie outside the range the model was trained on, a :class:`PredictorRangeWarning`
says so, once per (kind, feature, side) and artifact; when it has no model for an op's
(kind, dtype), or the model needs a feature the op lacks, a
:class:`PredictorCoverageWarning` says the roofline costs those ops, once per cause and
artifact (at planning: predictions are memoised and the engine never asks for them).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from simulator.errors import SocsimWarning
from simulator.graph.model import Op
from simulator.hardware.kernel_features import op_features
from simulator.hardware.predictor_format import (
    Forest,
    KindModel,
    PredictorFormatError,
    check_artifact,
    read_artifact,
)

__all__ = [
    "KernelPredictor",
    "PredictorCoverageWarning",
    "PredictorFormatError",
    "PredictorRangeWarning",
    "load_predictor",
    "predict_raw",
    "predicted_parts_s",
]

#: Relative slack of the training-range check: measurement tables hold features to 9
#: significant digits (``calibration.table.write_table``), a graph computes them exactly.
RANGE_RTOL = 1e-8
#: Memoised predictions kept per artifact before the memo is cleared.
_MEMO_LIMIT = 200_000


class PredictorRangeWarning(SocsimWarning):
    """A predictor is used outside the feature range its measurements covered."""


class PredictorCoverageWarning(SocsimWarning):
    """A unit's predictor does not cover an op: the roofline costs it instead."""


def predict_raw(forest: Forest, combine: str, offset: float, scale: float, x: np.ndarray):
    """The ensemble's raw output for each row of ``x`` (n_samples x n_features).

    Features are compared as float32 against float64 thresholds, as scikit-learn's trees
    do, and leaf values are accumulated tree by tree in order, so the result equals
    scikit-learn's ``predict`` of the model the artifact was exported from.
    """
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    n_samples, n_features = x.shape
    flat = x.ravel()
    # row offsets into the flattened features, one row of nodes per sample
    base = (np.arange(n_samples) * n_features)[:, None]
    nodes = np.tile(forest.roots, (n_samples, 1))
    for _ in range(forest.depth):
        go_left = flat[base + forest.feature[nodes]] <= forest.threshold[nodes]
        nodes = np.where(go_left, forest.left[nodes], forest.right[nodes])
    leaves = forest.value[nodes]
    if combine == "sum":
        terms = np.concatenate([np.full((x.shape[0], 1), offset), scale * leaves], axis=1)
        return np.cumsum(terms, axis=1)[:, -1]
    total = np.cumsum(leaves, axis=1)[:, -1]
    return offset + scale * (total / leaves.shape[1])


def baseline_s(model: KindModel, flops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """The model's roofline-like baseline time (s) of ops of ``flops`` and ``nbytes``."""
    return model.fixed_s + np.maximum(flops / model.flop_rate_per_s, nbytes / model.byte_rate_per_s)


def kernel_times_s(model: KindModel, x: np.ndarray, flops, nbytes) -> np.ndarray:
    """Predicted kernel times (s) of feature rows ``x`` (and their FLOPs and bytes)."""
    raw = predict_raw(model.forest, model.combine, model.offset, model.scale, x)
    if model.target == "log_time":
        return np.exp(raw)
    return baseline_s(model, np.asarray(flops, float), np.asarray(nbytes, float)) * np.exp(raw)


class KernelPredictor:
    """A loaded, checked predictor artifact (immutable; equal when the content is).

    Parameters
    ----------
    data : Mapping
        The artifact's JSON object.
    source : str
        Where it came from, for messages.
    digest : str, optional
        Identity of the content (equal digests: equal predictors); default: the SHA-256
        of ``data`` as sorted compact JSON.

    Raises
    ------
    PredictorFormatError
        When the artifact is malformed (see :func:`check_artifact`).
    """

    def __init__(
        self, data: Mapping[str, Any], source: str = "<artifact>", digest: str | None = None
    ):
        self.source = source
        self.overhead_s, self.provenance, models = check_artifact(data, source)
        self._models: dict[tuple[str, str], list[KindModel]] = {}
        for model in models:
            self._models.setdefault((model.kind, model.dtype), []).append(model)
        if digest is None:
            text = json.dumps(data, sort_keys=True, separators=(",", ":"))
            digest = hashlib.sha256(text.encode()).hexdigest()
        self.digest = digest
        self._memo: dict[tuple, float | None] = {}
        self._warned: set[tuple] = set()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KernelPredictor) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"KernelPredictor({self.source!r}, models={self.kinds()})"

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_memo": {}, "_warned": set()}

    def kinds(self) -> list[tuple[str, str, int]]:
        """(kind, dtype, threads) of every model, sorted."""
        return sorted((m.kind, m.dtype, m.threads) for ms in self._models.values() for m in ms)

    def model_for(self, op: Op, cores: int) -> KindModel | None:
        """The model that predicts ``op`` on ``cores`` cores: same kind and dtype, threads
        nearest ``cores`` (the fewer on a tie); None when the artifact has none or the op
        lacks a feature the model needs."""
        candidates = self._models.get((op.kind, op.dtype))
        if not candidates:
            return None
        model = min(candidates, key=lambda m: (abs(m.threads - cores), m.threads))
        return model if self._vector(model, op) is not None else None

    @staticmethod
    def _vector(model: KindModel, op: Op) -> np.ndarray | None:
        """The op's feature vector in the model's order, or None when it lacks one."""
        features = op_features(op)
        if not all(name in features for name in model.features):
            return None
        return np.array([features[name] for name in model.features])

    def time_s(self, op: Op, cores: int) -> float | None:
        """Predicted time (s) of ``op`` on a unit whose op runs on ``cores`` cores:
        ``overhead_s + kernel_s``, or None when this predictor does not cover the op
        (the roofline then does)."""
        kernel = self.kernel_s(op, cores)
        return None if kernel is None else self.overhead_s + kernel

    def kernel_s(self, op: Op, cores: int) -> float | None:
        """Predicted kernel time (s) of ``op`` on ``cores`` cores (Amdahl-scaled from the
        model's threads), without ``overhead_s``; None when not covered.

        Memoised per op and cores: planning asks each (op, unit) once or a few times,
        the engine never.
        """
        key = (op, cores)
        try:
            return self._memo[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable attribute value: predict without the memo
            return self._predict(op, cores)
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        value = self._memo[key] = self._predict(op, cores)
        return value

    def _predict(self, op: Op, cores: int) -> float | None:
        candidates = self._models.get((op.kind, op.dtype))
        fix = "give the ops a time table (time_ms) or calibrate a model for them"
        if not candidates:
            covered = ", ".join(sorted({f"{k} {d}" for k, d in self._models}))
            self._warn_once(
                ("uncovered", op.kind, op.dtype),
                f"no model for {op.kind} ops in {op.dtype} (e.g. op '{op.name}'; it has "
                f"models for {covered}): the unit's roofline costs them; {fix}",
                PredictorCoverageWarning,
            )
            return None
        model = min(candidates, key=lambda m: (abs(m.threads - cores), m.threads))
        x = self._vector(model, op)
        if x is None:
            missing = sorted(set(model.features) - set(op_features(op)))
            self._warn_once(
                ("features", op.kind, op.dtype, tuple(missing)),
                f"{op.kind} {op.dtype} model needs feature(s) {', '.join(missing)} that op "
                f"'{op.name}' lacks: the unit's roofline costs such ops; {fix}",
                PredictorCoverageWarning,
            )
            return None
        self._check_range(model, x)
        kernel = float(kernel_times_s(model, x[None, :], [op.flops], [op.bytes_moved])[0])
        if model.threads != cores:
            self._warn_once(
                ("threads", model.kind, model.threads, cores),
                f"{model.kind} model measured at {model.threads} thread(s), unit runs an op "
                f"on {cores} core(s): scaled by Amdahl (p = {op.parallel_fraction})",
            )
            from simulator.hardware.cost import amdahl_speedup  # cost imports this module

            p = op.parallel_fraction
            kernel *= amdahl_speedup(p, model.threads) / amdahl_speedup(p, cores)
        return kernel

    def _check_range(self, model: KindModel, x: np.ndarray) -> None:
        # the training features came through a table of 9 significant digits: a layer
        # the training saw (VGG-19's conv3_2 is VGG-16's) is not outside its own range
        low = model.low - RANGE_RTOL * np.abs(model.low)
        high = model.high + RANGE_RTOL * np.abs(model.high)
        if ((x >= low) & (x <= high)).all():
            return
        for i, (name, value) in enumerate(zip(model.features, x, strict=True)):
            for side, outside in (("below", value < low[i]), ("above", value > high[i])):
                if outside:
                    self._warn_once(
                        (model.kind, model.dtype, name, side),
                        f"{model.kind} {name} = {value:.6g} is {side} the training range "
                        f"[{model.low[i]:.6g}, {model.high[i]:.6g}]: the prediction is "
                        "extrapolated",
                    )

    def _warn_once(
        self, cause: tuple, message: str, category: type[Warning] = PredictorRangeWarning
    ) -> None:
        if cause not in self._warned:
            self._warned.add(cause)
            warnings.warn(f"predictor {self.source}: {message}", category, stacklevel=4)


def predicted_parts_s(
    op: Op, predictor: KernelPredictor, cores: int, compute_s: float, memory_s: float
) -> tuple[float, float, float]:
    """(fixed, compute, memory) seconds of a predicted op, for DVFS stretching.

    ``fixed`` is ``overhead_s``; the kernel time is split in the proportion of the
    unit's roofline ``compute_s : memory_s`` so that ``fixed + max(compute, memory)``
    is the predicted time and DVFS stretches it as much as the roofline would a
    compute-bound op, not at all a memory-bound one (all compute when both are 0).
    """
    kernel = predictor.kernel_s(op, cores)
    if kernel is None:
        raise ValueError(f"the predictor does not cover op '{op.name}'")
    peak = max(compute_s, memory_s)
    if peak == 0:
        return predictor.overhead_s, kernel, 0.0
    return predictor.overhead_s, kernel * (compute_s / peak), kernel * (memory_s / peak)


def load_predictor(path: str | Path, raw: bytes | None = None) -> KernelPredictor:
    """Read and check a predictor artifact (``.json`` or gzip'd ``.json.gz``).

    Parameters
    ----------
    path : str or Path
    raw : bytes, optional
        The file's bytes, already read (then ``path`` only names it).

    Returns
    -------
    KernelPredictor

    Raises
    ------
    PredictorFormatError
        Naming the file, the JSON path and what was expected, when the file is
        unreadable, not JSON, of another format or version, or inconsistent.
    """
    data, digest = read_artifact(path, raw)
    return KernelPredictor(data, str(path), digest)
