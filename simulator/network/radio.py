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

Both RRC models build one :class:`Radio` whose ``tail`` is a tuple of
:class:`TailStage` s; ``rrc``'s one stage is called ``tail``. The engine keeps each
radio's state and integrates its power exactly at every change; the pure helpers
:meth:`Radio.promotion`, :meth:`Radio.stage_at` and :meth:`Radio.tail_energy_j` let the
placement estimate follow the same machine without simulating it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.errors import SocsimError
from simulator.limits import MAX_POWER_W
from simulator.registry import Registry
from simulator.schema import Field, ListOf, Number, Record, Text

#: A power (W) within the stated bound (simulator.limits).
WATTS = Number("W", ge=0, le=MAX_POWER_W)

# states every stateful radio has; tail stages take other names
RESERVED_STATES = ("idle", "promotion", "connected")


def _check_nonneg(owner: str, values: Mapping[str, float]) -> None:
    for label, value in values.items():
        if math.isnan(value) or value < 0:
            raise SocsimError(f"{owner}: {label} must be >= 0, got {value}")


@dataclass(frozen=True)
class TailStage:
    """One stage of a radio's tail (W, s).

    Attributes
    ----------
    state : str
        The state's name in the ``radio_states`` table (``tail``, ``tail_dch``, ``fach``).
    duration_s, power_w : float
        How long the radio stays in the stage without traffic, and its power there.
    promotion_s, promotion_w : float
        Delay (and power during it) before a transfer that starts in this stage is
        connected; zero when the stage still carries data at once (LTE's tail).
    """

    state: str
    duration_s: float
    power_w: float
    promotion_s: float = 0.0
    promotion_w: float = 0.0


@dataclass(frozen=True)
class Radio:
    """A radio's power model (W, s, bit/s).

    Attributes
    ----------
    model : str
        A name in :data:`RADIO_MODELS`.
    idle_w : float
        Power in idle (average paging power for a cellular radio).
    tx_w, rx_w : float
        ``constant``: total power while sending / receiving.
    promotion_s, promotion_w : float
        Stateful radios: idle -> connected delay and power during it.
    tail : tuple of TailStage
        Stateful radios: the stages the radio passes through, in order, after its last
        transfer ends, before idle. Empty for a ``constant`` radio.
    base_w, alpha_up_w_per_bps, alpha_down_w_per_bps : float
        Stateful radios: connected power ``base_w + alpha_up × up + alpha_down × down``
        at the current uplink/downlink throughputs (bit/s).
    """

    model: str = "constant"
    idle_w: float = 0.0
    tx_w: float = 0.0
    rx_w: float = 0.0
    promotion_s: float = 0.0
    promotion_w: float = 0.0
    tail: tuple[TailStage, ...] = ()
    base_w: float = 0.0
    alpha_up_w_per_bps: float = 0.0
    alpha_down_w_per_bps: float = 0.0

    def __post_init__(self) -> None:
        if self.model not in RADIO_MODELS:
            RADIO_MODELS.get(self.model)  # raises with the nearest valid name
        skip = ("model", "tail")
        numbers = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in skip}
        _check_nonneg(f"{self.model} radio", numbers)
        if self.model == "constant" and (self.tx_w < self.idle_w or self.rx_w < self.idle_w):
            raise SocsimError("radio tx_w and rx_w are totals and must be >= idle_w")
        if self.model != "constant" and not self.tail:
            raise SocsimError(f"{self.model} radio: needs at least one tail stage")
        names = [stage.state for stage in self.tail]
        for stage in self.tail:
            numbers = {k: getattr(stage, k) for k in stage.__dataclass_fields__ if k != "state"}
            _check_nonneg(f"{self.model} radio tail stage '{stage.state}'", numbers)
            if stage.state in RESERVED_STATES or names.count(stage.state) > 1:
                raise SocsimError(
                    f"{self.model} radio: tail stage names must be unique and not one of "
                    f"{', '.join(RESERVED_STATES)}; got {', '.join(names)}"
                )

    @property
    def stateful(self) -> bool:
        """True when the radio has promotion or tail states."""
        return bool(self.tail)

    @property
    def tail_s(self) -> float:
        """The whole tail's length (s): every stage in turn."""
        return sum(stage.duration_s for stage in self.tail)

    def connected_power_w(self, up_bps: float, down_bps: float) -> float:
        """Power (W) while connected with transfers at these throughputs in progress.

        For ``constant``, any throughput means busy in that direction.
        """
        if not self.stateful:
            return (
                self.idle_w
                + (self.tx_w - self.idle_w) * (up_bps > 0)
                + (self.rx_w - self.idle_w) * (down_bps > 0)
            )
        return self.base_w + self.alpha_up_w_per_bps * up_bps + self.alpha_down_w_per_bps * down_bps

    def transfer_energy_j(self, nbytes: float, bandwidth_bps: float, sending: bool) -> float:
        """Energy (J) of one lone transfer's serialisation (no promotion, no tail)."""
        seconds = nbytes * 8 / bandwidth_bps
        if sending:
            return self.connected_power_w(bandwidth_bps, 0.0) * seconds
        return self.connected_power_w(0.0, bandwidth_bps) * seconds

    def promotion(self, stage: int | None) -> tuple[float, float]:
        """(delay_s, power_w) a transfer pays to connect from tail stage ``stage``.

        ``None`` means from idle. Zero delay means the transfer is carried at once.
        """
        if stage is None:
            return self.promotion_s, self.promotion_w
        return self.tail[stage].promotion_s, self.tail[stage].promotion_w

    def stage_at(self, released_s: float | None, now_s: float) -> int | None:
        """The tail stage a radio is in at ``now_s`` when its last transfer ended at
        ``released_s``.

        ``None`` (idle) once the whole tail is over, or when ``released_s`` is ``None``
        (the radio has carried nothing yet). A stage spans ``[start, end)``: at the
        instant it ends the radio has moved on. Stage ends are added up in absolute time
        in the engine's order, so that both agree bit for bit.
        """
        if released_s is None:
            return None
        end_s = released_s
        for k, stage in enumerate(self.tail):
            end_s = end_s + stage.duration_s
            if now_s < end_s:
                return k
        return None

    def tail_energy_j(self, since_release_s: float) -> float:
        """Energy (J) drawn in the tail during its first ``since_release_s`` seconds.

        The whole tail's energy when ``since_release_s`` is longer than the tail.
        """
        energy_j, left_s = 0.0, since_release_s
        for stage in self.tail:
            spent_s = min(stage.duration_s, max(left_s, 0.0))
            energy_j += stage.power_w * spent_s
            left_s -= spent_s
        return energy_j


RADIO_MODELS: Registry[Any] = Registry("radio model")

# the connected-state keys both RRC models share
_RRC_FIELDS = {
    "idle_w": Field(WATTS, default=0.0, doc="average idle (paging) power"),
    "promotion_ms": Field(
        Number("ms", 1e-3, ge=0), to="promotion_s", doc="idle -> connected delay"
    ),
    "promotion_w": Field(WATTS, doc="power during the promotion from idle"),
    "base_w": Field(WATTS, doc="connected power at zero throughput"),
    "alpha_up_mw_per_mbps": Field(Number("mW per Mbit/s", 1e-9, ge=0), to="alpha_up_w_per_bps"),
    "alpha_down_mw_per_mbps": Field(Number("mW per Mbit/s", 1e-9, ge=0), to="alpha_down_w_per_bps"),
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
