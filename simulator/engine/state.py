"""The engine's per-run records: apps, their replicas, requests and tracked hops.

Plain mutable records the hot path reads and writes (no logic beyond setting up);
:mod:`simulator.engine.run` drives them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import simpy

from simulator.engine.clock import Wakeup
from simulator.engine.dram import DramChannel
from simulator.engine.ledger import Ledger
from simulator.engine.links import Flow, FluidLink
from simulator.engine.medium import MediumPort
from simulator.engine.offload import AdaptiveApp
from simulator.engine.servers import UnitServer
from simulator.engine.tally import UnitTally
from simulator.engine.variation import Stretch
from simulator.hardware.dvfs_state import DvfsState
from simulator.placement.plan import ExecutionPlan, Move
from simulator.scheduling import NO_DEADLINE, Dispatcher
from simulator.workload import WorkloadEntry

if TYPE_CHECKING:  # watch.py reads requests: a run-time import would be circular
    from simulator.engine.watch import UnitPower


class FastMove:
    """A move of ``plan`` run for ``app``, with what the hot path needs precomputed
    (from ``ledger``: the destination's tally and the move's trace code)."""

    __slots__ = ("books", "delay_s", "holder", "move", "tally", "trace_code")

    def __init__(self, move: Move, ledger: Ledger, app: str, plan: ExecutionPlan):
        self.move = move
        #: the op whose buffer the move holds until it has left (:attr:`Move.holder`)
        self.holder = move.holder
        #: the fixed delay (s) of an on-chip or explicit move; None for a network move
        self.delay_s = None if move.hops else move.fixed_delay_s
        self.books = move.transfer.kind != "local"  # whether it books a transfer row
        #: the destination unit's tally (None for an output back at the source)
        self.tally = ledger.tallies[move.dst_unit] if move.dst_unit is not None else None
        #: its trace rows' code (+ k for hop k of a network move)
        self.trace_code = ledger.move_code(app, plan, move)


class InTransit(Wakeup):
    """A tensor moving between two units of a node: on SimPy's schedule until it arrives."""

    __slots__ = ("fast", "request")

    def __init__(self, request: Request, fast: FastMove):
        self.request = request
        self.fast = fast


#: phases of an op in a tracked request (one whose app may time out)
WAITING, RUNNING, DONE = 0, 1, 2


class RadioRates:
    """Tells a link direction's radios its throughput in use (their power follows it)."""

    __slots__ = ("_bps", "_radios")

    def __init__(self, radios):
        self._radios = radios
        self._bps = 0.0

    def __call__(self, total_bps: float) -> None:
        delta, self._bps = total_bps - self._bps, total_bps
        for radio, sending in self._radios:
            radio.flow(delta if sending else 0.0, 0.0 if sending else delta)


class OpStep:
    """One op of a replica with everything its start and end need, looked up once.

    Built when the engine is (:meth:`Engine._replica`): the plan's per-op costs and the
    run's objects of the op's unit (server, DVFS state, DRAM channel, power watch, the
    ledger's tally), for op ``i`` of ``plan`` run for ``app``; ``trace_code`` is the op's
    in the ledger's trace.
    """

    __slots__ = (
        "core_share",
        "dram",
        "dram_bytes",
        "dram_fixed_s",
        "duration_s",
        "dvfs",
        "energy_j",
        "fixed_s",
        "key_tail",
        "level_j",
        "level_s",
        "local_inputs",
        "local_next",
        "moves_out",
        "on_device",
        "output_bytes",
        "plain",
        "server",
        "tally",
        "trace_code",
        "uid",
        "vary",
        "watched",
    )

    def __init__(
        self,
        plan: ExecutionPlan,
        i: int,
        server: UnitServer,
        on_device: bool,
        dvfs: DvfsState | None,
        dram: DramChannel | None,
        watched: UnitPower | None,
        ledger: Ledger,
        app: str,
        trace_code: int,
        vary: Stretch | None = None,
    ):
        self.uid = plan.units[i]
        self.server = server
        self.tally = ledger.tallies[self.uid]  # the ledger's totals of the op's unit
        self.trace_code = trace_code
        #: ``(i,)``: what follows a request's key part in the op's unit-scheduler key
        #: (:func:`~simulator.scheduling.by_request`), built once, not per op run
        self.key_tail = (i,)
        self.on_device = on_device
        self.duration_s = plan.duration_s[i]
        self.energy_j = plan.energy_j[i]
        self.output_bytes = plan.output_bytes[i]
        self.core_share = plan.core_share[i]
        self.local_next = plan.local_next[i]
        self.local_inputs = plan.local_inputs[i]
        self.moves_out = tuple(FastMove(m, ledger, app, plan) for m in plan.moves_out[i])
        parts = plan.dvfs_parts[i]
        #: the unit's DvfsState when the op's time depends on its level, else None
        self.dvfs = dvfs if parts is not None else None
        self.fixed_s = parts[0] if parts is not None else 0.0
        #: per level, the op's time (s) and energy (J): looked up when it starts
        self.level_s: tuple[float, ...] = ()
        self.level_j: tuple[float, ...] = ()
        # computed (and the parts checked) once, not at every start; parts is set whenever
        # dvfs is (the second test only narrows its type)
        if self.dvfs is not None and parts is not None:
            self.level_s, self.level_j = self.dvfs.op_costs(*parts, self.core_share)
        #: the node's DramChannel when the op pulls from it, else None
        self.dram = dram if plan.dram[i] is not None else None
        self.dram_fixed_s, self.dram_bytes = plan.dram[i] or (0.0, 0.0)
        self.watched = watched  # the unit's UnitPower when its node is watched
        #: the op's real time when it varies or a background load slows it, else None
        self.vary = vary
        #: none of the above: it lasts its plan's duration and draws its plan's energy
        self.plain = self.dvfs is None and self.dram is None and watched is None and vary is None


