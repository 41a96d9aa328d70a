"""Does a scenario run a radio beyond the rates its power fit was measured on? (pure + warn)

A throughput-linear radio fit (Huang et al., MobiSys 2012) is a measurement over a range
of rates; beyond it the fit is extrapolated until it saturates at the radio's sourced
``max_w`` (:class:`simulator.network.radio_power.Radio`). Nothing in the numbers shows that, so
a scenario that runs a radio there is told, once per radio, with a
:class:`RadioRangeWarning`:

* before running (``socsim validate``): at the rates its links can carry, each
  direction's constant bandwidth, the peak of its bandwidth trace, or the mean of its
  random capacity — :func:`link_excesses`;
* after running (``socsim run``): at the rates the radio actually carried, from the
  transfers simulated — :func:`run_excesses`.

:func:`warn_excesses` turns the findings into warnings; library users filter them with
``warnings.filterwarnings("ignore", category=RadioRangeWarning)``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.errors import SocsimWarning
from simulator.network.radio_power import Radio
from simulator.network.topology import BITS_PER_BYTE, Link

if TYPE_CHECKING:  # annotations only: `socsim validate` must not import pandas
    import pandas as pd

MEGA = 1e6
UPLINK, DOWNLINK = "uplink", "downlink"


class RadioRangeWarning(SocsimWarning):
    """A radio runs beyond the throughput range its power model was measured on."""


@dataclass(frozen=True)
class RadioExcess:
    """One direction of one radio running beyond its measured range (bit/s, W).

    Attributes
    ----------
    link, node : str
        The link and the device node whose radio it is.
    direction : {"uplink", "downlink"}
        Sending from ``node`` or receiving at it.
    rate_bps : float
        The rate found (the link's capacity, or the transfers' rate).
    top_bps : float
        The top of the range the fit was measured on.
    radio : Radio
    """

    link: str
    node: str
    direction: str
    rate_bps: float
    top_bps: float
    radio: Radio


def _device_radios(
    links: Mapping[str, Link], roles: Mapping[str, str]
) -> Iterator[tuple[Link, Radio, str]]:
    """(link, its radio, device node) for every radio that draws from a device's battery."""
    for link in links.values():
        radio = link.radio
        if radio is None or not radio.stateful:
            continue
        for node in (link.a, link.b):
            if roles.get(node) == "device":
                yield link, radio, node


def _capacity_bps(link: Link, src: str) -> float:
    """The highest rate the link can carry from ``src``: its trace's peak, its random
    capacity's mean, or its constant bandwidth."""
    forward = src == link.a
    trace = link.bandwidth_trace if forward else link.reverse_bandwidth_trace
    if trace:
        return max(bps for _, bps in trace)
    dist = link.bandwidth_distribution if forward else link.reverse_bandwidth_distribution
    if dist is not None:
        return dist.mean_bps
    return link.bandwidth_bps if forward else link.reverse_bandwidth_bps


def _excesses(
    link: Link, radio: Radio, node: str, up_bps: float, down_bps: float
) -> Iterator[RadioExcess]:
    beyond = radio.beyond_measured(up_bps, down_bps)
    for direction, rate_bps in ((UPLINK, up_bps), (DOWNLINK, down_bps)):
        if direction in beyond:
            yield RadioExcess(link.name, node, direction, rate_bps, beyond[direction], radio)


def link_excesses(links: Mapping[str, Link], roles: Mapping[str, str]) -> list[RadioExcess]:
    """Radios whose links can carry rates beyond the radio's measured range.

    Parameters
    ----------
    links : mapping of name to Link
        ``Network.links``.
    roles : mapping of node name to role
        ``device`` nodes carry the radios.

    Returns
    -------
    list of RadioExcess
        In link order, uplink before downlink.
    """
    found: list[RadioExcess] = []
    for link, radio, node in _device_radios(links, roles):
        other = link.b if node == link.a else link.a
        found += _excesses(link, radio, node, _capacity_bps(link, node), _capacity_bps(link, other))
    return found


