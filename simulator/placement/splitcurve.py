"""The estimate of every prefix cut at once, bit for bit what each cut's plan gives.

``split_point`` weighs every cut ``k`` (``ops[:k]`` on the device unit D, the rest on
the remote unit R). Compiling and estimating each cut's plan costs O(n) per cut, O(n²)
in all. Here one pass over the ops in order fills, for all cuts together, the quantities
:func:`~simulator.placement.estimate.estimate` computes, with the same float operations
in the same order per cut, so every figure is bit-identical:

* D runs ``ops[:k]`` one after the other whatever k is, so their times are scalars;
* R's timeline, the op-energy sums, the radio energy and the finish time depend on k:
  they are numpy vectors over the cuts, one element per cut, updated op by op (an
  element sees exactly the additions and maxima its own plan would, in the same order);
* the tensor a D op sends to R holds its largest edge to an op still remote under cut
  k, so its size, arrival and radio energy are tabulated per cut.

It is O(n) Python steps; the float work stays O(n²) element operations, vectorised,
because a float sum cannot be shifted to a different starting value without changing
its rounding (an exact O(n) recurrence would change the low bits of the curve).

D's DVFS governor, if it has one, is replayed along D's timeline as the estimate does
(:class:`~simulator.placement.levelreplay.LevelReplay`): that timeline is the same for every
cut, so D's levels are scalars too.

Valid when the estimate is stateless, which :func:`prefix_cut_estimates` checks (None
otherwise, and ``split_point`` evaluates each cut's plan): no stateful radio on the
routes used (promotions and tails make an arrival depend on earlier transfers), on R no
DVFS governor whose level depends on history (it would depend on the cut), no edge with
an explicit ``comm_s`` (it moves alone), non-negative durations (so R's last op ends
last), and a left-to-right float ``sum`` (Python before 3.12).
"""

from __future__ import annotations

import numpy as np

from simulator.errors import SocsimError
from simulator.graph.model import ModelGraph
from simulator.hardware.cost import op_time_parts_s
from simulator.hardware.dvfs_state import constant_level
from simulator.placement.estimate import Estimate
from simulator.placement.levelreplay import LevelReplay
from simulator.placement.plan import Move
from simulator.placement.transfers import arrival_s, radio_energy_j
from simulator.platform import CostOracle, Transfer

#: ``sum`` of floats folds left to right (Python 3.12 made it compensated)
SEQUENTIAL_SUM = sum([1.0, 1e100, 1.0, -1e100]) == 0.0


def node_transfer(oracle: CostOracle, src_node: str, dst_node: str) -> Transfer:
    """How the request input or an output moves between two nodes (as plans do)."""
    hops = oracle.route(src_node, dst_node)
    return Transfer("network" if hops else "local", hops=hops)


def _stateful(transfer: Transfer, oracle: CostOracle) -> bool:
    links = oracle.platform.network.links
    return any(
        (radio := links[hop.link].radio) is not None and radio.stateful for hop in transfer.hops
    )


def _times(oracle: CostOracle, ops, uid: str, indices) -> tuple[dict, dict] | None:
    """(durations, energies) of ``ops[i]`` on ``uid`` for i in ``indices``; None if a
    duration is negative or NaN (the fast path needs a unit's ends in order), or if the
    unit's DVFS level depends on its history (see :func:`constant_level`)."""
    unit = oracle.platform.unit(uid)
    replay = None
    if unit.dvfs is not None:
        if constant_level(unit) is None:
            return None
        replay = LevelReplay(oracle.platform)  # no window: the start time is not read
    share = unit.op_cores / unit.cores
    time_s, energy_j = {}, {}
    for i in indices:
        if replay is None:
            time_s[i] = oracle.op_time_s(ops[i], uid)
            energy_j[i] = oracle.op_energy_j(ops[i], uid)
        else:
            parts = op_time_parts_s(ops[i], unit, uid)
            _, time_s[i], energy_j[i] = replay.run(uid, 0.0, parts, share)
        if not time_s[i] >= 0:
            return None
    return time_s, energy_j