class InBuf:
    """A tensor that arrived on a unit: its consumers there still to read it."""

    __slots__ = ("nbytes", "readers", "tally")

    def __init__(self, readers: int, nbytes: int, tally: UnitTally):
        self.readers = readers  # consumers that have not run yet
        self.nbytes = nbytes
        self.tally = tally  # of the unit whose memory holds it


class HopTrack:
    """A tracked hop of a request whose app may time out: where it is, to undo it."""

    __slots__ = ("channel", "direction", "flow", "radios", "submitted_s")

    def __init__(self, direction, channel: FluidLink | MediumPort, radios, submitted_s: float):
        self.direction = direction  # (link, src node)
        self.channel = channel
        self.radios = radios
        self.submitted_s = submitted_s
        # set once every radio is connected and the flow is on the link
        self.flow: Flow | None = None


class Request:
    __slots__ = (
        "abandoned",
        "app",
        "arrival_s",
        "deadline_at_s",
        "device_energy_j",
        "drop_reason",
        "energy_j",
        "exit",
        "fell_back",
        "finish_s",
        "first_start_s",
        "holders",
        "hops",
        "inbufs",
        "inputs",
        "key_part",
        "levels",
        "outputs_left",
        "phase",
        "plan",
        "priority",
        "ready_s",
        "rep",
        "reserved",
        "rid",
        "rt",
        "steps",
        "stretched_s",
        "waits",
    )

    def __init__(
        self, rid: int, app: App, rep: Replica, arrival_s: float, view: Replica | None = None
    ):
        # ``view``: what the request runs of ``rep`` (an early exit's ops, simulator.engine.exits)
        runs = rep if view is None else view
        plan = runs.plan
        self.rid = rid
        self.app = app
        self.rep = rep
        self.plan = plan
        self.steps = runs.steps
        self.inputs = runs.input_moves
        self.exit: int | None = None  # the index of the exit it takes (models with exits)
        self.arrival_s = arrival_s
        deadline = app.entry.deadline_s
        self.deadline_at_s = arrival_s + deadline if deadline is not None else NO_DEADLINE
        self.priority = app.entry.priority  # what the unit scheduler sees of its app
        #: the key part its ops share (a :func:`~simulator.scheduling.by_request` scheduler's,
        #: set when the dataflow starts it); None: the scheduler is called per op
        self.key_part: tuple | None = None
        # per op, read only while in flight: Dataflow._complete drops them (None) when over
        self.waits = list(plan.waits)
        self.ready_s = [arrival_s] * plan.size
        self.holders = list(runs.holders)
        self.inbufs: list[list[InBuf] | None] = [None] * plan.size
        self.levels: list[int] | None = None  # the level each DVFS op started at
        self.stretched_s: list[float] | None = None  # each varied op's time, set at its start
        self.outputs_left = plan.n_outputs
        self.first_start_s: float | None = None
        self.finish_s: float | None = None
        self.energy_j = 0.0
        self.device_energy_j = 0.0
        self.abandoned = False
        self.fell_back = False
        self.drop_reason = ""
        self.reserved: dict[str, int] | None = None  # memory held in refusing pools
        # only requests whose attempt may be undone (a transfer timeout, a handover that
        # drops, a failure) track their hops and op phases
        tracked = app.tracked
        # insertion-ordered (a set's order follows ids: undoing in it is not reproducible)
        self.hops: dict[HopTrack, None] | None = {} if tracked else None
        self.phase: list[int] | None = [0] * plan.size if tracked else None
        self.rt: Any = None  # a run-time app's decisions (simulator.engine.runtime.RequestState)


@dataclass
class Replica:
    """One placement of an app, with what the hot path needs precomputed."""

    index: int
    plan: ExecutionPlan
    input_moves: tuple[FastMove, ...]
    steps: tuple[OpStep, ...]
    distinct_servers: tuple[UnitServer, ...]
    #: the plan's holders (:attr:`ExecutionPlan.holders`, computed once, not per request)
    holders: tuple[int, ...]
    in_flight: int = 0


@dataclass
class App:
    index: int
    entry: WorkloadEntry
    replicas: tuple[Replica, ...]
    dispatcher: Dispatcher
    adaptive: AdaptiveApp | None = None
    #: online HEFT: ``online(rid, now)`` plans the request and gives its replica
    online: Callable[[int, float], Replica] | None = None
    exits: Any = None  # AppExits (simulator.engine.exits) when its model has exits
    #: its requests track their hops and op phases, to undo an attempt (a transfer
    #: timeout, a handover that drops what is under way, or a unit's failure)
    tracked: bool = False
    issued: int = 0
    unconsumed: int = 0
    waiter: simpy.Event | None = None
    #: a unit of the scenario may fail (its requests' attempts may be undone)
    failures: bool = False
    #: a handover may drop its transfers under way (its requests' attempts may be undone)
    handover_drops: bool = False
