"""Why a simulated request took longer (or less) than predicted: the gap split by cause.

The prediction is the list-schedule estimate of a lone request
(:func:`~simulator.placement.estimate.estimate`, DVFS units at their governors' levels).
Each completed request of a run is replayed with the same list schedule, substituting
what the run saw one cause at a time (:class:`~simulator.placement.estimate.Observed`);
each cause's share is how much the replayed latency moved when it was substituted, so
the shares telescope and sum exactly to the gap (up to float rounding):

1. ``governor level``: each DVFS op at the level it ran at in the run instead of the
   lone request's (other requests' load raises a windowed governor's level, a thermal
   cap lowers it);
2. ``shared DRAM``: each op's run time with its memory stall (ops of several requests,
   or of one, pulling from their node's DRAM at once);
3. ``links and radios``: each network move's time from leaving its producer to
   arriving (a radio already awake or asleep, another transfer ahead on the link, a
   bandwidth trace, jitter, loss);
4. ``queueing``: what is left, the simulated latency minus the fully substituted
   replay: the time the request's ops waited for units busy with other requests.

The order matters where causes interact (a slower op can hide a later queue); it is the
order above, from the op outward. Also given, ahead of the gap: ``governor, lone
request``, the estimate at the governors' levels minus the estimate at every unit's top
level (what op costs at the top point leave out). Pure: no SimPy.
"""

from __future__ import annotations

import pandas as pd

from simulator.placement.estimate import Observed, estimate
from simulator.placement.plan import ExecutionPlan
from simulator.platform import CostOracle

#: the causes of the gap, in the order they are substituted
CAUSES = ("governor level", "shared DRAM", "links and radios", "queueing")


def _move_times(
    transfers: pd.DataFrame, ran: pd.DataFrame, plan: ExecutionPlan, arrival_s: float
) -> dict:
    """Per network move of one request: from when it left (its producer's end, or the
    request's arrival for the input) to its last hop's ``arrive_s``. Not the first hop's
    ``queued_s``: a download is queued one latency after it left (docs/energy.md)."""
    index = {name: i for i, name in enumerate(plan.ops)}
    hops = transfers[transfers["kind"] == "network"]
    out = {}
    for (src_op, dst_unit), rows in hops.groupby(["src_op", "dst_unit"], sort=False):
        left_s = arrival_s if src_op == "<input>" else float(ran.at[src_op, "end_s"])
        key = (
            None if src_op == "<input>" else index[src_op],
            None if dst_unit.endswith(":<source>") else dst_unit,
        )
        out[key] = float(rows["arrive_s"].max()) - left_s
    return out


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
    rows = ops.set_index("op").loc[list(plan.ops)]
    platform = oracle.platform
    at_level: list[float | None] = []
    for i, (uid, level) in enumerate(zip(plan.units, rows["level"], strict=True)):
        parts = plan.dvfs_parts[i]
        if parts is None or level < 0:
            at_level.append(None)
            continue
        fixed_s, compute_s, memory_s = parts
        table = platform.unit(uid).dvfs
        at_level.append(table.op_time_at_level_s(compute_s, memory_s, fixed_s, int(level)))
    ran_s = tuple(float(t) for t in rows["end_s"] - rows["start_s"])
    levels_s = estimate(plan, oracle, observed=Observed(tuple(at_level))).latency_s
    dram_s = estimate(plan, oracle, observed=Observed(ran_s)).latency_s
    moves = _move_times(transfers, rows, plan, arrival_s)
    links_s = estimate(plan, oracle, observed=Observed(ran_s, moves)).latency_s
    return {
        "governor level": levels_s - predicted_s,
        "shared DRAM": dram_s - levels_s,
        "links and radios": links_s - dram_s,
        "queueing": latency_s - links_s,
    }


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
    sum to ``simulated - predicted``. Requests that fell back, did not complete or were
    served by another replica are left out (they ran another plan or none); with none
    left the table is empty.
    """
    top_s = estimate(plan, oracle, levels="top").latency_s
    predicted_s = estimate(plan, oracle).latency_s
    mine = requests[(requests["app"] == app) & (requests["status"] == "completed")]
    if "fell_back" in mine:
        mine = mine[~mine["fell_back"].astype(bool)]
    if "replica" in mine:  # the app's first placement: ``plan``
        mine = mine[mine["replica"] == 0]
    columns = ["cause", "ms"]
    if mine.empty:
        return pd.DataFrame(columns=columns)
    ops_by = dict(tuple(ops[ops["app"] == app].groupby("request_id", sort=False)))
    app_moves = transfers[transfers["app"] == app]
    moves_by = dict(tuple(app_moves.groupby("request_id", sort=False)))
    empty = transfers.iloc[0:0]
    totals = dict.fromkeys(CAUSES, 0.0)
    columns_used = zip(mine["request_id"], mine["latency_s"], mine["arrival_s"], strict=True)
    for rid, latency_s, arrival_s in columns_used:
        shares = request_shares(
            plan,
            oracle,
            predicted_s,
            float(latency_s),
            float(arrival_s),
            ops_by[rid],
            moves_by.get(rid, empty),
        )
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
    return pd.DataFrame(rows, columns=columns)
