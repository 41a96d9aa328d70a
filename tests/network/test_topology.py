"""Links, routes and store-and-forward transfer times (simulator.network.topology)."""

from __future__ import annotations

import math
import pickle

import pytest

from simulator.errors import SocsimError
from simulator.network.topology import BITS_PER_BYTE, Hop, Link, Network, Radio

EXACT = 1e-12
MB = 1_000_000


def diamond() -> Network:
    """a -(10 ms, 8/16 Mbit/s)- b -(5 ms, 80/40 Mbit/s)- c, plus a slow direct a -(50 ms)- c.

    d is isolated.
    """
    return Network(
        ["a", "b", "c", "d"],
        [
            Link("ab", "a", "b", 0.010, 8e6, 16e6),
            Link("bc", "b", "c", 0.005, 80e6, 40e6),
            Link("ac", "a", "c", 0.050, 1e9, 1e9),
        ],
    )


def test_bits_per_byte():
    assert BITS_PER_BYTE == 8


def test_least_latency_route_takes_two_hops():
    # a-b-c has 15 ms of latency, the direct a-c link 50 ms.
    hops = diamond().route("a", "c")
    assert hops == (
        Hop("ab", "a", "b", 0.010, 8e6),
        Hop("bc", "b", "c", 0.005, 80e6),
    )


def test_reverse_route_uses_reverse_bandwidths():
    hops = diamond().route("c", "a")
    assert [(h.link, h.src, h.dst) for h in hops] == [("bc", "c", "b"), ("ab", "b", "a")]
    assert [h.bandwidth_bps for h in hops] == [40e6, 16e6]


def test_store_and_forward_time_by_hand():
    net = diamond()
    # a -> c: 8e6 bit / 8e6 + 10 ms + 8e6 bit / 80e6 + 5 ms = 1 + 0.01 + 0.1 + 0.005
    assert net.transfer_time_s(MB, "a", "c") == pytest.approx(1.115, rel=EXACT)
    # c -> a: 8e6 / 40e6 + 5 ms + 8e6 / 16e6 + 10 ms = 0.2 + 0.005 + 0.5 + 0.01
    assert net.transfer_time_s(MB, "c", "a") == pytest.approx(0.715, rel=EXACT)
    # a -> b alone: 1 s + 10 ms; b -> a: 0.5 s + 10 ms
    assert net.transfer_time_s(MB, "a", "b") == pytest.approx(1.01, rel=EXACT)
    assert net.transfer_time_s(MB, "b", "a") == pytest.approx(0.51, rel=EXACT)


def test_zero_bytes_pay_latency_only():
    assert diamond().transfer_time_s(0, "a", "c") == pytest.approx(0.015, rel=EXACT)


def test_hop_time():
    hop = Hop("l", "x", "y", 0.02, 5.85e6)
    assert hop.time_s(602_112) == pytest.approx(602_112 * 8 / 5.85e6 + 0.02, rel=EXACT)


def test_route_to_self_is_empty_and_free():
    net = diamond()
    assert net.route("b", "b") == ()
    assert net.transfer_time_s(MB, "b", "b") == 0.0


def test_route_is_cached():
    net = diamond()
    assert net.route("a", "c") is net.route("a", "c")


def test_direct_link_wins_when_it_is_faster():
    net = Network(
        ["a", "b", "c"],
        [
            Link("ab", "a", "b", 0.010, 1e6, 1e6),
            Link("bc", "b", "c", 0.010, 1e6, 1e6),
            Link("ac", "a", "c", 0.015, 1e6, 1e6),
        ],
    )
    assert [h.link for h in net.route("a", "c")] == ["ac"]


def test_route_ignores_bandwidth():
    # The route is the least-latency path even when it is the slower one for big tensors.
    net = diamond()
    assert net.transfer_time_s(100 * MB, "a", "c") > 100 * MB * 8 / 1e9 + 0.05


def test_no_route():
    with pytest.raises(SocsimError, match="no network route from node 'a' to node 'd'"):
        diamond().route("a", "d")
    with pytest.raises(SocsimError, match="no network route from node 'd' to node 'c'"):
        diamond().transfer_time_s(1, "d", "c")


def test_route_names_unknown_node():
    with pytest.raises(SocsimError, match=r"unknown node 'z' in a route; nodes: a, b, c, d"):
        diamond().route("a", "z")
    with pytest.raises(SocsimError, match="unknown node 'z'"):
        diamond().route("z", "z")


def test_duplicate_link_is_an_error():
    with pytest.raises(SocsimError, match="links 'ab' and 'ba' join the same nodes"):
        Network(
            ["a", "b"],
            [Link("ab", "a", "b", 0.01, 1e6, 1e6), Link("ba", "b", "a", 0.02, 2e6, 2e6)],
        )


def test_link_naming_unknown_node():
    with pytest.raises(SocsimError, match="link 'ax': unknown node 'x'; nodes: a, b"):
        Network(["a", "b"], [Link("ax", "a", "x", 0.01, 1e6, 1e6)])


def test_network_links_and_graph():
    net = diamond()
    assert list(net.links) == ["ab", "bc", "ac"]
    assert set(net.graph.nodes) == {"a", "b", "c", "d"}
    assert net.graph.number_of_edges() == 3


def test_link_bandwidth_per_direction():
    link = Link("l", "phone", "cloud", 0.035, 5.85e6, 13e6)
    assert link.bandwidth_from("phone") == 5.85e6
    assert link.bandwidth_from("cloud") == 13e6
    with pytest.raises(SocsimError, match="node 'edge' is not an end of link 'l'"):
        link.bandwidth_from("edge")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("l", "a", "a", 0.0, 1e6, 1e6), "joins node 'a' to itself"),
        (("l", "a", "b", -0.001, 1e6, 1e6), "latency must be >= 0"),
        (("l", "a", "b", math.nan, 1e6, 1e6), "latency must be >= 0"),
        (("l", "a", "b", 0.0, 0.0, 1e6), "bandwidths must be > 0"),
        (("l", "a", "b", 0.0, 1e6, -1.0), "bandwidths must be > 0"),
        (("l", "a", "b", 0.0, math.nan, 1e6), "bandwidths must be > 0"),
    ],
)
def test_link_rejects(args, needle):
    with pytest.raises(SocsimError, match=needle):
        Link(*args)


def test_radio_checks():
    assert Radio(tx_w=3.853, rx_w=1.964, idle_w=0.02).idle_w == 0.02
    assert Radio(tx_w=1.0, rx_w=1.0).idle_w == 0.0
    with pytest.raises(SocsimError, match="radio: tx_w must be >= 0"):
        Radio(tx_w=-1.0, rx_w=1.0)
    with pytest.raises(SocsimError, match="radio: rx_w must be >= 0"):
        Radio(tx_w=1.0, rx_w=math.nan)
    with pytest.raises(SocsimError, match="must be >= idle_w"):
        Radio(tx_w=1.0, rx_w=1.0, idle_w=2.0)


def test_network_objects_pickle():
    link = Link("l", "a", "b", 0.01, 1e6, 2e6, Radio(tx_w=2.0, rx_w=1.0, idle_w=0.1), "lte")
    assert pickle.loads(pickle.dumps(link)) == link
    hop = diamond().route("a", "c")[0]
    assert pickle.loads(pickle.dumps(hop)) == hop
