"""Exact maximum flow on integer capacities (Dinic) and the minimum cut it implies.

``min_cut`` used networkx's preflow-push on ``Fraction`` capacities; every push compared
and subtracted rationals through dict-of-dict residual graphs. Here capacities are the
same rationals scaled to integers over their common denominator (exact), arcs live in
flat lists, and Dinic's algorithm (BFS levels, then blocking flows) augments them.

The cut returned does not depend on the algorithm: the nodes that can still reach the
sink through arcs with residual capacity are the same for every maximum flow (the
smallest sink side of a minimum cut), so any exact max-flow gives today's partition.
Pure: no state, no I/O.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Iterable
from fractions import Fraction


def scale_to_integers(caps: Iterable[Fraction | None]) -> tuple[list[int | None], int]:
    """(integer capacities, denominator): each cap = integer / denominator, exactly."""
    caps = list(caps)
    denominator = 1
    for cap in caps:
        if cap is not None:
            denominator = math.lcm(denominator, Fraction(cap).denominator)
    scaled = [None if cap is None else int(Fraction(cap) * denominator) for cap in caps]
    return scaled, denominator


def min_cut_sink_side(
    arcs: Iterable[tuple[Hashable, Hashable, int | None]], source: Hashable, sink: Hashable
) -> tuple[int, set]:
    """(max-flow value, nodes that reach ``sink`` in the residual graph of a max flow).

    ``arcs`` are (u, v, capacity) with non-negative integer capacities, None for an
    infinite one (no path of infinite arcs may join source to sink). The returned set
    is the smallest sink side of a minimum cut (unique, whatever the flow).
    """
    ids: dict[Hashable, int] = {source: 0, sink: 1}
    to: list[int] = []
    cap: list[int] = []
    adj: list[list[int]] = [[], []]
    arcs = list(arcs)
    infinite = sum(c for _, _, c in arcs if c is not None) + 1
    for u, v, c in arcs:
        for node in (u, v):
            if node not in ids:
                ids[node] = len(adj)
                adj.append([])
        a, b = ids[u], ids[v]
        adj[a].append(len(to))
        to.append(b)
        cap.append(infinite if c is None else c)
        adj[b].append(len(to))  # the reverse arc: arc e's partner is e ^ 1
        to.append(a)
        cap.append(0)
    flow = 0
    size = len(adj)
    while True:
        level = _levels(adj, to, cap, size)
        if level[1] < 0:
            break
        flow += _blocking_flow(adj, to, cap, level)
    names = list(ids)
    reach = {1}
    queue = deque([1])
    while queue:
        v = queue.popleft()
        for e in adj[v]:
            u = to[e]
            if u not in reach and cap[e ^ 1] > 0:  # residual arc u -> v
                reach.add(u)
                queue.append(u)
    return flow, {names[i] for i in reach}


def _levels(adj, to, cap, size) -> list[int]:
    """BFS distance from the source (node 0) over residual arcs; -1 when unreached."""
    level = [-1] * size
    level[0] = 0
    queue = deque([0])
    while queue:
        u = queue.popleft()
        for e in adj[u]:
            v = to[e]
            if cap[e] > 0 and level[v] < 0:
                level[v] = level[u] + 1
                queue.append(v)
    return level


def _blocking_flow(adj, to, cap, level) -> int:
    """Augment along level-increasing paths until none is left (iterative DFS)."""
    pushed = 0
    nxt = [0] * len(adj)
    path: list[int] = []
    u = 0
    while True:
        if u == 1:  # at the sink: push the bottleneck, restart from the source
            f = min(cap[e] for e in path)
            for e in path:
                cap[e] -= f
                cap[e ^ 1] += f
            pushed += f
            path.clear()
            u = 0
            continue
        edges = adj[u]
        i = nxt[u]
        while i < len(edges):
            e = edges[i]
            if cap[e] > 0 and level[to[e]] == level[u] + 1:
                break
            i += 1
        nxt[u] = i
        if i < len(edges):
            path.append(edges[i])
            u = to[edges[i]]
            continue
        if u == 0:
            return pushed
        level[u] = -1  # a dead end for this phase
        e = path.pop()
        u = to[e ^ 1]
        nxt[u] += 1
