"""Stochastic link behaviour (pure): random bandwidth, latency jitter, packet loss.

* **Bandwidth from a distribution**: a direction's capacity is piecewise constant, one
  draw per ``hold_s`` (see :class:`~simulator.network.capacity.RandomCapacity`).
* **Latency jitter**: each hop's propagation delay is ``latency + jitter``, jitter >= 0.
* **Packet loss**: a transfer of ``N`` packets of ``mtu_bytes`` needs ``N + extra``
  transmissions; each lost packet is re-sent in the next round (selective repeat), so
  ``extra`` is negative-binomial with mean ``N p / (1 - p)`` and every retransmission
  round adds one round trip (``2 × latency``) before delivery.

Random streams: each link direction has its own :class:`numpy.random.SeedSequence`,
keyed by the scenario seed, the replicate and a stable hash of ``link:src`` (so adding
a link or an app changes no other stream). It spawns three Generators, for capacity,
jitter and loss, so the bandwidth a direction draws does not depend on the traffic that
crosses it: two placements compared on one seed see the same bandwidth (common random
numbers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.errors import SocsimError
from simulator.frozen import FrozenMap
from simulator.limits import MAX_CV, MAX_HORIZON_S, MIN_BANDWIDTH_BPS, MIN_HOLD_S
from simulator.network.capacity import RandomCapacity, StepCapacity
from simulator.registry import Registry
from simulator.schema import Field, Number, Record
from simulator.seeds import named_seed

if TYPE_CHECKING:
    from simulator.network.topology import Link

#: A bandwidth sampler: (Generator, n) -> n draws in bit/s (before clipping).
Sampler = Callable[[np.random.Generator, int], np.ndarray]
#: Keeps link streams apart from the apps' ``(replicate, i)`` spawn keys ("link" in ASCII).
_LINK_STREAMS = 0x6C696E6B
_MEGA, _MILLI = 1e6, 1e-3

CAPACITY_DISTRIBUTIONS: Registry[Any] = Registry(
    "bandwidth distribution", "socsim.bandwidth_distributions"
)
JITTERS: Registry[Any] = Registry("jitter distribution", "socsim.jitters")


def _capacity_record(name: str) -> Record:
    return Record(
        {
            "mean_mbps": Field(
                Number("Mbit/s", _MEGA, ge=MIN_BANDWIDTH_BPS / _MEGA), to="mean_bps"
            ),
            "cv": Field(Number(gt=0, le=MAX_CV), doc="coefficient of variation: std / mean"),
            "std_mbps": Field(Number("Mbit/s", _MEGA, gt=0), to="std_bps"),
            "hold_ms": Field(
                Number("ms", _MILLI, ge=MIN_HOLD_S / _MILLI, le=MAX_HORIZON_S / _MILLI),
                to="hold_s",
                doc="each draw holds this long",
            ),
        },
        exclusive=(("cv", "std_mbps"),),
        name=f"{name} bandwidth distribution",
    )


@CAPACITY_DISTRIBUTIONS.register("lognormal", _capacity_record("lognormal"))
def lognormal(mean_bps: float, std_bps: float) -> Sampler:
    """Lognormal with the given mean and standard deviation (always > 0)."""
    sigma2 = math.log1p((std_bps / mean_bps) ** 2)
    mu, sigma = math.log(mean_bps) - sigma2 / 2, math.sqrt(sigma2)
    return lambda rng, n: rng.lognormal(mu, sigma, n)


@CAPACITY_DISTRIBUTIONS.register("gamma", _capacity_record("gamma"))
def gamma(mean_bps: float, std_bps: float) -> Sampler:
    """Gamma with the given mean and standard deviation (always > 0)."""
    shape, scale = (mean_bps / std_bps) ** 2, std_bps**2 / mean_bps
    return lambda rng, n: rng.gamma(shape, scale, n)


@CAPACITY_DISTRIBUTIONS.register("normal", _capacity_record("normal"))
def normal(mean_bps: float, std_bps: float) -> Sampler:
    """Normal with the given mean and standard deviation, clipped (see ``MIN_FRACTION``)."""
    return lambda rng, n: rng.normal(mean_bps, std_bps, n)


@CAPACITY_DISTRIBUTIONS.register("uniform", _capacity_record("uniform"))
def uniform(mean_bps: float, std_bps: float) -> Sampler:
    """Uniform on ``mean ± √3 std`` (that standard deviation); needs ``cv < 1/√3``."""
    half = math.sqrt(3.0) * std_bps
    if half >= mean_bps:
        raise SocsimError(
            f"a uniform bandwidth needs std < mean / √3 = {mean_bps / math.sqrt(3) / _MEGA:g} "
            f"Mbit/s (its low end must be > 0), got std {std_bps / _MEGA:g} Mbit/s"
        )
    return lambda rng, n: rng.uniform(mean_bps - half, mean_bps + half, n)


@dataclass(frozen=True)
class BandwidthDistribution:
    """Capacity of one direction: a draw of ``dist`` every ``hold_s`` (bit/s).

    Draws below ``MIN_FRACTION × mean_bps`` are raised to it: a normal draw can be
    negative, and a link that stops is an outage (``outages_s``), not a bad draw.
    """

    dist: str
    mean_bps: float
    std_bps: float
    hold_s: float

    MIN_FRACTION = 1e-3

    def __post_init__(self) -> None:
        for label in ("mean_bps", "std_bps", "hold_s"):
            value = getattr(self, label)
            if not (math.isfinite(value) and value > 0):
                raise SocsimError(f"{self.dist} bandwidth distribution: {label} must be > 0")
        if self.std_bps / self.mean_bps > MAX_CV:  # its square overflows in the samplers
            raise SocsimError(
                f"{self.dist} bandwidth distribution: std / mean must be <= {MAX_CV:g} (MAX_CV)"
            )
        self.sampler()  # raises for an unknown name or parameters the family rejects

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> BandwidthDistribution:
        """From validated YAML options: dist, mean_bps, cv or std_bps, hold_s."""
        mean = options["mean_bps"]
        std = options["std_bps"] if "std_bps" in options else options["cv"] * mean
        return cls(options["dist"], mean, std, options["hold_s"])

    @property
    def floor_bps(self) -> float:
        return self.MIN_FRACTION * self.mean_bps

    def sampler(self) -> Sampler:
        return CAPACITY_DISTRIBUTIONS.get(self.dist).function(self.mean_bps, self.std_bps)


@JITTERS.register(
    "exponential",
    Record({"mean_ms": Field(Number("ms", _MILLI, gt=0), to="mean_s")}, name="exponential jitter"),
)
def exponential(options: Mapping[str, float], rng: np.random.Generator) -> float:
    """Exponential of mean ``mean_ms`` (queueing-like: mostly small, a long tail)."""
    return float(rng.exponential(options["mean_s"]))


@JITTERS.register(
    "uniform",
    Record({"max_ms": Field(Number("ms", _MILLI, gt=0), to="max_s")}, name="uniform jitter"),
)
def uniform_jitter(options: Mapping[str, float], rng: np.random.Generator) -> float:
    """Uniform on ``[0, max_ms]``."""
    return float(rng.uniform(0.0, options["max_s"]))


@JITTERS.register(
    "normal_truncated",
    Record(
        {
            "mean_ms": Field(Number("ms", _MILLI, ge=0), to="mean_s", doc="of the untruncated"),
            "std_ms": Field(Number("ms", _MILLI, gt=0), to="std_s"),
        },
        name="normal_truncated jitter",
    ),
)
def normal_truncated(options: Mapping[str, float], rng: np.random.Generator) -> float:
    """Normal(``mean_ms``, ``std_ms``) conditioned on >= 0 (negative draws are re-drawn)."""
    while True:  # mean >= 0, so at least half the draws are accepted
        value = float(rng.normal(options["mean_s"], options["std_s"]))
        if value >= 0:
            return value


@dataclass(frozen=True)
class Jitter:
    """Extra propagation delay per hop (s), drawn from ``dist`` with ``options`` (SI)."""

    dist: str
    options: Mapping[str, float] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", FrozenMap(self.options))
        try:  # one throw-away draw checks the name and that the options fit it
            self.draw(np.random.default_rng(0))
        except (KeyError, TypeError, ValueError) as exc:
            raise SocsimError(
                f"{self.dist} jitter: bad options {dict(self.options)}: {exc}"
            ) from None

    def draw(self, rng: np.random.Generator) -> float:
        return JITTERS.get(self.dist).function(self.options, rng)


def retransmissions(rng: np.random.Generator, packets: int, loss_rate: float) -> tuple[int, int]:
    """Extra transmissions and rounds for ``packets`` packets over a lossy hop.

    Round 1 sends every packet; each is lost with probability ``loss_rate``,
    independently; round ``r + 1`` re-sends what round ``r`` lost (selective repeat)
    until nothing is lost. The extra transmissions sum to a negative-binomial draw
    (``E = packets × p / (1 - p)``); the rounds ``R`` satisfy ``P(R <= r) = (1 -
    p^r)^packets``. No draw is made when ``loss_rate`` is 0 or there are no packets.

    Returns
    -------
    (extra, rounds) : tuple of int
        ``rounds`` is 1 when nothing was lost.
    """
    extra, rounds, left = 0, 1, packets
    while left and loss_rate > 0:
        left = int(rng.binomial(left, loss_rate))
        if left:
            extra += left
            rounds += 1
    return extra, rounds


def direction_seed(seed: int, replicate: int, link: str, src: str) -> np.random.SeedSequence:
    """The SeedSequence of the direction of ``link`` leaving ``src`` (stable across runs)."""
    return named_seed(seed, replicate, _LINK_STREAMS, f"{link}:{src}")


class DirectionImpairments:
    """The random state of one link direction (its three Generators) for a run.

    Parameters
    ----------
    link : Link
    src : str
        The end the direction leaves.
    seed, replicate : int
        The scenario seed and replicate index.
    lead_s : float
        The part of the latency paid before the bits enter the link (all of it on a
        download, ``Hop.lead_s``): the delay after the last bit starts from the rest.
    """

    def __init__(self, link: Link, src: str, seed: int, replicate: int, lead_s: float = 0.0):
        up = src == link.a
        self.distribution = (
            link.bandwidth_distribution if up else link.reverse_bandwidth_distribution
        )
        self.jitter = link.jitter
        self.loss_rate = link.loss_rate
        self.packet_bits = link.mtu_bytes * 8
        self.latency_s = link.latency_s
        self.lead_s = lead_s
        streams = direction_seed(seed, replicate, link.name, src).spawn(3)
        self.capacity_rng, self.jitter_rng, self.loss_rng = map(np.random.default_rng, streams)
        self._path_arrival_s = -math.inf

    def capacity(self, steps) -> StepCapacity | RandomCapacity:
        """The direction's capacity over time given its (constant, outage) ``steps``."""
        static = StepCapacity(steps)
        if self.distribution is None:
            return static
        return RandomCapacity(static, self.distribution, self.capacity_rng)

    def inflate(self, bits: float) -> tuple[float, int]:
        """Bits the channel must carry for ``bits`` of payload, and the rounds it takes.

        A retransmission re-sends an average packet (``bits / N``), so the bits sent
        average ``bits / (1 - p)`` exactly.
        """
        if not self.loss_rate or bits <= 0:
            return bits, 1
        packets = math.ceil(bits / self.packet_bits)
        extra, rounds = retransmissions(self.loss_rng, packets, self.loss_rate)
        return (bits * (packets + extra) / packets if extra else bits), rounds

    def delay_s(self, end_s: float, rounds: int) -> float:
        """Delay from a transfer's last bit (``end_s``) to its delivery.

        ``latency + jitter``, but never ahead of the transfer that left this direction
        before it (the path is one FIFO queue: jitter does not reorder); then one round
        trip, ``2 × latency``, per retransmission round (a transfer waiting for lost
        packets can be overtaken).
        """
        delay = self.latency_s - self.lead_s  # the latency itself when nothing is paid ahead
        if self.jitter is not None:
            delay += self.jitter.draw(self.jitter_rng)
        last = self._path_arrival_s
        if end_s + delay < last:
            delay = last - end_s
            while end_s + delay < last:  # the engine adds delay to end_s: keep the order
                delay = math.nextafter(delay, math.inf)
        self._path_arrival_s = end_s + delay
        return delay + (rounds - 1) * 2 * self.latency_s


def impairments_for(
    link: Link, src: str, seed: int, replicate: int, lead_s: float = 0.0
) -> DirectionImpairments | None:
    """The direction's random state, or None when the link is deterministic."""
    if not link.stochastic:
        return None
    return DirectionImpairments(link, src, seed, replicate, lead_s)
