"""The same answer in any unit of capacity: theta scales with the capacities, exactness needs
two finite bounds, and a certificate with an infinite upper bound proves nothing."""

from dataclasses import replace

import networkx as nx
import numpy as np
import pytest
from flow_helpers import certified

import fabricopt as fo
from fabricopt.flow.units import capacity_unit


def scaled_fabric(fab, factor):
    """``fab`` with every capacity multiplied by ``factor`` (a fresh graph, no claim kept)."""
    g = fab.graph.copy()
    for _, _, d in g.edges(data=True):
        d["capacity"] = d["capacity"] * factor
    # The unit is stated, so rates past 1 Pb/s per link are taken as meant (not as bit/s).
    return fo.from_networkx(g, endpoints=fab.endpoints, name=f"{fab.name} x{factor:g}",
                            capacity_unit="Gb/s")


@pytest.mark.parametrize("k", range(-6, 13))
@pytest.mark.parametrize("method", ["lp", "approx"])
def test_theta_scales_with_capacity(k, method):
    # Theta is homogeneous of degree one in the capacities: multiply every capacity by 10^k
    # and the largest fraction of the same demand scales by 10^k. The base: a 5-ring of 1 Gb/s
    # links, 10 arcs; distances from a node sum to 1 + 1 + 2 + 2 = 6, so the hop bound is
    # 10 / (5 x 6) = 1/3, tight because the ring is edge-transitive.
    base = fo.from_networkx(nx.cycle_graph(5), default_capacity=1.0)
    fab = scaled_fabric(base, 10.0 ** k)
    r = certified(fab, fo.max_concurrent_flow(fab, method=method, gap=1e-7))
    assert r.theta == pytest.approx(10.0 ** k / 3, rel=1e-6)
    assert r.per_endpoint_gbps == pytest.approx(4 * 10.0 ** k / 3, rel=1e-6)  # 4 peers


@pytest.mark.parametrize("gbps", [4e11, 4e-9])
def test_ring_in_bit_per_second(gbps):
    # ring(4) with unit arcs has theta 8 / 4^2 = 0.5, so gbps per arc gives 0.5 * gbps: in
    # bit/s (4e11 = 400 Gb/s) the answer is 1e9 times the Gb/s one, by every method.
    fab = fo.ring(4)
    for _, _, d in fab.graph.edges(data=True):  # the generators refuse 4e11 Gb/s links
        d["capacity"] = gbps
    for method in ("lp", "symmetric", "approx"):
        r = certified(fab, fo.max_concurrent_flow(fab, method=method))
        assert r.theta == pytest.approx(0.5 * gbps, rel=1e-6), method


def test_petersen_at_400e9():
    # Petersen graph, 10 nodes of degree 3, 400 Gb/s per direction on each of its 15 edges:
    # 30 arcs x 400 = 12,000 of capacity; distances from a node: 3 at 1, 6 at 2, so the hop
    # bound is 12,000 / (10 x 15) = 80 and the graph is edge-transitive, so theta = 80. At
    # 400e9 (bit/s) it is 80e9.
    for c, want in ((400.0, 80.0), (400e9, 80e9)):
        fab = fo.from_networkx(nx.petersen_graph(), default_capacity=c, capacity_unit="Gb/s")
        r = certified(fab, fo.max_concurrent_flow(fab, method="auto"))
        assert r.theta == pytest.approx(want, rel=1e-6)


def test_capacity_unit_is_a_power_of_two():
    for cap in (4e11, 3e-7, 1e15):
        unit = capacity_unit(np.array([cap]))
        assert np.log2(unit) == round(np.log2(unit))
        assert 0.5 <= cap / unit <= 2.0
    assert capacity_unit(np.array([400.0])) == 1.0


def test_capacities_too_far_apart_are_an_error():
    fab = fo.ring(4)
    fab.graph["n0"]["n1"]["capacity"] = 1e12
    with pytest.raises(fo.InvalidFabricError, match="more than 1e\\+09 apart"):
        fo.max_concurrent_flow(fab, method="lp")


def test_infinite_upper_bound_is_no_proof():
    fab = fo.ring(4)
    r = fo.max_concurrent_flow(fab, method="lp")
    # Zero lengths give sum c l = 0 over sum D dist = 0: no bound at all (inf).
    zero = replace(r.certificate.upper_proof, lengths=np.zeros_like(r.certificate.lengths))
    hollow = replace(r, upper=np.inf, certificate=replace(r.certificate, upper_proof=zero))
    assert not hollow.exact
    check = fo.check_certificate(fab, hollow)
    assert check.lower_ok and not check.upper_ok and not check.ok
    assert not fo.check_certificate(fab, replace(r, certificate=None)).ok


def test_a_rate_in_bit_per_second_is_refused():
    # 4e11 "Gb/s" per link is 400 Pb/s: bit/s given where Gb/s are meant.
    with pytest.raises(fo.InvalidParameterError, match="link_gbps"):
        fo.ring(4, link_gbps=4e11)
