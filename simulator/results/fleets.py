"""Per-fleet and per-medium aggregates: the ``fleets`` and ``media`` tables (pure pandas).

A fleet's members keep their identity in every other table (``phone[17]`` as a node,
``camera[17]`` as an app, ``wlan/phone[17]`` as a link); these two tables add what a
study of many devices reads first: per fleet and app, how its requests fared across
all members and how far apart the members are; per shared medium, how much of its
airtime was in use.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

FLEET_COLUMNS = [
    "fleet",
    "app",
    "members",
    "issued",
    "completed",
    "latency_mean_s",
    "latency_p50_s",
    "latency_p95_s",
    "latency_p99_s",
    "latency_max_s",
    "member_latency_min_s",
    "member_latency_max_s",
    "device_energy_j",
    "device_energy_per_member_j",
]
MEDIA_COLUMNS = [
    "medium",
    "access_point",
    "stations",
    "fairness",
    "up_bytes",
    "down_bytes",
    "airtime_busy_s",
    "airtime_utilisation",
]


_MEMBER_APP = re.compile(r"^(.*)\[([0-9]+)\]$")


def decision_text(apps: Sequence[str], decisions: Sequence[str]) -> str:
    """The summary's ``decision``: ``app=decision`` joined by ``;`` (the decision alone
    for one app), a run of fleet members with one decision written once as
    ``camera[0..199]=edge`` (1,000 members would make a 15 kB cell otherwise)."""
    if len(apps) == 1:
        return str(decisions[0])
    parts: list[list] = []  # [name, first index, last index, decision]
    for app, decision in zip(apps, decisions, strict=True):
        match = _MEMBER_APP.match(app)
        if match is not None:
            name, index = match.group(1), int(match.group(2))
            last = parts[-1] if parts else None
            if last and last[0] == name and last[2] == index - 1 and last[3] == decision:
                last[2] = index
                continue
            parts.append([name, index, index, decision])
        else:
            parts.append([app, None, None, decision])
    out = []
    for name, first, last, decision in parts:
        if first is None:
            out.append(f"{name}={decision}")
        elif first == last:
            out.append(f"{name}[{first}]={decision}")
        else:
            out.append(f"{name}[{first}..{last}]={decision}")
    return ";".join(out)


def fleet_table(
    fleet_apps: Mapping[str, tuple[str, str]],
    members: Mapping[str, Sequence[str]],
    app_names: Sequence[str],
    app_codes: np.ndarray,
    latency_s: np.ndarray,
    energy: pd.DataFrame,
) -> pd.DataFrame:
    """One row per (fleet, workload entry) over the apps the fleet made.

    Parameters
    ----------
    fleet_apps : mapping
        Member app -> (the workload entry's app, its fleet) (``FleetMap.apps``).
    members : mapping
        Fleet -> its member nodes (``FleetMap.members``).
    app_names : sequence of str
        The app of each code in ``app_codes``.
    app_codes : ndarray of int
        Per request id, the code of its app.
    latency_s : ndarray of float
        Per request id, its latency (s); NaN unless it completed.
    energy : DataFrame
        The ``energy`` table (``node, energy_j``): a member's device energy is the sum
        of its rows (units and radios) over the run's window.

    Returns
    -------
    DataFrame
        :data:`FLEET_COLUMNS`. Latency percentiles (numpy's linear interpolation) are
        over every completed request of every member; ``member_latency_min_s`` /
        ``_max_s`` are the lowest and highest of the members' mean latencies.
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for code, app in enumerate(app_names):
        if app in fleet_apps:
            template, fleet = fleet_apps[app]
            groups.setdefault((fleet, template), []).append(code)
    node_energy = energy.groupby("node", sort=False)["energy_j"].sum() if len(energy) else None
    rows = []
    for (fleet, template), codes in groups.items():
        mine = np.isin(app_codes, codes)
        latency = latency_s[mine]
        done = ~np.isnan(latency)
        values = latency[done]
        per_member = [latency_s[app_codes == c] for c in codes]
        means = [float(np.nanmean(x)) for x in per_member if np.any(~np.isnan(x))]
        nodes = members[fleet]
        energy_j = (
            float(node_energy.reindex(list(nodes)).fillna(0.0).sum())
            if node_energy is not None
            else 0.0
        )

        def pct(q: float, values: np.ndarray = values) -> float:
            return float(np.percentile(values, q)) if len(values) else math.nan

        rows.append(
            {
                "fleet": fleet,
                "app": template,
                "members": len(codes),
                "issued": int(mine.sum()),
                "completed": int(done.sum()),
                "latency_mean_s": float(values.mean()) if len(values) else math.nan,
                "latency_p50_s": pct(50),
                "latency_p95_s": pct(95),
                "latency_p99_s": pct(99),
                "latency_max_s": float(values.max()) if len(values) else math.nan,
                "member_latency_min_s": min(means) if means else math.nan,
                "member_latency_max_s": max(means) if means else math.nan,
                "device_energy_j": energy_j,
                "device_energy_per_member_j": energy_j / len(nodes),
            }
        )
    return pd.DataFrame(rows, columns=FLEET_COLUMNS)


def media_table(
    media: Sequence[tuple[str, str, Sequence[str], str, float]],
    links: pd.DataFrame,
    window_s: float,
) -> pd.DataFrame:
    """One row per shared medium.

    Parameters
    ----------
    media : sequence of (medium, access point, station links, fairness, busy s)
        ``busy s`` is the time any station or the access point had data to send.
    links : DataFrame
        The ``links`` table (``link, src_node, dst_node, bytes``).
    window_s : float
        The run's energy window (s): ``airtime_utilisation`` is busy time over it.
    """
    rows = []
    for name, hub, station_links, fairness, busy_s in media:
        mine = links[links["link"].isin(station_links)] if len(links) else links
        down = mine[mine["src_node"] == hub]["bytes"].sum() if len(mine) else 0
        up = mine[mine["src_node"] != hub]["bytes"].sum() if len(mine) else 0
        rows.append(
            {
                "medium": name,
                "access_point": hub,
                "stations": len(station_links),
                "fairness": fairness,
                "up_bytes": int(up),
                "down_bytes": int(down),
                "airtime_busy_s": busy_s,
                "airtime_utilisation": busy_s / window_s if window_s > 0 else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=MEDIA_COLUMNS)


#: The sweep row's load figures (:func:`load_figures`), after the indicators: per tier,
#: its busiest unit; the busiest shared medium. Why latency climbs with the load.
LOAD_KEYS = (
    "airtime_busy_s",
    "airtime_utilisation",
    *(f"{role}_{name}" for role in ("edge", "cloud", "device") for name in (
        "busy_s", "utilisation", "op_wait_mean_s")),
)  # fmt: skip


def load_figures(units: pd.DataFrame, media: pd.DataFrame) -> dict[str, float]:
    """How loaded the run's bottlenecks were, as flat figures (:data:`LOAD_KEYS`).

    Parameters
    ----------
    units : DataFrame
        The ``units`` table (``role, busy_s, utilisation, queue_wait_mean_s``).
    media : DataFrame
        The ``media`` table (``airtime_busy_s, airtime_utilisation``).

    Returns
    -------
    dict
        ``airtime_busy_s`` (s) and ``airtime_utilisation`` (fraction of the energy
        window) of the shared medium whose airtime was busy longest; per role ``edge``,
        ``cloud`` and ``device``, ``<role>_busy_s`` (whole-unit s),
        ``<role>_utilisation`` (busy over the requests' span, 0 to 1) and
        ``<role>_op_wait_mean_s`` (s an op waited for it, on average: its
        ``queue_wait_mean_s``; a request of ``k`` ops there waits about ``k`` times
        that) of the unit of a node of that role with the most busy time (the first in
        declaration order on a tie). NaN where there is no such medium or unit.
    """
    out = dict.fromkeys(LOAD_KEYS, math.nan)
    if len(media):
        busiest = media.loc[media["airtime_busy_s"].idxmax()]
        out["airtime_busy_s"] = float(busiest["airtime_busy_s"])
        out["airtime_utilisation"] = float(busiest["airtime_utilisation"])
    for role in ("edge", "cloud", "device"):
        mine = units[units["role"] == role] if len(units) else units
        if not len(mine):
            continue
        busiest = mine.loc[mine["busy_s"].idxmax()]
        out[f"{role}_busy_s"] = float(busiest["busy_s"])
        out[f"{role}_utilisation"] = float(busiest["utilisation"])
        out[f"{role}_op_wait_mean_s"] = float(busiest["queue_wait_mean_s"])
    return out
