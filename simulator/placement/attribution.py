"""Why a simulated request took longer (or less) than predicted: the gap split by cause.

The prediction is the list-schedule estimate of a lone request
(:func:`~simulator.placement.estimate.estimate`, DVFS units at their governors' levels).
Each completed request of a run is replayed with the same list schedule, substituting
what the run saw one cause at a time (:class:`~simulator.placement.conditions.Observed`);
each cause's share is how much the replayed latency moved when it was substituted, so
the shares telescope and sum exactly to the gap (up to float rounding):

1. ``governor level``: each DVFS op at the level it ran at in the run instead of the
   lone request's (other requests' load raises a windowed governor's level, a thermal
   cap lowers it);
2. ``op time drawn``: each op's run time without its memory stall: the factor its
   unit's execution-time variation drew and a background load's stretch
   (docs/stochastic.md);
3. ``shared DRAM``: each op's run time with its memory stall (ops of several requests,
   or of one, pulling from their node's DRAM at once);
4. ``links and radios``: each network move's time from leaving its producer to
   arriving (a radio already awake or asleep, another transfer ahead on the link, a
   bandwidth trace, jitter, loss);
5. ``queueing``: what is left, the simulated latency minus the fully substituted
   replay: the time the request's ops waited for units busy with other requests.

The order matters where causes interact (a slower op can hide a later queue); it is the
order above, from the op outward. Also given, ahead of the gap: ``governor, lone
request``, the estimate at the governors' levels minus the estimate at every unit's top
level (what op costs at the top point leave out). Pure: no SimPy.
"""

from __future__ import annotations

import pandas as pd

from simulator.graph.exits import FINAL
from simulator.placement.conditions import Observed
from simulator.placement.estimate import estimate
from simulator.placement.exitplan import fixed_exit
from simulator.placement.plan import ExecutionPlan
from simulator.platform import CostOracle

#: the causes of the gap, in the order they are substituted
CAUSES = ("governor level", "op time drawn", "shared DRAM", "links and radios", "queueing")


#: per op name of one request: (level, start_s, end_s, memory_stall_s) as the run's
#: ``ops`` rows say
OpsSeen = dict[str, tuple[int, float, float, float]]
#: per (src_op, dst_unit) of one request's network moves: the last hop's ``arrive_s``
MovesSeen = dict[tuple[str, str], float]


def _by_request(ops: pd.DataFrame, transfers: pd.DataFrame) -> tuple[dict, dict]:
    """The rows of ``ops`` and of the network ``transfers`` per request id, as plain
    dicts (:data:`OpsSeen`, :data:`MovesSeen`): one pass each, no per-request frame."""
    ops_by: dict[int, OpsSeen] = {}
    names = ("request_id", "op", "level", "start_s", "end_s", "memory_stall_s")
    columns = (ops[c].tolist() for c in names)
    for rid, op, level, start_s, end_s, stall_s in zip(*columns, strict=True):
        ops_by.setdefault(rid, {})[op] = (int(level), start_s, end_s, stall_s)
    moves_by: dict[int, MovesSeen] = {}
    hops = transfers[transfers["kind"] == "network"]
    columns = (hops[c].tolist() for c in ("request_id", "src_op", "dst_unit", "arrive_s"))
    for rid, src_op, dst_unit, arrive_s in zip(*columns, strict=True):
        moves = moves_by.setdefault(rid, {})
        key = (src_op, dst_unit)
        moves[key] = max(moves.get(key, arrive_s), arrive_s)
    return ops_by, moves_by


class _Replay:
    """One plan's replays, with the per-(op, level) times computed once."""

    def __init__(self, plan: ExecutionPlan, oracle: CostOracle, predicted_s: float):
        self.plan = plan
        self.oracle = oracle
        self.predicted_s = predicted_s
        self.index = {name: i for i, name in enumerate(plan.ops)}
        self._at_level: dict[tuple[int, int], float] = {}

    def at_level_s(self, i: int, level: int) -> float | None:
        """Op ``i``'s time at ``level`` (None: no DVFS), as the engine computes it."""
        parts = self.plan.dvfs_parts[i]
        if parts is None or level < 0:
            return None
        key = (i, level)
        if key not in self._at_level:
            fixed_s, compute_s, memory_s = parts
            table = self.oracle.platform.unit(self.plan.units[i]).dvfs
            assert table is not None  # an op has DVFS parts only on a unit with a table
            self._at_level[key] = table.op_time_at_level_s(compute_s, memory_s, fixed_s, level)
        return self._at_level[key]

    def shares(
        self, latency_s: float, arrival_s: float, ran: OpsSeen, moves: MovesSeen
    ) -> dict[str, float]:
        plan, oracle, index = self.plan, self.oracle, self.index
        seen = [ran[name] for name in plan.ops]
        at_level = tuple(self.at_level_s(i, level) for i, (level, *_) in enumerate(seen))
        ran_s = tuple(end_s - start_s for _, start_s, end_s, _ in seen)
        # without the DRAM stall: the time the op was given when it started
        drawn = tuple(r - op[3] if op[3] else r for r, op in zip(ran_s, seen, strict=True))
        # a move's time runs from when it left: its producer's end, or the request's
        # arrival for the input; not its first hop's queued_s (a download is queued one
        # latency later, docs/energy.md)
        move_s = {}
        for (src_op, dst_unit), arrive_s in moves.items():
            left_s = arrival_s if src_op == "<input>" else ran[src_op][2]
            key = (
                None if src_op == "<input>" else index[src_op],
                None if dst_unit.endswith(":<source>") else dst_unit,
            )
            move_s[key] = arrive_s - left_s
        levels_s = estimate(plan, oracle, observed=Observed(at_level)).latency_s
        drawn_s = estimate(plan, oracle, observed=Observed(drawn)).latency_s
        dram_s = (
            drawn_s
            if drawn == ran_s
            else estimate(plan, oracle, observed=Observed(ran_s)).latency_s
        )
        links_s = estimate(plan, oracle, observed=Observed(ran_s, move_s)).latency_s
        return {
            "governor level": levels_s - self.predicted_s,
            "op time drawn": drawn_s - levels_s,
            "shared DRAM": dram_s - drawn_s,
            "links and radios": links_s - dram_s,
            "queueing": latency_s - links_s,
        }


