"""The limit of a Python event loop on bench/engine.py's workload: a bare heapq simulator.

Same DAG, queue and transfer semantics as the engine over the same compiled plans (an
op waits for its inputs and for the previous op of its request on its unit; a unit
serves one op at a time, smallest (request id, op index) first, and a freed or woken
unit takes its next op at its turn in the schedule, after what completed at that
instant; an on-chip transfer is a delay), with none of the engine's books: no ledger,
no energy, no memory, no DVFS (every op at the plan's top-level duration), no SimPy.
What it costs per op is what any Python loop with these semantics must pay; how far
the engine is from it is printed by ``python bench/engine.py`` on every run.
"""

from __future__ import annotations

import time
from heapq import heappop, heappush
from itertools import count

#: event kinds
_ARRIVE, _WAKE, _DONE, _MOVED = range(4)


def run_heapq(plans: dict, arrivals: list, unit_ids: list) -> tuple[float, int, int, float]:
    """One run; returns (wall s, op tasks, events, makespan s).

    ``plans``: app -> ExecutionPlan (on-chip moves only); ``arrivals``: (time s, app) in
    time order.
    """
    t0 = time.perf_counter()
    heap: list = []
    seq = count()
    queues: dict[str, list] = {uid: [] for uid in unit_ids}
    busy = dict.fromkeys(unit_ids, False)
    waking = dict.fromkeys(unit_ids, False)
    requests = []
    finish = []
    n_ops = 0
    for rid, (t, app) in enumerate(arrivals):
        heappush(heap, (t, next(seq), _ARRIVE, rid, app))

    def ready(t, rid, i, plan):
        uid = plan.units[i]
        heappush(queues[uid], (rid, i, plan.duration_s[i]))
        if not busy[uid] and not waking[uid]:
            waking[uid] = True  # the idle unit starts at its turn, as the engine's does
            heappush(heap, (t, next(seq), _WAKE, uid, None))

    def move(t, rid, m, state):
        delay_s = m.fixed_delay_s
        if delay_s > 0:
            heappush(heap, (t + delay_s, next(seq), _MOVED, rid, m))
        else:
            moved(t, rid, m, state)

    def moved(t, rid, m, state):
        waits, plan = state[0], state[2]
        if m.dst_unit is None:
            state[1] -= 1
            if state[1] == 0:
                finish.append(t)
            return
        for j in m.consumers:
            waits[j] -= 1
            if waits[j] == 0:
                ready(t, rid, j, plan)

    def start_next(t, uid):
        queue = queues[uid]
        if queue:
            rid, i, duration_s = heappop(queue)
            busy[uid] = True
            heappush(heap, (t + duration_s, next(seq), _DONE, uid, (rid, i)))
        else:
            busy[uid] = False

    events = 0
    while heap:
        t, _, kind, a, b = heappop(heap)
        events += 1
        if kind == _DONE:
            rid, i = b
            n_ops += 1
            state = requests[rid]
            plan = state[2]
            waits = state[0]
            for j in plan.local_next[i]:
                waits[j] -= 1
                if waits[j] == 0:
                    ready(t, rid, j, plan)
            for m in plan.moves_out[i]:
                move(t, rid, m, state)
            start_next(t, a)
        elif kind == _WAKE:
            waking[a] = False
            if not busy[a]:
                start_next(t, a)
        elif kind == _MOVED:
            moved(t, a, b, requests[a])
        else:
            plan = plans[b]
            state = [list(plan.waits), plan.n_outputs, plan]
            requests.append(state)
            for m in plan.input_moves:
                move(t, a, m, state)
    wall = time.perf_counter() - t0
    if len(finish) != len(arrivals):
        raise AssertionError(f"heapq loop finished {len(finish)} of {len(arrivals)} requests")
    return wall, n_ops, events, max(finish)
