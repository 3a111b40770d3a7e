"""One cost model from switch to token: one set of assumptions, the whole cluster's TCO with the
network's share, system prices with their ranges, NICs priced once."""

import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.cost.tco import HOURS_PER_YEAR


@pytest.fixture
def assumptions_restored():
    before = fo.cost_assumptions()
    yield
    fo.set_cost_assumptions(before)


def test_the_sourced_defaults():
    # docs/cost.md#assumptions: 5 years, the EIA's 2023 US industrial average of about 8
    # cents a kWh, PUE 1.3 between hyperscale (1.1) and Uptime's 1.56-1.58, 10% upkeep.
    assert fo.cost_assumptions() == fo.CostAssumptions(5.0, 0.08, 1.3, 0.10)


def test_every_cost_figure_reads_the_one_set(assumptions_restored, capsys):
    fab = fo.superpod(1)
    fo.set_cost_assumptions(years=3, usd_per_kwh=0.12, pue=1.5)
    tco = fo.estimate_tco(fab)
    assert (tco.years, tco.usd_per_kwh, tco.pue) == (3.0, 0.12, 1.5)
    c = fo.token_cost(fab, 1e6)
    assert c.years == 3.0 and c.tco.pue == 1.5
    search = fo.workload.plan_search.PlanSearch("llama3-8b", 64, 4096)
    assert (search.years, search.usd_per_kwh, search.pue) == (3.0, 0.12, 1.5)
    # The commands' flags default to the same figures (their help says so).
    with pytest.raises(SystemExit):
        main(["tco", "--help"])
    assert "(default 3, fo.cost_assumptions())" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "(default 1.5)" in capsys.readouterr().out
    # A figure passed to one call wins for that call only.
    assert fo.estimate_tco(fab, years=7).years == 7.0 and fo.estimate_tco(fab).years == 3.0
    fo.set_cost_assumptions()  # back to the sourced set
    assert fo.estimate_tco(fab).years == 5.0


def test_bad_assumptions_are_refused_by_name(assumptions_restored):
    with pytest.raises(fo.InvalidParameterError, match=r"'year' is not an assumption"):
        fo.set_cost_assumptions(year=3)
    with pytest.raises(fo.InvalidParameterError, match=r"pue must be a power usage "):
        fo.set_cost_assumptions(pue=0.9)
    with pytest.raises(fo.InvalidParameterError, match=r"estimate_tco\(\): pue must be"):
        fo.estimate_tco(fo.ring(4, link_gbps=400), pue=0.5)
    with pytest.raises(fo.InvalidParameterError, match=r"system must be a catalog system.*"
                                                       r"did you mean 'dgx_h100'"):
        fo.estimate_tco(fo.superpod(1), system="dgx_h1000")
    assert fo.cost_assumptions().pue == 1.3  # a refused change changes nothing


def test_whole_cluster_tco_by_hand():
    t = fo.estimate_tco(fo.superpod(1), years=5, usd_per_kwh=0.08, pue=1.3, maintenance=0.1)
    # 32 DGX H100 at $270k and 10.2 kW maximum (the catalog's figures).
    assert (t.system, t.servers) == ("dgx_h100", 32.0)
    assert t.servers_capex_usd == pytest.approx(32 * 270_000)
    assert t.servers_energy_usd == pytest.approx(32 * 10.2 * HOURS_PER_YEAR * 5 * 1.3 * 0.08)
    assert t.servers_maintenance_usd == pytest.approx(0.1 * 32 * 270_000 * 5)
    servers = t.servers_capex_usd + t.servers_energy_usd + t.servers_maintenance_usd
    assert t.cluster_total_usd == pytest.approx(t.total_usd + servers)
    assert t.network_share == pytest.approx(t.total_usd / t.cluster_total_usd)
    assert t.cluster_per_gpu_per_year_usd == pytest.approx(t.cluster_total_usd / 256 / 5)
    assert "whole cluster (32 x dgx_h100 and the network)" in str(t)
    # A bare network names no system: its cluster figures are unknown, not zero.
    bare = fo.estimate_tco(fo.fat_tree(4))
    assert bare.cluster_total_usd is None and bare.network_share is None
    # ...unless one is named: 16 GPUs = 2 DGX H100.
    assert fo.estimate_tco(fo.fat_tree(4), system="dgx_h100").servers == 2.0


