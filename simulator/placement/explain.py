"""Readable views of a placement decision: per-op table, cut tensors, DRAM stalls (pure)."""

from __future__ import annotations

import pandas as pd

from simulator.graph.exits import ExitModel, expected
from simulator.graph.model import ModelGraph
from simulator.placement.estimate import estimate
from simulator.placement.exitplan import exit_plans
from simulator.placement.plan import ExecutionPlan
from simulator.placement.transfers import move_time_s
from simulator.platform import CostOracle


def op_table(plan: ExecutionPlan, oracle: CostOracle) -> pd.DataFrame:
    """One row per op: unit, node, the model that costs it (``table``, ``predictor`` or
    ``roofline``), its time at the top DVFS level (``time_s``), and for a lone request
    the level its governor picks (-1: no DVFS) and its predicted start/end (s); with a
    core-pool unit (per-op cores), the cores each op takes (``cores``)."""
    predicted = estimate(plan, oracle)
    table = pd.DataFrame(
        {
            "op": plan.ops,
            "kind": plan.kinds,
            "unit": plan.units,
            "node": [oracle.platform.node_of(u).name for u in plan.units],
            "model": plan.cost_models,
            "time_s": plan.duration_s,
            "level": predicted.levels,
            "start_s": predicted.start_s,
            "end_s": predicted.end_s,
        }
    )
    if plan.op_cores:
        table.insert(3, "cores", plan.op_cores)
    return table


def exit_table(
    graph: ModelGraph, plan: ExecutionPlan, oracle: CostOracle
) -> tuple[pd.DataFrame, float] | None:
    """The exits a request of ``plan`` may draw (a model with early exits whose policy did
    not fix one): per exit its share, top-1 (%) and predicted lone-request latency (s), and
    the expected latency ``Σ share × latency`` (s); None otherwise."""
    plans = exit_plans(graph, plan, oracle)
    if plans is None or not isinstance(graph, ExitModel):
        return None
    latency_s = [estimate(p, oracle).latency_s for p in plans]
    table = pd.DataFrame(
        {
            "exit": graph.exit_names,
            "share": graph.shares,
            "accuracy_top1": graph.accuracies,
            "ops": [p.size for p in plans],
            "latency_s": latency_s,
        }
    )
    return table, expected(latency_s, graph.shares)


def cut_table(plan: ExecutionPlan, oracle: CostOracle) -> pd.DataFrame:
    """One row per tensor that leaves its unit (inputs, cross-unit edges, outputs)."""
    rows = []
    moves = [(None, m) for m in plan.input_moves] + [
        (plan.ops[i], m) for i, out in enumerate(plan.moves_out) for m in out
    ]
    for src_op, move in moves:
        if move.transfer.kind == "local":
            continue
        rows.append(
            {
                "from_op": src_op or "<input>",
                "to_ops": ",".join(plan.ops[j] for j in move.consumers) or "<output>",
                "from": move.src_unit or f"{plan.source} (source)",
                "to": move.dst_unit or f"{plan.source} (source)",
                "kind": move.transfer.kind,
                "route": " > ".join(h.link for h in move.hops),
                "bytes": move.nbytes,
                "time_s": move_time_s(move),
            }
        )
    columns = ["from_op", "to_ops", "from", "to", "kind", "route", "bytes", "time_s"]
    return pd.DataFrame(rows, columns=columns)


def stall_table(ops: pd.DataFrame, app: str, top: int = 10) -> pd.DataFrame:
    """The ops of ``app`` that waited for their node's shared DRAM in a simulated run.

    Parameters
    ----------
    ops : DataFrame
        A run's ops trace (columns ``app``, ``op``, ``unit``, ``start_s``, ``end_s``,
        ``memory_stall_s``).
    app : str
    top : int
        Rows kept, largest mean stall first.

    Returns
    -------
    DataFrame
        op, unit, mean time (s), mean and max memory stall (s) over the requests, the
        stall's share of the op's time; only ops that stalled.
    """
    mine = ops[(ops["app"] == app) & (ops["memory_stall_s"] > 0)]
    columns = ["op", "unit", "time_s", "stall_mean_s", "stall_max_s", "stall_share"]
    if mine.empty:
        return pd.DataFrame(columns=columns)
    mine = mine.assign(time_s=mine["end_s"] - mine["start_s"])
    grouped = mine.groupby(["op", "unit"], sort=False).agg(
        time_s=("time_s", "mean"),
        stall_mean_s=("memory_stall_s", "mean"),
        stall_max_s=("memory_stall_s", "max"),
    )
    grouped["stall_share"] = grouped["stall_mean_s"] / grouped["time_s"]
    grouped = grouped.sort_values("stall_mean_s", ascending=False, kind="stable").head(top)
    return grouped.reset_index()[columns]