def _peak_concurrent_bps(rows: pd.DataFrame) -> float:
    """The highest sum of the rates of transfers serialising at once (bit/s).

    Each transfer counts at its mean rate, bytes over serialisation time; on a ``fifo``
    link transfers do not overlap, so this is the highest single rate.
    """
    events = []
    for nbytes, start_s, end_s in zip(rows["bytes"], rows["start_s"], rows["end_s"], strict=True):
        if end_s > start_s:
            rate = nbytes * BITS_PER_BYTE / (end_s - start_s)
            events += [(start_s, 1, rate), (end_s, 0, -rate)]  # ends first at a tie
    peak = level = 0.0
    for _, _, delta in sorted(events):
        level += delta
        peak = max(peak, level)
    return peak


def carried_rates(transfers: pd.DataFrame, links: pd.DataFrame) -> dict[tuple[str, str], float]:
    """The peak rate (bit/s) each link direction ``(link, src_node)`` carried in a run.

    From the ``transfers`` table when the run kept it (``trace="full"``): the highest sum
    of concurrent transfers' mean rates; otherwise from the ``links`` table: bytes over
    busy time, the mean rate of its transfers.
    """
    rates: dict[tuple[str, str], float] = {}
    network = transfers[transfers["link"].notna()] if len(transfers) else transfers
    if len(network):
        for key, rows in network.groupby(["link", "src_node"], sort=True):
            rates[key] = _peak_concurrent_bps(rows)
        return rates
    for row in links.itertuples(index=False):
        if row.busy_s > 0:
            rates[(row.link, row.src_node)] = row.bytes * BITS_PER_BYTE / row.busy_s
    return rates


def run_excesses(
    links: Mapping[str, Link],
    roles: Mapping[str, str],
    transfers: pd.DataFrame,
    link_table: pd.DataFrame,
) -> list[RadioExcess]:
    """Radios that carried rates beyond their measured range in a run.

    Parameters
    ----------
    links, roles
        As for :func:`link_excesses`.
    transfers, link_table : DataFrame
        The run's ``transfers`` and ``links`` tables (:class:`RunResult`).

    Returns
    -------
    list of RadioExcess
    """
    rates = carried_rates(transfers, link_table)
    found: list[RadioExcess] = []
    for link, radio, node in _device_radios(links, roles):
        other = link.b if node == link.a else link.a
        up = rates.get((link.name, node), 0.0)
        down = rates.get((link.name, other), 0.0)
        found += _excesses(link, radio, node, up, down)
    return found


def describe(excesses: Iterable[RadioExcess]) -> str:
    """One sentence about one radio's excesses (all of the same link and node)."""
    excesses = list(excesses)
    first = excesses[0]
    radio = first.radio
    parts = [
        f"{e.direction} {e.rate_bps / MEGA:.4g} Mbit/s (measured up to {e.top_bps / MEGA:.4g})"
        for e in excesses
    ]
    return (
        f"radio of link '{first.link}' at node '{first.node}' ({radio.model}) runs at "
        f"{', '.join(parts)}, outside the range its power model was measured on; "
        + _beyond_text(radio)
    )


def _beyond_text(radio: Radio) -> str:
    if radio.max_w is None:
        return "beyond it the linear fit is extrapolated without bound (give max_w)"
    return f"beyond it the linear fit is extrapolated and saturates at max_w = {radio.max_w:.4g} W"


def warn_excesses(excesses: Iterable[RadioExcess], where: str = "") -> int:
    """Emit one :class:`RadioRangeWarning` per radio; return how many were emitted.

    ``where`` (e.g. the scenario file) prefixes each message.
    """
    by_radio: dict[tuple[str, str], list[RadioExcess]] = {}
    for excess in excesses:  # a fleet's members: one warning for all (_fleet_form)
        key = (_fleet_form(excess.link), _fleet_form(excess.node))
        by_radio.setdefault(key, []).append(excess)
    prefix = f"{where}: " if where else ""
    for (link, node), group in by_radio.items():
        radios = {(e.link, e.node) for e in group}
        text = describe(group) if len(radios) == 1 else _describe_fleet(link, node, group)
        warnings.warn(prefix + text, RadioRangeWarning, stacklevel=2)
    return len(by_radio)


