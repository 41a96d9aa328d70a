"""Running ONNX models with onnxruntime on the host CPU: per-node profiles, end-to-end times.

Sessions are pinned and their optimised graphs saved by :mod:`calibration.ortsession`
(so the nodes ORT runs can be costed one by one). The profile JSON
(Chrome trace format) has one ``Node`` event per kernel per run, named
``<node>_kernel_time`` with ``dur`` in microseconds and ``args.op_name``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from calibration.ortsession import save_optimized_graph, session_options
from calibration.quiet import wait_until_quiet
from calibration.run_budget import MIN_RUNS
from simulator.errors import SocsimError

KERNEL_SUFFIX = "_kernel_time"
US = 1e-6
#: End-to-end clocks (seconds): wall time, or the calling thread's CPU time.
CLOCKS: Mapping[str, Callable[[], float]] = MappingProxyType(
    {"wall": time.perf_counter, "cpu": time.thread_time}
)
#: ORT input type -> numpy dtype of the random feeds.
INPUT_DTYPES: Mapping[str, type] = MappingProxyType(
    {
        "tensor(float)": np.float32,
        "tensor(float16)": np.float16,
        "tensor(int64)": np.int64,
        "tensor(int32)": np.int32,
        "tensor(int8)": np.int8,
        "tensor(uint8)": np.uint8,
    }
)


@dataclass(frozen=True)
class RunSettings:
    """How a model is run.

    Attributes
    ----------
    threads : int
        intra-op threads (1 = one core: least noise, the default).
    warmup : int
        Untimed runs first (allocations, caches, lazy weight packing).
    runs : int
        Timed runs; medians and IQRs are over these.
    rounds : int
        The timed runs are spread over this many interleaved rounds (at most ``runs``).
    clock : str
        End-to-end clock, one of :data:`CLOCKS`: ``wall`` (latency as a user sees it) or
        ``cpu`` (the calling thread's CPU time: leaves out time the thread was preempted
        by other processes on a shared machine; one thread only, since ORT then runs
        every kernel on the calling thread).
    budget_s : float
        Timed seconds per model and session: a model runs ``budget_s / its run time``
        times, at least ``min_runs`` and at most ``runs`` (big networks fewer runs,
        small kernels more). 0: always ``runs``.
    min_runs : int
        Fewest timed runs of a model.
    """

    threads: int = 1
    warmup: int = 3
    runs: int = 20
    rounds: int = 5
    clock: str = "wall"
    budget_s: float = 0.0
    min_runs: int = MIN_RUNS

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise SocsimError(f"unknown clock '{self.clock}'; valid: {', '.join(CLOCKS)}")
        if self.clock == "cpu" and self.threads != 1:
            raise SocsimError("clock 'cpu' times the calling thread only: it needs threads = 1")
        if (
            self.threads < 1
            or self.warmup < 0
            or self.runs < 1
            or self.rounds < 1
            or self.min_runs < 1
            or not self.budget_s >= 0
        ):
            raise SocsimError(
                "run settings need threads >= 1, warmup >= 0, runs >= 1, rounds >= 1, "
                f"min_runs >= 1 and budget_s >= 0; got {self}"
            )
        object.__setattr__(self, "rounds", min(self.rounds, self.runs))
        object.__setattr__(self, "min_runs", min(self.min_runs, self.runs))

    def runs_for(self, run_s: float) -> int:
        """Timed runs of a model whose one run takes ``run_s`` seconds."""
        if not self.budget_s:
            return self.runs
        return int(min(self.runs, max(self.min_runs, round(self.budget_s / max(run_s, 1e-6)))))


@dataclass(frozen=True)
class NodeTimes:
    """Per-run kernel times of one profiled node."""

    node: str
    op_type: str
    shapes: str
    times_s: tuple[float, ...]


@dataclass(frozen=True)
class ModelRun:
    """What one model's measurement produced."""

    nodes: tuple[NodeTimes, ...]
    e2e_s: tuple[float, ...]
    optimized_path: Path
    extra: Mapping[str, str] = field(default_factory=dict)


