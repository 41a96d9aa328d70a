"""Radio power models at the device ends of links (pure), as a registry.

* ``constant``: ``tx_w`` while sending, ``rx_w`` while receiving, ``idle_w`` otherwise;
  no state, no delay (increments above idle add when both directions are busy).
* ``rrc``: the RRC state machine of cellular radios (Huang et al., MobiSys 2012): from
  idle, a transfer first pays a *promotion* (delay and power); while connected the
  radio draws ``base_w + alpha_up × uplink Mbit/s + alpha_down × downlink Mbit/s``
  (the throughput of the transfers in progress); when the last transfer ends it stays
  in a high-power *tail* for ``tail_s`` before falling back to idle, and a transfer that
  starts inside the tail resets it (no promotion). Back-to-back uploads pay one tail.
* ``rrc_stages``: the same with a tail of several stages in turn (UMTS: DCH, then FACH,
  then idle), each with its own duration and power, and a promotion that depends on the
  stage a transfer starts in (FACH -> DCH is shorter than IDLE -> DCH).

Each model's YAML options are a schema record registered with it in
:data:`RADIO_MODELS`; :func:`build_radio` builds the radio a link's ``radio:`` names.
Both RRC models build one :class:`~simulator.network.radio_power.Radio` whose ``tail``
is a tuple of :class:`~simulator.network.radio_power.TailStage` s; ``rrc``'s one stage
is called ``tail``. The record itself, its measured range and ``max_w`` cap, and the
state machine's pure helpers are in :mod:`simulator.network.radio_power`; ``Radio`` and
``TailStage`` are re-exported here, where the engine, the tests and users import them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.limits import MAX_POWER_W
from simulator.network.radio_power import Radio, TailStage
from simulator.registry import Registry
from simulator.schema import Field, ListOf, Number, Record, Text

__all__ = [
    "RADIO_MODELS",
    "TAIL_STAGE",
    "WATTS",
    "Radio",
    "TailStage",
    "build_radio",
    "constant",
    "rrc",
    "rrc_stages",
]

#: A power (W) within the stated bound (simulator.limits).
WATTS = Number("W", ge=0, le=MAX_POWER_W)

RADIO_MODELS: Registry[Any] = Registry("radio model", "socsim.radio_models")

# the connected-state keys both RRC models share
_MBPS = Number("Mbit/s", 1e6, ge=0)
_RRC_FIELDS = {
    "idle_w": Field(WATTS, default=0.0, doc="average idle (paging) power"),
    "promotion_ms": Field(
        Number("ms", 1e-3, ge=0), to="promotion_s", doc="idle -> connected delay"
    ),
    "promotion_w": Field(WATTS, doc="power during the promotion from idle"),
    "base_w": Field(WATTS, doc="connected power at zero throughput"),
    "alpha_up_mw_per_mbps": Field(Number("mW per Mbit/s", 1e-9, ge=0), to="alpha_up_w_per_bps"),
    "alpha_down_mw_per_mbps": Field(Number("mW per Mbit/s", 1e-9, ge=0), to="alpha_down_w_per_bps"),
    "max_w": Field(
        WATTS, default=None, doc="sourced maximum connected power; the power saturates there"
    ),
    "measured_up_mbps": Field(
        _MBPS,
        default=None,
        to="measured_up_bps",
        doc="top of the uplink rate range the fit was measured on (beyond: a warning)",
    ),
    "measured_down_mbps": Field(
        _MBPS, default=None, to="measured_down_bps", doc="the same for the downlink"
    ),
    "tx_w": Field(
        WATTS,
        default=None,
        doc="flat total power while sending, in place of alpha_up_mw_per_mbps",
    ),
    "rx_w": Field(
        WATTS,
        default=None,
        doc="flat total power while receiving, in place of alpha_down_mw_per_mbps",
    ),
}

TAIL_STAGE = Record(
    {
        "state": Field(
            Text(pattern=r"[a-z][a-z0-9_]*"),
            doc="its name in `radio_states` (not idle, promotion or connected)",
        ),
        "duration_ms": Field(Number("ms", 1e-3, ge=0), to="duration_s"),
        "power_w": Field(WATTS),
        "promotion_ms": Field(
            Number("ms", 1e-3, ge=0),
            default=0.0,
            to="promotion_s",
            doc="delay before a transfer starting in this stage is carried (0: at once)",
        ),
        "promotion_w": Field(WATTS, default=0.0, doc="power during that delay"),
    },
    name="tail stage",
)


@RADIO_MODELS.register(
    "constant",
    Record(
        {
            "tx_w": Field(WATTS, doc="total power while sending"),
            "rx_w": Field(WATTS, doc="total power while receiving"),
            "idle_w": Field(WATTS, default=0.0),
        },
        name="constant radio",
    ),
)
def constant(options: Mapping[str, Any]) -> Radio:
    """Fixed power while sending, receiving or idle."""
    return Radio("constant", **options)


@RADIO_MODELS.register(
    "rrc",
    Record(
        {
            **_RRC_FIELDS,
            "tail_ms": Field(Number("ms", 1e-3, ge=0), to="tail_s"),
            "tail_w": Field(WATTS),
        },
        name="rrc radio",
    ),
)
def rrc(options: Mapping[str, Any]) -> Radio:
    """Cellular RRC state machine: promotion, throughput-linear power, one-stage tail."""
    options = dict(options)
    stage = TailStage("tail", options.pop("tail_s"), options.pop("tail_w"))
    return Radio("rrc", tail=(stage,), **options)


@RADIO_MODELS.register(
    "rrc_stages",
    Record(
        {**_RRC_FIELDS, "tail": Field(ListOf(TAIL_STAGE, min_len=1), doc="stages in order")},
        name="rrc_stages radio",
    ),
)
def rrc_stages(options: Mapping[str, Any]) -> Radio:
    """RRC state machine with a multi-stage tail (UMTS DCH -> FACH -> idle)."""
    options = dict(options)
    stages = tuple(TailStage(**stage) for stage in options.pop("tail"))
    return Radio("rrc_stages", tail=stages, **options)


def build_radio(spec: Mapping[str, Any]) -> Radio:
    """A Radio from validated options with their ``model`` key."""
    options = dict(spec)
    return RADIO_MODELS.get(options.pop("model", "constant")).function(options)