def _describe_fleet(link: str, node: str, excesses: list[RadioExcess]) -> str:
    """One sentence about the radios of a fleet's members (the highest rate per direction)."""
    tops: dict[str, RadioExcess] = {}
    for e in excesses:
        if e.direction not in tops or e.rate_bps > tops[e.direction].rate_bps:
            tops[e.direction] = e
    parts = [
        f"{e.direction} up to {e.rate_bps / MEGA:.4g} Mbit/s "
        f"(measured up to {e.top_bps / MEGA:.4g})"
        for e in tops.values()
    ]
    radio = excesses[0].radio
    count = len({(e.link, e.node) for e in excesses})
    return (
        f"radios of links '{link}' at nodes '{node}' ({count} radios, {radio.model}) run at "
        f"{', '.join(parts)}, outside the range their power model was measured on; "
        + _beyond_text(radio)
    )


def _fleet_form(name: str) -> str:
    """``wlan/phone[17]`` -> ``wlan/phone[*]``: the members of a fleet share a warning."""
    return re.sub(r"\[[0-9]+\]", "[*]", name)


def _roles(platform) -> dict[str, str]:
    return {name: node.role for name, node in platform.nodes.items()}


def warn_scenario(scenario, where: str = "") -> int:
    """:func:`warn_excesses` for a loaded Scenario at its links' rates (``validate``)."""
    platform = scenario.platform
    return warn_excesses(link_excesses(platform.network.links, _roles(platform)), where)


def warn_sweep(checked: Iterable[tuple[str, object]], where: str = "") -> int:
    """:func:`warn_excesses` for a sweep's validated values, before anything runs.

    Parameters
    ----------
    checked : iterable of (label, Scenario)
        Each swept value's scenario (the value set alone, as ``check_values`` makes it)
        and its label, e.g. ``links.air.bandwidth_mbps=300``.
    where : str
        Prefixes each message (the sweep file).

    Returns
    -------
    int
        Warnings emitted: one per radio that runs beyond its measured range at one or
        more values; per direction it names the values (at most five) or says "at every
        value", and the highest rate.
    """
    hits: dict[tuple[str, str], dict[str, list[tuple[str, RadioExcess]]]] = {}
    total = 0
    for label, scenario in checked:
        total += 1
        platform = scenario.platform  # type: ignore[attr-defined]
        for excess in link_excesses(platform.network.links, _roles(platform)):
            key = (_fleet_form(excess.link), _fleet_form(excess.node))
            per_direction = hits.setdefault(key, {})
            found = per_direction.setdefault(excess.direction, [])
            if not found or found[-1][0] != label:  # a fleet's radios: once per value
                found.append((label, excess))
    prefix = f"{where}: " if where else ""
    for (link, node), per_direction in hits.items():
        parts = []
        for direction, found in per_direction.items():
            top = max(e.rate_bps for _, e in found)
            if len(found) == total:
                which = "at every swept value"
            else:
                labels = [label for label, _ in found]
                more = f" and {len(labels) - 5} more" if len(labels) > 5 else ""
                which = f"at {len(labels)} of {total} swept values ({', '.join(labels[:5])}{more})"
            parts.append(
                f"{direction} up to {top / MEGA:.4g} Mbit/s {which} (measured up to "
                f"{found[0][1].top_bps / MEGA:.4g})"
            )
        radio = next(iter(per_direction.values()))[0][1].radio
        warnings.warn(
            f"{prefix}sweep: radio of link '{link}' at node '{node}' ({radio.model}) runs "
            f"beyond the range its power model was measured on: {'; '.join(parts)}; "
            + _beyond_text(radio),
            RadioRangeWarning,
            stacklevel=2,
        )
    return len(hits)


def warn_run(scenario, result, where: str = "") -> int:
    """:func:`warn_excesses` for a finished run at the rates it carried (``run``)."""
    platform = scenario.platform
    found = run_excesses(platform.network.links, _roles(platform), result.transfers, result.links)
    return warn_excesses(found, where)
