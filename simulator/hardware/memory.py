"""The memory hierarchy of a compute unit: cache levels, and where an op's bytes come from.

Pure functions of sizes and rates (no ops, no units), so the rules are stated and tested
once. The rules (docs/cost-model.md, "Memory hierarchy")::

    A = input bytes + output bytes          (the op's activations)
    W = weight bytes as streamed            (dense when a dense kernel runs a pruned op)
    level(A)     = innermost level with size >= A,      else DRAM
    level(A + W) = innermost level with size >= A + W,  else DRAM
    activations are served from level(A); weights from level(A + W)
    memory time = max over levels L of bytes(L) / bandwidth(L)   (a roofline per level)

The activations come first: the input was just written by the producer and the output
is read next by the consumer, so they sit in the innermost level that holds them. The
weights stay resident between executions only where they fit *beside* the activations;
an FC whose weights exceed the last-level cache streams them from DRAM.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from simulator.errors import SocsimError

#: The name of the outermost level (the unit's ``memory_bandwidth_bytes_per_s``).
DRAM = "dram"


@dataclass(frozen=True)
class CacheLevel:
    """One cache level as a unit sees it.

    Attributes
    ----------
    name : str
        Unique in the unit's hierarchy (``l1``, ``l2``, ``slc``); not ``dram``.
    size_bytes : float
        Capacity (B) available to one op on the unit.
    bandwidth_bytes_per_s : float
        Streaming rate (B/s) of the unit from this level.
    shared : bool
        Declared by the node (``nodes.<n>.caches``) and seen by all its units after
        their own levels.
    """

    name: str
    size_bytes: float
    bandwidth_bytes_per_s: float
    shared: bool = False

    def __post_init__(self) -> None:
        if not self.name or self.name == DRAM:
            raise SocsimError(f"a cache level needs a name other than '{DRAM}', got '{self.name}'")
        for label, value in (
            ("size", self.size_bytes),
            ("bandwidth", self.bandwidth_bytes_per_s),
        ):
            if not (math.isfinite(value) and value > 0):
                raise SocsimError(
                    f"cache '{self.name}': {label} must be finite and > 0, got {value}"
                )


def check_hierarchy(levels: Sequence[CacheLevel], dram_bytes_per_s: float) -> None:
    """Check ``levels`` (innermost first) in front of DRAM at ``dram_bytes_per_s``.

    Sizes must grow outward and bandwidths must not: every level at least as fast as the
    next one out and as DRAM (so serving bytes from a cache never costs more than from
    further out, and adding a level never slows an op).

    Raises
    ------
    SocsimError
        Naming the offending level and the rule.
    """
    if not levels:
        return
    if not math.isfinite(dram_bytes_per_s):
        raise SocsimError(
            "caches need a finite DRAM rate: give memory_bandwidth_gb_s (the DRAM streaming "
            "bandwidth) next to them"
        )
    names = [level.name for level in levels]
    if len(set(names)) != len(names):
        raise SocsimError(f"cache level names must be unique, got {names}")
    for inner, outer in itertools.pairwise(levels):
        if not outer.size_bytes > inner.size_bytes:
            raise SocsimError(
                f"cache '{outer.name}' ({outer.size_bytes / 1024:g} KiB) must be larger than "
                f"'{inner.name}' ({inner.size_bytes / 1024:g} KiB) inside it: levels go "
                "innermost first"
            )
        if outer.bandwidth_bytes_per_s > inner.bandwidth_bytes_per_s:
            raise SocsimError(
                f"cache '{outer.name}' ({outer.bandwidth_bytes_per_s / 1e9:g} GB/s) must not be "
                f"faster than '{inner.name}' ({inner.bandwidth_bytes_per_s / 1e9:g} GB/s) inside it"
            )
    last = levels[-1]
    if last.bandwidth_bytes_per_s < dram_bytes_per_s:
        raise SocsimError(
            f"cache '{last.name}' ({last.bandwidth_bytes_per_s / 1e9:g} GB/s) must not be slower "
            f"than DRAM (memory_bandwidth_gb_s {dram_bytes_per_s / 1e9:g})"
        )


def resolve(own: Sequence[CacheLevel], shared: Sequence[CacheLevel]) -> tuple[CacheLevel, ...]:
    """A unit's hierarchy: its own levels, then how it sees its node's shared ones.

    A unit reads an outer level through its own inner ones, so it sees a shared level at
    ``min(the level's bandwidth, the bandwidth of the unit's level inside it)``; a shared
    level no larger than the unit's last level adds nothing (inclusive caches) and is
    left out for that unit. Idempotent: a unit's earlier shared levels are replaced.
    """
    levels = [level for level in own if not level.shared]
    for level in shared:
        if levels and level.size_bytes <= levels[-1].size_bytes:
            continue
        rate = level.bandwidth_bytes_per_s
        if levels:
            rate = min(rate, levels[-1].bandwidth_bytes_per_s)
        levels.append(CacheLevel(level.name, level.size_bytes, rate, shared=True))
    return tuple(levels)


@dataclass(frozen=True)
class LevelTraffic:
    """Bytes an op moves at one level, and that level's bandwidth (B, B/s)."""

    level: str
    nbytes: float
    bandwidth_bytes_per_s: float

    @property
    def time_s(self) -> float:
        """``nbytes / bandwidth`` (0 at an unlimited bandwidth)."""
        if math.isinf(self.bandwidth_bytes_per_s):
            return 0.0
        return self.nbytes / self.bandwidth_bytes_per_s


def serving_level(working_set_bytes: float, levels: Sequence[CacheLevel]) -> int:
    """Index of the innermost level holding ``working_set_bytes``; ``len(levels)`` = DRAM."""
    for i, level in enumerate(levels):
        if working_set_bytes <= level.size_bytes:
            return i
    return len(levels)


def level_traffic(
    activation_bytes: float,
    weight_bytes: float,
    levels: Sequence[CacheLevel],
    dram_bytes_per_s: float,
) -> tuple[LevelTraffic, ...]:
    """Bytes served at every level (innermost first, DRAM last) under the module's rules.

    Every level appears (0 B where nothing is served); the bytes sum to
    ``activation_bytes + weight_bytes``.
    """
    served = [0.0] * (len(levels) + 1)
    served[serving_level(activation_bytes, levels)] += activation_bytes
    served[serving_level(activation_bytes + weight_bytes, levels)] += weight_bytes
    rates = [level.bandwidth_bytes_per_s for level in levels] + [dram_bytes_per_s]
    names = [level.name for level in levels] + [DRAM]
    return tuple(LevelTraffic(*row) for row in zip(names, served, rates, strict=True))


def hierarchy_time_s(traffic: Sequence[LevelTraffic]) -> float:
    """Memory time (s): the slowest level, ``max over L of bytes(L) / bandwidth(L)``.

    Levels stream concurrently (prefetchers and out-of-order cores overlap them), so the
    op waits for the most loaded one — the hierarchical roofline.
    """
    return max(t.time_s for t in traffic)
