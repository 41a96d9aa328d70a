"""The platform and the cost oracle's transfer model (simulator.platform)."""

from __future__ import annotations

import math
import pickle

import pytest

from simulator.errors import PlacementError, SocsimError
from simulator.graph.model import Edge, Op
from simulator.hardware.units import ComputeUnit, Node
from simulator.network.topology import Hop, Link
from simulator.platform import CostOracle, Platform, Transfer, describe_units

EXACT = 1e-12
MB = 1_000_000


def platform() -> Platform:
    """phone (cpu, gpu; 50 us sync, 2 GB/s copies), watch (cpu; free copies), cloud (gpu).

    phone -(20 ms, 10/20 Mbit/s)- cloud; the watch is not connected.
    """
    phone = Node(
        "phone",
        "device",
        (
            ComputeUnit("cpu", "cpu", peak_flops={"fp32": 1e9}, active_w=1.0),
            ComputeUnit("gpu", "gpu", peak_flops={"fp32": 4e9}, supports={"conv"}),
        ),
        sync_s=50e-6,
        shared_memory_bandwidth_bytes_per_s=2e9,
    )
    watch = Node(
        "watch",
        "device",
        (ComputeUnit("cpu", "cpu", peak_flops={"fp32": 1e8}), ComputeUnit("dsp", "dsp")),
        sync_s=1e-3,
    )
    cloud = Node("cloud", "cloud", (ComputeUnit("gpu", "gpu", peak_flops={"fp32": 1e12}),))
    return Platform([phone, watch, cloud], [Link("up", "phone", "cloud", 0.02, 10e6, 20e6)])


@pytest.fixture
def oracle() -> CostOracle:
    return CostOracle(platform())


def test_local_transfer_is_free(oracle):
    t = oracle.edge_transfer(Edge("a", "b", MB), "phone.cpu", "phone.cpu")
    assert t == Transfer("local")
    assert t.time_s(MB) == 0.0
    assert oracle.transfer_time_s(Edge("a", "b", MB, comm_s=0.5), MB, "cloud.gpu", "cloud.gpu") == 0


def test_explicit_comm_time_overrides_the_model(oracle):
    edge = Edge("a", "b", MB, comm_s=0.004)
    for src, dst in (("phone.cpu", "phone.gpu"), ("phone.cpu", "cloud.gpu")):
        t = oracle.edge_transfer(edge, src, dst)
        assert t.kind == "explicit"
        assert t.time_s(MB) == 0.004
        assert t.time_s(100 * MB) == 0.004
        assert oracle.transfer_time_s(edge, MB, src, dst) == 0.004


def test_onchip_transfer_pays_sync_and_copy(oracle):
    t = oracle.edge_transfer(Edge("a", "b", MB), "phone.cpu", "phone.gpu")
    assert t.kind == "onchip"
    assert t.delay_s == 50e-6
    assert t.copy_bytes_per_s == 2e9
    assert t.hops == ()
    # 50 us + 1e6 B / 2e9 B/s = 50 us + 500 us
    assert t.time_s(MB) == pytest.approx(5.5e-4, rel=EXACT)
    assert oracle.transfer_time_s(None, MB, "phone.gpu", "phone.cpu") == pytest.approx(
        5.5e-4, rel=EXACT
    )


def test_onchip_with_infinite_copy_bandwidth_is_sync_only(oracle):
    t = oracle.edge_transfer(None, "watch.cpu", "watch.dsp")
    assert t.kind == "onchip"
    assert t.copy_bytes_per_s == math.inf
    assert t.time_s(10 * MB) == 1e-3


