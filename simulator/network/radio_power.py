"""A radio's power model at a device end of a link (pure): :class:`Radio` and the
:class:`TailStage` s of its tail.

A ``constant`` radio draws ``tx_w`` while sending, ``rx_w`` while receiving and
``idle_w`` otherwise. A stateful (RRC) radio pays a promotion before it is connected,
draws a throughput-linear power while connected and stays in a tail of one or more
stages after its last transfer (the models and their YAML options are in
:mod:`simulator.network.radio`, which builds these records).

A throughput-linear fit holds over the rates it was measured on, not beyond: a stateful
radio declares the top of that range per direction (``measured_up_mbps``,
``measured_down_mbps``) and a sourced maximum ``max_w``. Its connected power is
``min(max_w, base_w + up term + down term)``: inside the measured range the fit as
published (``max_w`` is checked to be at least the fit's power at the range's top), beyond
it the fit extrapolated until it saturates at ``max_w``. :mod:`simulator.network.radio_range`
tells a scenario that runs a radio beyond its measured range. ``tx_w`` / ``rx_w`` on a
stateful radio replace that direction's linear term by a flat total power (a handset's
own measurement), keeping the promotion and the tail.

The engine keeps each radio's state and integrates its power exactly at every change;
the pure helpers :meth:`Radio.promotion`, :meth:`Radio.stage_at` and
:meth:`Radio.tail_energy_j` let the placement estimate follow the same machine without
simulating it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from simulator.errors import SocsimError

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
        A name in :data:`simulator.network.radio.RADIO_MODELS`.
    idle_w : float
        Power in idle (average paging power for a cellular radio).
    tx_w, rx_w : float or None
        ``constant``: total power while sending / receiving. Stateful radios: when
        given, the flat total connected power while sending / receiving, in place of
        that direction's throughput-linear term (``None``: the linear term).
    promotion_s, promotion_w : float
        Stateful radios: idle -> connected delay and power during it.
    tail : tuple of TailStage
        Stateful radios: the stages the radio passes through, in order, after its last
        transfer ends, before idle. Empty for a ``constant`` radio.
    base_w, alpha_up_w_per_bps, alpha_down_w_per_bps : float
        Stateful radios: connected power ``base_w + alpha_up × up + alpha_down × down``
        at the current uplink/downlink throughputs (bit/s).
    max_w : float or None
        Stateful radios: the sourced maximum connected power; the connected power
        saturates there (``None``: no bound).
    measured_up_bps, measured_down_bps : float or None
        Stateful radios: the top of the throughput range each direction's fit was
        measured on (``None``: not declared; nothing can tell when it is exceeded).
    """

    model: str = "constant"
    idle_w: float = 0.0
    tx_w: float | None = None
    rx_w: float | None = None
    promotion_s: float = 0.0
    promotion_w: float = 0.0
    tail: tuple[TailStage, ...] = ()
    base_w: float = 0.0
    alpha_up_w_per_bps: float = 0.0
    alpha_down_w_per_bps: float = 0.0
    max_w: float | None = None
    measured_up_bps: float | None = None
    measured_down_bps: float | None = None

    def __post_init__(self) -> None:
        # the registry's module builds radios from this one: imported when a radio is made
        from simulator.network.radio import RADIO_MODELS

        if self.model not in RADIO_MODELS:
            RADIO_MODELS.get(self.model)  # raises with the nearest valid name
        skip = ("model", "tail")
        numbers = {
            k: getattr(self, k)
            for k in self.__dataclass_fields__
            if k not in skip and getattr(self, k) is not None
        }
        _check_nonneg(f"{self.model} radio", numbers)
        if self.model == "constant":
            self._check_constant()
        else:
            self._check_stateful()
        names = [stage.state for stage in self.tail]
        for stage in self.tail:
            numbers = {k: getattr(stage, k) for k in stage.__dataclass_fields__ if k != "state"}
            _check_nonneg(f"{self.model} radio tail stage '{stage.state}'", numbers)
            if stage.state in RESERVED_STATES or names.count(stage.state) > 1:
                raise SocsimError(
                    f"{self.model} radio: tail stage names must be unique and not one of "
                    f"{', '.join(RESERVED_STATES)}; got {', '.join(names)}"
                )

    def _check_constant(self) -> None:
        if self.tx_w is None or self.rx_w is None:
            raise SocsimError("constant radio: needs tx_w and rx_w")
        if self.tx_w < self.idle_w or self.rx_w < self.idle_w:
            raise SocsimError("radio tx_w and rx_w are totals and must be >= idle_w")
        extra = ("max_w", "measured_up_bps", "measured_down_bps")
        if any(getattr(self, k) is not None for k in extra):
            raise SocsimError(
                "constant radio: max_w and measured_*_mbps belong to the throughput-linear "
                "models (rrc, rrc_stages); a constant radio's power does not depend on rate"
            )

    def _check_stateful(self) -> None:
        if not self.tail:
            raise SocsimError(f"{self.model} radio: needs at least one tail stage")
        for key in ("tx_w", "rx_w"):
            flat = getattr(self, key)
            if flat is not None and flat < self.base_w:
                raise SocsimError(
                    f"{self.model} radio: {key} = {flat:g} W is a total connected power and "
                    f"must be >= base_w = {self.base_w:g} W"
                )
        if self.max_w is None:
            return
        # the cap must leave the fit untouched inside its measured range (and a flat
        # tx_w/rx_w untouched): only extrapolation saturates
        tops = {
            "base_w": self.base_w,
            "tx_w": self.tx_w,
            "rx_w": self.rx_w,
            "the power at the top of the measured uplink range": self._linear_w(
                self.measured_up_bps or 0.0, 0.0
            ),
            "the power at the top of the measured downlink range": self._linear_w(
                0.0, self.measured_down_bps or 0.0
            ),
        }
        for label, power in tops.items():
            if power is not None and power > self.max_w * (1 + 1e-12):
                raise SocsimError(
                    f"{self.model} radio: max_w = {self.max_w:g} W is below {label} "
                    f"({power:.6g} W); the maximum must bound the radio inside its measured "
                    "range (raise max_w)"
                )

    @property
    def stateful(self) -> bool:
        """True when the radio has promotion or tail states."""
        return bool(self.tail)

    @property
    def tail_s(self) -> float:
        """The whole tail's length (s): every stage in turn."""
        return sum(stage.duration_s for stage in self.tail)

    def _linear_w(self, up_bps: float, down_bps: float) -> float:
        """The stateful radio's connected power before the cap (W)."""
        up_w = (
            self.alpha_up_w_per_bps * up_bps
            if self.tx_w is None
            else (self.tx_w - self.base_w) * (up_bps > 0)
        )
        down_w = (
            self.alpha_down_w_per_bps * down_bps
            if self.rx_w is None
            else (self.rx_w - self.base_w) * (down_bps > 0)
        )
        return self.base_w + up_w + down_w

    def connected_power_w(self, up_bps: float, down_bps: float) -> float:
        """Power (W) while connected with transfers at these throughputs in progress.

        For ``constant``, any throughput means busy in that direction. For a stateful
        radio, the fit (or flat ``tx_w``/``rx_w``) saturating at ``max_w``.
        """
        if not self.stateful:
            tx_w, rx_w = self.tx_w, self.rx_w
            assert tx_w is not None and rx_w is not None  # a constant radio has both (checked)
            return (
                self.idle_w
                + (tx_w - self.idle_w) * (up_bps > 0)
                + (rx_w - self.idle_w) * (down_bps > 0)
            )
        power_w = self._linear_w(up_bps, down_bps)
        return power_w if self.max_w is None else min(power_w, self.max_w)

    def beyond_measured(self, up_bps: float, down_bps: float) -> dict[str, float]:
        """The directions whose rate exceeds the declared measured range: ``{"uplink":
        top_bps, ...}`` (empty inside it, for a constant radio, or for a direction whose
        power is a flat ``tx_w``/``rx_w``)."""
        if not self.stateful:
            return {}
        beyond = {}
        checks = (
            ("uplink", up_bps, self.measured_up_bps, self.tx_w),
            ("downlink", down_bps, self.measured_down_bps, self.rx_w),
        )
        for direction, rate_bps, top_bps, flat_w in checks:
            # a run's carried rate is bytes / busy time: at exactly the measured top it
            # can come out a few ulps above it, which is not beyond the range
            if flat_w is None and top_bps is not None and rate_bps > top_bps * (1 + 1e-9):
                beyond[direction] = top_bps
        return beyond

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
