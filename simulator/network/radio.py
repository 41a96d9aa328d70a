"""Radio power models at the device ends of links (pure), as a registry.

* ``constant``: ``tx_w`` while sending, ``rx_w`` while receiving, ``idle_w`` otherwise;
  no state, no delay (increments above idle add when both directions are busy).
* ``rrc``: the RRC state machine of cellular radios (Huang et al., MobiSys 2012): from
  idle, a transfer first pays a *promotion* (delay and power); while connected the
  radio draws ``base_w + alpha_up × uplink Mbit/s + alpha_down × downlink Mbit/s``
  (the throughput of the transfers in progress); when the last transfer ends it stays
  in a high-power *tail* for ``tail_s`` before falling back to idle, and a transfer that
  starts inside the tail resets it (no promotion). Back-to-back uploads pay one tail.

The engine keeps each radio's state and integrates its power exactly at every change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.errors import SocsimError
from simulator.registry import Registry
from simulator.schema import Field, Number, Record


def _check_nonneg(owner: str, values: Mapping[str, float]) -> None:
    for label, value in values.items():
        if math.isnan(value) or value < 0:
            raise SocsimError(f"{owner}: {label} must be >= 0, got {value}")


@dataclass(frozen=True)
class Radio:
    """A radio's power model (W, s, bit/s).

    Attributes
    ----------
    model : str
        ``constant`` or ``rrc``.
    idle_w : float
        Power in idle (average paging power for a cellular radio).
    tx_w, rx_w : float
        ``constant``: total power while sending / receiving.
    promotion_s, promotion_w : float
        ``rrc``: idle -> connected delay and power during it.
    tail_s, tail_w : float
        ``rrc``: time and power in the tail after the last transfer.
    base_w, alpha_up_w_per_bps, alpha_down_w_per_bps : float
        ``rrc``: connected power ``base_w + alpha_up × up + alpha_down × down`` at the
        current uplink/downlink throughputs (bit/s).
    """

    model: str = "constant"
    idle_w: float = 0.0
    tx_w: float = 0.0
    rx_w: float = 0.0
    promotion_s: float = 0.0
    promotion_w: float = 0.0
    tail_s: float = 0.0
    tail_w: float = 0.0
    base_w: float = 0.0
    alpha_up_w_per_bps: float = 0.0
    alpha_down_w_per_bps: float = 0.0

    def __post_init__(self) -> None:
        if self.model not in RADIO_MODELS:
            RADIO_MODELS.get(self.model)  # raises with the nearest valid name
        numbers = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "model"}
        _check_nonneg(f"{self.model} radio", numbers)
        if self.model == "constant" and (self.tx_w < self.idle_w or self.rx_w < self.idle_w):
            raise SocsimError("radio tx_w and rx_w are totals and must be >= idle_w")

    @property
    def stateful(self) -> bool:
        """True when the radio has promotion or tail states."""
        return self.model == "rrc"

    def connected_power_w(self, up_bps: float, down_bps: float) -> float:
        """Power (W) while connected with transfers at these throughputs in progress.

        For ``constant``, any throughput means busy in that direction.
        """
        if self.model == "constant":
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


RADIO_MODELS: Registry[Any] = Registry("radio model")


@RADIO_MODELS.register(
    "constant",
    Record(
        {
            "tx_w": Field(Number("W", ge=0), doc="total power while sending"),
            "rx_w": Field(Number("W", ge=0), doc="total power while receiving"),
            "idle_w": Field(Number("W", ge=0), default=0.0),
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
            "idle_w": Field(Number("W", ge=0), default=0.0, doc="average idle (paging) power"),
            "promotion_ms": Field(Number("ms", 1e-3, ge=0), to="promotion_s"),
            "promotion_w": Field(Number("W", ge=0)),
            "tail_ms": Field(Number("ms", 1e-3, ge=0), to="tail_s"),
            "tail_w": Field(Number("W", ge=0)),
            "base_w": Field(Number("W", ge=0), doc="connected power at zero throughput"),
            "alpha_up_mw_per_mbps": Field(
                Number("mW per Mbit/s", 1e-9, ge=0), to="alpha_up_w_per_bps"
            ),
            "alpha_down_mw_per_mbps": Field(
                Number("mW per Mbit/s", 1e-9, ge=0), to="alpha_down_w_per_bps"
            ),
        },
        name="rrc radio",
    ),
)
def rrc(options: Mapping[str, Any]) -> Radio:
    """Cellular RRC state machine: promotion, throughput-linear power, tail."""
    return Radio("rrc", **options)


def build_radio(spec: Mapping[str, Any]) -> Radio:
    """A Radio from validated options with their ``model`` key."""
    options = dict(spec)
    return RADIO_MODELS.get(options.pop("model", "constant")).function(options)
