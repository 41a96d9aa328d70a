"""Schema of what apps send and when energy is metered (docs/requests.md).

A workload entry's ``input`` (bytes, or a JPEG of a camera frame) and
``response_bytes``; the scenario's ``energy_window``. The loader turns ``input`` into
:attr:`~simulator.workload.WorkloadEntry.input_bytes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.limits import MAX_HORIZON_S
from simulator.network.jpeg import jpeg_bytes
from simulator.rules import energy_window_ordered, report
from simulator.schema import Context, Field, Loc, Number, Record, Tagged

#: Largest request or response, bytes (1 TB: far above any frame or tensor).
MAX_BYTES = 10**12
#: Largest frame side, pixels (JPEG's own limit is 65,535).
MAX_SIDE = 65_535
_BYTES = Number("bytes", integer=True, ge=0, le=MAX_BYTES)
_SIDE = Number("pixels", integer=True, ge=1, le=MAX_SIDE)

ENCODINGS = {
    "jpeg": Record(
        {
            "width": Field(_SIDE, doc="of the frame sent"),
            "height": Field(_SIDE),
            "quality": Field(
                Number(ge=1, le=100), doc="libjpeg quality: size from published measurements"
            ),
            "bits_per_pixel": Field(Number(gt=0, le=48), doc="your encoder's, if known"),
        },
        exclusive=(("quality", "bits_per_pixel"),),
        name="JPEG input",
    ),
    "none": Record({"bytes": Field(_BYTES, doc="the request's size on the network")}, name="input"),
}
INPUT = Tagged("encode", lambda: ENCODINGS, what="input encoding", default="none")
INPUT_DOC = (
    "what the app sends over the network instead of the model's input tensor: {bytes: N} "
    "or {encode: jpeg, width, height, quality} (docs/requests.md)"
)
RESPONSE_DOC = (
    "bytes of each output returned over the network (default: the output tensor); 0: no "
    "return transfer"
)

ENERGY_WINDOW = Record(
    {
        "start_s": Field(Number("s", ge=0, le=MAX_HORIZON_S)),
        "end_s": Field(Number("s", gt=0, le=MAX_HORIZON_S)),
    },
    name="energy window",
)
ENERGY_WINDOW_DOC = (
    "energy figures integrate power over exactly [start_s, end_s]; absent: first arrival "
    "to last completion (and the last radio tail or op)"
)


def input_bytes(spec: Mapping[str, Any] | None) -> int | None:
    """The bytes of a checked ``input`` (None: the model's input tensor)."""
    if spec is None:
        return None
    if spec["encode"] == "jpeg":
        quality, bpp = spec.get("quality"), spec.get("bits_per_pixel")
        return jpeg_bytes(spec["width"], spec["height"], quality, bpp)
    return spec["bytes"]


def energy_window(
    ctx: Context, spec: Mapping[str, Any] | None, raw: Mapping
) -> tuple[float, float] | None:
    """The checked ``energy_window`` as ``(start_s, end_s)`` (None: absent); an end not
    after the start is a problem at ``energy_window.end_s`` in ``ctx``."""
    if spec is None:
        return None
    window = (spec["start_s"], spec["end_s"])
    for error in energy_window_ordered(window):
        report(ctx, error, Loc(""), raw)
    return window