def feeds(session, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random inputs for every session input (symbolic dims taken as 1)."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for item in session.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in item.shape]
        if item.type not in INPUT_DTYPES:
            raise SocsimError(
                f"input '{item.name}': unsupported type {item.type}; "
                f"supported: {', '.join(INPUT_DTYPES)}"
            )
        out[item.name] = rng.standard_normal(shape).astype(INPUT_DTYPES[item.type])
    return out


def _shape_text(args: Mapping) -> str:
    def one(entries) -> str:
        parts = []
        for entry in entries or []:
            for dims in entry.values():
                parts.append("x".join(str(d) for d in dims))
        return ";".join(parts)

    return f"{one(args.get('input_type_shape'))}->{one(args.get('output_type_shape'))}"


def parse_profile(
    events: list,
    warmup: int = 0,
    source: str = "<profile>",
    untimed: frozenset[int] = frozenset(),
) -> list[NodeTimes]:
    """Kernel times per node from ORT profile events, dropping each node's first ``warmup``
    runs and the runs whose index is in ``untimed`` (re-warming runs between timed ones).

    Nodes keep their first-seen (execution) order.

    Raises
    ------
    SocsimError
        When the events are not a list of trace events or hold no kernel times.
    """
    if not isinstance(events, list):
        raise SocsimError(f"{source}: an ORT profile is a JSON list of trace events")
    seen: dict[str, tuple[str, str, list[float]]] = {}
    for event in events:
        if not isinstance(event, dict) or event.get("cat") != "Node":
            continue
        name = str(event.get("name", ""))
        if not name.endswith(KERNEL_SUFFIX):
            continue
        node = name[: -len(KERNEL_SUFFIX)]
        args = event.get("args", {})
        entry = seen.setdefault(node, (str(args.get("op_name", "")), _shape_text(args), []))
        entry[2].append(float(event["dur"]) * US)
    if not seen:
        raise SocsimError(f"{source}: no '*{KERNEL_SUFFIX}' node events (was profiling on?)")
    out = []
    for node, (op_type, shapes, times) in seen.items():
        kept = tuple(t for i, t in enumerate(times) if i >= warmup and i not in untimed)
        if kept:
            out.append(NodeTimes(node, op_type, shapes, kept))
    return out


def _per_round(runs: int, rounds: int) -> list[int]:
    """``runs`` split over ``rounds`` as evenly as possible (earlier rounds take the rest)."""
    base, rest = divmod(runs, rounds)
    return [base + (1 if i < rest else 0) for i in range(rounds)]


#: A model slower than this (s per run) is timed end to end on its profiled session:
#: profiling's per-kernel bookkeeping is then negligible and a second session would
#: double the measuring time of the biggest networks.
ONE_SESSION_S = 0.05
#: Warm-up runs of such a model (the first run packs the weights, the second is warm).
BIG_WARMUP = 2


def _no_wait() -> float:
    return 0.0


def _open_sessions(
    paths: Mapping[str, Path],
    settings: RunSettings,
    workdir: Path,
    optimized: Mapping[str, Path],
    progress: Callable[[str], None] | None,
) -> dict[str, tuple[Any, ...]]:
    """Every model's sessions, warmed up: name -> (profiled session, plain session or
    None, inputs, optimised graph path, end-to-end times (empty), timed runs per round,
    warm-up runs of the profiled session)."""
    import onnxruntime as ort

    providers = ["CPUExecutionProvider"]
    clock = CLOCKS[settings.clock]
    sessions: dict[str, tuple[Any, ...]] = {}
    for i, (name, path) in enumerate(paths.items()):
        if progress:
            progress(f"loading {name} ({i + 1} of {len(paths)})")
        prefix = str(workdir / f"{Path(path).stem}.profile")
        profiled = ort.InferenceSession(
            str(path), session_options(settings.threads, profile_prefix=prefix), providers=providers
        )
        inputs = feeds(profiled)
        warm: list[float] = []
        while len(warm) < max(settings.warmup, 1):
            begin = clock()
            profiled.run(None, inputs)
            warm.append(clock() - begin)
            if len(warm) >= BIG_WARMUP and min(warm) > ONE_SESSION_S:
                break  # a big network: caches and weight packing are warm after two runs
        run_s = float(np.median(warm[len(warm) // 2 :]))
        plain = None
        if run_s < ONE_SESSION_S:
            plain = ort.InferenceSession(
                str(path), session_options(settings.threads), providers=providers
            )
            for _ in range(settings.warmup):
                plain.run(None, inputs)
        counts = _per_round(settings.runs_for(run_s), settings.rounds)
        sessions[name] = (profiled, plain, inputs, optimized[name], [], counts, len(warm))
    return sessions


def run_models(
    paths: Mapping[str, Path],
    settings: RunSettings,
    workdir: Path,
    progress: Callable[[str], None] | None = None,
    on_round: Callable[[int], None] | None = None,
) -> dict[str, ModelRun]:
    """Profile every model per node and time it end to end, interleaved in rounds.

    ``on_round(r)`` is called at the start of round ``r`` (e.g. to time a reference
    model, :class:`calibration.reference.Reference`).

    Each model gets a profiled session (per-node kernel times) and, unless one run takes
    longer than :data:`ONE_SESSION_S`, a plain one (end-to-end times by
    ``settings.clock``; profiling adds per-kernel bookkeeping). The warm-up runs
    estimate a run's time, which sets the model's timed runs
    (:meth:`RunSettings.runs_for`). The timed runs are spread over ``settings.rounds``
    rounds that visit every model in turn, so a burst of load from other processes
    lands on many models a little instead of on one model entirely.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    clock = CLOCKS[settings.clock]
    optimized = {name: workdir / f"{Path(p).stem}.ort_extended.onnx" for name, p in paths.items()}
    # the optimised graphs are saved on a thread of their own while the sessions open and
    # warm up on one core (nothing is timed yet, but the warm-ups set the run counts: at
    # more threads there is no idle core, so the saves go first), all before round one
    saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="save-graph")
    try:
        saves = [
            saver.submit(save_optimized_graph, Path(p), optimized[name], settings.threads)
            for name, p in paths.items()
        ]
        if settings.threads > 1:
            for save in saves:
                save.result()
        sessions = _open_sessions(paths, settings, workdir, optimized, progress)
        pending = sum(not save.done() for save in saves)
        if pending and progress:
            progress(f"saving the optimised graphs: {len(saves) - pending} of {len(saves)} done")
        for save in saves:
            save.result()  # a failed save raises here, before anything is timed
    finally:
        saver.shutdown(cancel_futures=True)  # after a failure, the saves not begun
    untimed: dict[str, set[int]] = {name: set() for name in sessions}
    # at more threads, each session's workers spin on after its runs: wait them out
    # before timing another session (calibration.quiet)
    settle = wait_until_quiet if settings.threads > 1 else _no_wait
    for r in range(settings.rounds):
        if progress:
            progress(f"round {r + 1} of {settings.rounds}")
        if on_round is not None:
            settle()
            on_round(r)
        for name, (profiled, plain, inputs, _, e2e, counts, warmed) in sessions.items():
            if not counts[r]:
                continue
            settle()
            # one untimed run first: the other models' runs since this model's last visit
            # evicted its weights and activations from the caches, and a user timing a
            # model runs it back to back (a cold first run measured 1.3-2x a warm one)
            runs_so_far = warmed + sum(counts[:r]) + len(untimed[name])
            untimed[name].add(runs_so_far)
            profiled.run(None, inputs)
            for _ in range(counts[r]):
                begin = clock()
                profiled.run(None, inputs)
                if plain is None:
                    e2e.append(clock() - begin)
            if plain is not None:
                settle()
                plain.run(None, inputs)
            for _ in range(counts[r] if plain is not None else 0):
                begin = clock()
                plain.run(None, inputs)
                e2e.append(clock() - begin)
    out = {}
    for name, (profiled, _, _, optimized, e2e, _, warmed) in sessions.items():
        profile_file = Path(profiled.end_profiling())
        events = json.loads(profile_file.read_text())
        profile_file.unlink()
        nodes = parse_profile(events, warmed, str(profile_file), frozenset(untimed[name]))
        out[name] = ModelRun(tuple(nodes), tuple(e2e), optimized)
    return out