def prefix_cut_estimates(
    graph: ModelGraph,
    oracle: CostOracle,
    source: str,
    device: str,
    remote: str,
    lo: int,
    hi: int,
) -> list[Estimate] | None:
    """Estimates of the cuts ``k = lo..hi`` (``ops[:k]`` on ``device``), or None.

    Each equals ``estimate(compile_plan(graph, cut_k, oracle), oracle)`` in every field
    but ``start_s`` and ``end_s`` (left empty). None when the fast path does not apply
    (see the module docstring). ``lo..hi`` must be cuts both units can run.
    """
    if not SEQUENTIAL_SUM or lo > hi:
        return None
    names = graph.order
    n = len(names)
    index = {name: i for i, name in enumerate(names)}
    ops = [graph.op(name) for name in names]
    succs: list[list[tuple[int, int]]] = []
    for name in names:
        row = []
        for dst in graph.successors(name):
            edge = graph.edge(name, dst)
            if edge.comm_s is not None:
                return None
            row.append((index[dst], edge.bytes))
        succs.append(row)
    node_d = oracle.platform.node_of(device).name
    node_r = oracle.platform.node_of(remote).name
    try:
        cross = oracle.edge_transfer(None, device, remote)
        in_d, in_r = node_transfer(oracle, source, node_d), node_transfer(oracle, source, node_r)
        out_d = node_transfer(oracle, node_d, source)
        out_r = node_transfer(oracle, node_r, source)
    except SocsimError:  # no route: each cut's plan says where, if a cut needs it
        return None
    if any(_stateful(t, oracle) for t in (cross, in_d, in_r, out_d, out_r)):
        return None
    unit_d = oracle.platform.unit(device)
    # D's governor is replayed along D's timeline below (the same for every cut)
    on_d = _times(oracle, ops, device, range(hi)) if unit_d.dvfs is None else ({}, {})
    on_r = _times(oracle, ops, remote, range(lo, n))
    if on_d is None or on_r is None:
        return None
    (dur_d, energy_d), (dur_r, energy_r) = on_d, on_r
    device_role = oracle.platform.node_of(device).role == "device"
    remote_role = oracle.platform.node_of(remote).role == "device"

    size = hi - lo + 1  # element c is cut k = lo + c
    end_r = np.zeros(size)  # end of R's last op so far, per cut
    finish_r = np.zeros(size)  # latest output arrival from R
    finish_d = np.zeros(size)  # latest output arrival from D (a prefix maximum below)
    op_j = np.zeros(size)
    device_j = np.zeros(size)
    radio_j = np.zeros(size)
    sent = np.zeros(size, dtype=np.int64)
    pending: dict[int, tuple[int, np.ndarray]] = {}  # R op -> (first c, arrivals from D)

    # the request input: one move to each unit that runs an entry op, D's first
    nbytes_in = graph.request_input_bytes
    entries = [index[name] for name in graph.entry_ops()]
    is_entry = set(entries)
    move_in_d = Move(None, None, device, nbytes_in, in_d, ())
    move_in_r = Move(None, None, remote, nbytes_in, in_r, ())
    ready_in_d, ready_in_r = arrival_s(move_in_d, 0.0), arrival_s(move_in_r, 0.0)
    first_d = max(entries[0] + 1 - lo, 0)  # cuts that put an entry op on D
    last_r = max(min(entries[-1] - lo, size - 1), -1)  # ... and on R
    for move, part in ((move_in_d, slice(first_d, size)), (move_in_r, slice(0, last_r + 1))):
        energy = radio_energy_j(move, oracle)
        if energy:
            radio_j[part] += energy
        if move.hops:
            sent[part] += nbytes_in

    replay = LevelReplay(oracle.platform) if unit_d.dvfs is not None else None
    share_d = unit_d.op_cores / unit_d.cores
    end_d = 0.0
    for i in range(n):
        op = ops[i]
        exit_op = not succs[i]
        if i < hi:  # on D for the cuts k > i
            c0 = max(i + 1 - lo, 0)
            ready = end_d
            if i in is_entry and ready_in_d > ready:
                ready = ready_in_d
            if replay is None:
                duration_s, energy = dur_d[i], energy_d[i]
            else:  # the plan's dvfs parts: the same call on the same op and unit
                parts = op_time_parts_s(op, unit_d, device)
                _, duration_s, energy = replay.run(device, ready, parts, share_d)
            end_d = ready + duration_s
            op_j[c0:] += energy
            if device_role:
                device_j[c0:] += energy
            if exit_op:
                move = Move(i, device, None, op.output_bytes, out_d, ())
                finish_d[c0] = max(finish_d[c0], arrival_s(move, end_d))
                energy = radio_energy_j(move, oracle)
                if energy:
                    radio_j[c0:] += energy
                if move.hops:
                    sent[c0:] += op.output_bytes
            else:
                _send(i, end_d, succs[i], device, remote, cross, lo, hi, oracle, pending)
                _account(i, succs[i], cross, lo, hi, oracle, radio_j, sent)
        if i >= lo:  # on R for the cuts k <= i
            m = min(i, hi) - lo + 1
            if i <= hi:
                end_r[m - 1] = 0.0  # cut k = i: i is R's first op
            if i in is_entry:
                np.maximum(end_r[:m], ready_in_r, out=end_r[:m])
            if i in pending:
                c, arrivals = pending.pop(i)
                window = end_r[c : c + len(arrivals)]
                np.maximum(window, arrivals, out=window)
            end_r[:m] += dur_r[i]
            op_j[:m] += energy_r[i]
            if remote_role:
                device_j[:m] += energy_r[i]
            if exit_op:
                move = Move(i, remote, None, op.output_bytes, out_r, ())
                arrive = arrival_s(move, end_r[:m].copy())
                np.maximum(finish_r[:m], arrive, out=finish_r[:m])
                energy = radio_energy_j(move, oracle)
                if energy:
                    radio_j[:m] += energy
                if move.hops:
                    sent[:m] += op.output_bytes
    finish = np.maximum(np.maximum.accumulate(finish_d), finish_r)
    return [
        Estimate(
            float(finish[c]),
            (),
            (),
            float(op_j[c]),
            float(device_j[c]),
            float(radio_j[c]),
            int(sent[c]),
        )
        for c in range(size)
    ]


