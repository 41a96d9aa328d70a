"""A lumped RC thermal model of one SoC/device, with a throttling threshold (pure).

One thermal node of capacitance ``C`` (J/K) coupled to ambient through a resistance
``R`` (K/W) and heated by the node's power ``P`` (W)::

    C · dT/dt = P − (T − T_amb) / R

For ``P`` constant over an interval (the engine's power is piecewise constant between
events) the solution is exact::

    T(t) = T_amb + P·R + (T0 − T_amb − P·R) · exp(−t / (R·C))

so the temperature moves monotonically from ``T0`` toward the steady state
``T_amb + P·R`` with time constant ``τ = R·C``, and the time to reach a temperature
``T*`` between the two is ``τ · ln((T0 − T_ss) / (T* − T_ss))``.

Throttling has hysteresis: a node starts throttling when ``T >= throttle_c`` and stops
when ``T <= release_c`` (``release_c < throttle_c``); while throttled the units' DVFS
levels are capped (see :func:`cap_level_for`).

:data:`PHONE_THERMAL` is a documented phone preset; ``docs/dvfs-thermal.md`` gives its
sources and the time-to-throttle arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.errors import SocsimError
from simulator.hardware.dvfs import DvfsTable


def _finite(value: float) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class ThermalModel:
    """Lumped RC thermal node with a throttling threshold and hysteresis.

    Attributes
    ----------
    resistance_k_per_w : float
        Thermal resistance to ambient (K/W), > 0.
    capacitance_j_per_k : float
        Heat capacity of the node (J/K), > 0.
    ambient_c : float
        Ambient temperature (°C).
    throttle_c : float
        Throttling starts when the temperature reaches this (°C).
    release_c : float
        Throttling stops when the temperature falls to this (°C);
        ``ambient_c < release_c < throttle_c``.
    """

    resistance_k_per_w: float
    capacitance_j_per_k: float
    ambient_c: float
    throttle_c: float
    release_c: float

    def __post_init__(self) -> None:
        for label in ("resistance_k_per_w", "capacitance_j_per_k"):
            value = getattr(self, label)
            if not _finite(value) or not value > 0:
                raise SocsimError(f"thermal model: {label} must be finite and > 0, got {value}")
        tau = self.time_constant_s  # 1e-200 x 1e-200 underflows to 0: exp(-t / 0) fails
        if not (_finite(tau) and tau > 0):
            raise SocsimError(
                f"thermal model: R x C = {tau} s; it must be finite and > 0 "
                "(the schema's bounds keep it within [1e-7, 1e11] s)"
            )
        for label in ("ambient_c", "throttle_c", "release_c"):
            if not _finite(getattr(self, label)):
                raise SocsimError(f"thermal model: {label} must be finite")
        if not self.ambient_c < self.release_c < self.throttle_c:
            raise SocsimError(
                "thermal model: need ambient_c < release_c < throttle_c, got "
                f"{self.ambient_c} / {self.release_c} / {self.throttle_c} °C"
            )

    @property
    def time_constant_s(self) -> float:
        """``τ = R · C`` (s)."""
        return self.resistance_k_per_w * self.capacitance_j_per_k

    def steady_state_c(self, power_w: float) -> float:
        """The temperature (°C) a constant ``power_w`` settles at: ``T_amb + P·R``."""
        return self.ambient_c + power_w * self.resistance_k_per_w

    def sustainable_power_w(self, limit_c: float | None = None) -> float:
        """The constant power (W) whose steady state is ``limit_c`` (default: throttle_c)."""
        limit = self.throttle_c if limit_c is None else limit_c
        return (limit - self.ambient_c) / self.resistance_k_per_w

    def temperature_after(self, t0_c: float, power_w: float, seconds: float) -> float:
        """Temperature (°C) after ``seconds`` at constant ``power_w``, starting at ``t0_c``.

        ``T_amb + P·R + (T0 − T_amb − P·R) · exp(−t / (R·C))``.
        """
        if not _finite(seconds) or seconds < 0:
            raise SocsimError(f"thermal model: seconds must be finite and >= 0, got {seconds}")
        _check_power(power_w)
        steady = self.steady_state_c(power_w)
        return steady + (t0_c - steady) * math.exp(-seconds / self.time_constant_s)

    def time_to_reach(self, t0_c: float, power_w: float, target_c: float) -> float:
        """Seconds until the temperature equals ``target_c`` at constant ``power_w``.

        Returns 0 when ``t0_c == target_c``, and ``math.inf`` when the temperature never
        gets there (the target is not strictly between ``t0_c`` and the steady state:
        it lies behind, at or beyond the asymptote). Otherwise
        ``τ · ln((T0 − T_ss) / (T* − T_ss))``.

        Direction matters: from 50 °C heating toward 60 °C, 45 °C is never reached
        (``inf``). Use :meth:`time_to_transition_s` for the throttling state machine.
        """
        _check_power(power_w)
        if target_c == t0_c:
            return 0.0
        steady = self.steady_state_c(power_w)
        between = (t0_c < target_c < steady) or (steady < target_c < t0_c)
        if not between:
            return math.inf
        return self.time_constant_s * math.log((t0_c - steady) / (target_c - steady))

    def next_throttled(self, temperature_c: float, throttled: bool) -> bool:
        """The throttling state at ``temperature_c`` given the state before (hysteresis)."""
        if throttled:
            return temperature_c > self.release_c
        return temperature_c >= self.throttle_c

    def time_to_transition_s(self, t0_c: float, power_w: float, throttled: bool) -> float:
        """Seconds until the throttling state flips at constant ``power_w``.

        0 when the state is already stale at ``t0_c`` (not throttled but at or above
        ``throttle_c``; throttled but at or below ``release_c``); ``math.inf`` when the
        temperature never crosses the relevant threshold.
        """
        if self.next_throttled(t0_c, throttled) != throttled:
            return 0.0
        target = self.release_c if throttled else self.throttle_c
        return self.time_to_reach(t0_c, power_w, target)


def _check_power(power_w: float) -> None:
    if not _finite(power_w) or power_w < 0:
        raise SocsimError(f"thermal model: power must be finite and >= 0, got {power_w}")


def cap_level_for(
    table: DvfsTable, throttled: bool, throttled_max_frequency_hz: float
) -> int | None:
    """The thermal cap to hand a unit's governor: None when not throttled, else the
    highest level whose frequency is <= ``throttled_max_frequency_hz`` (level 0 if none)."""
    if not throttled:
        return None
    return table.highest_level_at_most(throttled_max_frequency_hz)


# -- phone preset ------------------------------------------------------------------------
#: Ambient (°C): room temperature. assumption: 25 °C, the usual lab figure (Android
#: Central's Nexus 6P thermal test office was 76 °F = 24.4 °C).
PHONE_AMBIENT_C = 25.0
#: Throttle threshold (°C) on the lumped (skin/body) node: Therminator (Xie, Dousti,
#: Pedram, ISLPED 2014): "most people experience a sensation of heat pain when they touch
#: an object hotter than 45 °C".
PHONE_THROTTLE_C = 45.0
#: Release (°C). assumption: 3 K of hysteresis below the throttle point.
PHONE_RELEASE_C = 42.0
#: Sustainable SoC power (W) at the throttle threshold: Arm's developer guide ("It's all
#: about energy"): "For most devices, the SoC power budget is between 2.5 and 3.5 Watts";
#: the middle, 3 W, sets R = (45 − 25) / 3 = 6.67 K/W.
PHONE_SUSTAINABLE_W = 3.0
#: assumption: effective heat capacity (J/K). The whole phone (~170–200 g of aluminium,
#: glass and cell, c ≈ 0.85 J/(g·K)) is ~150 J/K, an upper bound for one node: heat
#: spreads unevenly, so the hot region heats faster. 100 J/K gives τ = 667 s and puts
#: 5–8 W at 10.2–5.2 min to throttle, in line with published traces (Tom's Hardware: a
#: Galaxy Note 4 loses over half its GPU performance 8.5 min into a GFXBench loop; Kang et
#: al., MobiCom 2019: video chat raises the surface above 50 °C in 10 min).
PHONE_CAPACITANCE_J_PER_K = 100.0

PHONE_THERMAL = ThermalModel(
    resistance_k_per_w=(PHONE_THROTTLE_C - PHONE_AMBIENT_C) / PHONE_SUSTAINABLE_W,
    capacitance_j_per_k=PHONE_CAPACITANCE_J_PER_K,
    ambient_c=PHONE_AMBIENT_C,
    throttle_c=PHONE_THROTTLE_C,
    release_c=PHONE_RELEASE_C,
)


__all__ = ["PHONE_THERMAL", "ThermalModel", "cap_level_for"]