def test_network_transfer_follows_the_route(oracle):
    t = oracle.edge_transfer(Edge("a", "b", MB), "phone.cpu", "cloud.gpu")
    assert t.kind == "network"
    assert t.hops == (Hop("up", "phone", "cloud", 0.02, 10e6),)
    # uplink: 8e6 bit / 10e6 + 20 ms; downlink: 8e6 / 20e6 + 20 ms
    assert t.time_s(MB) == pytest.approx(0.82, rel=EXACT)
    assert oracle.transfer_time_s(None, MB, "cloud.gpu", "phone.gpu") == pytest.approx(
        0.42, rel=EXACT
    )
    assert oracle.node_transfer_time_s(MB, "phone", "cloud") == pytest.approx(0.82, rel=EXACT)
    assert oracle.node_transfer_time_s(MB, "phone", "phone") == 0.0
    assert oracle.route("cloud", "phone") == (Hop("up", "cloud", "phone", 0.02, 20e6),)


def test_unconnected_nodes_have_no_route(oracle):
    with pytest.raises(SocsimError, match="no network route from node 'watch' to node 'cloud'"):
        oracle.edge_transfer(None, "watch.cpu", "cloud.gpu")


def test_transfer_time_sums_delay_copy_and_hops():
    hop = Hop("l", "a", "b", 0.01, 8e6)
    t = Transfer("network", delay_s=0.001, copy_bytes_per_s=1e6, hops=(hop, hop))
    assert t.time_s(MB) == pytest.approx(0.001 + 1.0 + 2 * (1.0 + 0.01), rel=EXACT)


def test_op_time_and_energy_through_the_oracle(oracle):
    op = Op("c", "conv", flops=2e9)
    assert oracle.op_time_s(op, "phone.cpu") == pytest.approx(2.0, rel=EXACT)
    assert oracle.op_time_s(op, "phone.gpu") == pytest.approx(0.5, rel=EXACT)
    assert oracle.op_energy_j(op, "phone.cpu") == pytest.approx(2.0, rel=EXACT)
    assert oracle.op_energy_j(op, "phone.gpu") == 0.0
    assert oracle.supports(op, "phone.gpu")


def test_oracle_raises_placement_error_for_unsupported_op(oracle):
    op = Op("f", "fc", flops=1.0)
    assert not oracle.supports(op, "phone.gpu")
    assert oracle.unsupported_reason(op, "phone.gpu") == "unit does not support op kind 'fc'"
    with pytest.raises(PlacementError) as info:
        oracle.op_time_s(op, "phone.gpu")
    assert info.value.op == "f"
    assert "cannot run on 'phone.gpu'" in info.value.message
    again = pickle.loads(pickle.dumps(info.value))
    assert (again.message, again.op, str(again)) == (info.value.message, "f", str(info.value))
    with pytest.raises(PlacementError, match="cannot run"):
        oracle.op_energy_j(op, "phone.gpu")


def test_platform_names_and_lookups():
    p = platform()
    assert p.unit_ids == ("phone.cpu", "phone.gpu", "watch.cpu", "watch.dsp", "cloud.gpu")
    assert p.units_of("watch") == ("watch.cpu", "watch.dsp")
    assert p.unit("cloud.gpu").peak_flops["fp32"] == 1e12
    assert p.node_of("watch.dsp").name == "watch"
    assert p.role_of("cloud") == "cloud"
    assert p.resolve_unit("gpu", "phone") == "phone.gpu"
    assert p.resolve_unit("cloud.gpu", "phone") == "cloud.gpu"
    assert p.resolve_unit("dsp", "watch") == "watch.dsp"
    assert describe_units(p)["watch.dsp"] == "dsp"


def test_platform_unknown_unit_suggests():
    p = platform()
    with pytest.raises(SocsimError, match=r"no unit 'phone.gpuu' \(did you mean 'phone.gpu'\?\)"):
        p.unit("phone.gpuu")
    with pytest.raises(SocsimError, match="no unit 'dsp'"):
        p.resolve_unit("dsp", "phone")  # the phone has no dsp


def test_platform_rejects_duplicate_nodes_and_bad_links():
    node = Node("a", "device", (ComputeUnit("cpu", "cpu"),))
    with pytest.raises(SocsimError, match="duplicate node name 'a'"):
        Platform([node, node])
    with pytest.raises(SocsimError, match="link 'l': unknown node 'b'; nodes: a"):
        Platform([node], [Link("l", "a", "b", 0.0, 1e6, 1e6)])