def _crossing(i: int, out: list[tuple[int, int]], lo: int, hi: int):
    """Per cut k in (i, last consumer], the bytes D op i sends R (its largest edge to an
    op >= k): yields (first c, last c + 1, bytes) runs over the cuts in [lo, hi]."""
    by_dst = sorted(out, reverse=True)
    largest = 0
    for pos, (j, nbytes) in enumerate(by_dst):
        largest = max(largest, nbytes)
        below = by_dst[pos + 1][0] if pos + 1 < len(by_dst) else i
        first, last = max(below + 1, lo), min(j, hi)  # cuts k in (below, j]
        if first <= last:
            yield first - lo, last - lo + 1, largest


def _send(i, end_d, out, device, remote, cross, lo, hi, oracle, pending) -> None:
    """Arrivals of D op i's output at each R consumer, per cut that splits them."""
    last = min(max(j for j, _ in out), hi)
    if last < max(i + 1, lo):
        return
    base = max(i + 1, lo) - lo
    arrivals = np.empty(last - lo + 1 - base)
    for c0, c1, nbytes in _crossing(i, out, lo, hi):
        move = Move(i, device, remote, nbytes, cross, ())
        arrivals[c0 - base : c1 - base] = arrival_s(move, end_d)
    for j, _ in out:
        if j < lo:
            continue
        # op j is remote for the cuts k <= j
        top = min(j, hi) - lo + 1
        if top <= base:
            continue
        mine = arrivals[: top - base]
        if j in pending:
            c, have = pending[j]
            if c > base:  # widen to start at base
                wider = np.zeros(len(have) + c - base)
                wider[c - base :] = have
                c, have = base, wider
            if len(have) < top - c:
                longer = np.zeros(top - c)
                longer[: len(have)] = have
                have = longer
            part = have[base - c : top - c]
            np.maximum(part, mine, out=part)
            pending[j] = (c, have)
        else:
            pending[j] = (base, mine.copy())


def _account(i, out, cross, lo, hi, oracle, radio_j, sent) -> None:
    """Radio energy and bytes of D op i's move to R, per cut that has one."""
    for c0, c1, nbytes in _crossing(i, out, lo, hi):
        energy = radio_energy_j(Move(i, None, None, nbytes, cross, ()), oracle)
        if energy:
            radio_j[c0:c1] += energy
        if cross.hops:
            sent[c0:c1] += nbytes
