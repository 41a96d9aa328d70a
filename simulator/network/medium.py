"""A shared wireless medium (an access point or a cell): how its airtime is divided (pure).

Every station attached to a medium reaches the access point over its own rate (its
modulation and coding: a far phone sends at 6 Mbit/s, a near one at 54). Uplink and
downlink share the same airtime: the medium carries one frame at a time. A *contender*
is one station's queue in one direction (a phone's uplink, or the access point's queue
for that phone); contenders with data to send divide the airtime by one of two rules:

``throughput`` (802.11 DCF, the default)
    Each contender wins the channel equally often and sends the same amount per win,
    so all get the same throughput ``x`` and together fill the airtime:
    ``sum(x / r_i) = 1``, i.e. ``x = 1 / sum(1 / r_i)``. A slow station drags every
    other down to its own pace: the 802.11 performance anomaly (Heusse, Rousseau,
    Berger-Sabbatel, Duda, INFOCOM 2003).
``airtime``
    Each contender gets an equal share of the airtime: ``x_i = r_i / n``, as with
    time-based fairness (Tan and Guttag, USENIX ATC 2004; the airtime fairness
    scheduler of Linux Wi-Fi drivers). A slow station no longer slows the others.

With ``n`` equal stations both give ``r / n``. The rates are goodputs (what a station
gets alone, MAC overheads included), so collisions and back-off beyond them are not
modelled: a fluid airtime model, like the links' (``simulator.engine.links``).
"""

from __future__ import annotations

from collections.abc import Sequence

#: How contenders divide the airtime (see the module docstring).
FAIRNESS: tuple[str, ...] = ("throughput", "airtime")


def medium_rates(rates_bps: Sequence[float], fairness: str) -> list[float]:
    """The throughput (bit/s) each contender gets while these contend.

    Parameters
    ----------
    rates_bps : sequence of float
        Each contender's rate alone on the medium, bit/s (> 0).
    fairness : str
        ``throughput`` (equal throughput, 802.11 DCF) or ``airtime`` (equal airtime).

    Returns
    -------
    list of float
        Throughput per contender, bit/s, in the same order; their airtimes
        ``sum(x_i / r_i)`` add up to 1 (the medium is never idle while one has data).
    """
    n = len(rates_bps)
    if n == 0:
        return []
    if fairness == "airtime":
        return [r / n for r in rates_bps]
    if fairness == "throughput":
        equal = 1.0 / sum(1.0 / r for r in rates_bps)
        return [equal] * n
    raise ValueError(f"unknown fairness '{fairness}'; valid: {', '.join(FAIRNESS)}")


def station_link_name(medium: str, station: str) -> str:
    """The name of the station link a medium gives ``station`` (``wlan/phone[3]``): the
    ``link`` column of the transfers and radio tables."""
    return f"{medium}/{station}"
