"""What a request sends and gets back over the network, per app (pure; docs/requests.md).

The plan moves the model's input tensor to the first remote unit and every output
tensor back to the source. An app may send something else (a JPEG of the camera frame,
a fixed-size message) and want a smaller answer back, or none:

* ``input_bytes``: the size of the request's input on every network move that leaves
  the source (moves between units of the source node keep the tensor's size: the
  frame is decoded where it is taken);
* ``response_bytes``: the size of each output returned to the source over the network;
  0 means no return transfer at all (the request completes when its last op ends, and
  no radio wakes up for an answer).

Placement policies decide on the model's tensors; the app's plan (the run, the
``apps`` table, adaptive predictions) uses these sizes.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.placement.plan import ExecutionPlan, Move
from simulator.platform import Transfer


def with_request_io(
    plan: ExecutionPlan, input_bytes: int | None, response_bytes: int | None
) -> ExecutionPlan:
    """``plan`` with the app's request and response sizes; ``plan`` itself when both are
    None (the model's tensors)."""
    if input_bytes is None and response_bytes is None:
        return plan
    inputs = plan.input_moves
    if input_bytes is not None:
        inputs = tuple(replace(m, nbytes=input_bytes) if m.hops else m for m in inputs)
    moves_out = plan.moves_out
    if response_bytes is not None:
        moves_out = tuple(tuple(_response(m, response_bytes) for m in moves) for moves in moves_out)
    return replace(plan, input_moves=inputs, moves_out=moves_out)


def _response(move: Move, nbytes: int) -> Move:
    """An output's way back with ``nbytes`` (0: none: it is at the source at once)."""
    if move.dst_unit is not None or not move.hops:
        return move  # not an output, or one already on the source node
    if nbytes == 0:
        return replace(move, nbytes=0, transfer=Transfer("local"))
    return replace(move, nbytes=nbytes)