def test_the_dgx_nics_are_priced_once():
    # A 4-SU SuperPOD: 1,024 GPUs, each with its DGX's own ConnectX-7 ($1,599): 1,024 x
    # $1,599 = $1,637,376, in the system's price (section in_server), not the network's.
    est = fo.estimate_cost(fo.superpod(4))
    nics = [(r.component, r.section, r.count) for r in est.bom if r.kind == "nic"]
    assert nics == [("cx7", "in_server", 1024)]
    in_server = sum(r.total_usd for r in est.bom if r.section == "in_server")
    assert in_server == est.scale_up_in_server_usd == 512 * 7000 + 1024 * 1599
    assert est.capex_usd == sum(r.total_usd for r in est.bom if r.section == "network")
    # Counted in when asked (the same parts, once).
    whole = fo.estimate_cost(fo.superpod(4), include_in_server=True)
    assert whole.capex_usd == pytest.approx(est.capex_usd + est.scale_up_in_server_usd)
    # GPUs in no system (a bare rail-optimized network) buy their NICs as network.
    bare = fo.estimate_cost(fo.rail_optimized(nodes=128))
    assert [(r.section, r.count) for r in bare.bom if r.kind == "nic"] == [("network", 1024)]


def test_system_prices_are_sourced_with_ranges():
    cat = fo.Catalog.default()
    h100 = cat.systems["dgx_h100"]
    # About $270k (SemiAnalysis's estimate), up to the $310-317k quoted in 2024; the $199k
    # once used was the DGX A100's launch price.
    assert h100["price_usd"] == 270_000 and h100.range_of("price_usd") == (270_000, 317_000)
    for key, entry in cat.systems.items():
        if entry.get("price_usd") is not None:
            low, high = entry.range_of("price_usd")
            assert low <= entry["price_usd"] <= high, key
            assert entry.confidence_of("price_usd") != "estimate" or low < high, key


def test_a_taper_and_rail_only_cost_less():
    # Sanity by hand: a 2:1 leaf taper buys fewer spines and optics than 1:1; rail-only drops
    # the spine where one leaf per rail holds every node (2 SU: 8 leaves instead of 16 + 8
    # spines), and a tier where each rail's Clos needs one fewer than the whole fabric (16 SU:
    # two tiers per rail against three).
    one = fo.estimate_cost(fo.superpod(2)).capex_usd
    assert fo.estimate_cost(fo.superpod(2, oversubscription=2)).capex_usd < one
    assert fo.estimate_cost(fo.superpod(2, spine=False)).capex_usd < 0.5 * one
    three_tier = fo.estimate_cost(fo.superpod(16))
    rail_only = fo.estimate_cost(fo.superpod(16, spine=False))
    assert rail_only.capex_usd < 0.7 * three_tier.capex_usd
    assert rail_only.power_w < 0.7 * three_tier.power_w


def test_tco_command_names_its_flags(capsys):
    # A PUE below 1 or negative upkeep is refused by flag, before any fabric is built.
    assert main(["tco", "ring", "n=4", "link_gbps=400", "--pue", "0.9"]) == 2
    assert "--pue: must be a finite number >= 1, got 0.9" in capsys.readouterr().err
    assert main(["tco", "ring", "n=4", "link_gbps=400", "--maintenance", "-1"]) == 2
    assert "--maintenance: must be a finite number >= 0" in capsys.readouterr().err
    # The json row carries the whole cluster's columns (None for a ring in no system).
    assert main(["tco", "superpod", "scalable_units=1", "--format", "json"]) == 0
    import json

    [row] = json.loads(capsys.readouterr().out)
    assert row["system"] == "dgx_h100" and 0 < row["network_share"] < 1