def request_shares(
    plan: ExecutionPlan,
    oracle: CostOracle,
    predicted_s: float,
    latency_s: float,
    arrival_s: float,
    ops: pd.DataFrame,
    transfers: pd.DataFrame,
) -> dict[str, float]:
    """The gap ``latency_s - predicted_s`` (s) of one simulated request, by cause.

    Parameters
    ----------
    plan : ExecutionPlan
        The plan the request ran.
    predicted_s : float
        ``estimate(plan, oracle).latency_s``.
    latency_s, arrival_s : float
        The request's simulated latency and arrival time (s).
    ops, transfers : DataFrame
        The request's rows of the run's ``ops`` and ``transfers`` tables (one attempt:
        a request that fell back is not one plan's).

    Returns
    -------
    dict of cause -> s
        Keys :data:`CAUSES`; the values sum to the gap.
    """
    ops_by, moves_by = _by_request(ops, transfers)
    if len(ops_by) != 1:
        raise ValueError(f"request_shares: rows of one request expected, got {len(ops_by)}")
    rid, ran = next(iter(ops_by.items()))
    replay = _Replay(plan, oracle, predicted_s)
    return replay.shares(latency_s, arrival_s, ran, moves_by.get(rid, {}))


def gap_table(
    plan: ExecutionPlan,
    oracle: CostOracle,
    app: str,
    requests: pd.DataFrame,
    ops: pd.DataFrame,
    transfers: pd.DataFrame,
) -> pd.DataFrame:
    """The mean gap of ``app``'s completed requests by cause, as a waterfall.

    Rows: ``top level`` (estimate with every unit at its top point), ``governor, lone
    request`` (to the prediction), ``predicted``, each of :data:`CAUSES`, then
    ``simulated`` (the mean latency of the requests used). Columns ``cause``, ``ms``
    (the share, or the latency on the three total rows). The shares from ``predicted``
    sum to ``simulated - predicted``. Requests that fell back, did not complete, were
    served by another replica or left at an early exit are left out (they ran another
    plan or none); with none left the table is empty.
    """
    top_s = estimate(plan, oracle, levels="top").latency_s
    predicted_s = estimate(plan, oracle).latency_s
    mine = requests[(requests["app"] == app) & (requests["status"] == "completed")]
    if "fell_back" in mine:
        mine = mine[~mine["fell_back"].astype(bool)]
    if "replica" in mine:  # the app's first placement: ``plan``
        mine = mine[mine["replica"] == 0]
    if "exit" in mine:  # early exits: only the requests that ran all of ``plan``
        mine = mine[mine["exit"].isin([fixed_exit(plan) or FINAL, ""])]
    if mine.empty:
        return pd.DataFrame(columns=["cause", "ms"])
    ops_by, moves_by = _by_request(ops[ops["app"] == app], transfers[transfers["app"] == app])
    replay = _Replay(plan, oracle, predicted_s)
    totals = dict.fromkeys(CAUSES, 0.0)
    served = (mine[c].tolist() for c in ("request_id", "latency_s", "arrival_s"))
    for rid, latency_s, arrival_s in zip(*served, strict=True):
        shares = replay.shares(latency_s, arrival_s, ops_by[rid], moves_by.get(rid, {}))
        for cause, share in shares.items():
            totals[cause] += share
    n = len(mine)
    rows = [
        ("top level", top_s * 1e3),
        ("governor, lone request", (predicted_s - top_s) * 1e3),
        ("predicted", predicted_s * 1e3),
        *((cause, totals[cause] / n * 1e3) for cause in CAUSES),
        ("simulated", float(mine["latency_s"].mean()) * 1e3),
    ]
    return pd.DataFrame(rows, columns=["cause", "ms"])
