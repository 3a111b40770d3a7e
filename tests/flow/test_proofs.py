"""Typed proofs that check themselves: each proof class re-proves its end of a real result
from the fabric alone, and proves less (so the check fails) once tampered with; the checker
only asks them, importing no stage; ``result.stages`` names a stage that yields the proof's
class, and the plan table in ``docs/throughput.md`` names the classes."""

import ast
import pathlib
import re
from dataclasses import replace

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.failures.intact_flow import IntactFlow, rerouted_answer
from fabricopt.failures.leaf_run_cuts import LeafRunCut
from fabricopt.failures.plane_bracket import plane_bracket
from fabricopt.failures.plane_routing import PlaneProof
from fabricopt.failures.reroute import ReroutedFlow
from fabricopt.flow.bounds import HierarchyCut
from fabricopt.flow.lp_proof import FlowProof, RootFlowProof
from fabricopt.flow.proof import ArcLengths, LowerProof, ProofCheck, UpperProof
from fabricopt.flow.result import FlowCertificate
from fabricopt.flow.two_phase.check import HoseFloor, hose_theta

FLOW = pathlib.Path(fo.__file__).parent / "flow"
DOCS = pathlib.Path(fo.__file__).parent.parent / "docs"
PROOFS = {c.__name__: c for c in (FlowProof, RootFlowProof, HoseFloor, ReroutedFlow, PlaneProof,
                                  ArcLengths, HierarchyCut, LeafRunCut)}


def _flow_imports(path: pathlib.Path) -> set[str]:
    """The package modules ``path`` (a module of ``fabricopt/flow``) imports, lazily too."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ["fabricopt", "flow"][: 3 - node.level]
            out.add(".".join(base + ([node.module] if node.module else [])))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fabricopt"):
            out.add(node.module)
    return out


#: What the checker may import: the data model (and its read-once cache), the proofs'
#: protocol and the result record.
CHECKER_MAY_IMPORT = {"fabricopt._unchanged", "fabricopt.errors", "fabricopt.fabric",
                      "fabricopt.traffic", "fabricopt.graph_arrays", "fabricopt.flow.proof",
                      "fabricopt.flow.result"}


def test_the_checker_imports_no_stage():
    assert _flow_imports(FLOW / "check.py") <= CHECKER_MAY_IMPORT
    # The protocol module is as bare: the distance sums and solve units are helpers.
    assert _flow_imports(FLOW / "proof.py") <= CHECKER_MAY_IMPORT | {
        "fabricopt.flow.distance_sums", "fabricopt.flow.units"}
    # The rule can fail: the plan imports the stages' modules.
    assert "fabricopt.flow.backends" in _flow_imports(FLOW / "plan.py") - CHECKER_MAY_IMPORT


def _proves(proof, fab, traffic, end, claim):
    check = proof.check(fab, traffic)
    assert isinstance(check, ProofCheck)
    return check.proves_lower(claim) if end == "lower" else check.proves_upper(claim)


def test_the_full_lps_flow_and_lengths():
    # ring(6) at 1 Gb/s: theta = 12 arcs / 54 unit-hops of demand = 2/9, below the cut
    # around one node (2 Gb/s out over 5 sent: 0.4), so the lengths, not that cut, bind.
    fab = fo.ring(6)
    traffic = fo.all_to_all(fab)
    r = fo.max_concurrent_flow(fab, traffic, method="lp")
    cert = r.certificate
    assert isinstance(cert.lower_proof, FlowProof) and isinstance(cert.upper_proof, ArcLengths)
    assert isinstance(cert.lower_proof, LowerProof) and isinstance(cert.upper_proof, UpperProof)
    assert r.lower == pytest.approx(2 / 9, rel=1e-9)
    assert _proves(cert.lower_proof, fab, traffic, "lower", r.lower)
    assert _proves(cert.upper_proof, fab, traffic, "upper", r.upper)
    # A scaled flow (point and theta halved) carries half: it no longer proves the end.
    halved = replace(cert.lower_proof, flow=cert.lower_proof.flow * 0.5)
    assert halved.check(fab, traffic).value == pytest.approx(r.lower / 2, rel=1e-9)
    assert not fo.check_certificate(fab, replace(r, certificate=replace(
        cert, lower_proof=halved))).lower_ok
    # Twice the traffic: the flow carries none of it conserved.
    assert not _proves(cert.lower_proof, fab, traffic.scaled(2.0), "lower", r.lower)
    # Shortened lengths: half the arcs at length 0 bound theta by 0.4 (the endpoint cut),
    # one arc at 0 by 3/11; neither proves 2/9.
    lengths = cert.upper_proof.lengths.copy()
    lengths[:6] = 0.0
    assert not _proves(replace(cert.upper_proof, lengths=lengths), fab, traffic, "upper",
                       r.upper)
    lengths = cert.upper_proof.lengths.copy()
    lengths[0] = 0.0
    assert not _proves(replace(cert.upper_proof, lengths=lengths), fab, traffic, "upper",
                       r.upper)
    # Another graph (a link fewer): neither proof says anything there, and the checker
    # refuses the result outright.
    other = fab.without_links([("n0", "n1")])
    assert cert.lower_proof.check(other, fo.all_to_all(other)).value == 0.0
    assert cert.upper_proof.check(other, fo.all_to_all(other)).value == np.inf
    with pytest.raises(fo.InvalidParameterError, match="different graph"):
        fo.check_certificate(other, r)


def test_the_symmetric_root_flows():
    fab = fo.fat_tree(4)
    traffic = fo.all_to_all(fab)
    r = fo.max_concurrent_flow(fab, traffic, method="symmetric")
    proof = r.certificate.lower_proof
    assert type(proof) is RootFlowProof
    # fat_tree(4): 16 hosts on 400 Gb/s links, non-blocking: theta = 400 / 15.
    assert r.lower == pytest.approx(400 / 15, rel=1e-9)
    assert _proves(proof, fab, traffic, "lower", r.lower)
    assert not _proves(replace(proof, flow=proof.flow * 0.5), fab, traffic, "lower", r.lower)
    # On a failed copy the generator's claim is gone: the root flows prove nothing.
    failed = fab.without_links([next(iter(fab.graph.edges()))])
    assert proof.check(failed, fo.all_to_all(failed)).value == 0.0
    # Not all-to-all over every endpoint: root flows carry nothing else.
    half = fo.all_to_all(fab, endpoints=fab.endpoints[:8])
    assert proof.check(fab, half).value == 0.0


def test_the_two_phase_floor():
    fab = fo.fat_tree(4)
    traffic = fo.all_to_all(fab)
    hose = fo.valiant_rate(fab)
    floor = HoseFloor(hose)
    # 400 Gb/s per endpoint over the 15 Gb/s each sends: theta >= 400 / 15.
    assert hose_theta(hose.rate_gbps, traffic) == pytest.approx(400 / 15, rel=1e-12)
    assert _proves(floor, fab, traffic, "lower", 400 / 15)
    # Re-proven from its flows, not from the rate it claims: a doubled claim proves nothing
    # more, so twice the floor fails.
    raised = HoseFloor(replace(hose, rate_gbps=hose.rate_gbps * 2))
    assert not _proves(raised, fab, traffic, "lower", 2 * 400 / 15)
    # Another graph (a link fewer): the hose's flows are not that fabric's.
    failed = fab.without_links([next(iter(fab.graph.edges()))])
    assert not _proves(floor, failed, fo.all_to_all(failed), "lower", 400 / 15)


def test_the_intact_flow_rerouted():
    # The ring(6) whose link n0-n1 fails is a path: its middle link carries 3 x 3 pairs each
    # way, theta = 1/9, which the ring's flow with that link's load sent round proves.
    ring = fo.ring(6)
    traffic = fo.all_to_all(ring)
    intact = IntactFlow.of(ring, fo.max_concurrent_flow(ring, traffic), traffic)
    path = ring.without_links([("n0", "n1")])
    r = rerouted_answer(path, traffic, intact)
    proof = r.certificate.lower_proof
    assert isinstance(proof, ReroutedFlow) and r.lower == pytest.approx(1 / 9, rel=1e-9)
    assert _proves(proof, path, traffic, "lower", r.lower)
    assert _proves(r.certificate.upper_proof, path, traffic, "upper", r.upper)
    # Half of every detour: half of the lost arc's load vanishes.
    assert not _proves(replace(proof, detours=proof.detours * 0.5), path, traffic, "lower",
                       r.lower)
    # The intact flow scaled: it no longer conserves, and proves nothing to send round.
    base = proof.result.certificate.lower_proof
    scaled = replace(proof.result, certificate=replace(
        proof.result.certificate, lower_proof=replace(base, flow=base.flow * 0.5)))
    assert not _proves(replace(proof, result=scaled), path, traffic, "lower", r.lower)
    # Another failed graph: the detours are not its arcs.
    other = ring.without_links([("n2", "n3")])
    assert proof.check(other, traffic).value == 0.0


def _clos(nodes=12, gpus=4):
    """A 3-tier 2:1 Clos of small NVSwitch servers (as tests/failures/test_planes.py)."""
    return fo.cluster(fo.nvswitch_domain(gpus, 2, gpus, 400.0), nodes=nodes, scale_out="clos",
                      tiers=3, oversubscription=2, radix=8, whole_servers=False)


def test_the_routing_through_the_planes():
    fab = fo.fail_random(_clos(12), 0.05, seed=1)
    traffic = fo.all_to_all(fab)
    r = plane_bracket(fab, traffic)
    proof = r.certificate.lower_proof
    assert isinstance(proof, PlaneProof) and r.certificate.plane is proof
    assert type(r.certificate.upper_proof) in (HierarchyCut, LeafRunCut)
    assert _proves(proof, fab, traffic, "lower", r.lower)
    assert _proves(r.certificate.upper_proof, fab, traffic, "upper", r.upper)
    # Shares scaled down: each pair is sent less than its demand, so the rate falls.
    assert not _proves(replace(proof, alpha=proof.alpha * 0.5, beta=proof.beta * 0.5,
                               gamma=proof.gamma * 0.5), fab, traffic, "lower", r.lower)
    # A traffic other than all-to-all over every endpoint, or the wrong graph: nothing.
    assert proof.check(fab, fo.all_to_all(fab, endpoints=fab.endpoints[:8])).value == 0.0
    other = fo.fail_random(_clos(12), 0.05, seed=2)
    assert not _proves(proof, other, fo.all_to_all(other), "lower", r.lower)


def test_old_attributes_are_read_from_the_proofs_and_made_one_way():
    fab = fo.ring(6)
    r = fo.max_concurrent_flow(fab, method="lp")
    cert, lower = r.certificate, r.certificate.lower_proof
    # The certificate's attributes from before its proofs were typed read back from them.
    assert cert.flow is lower.flow and cert.theta == lower.theta and cert.hose is None
    assert cert.lengths is cert.upper_proof.lengths and cert.include_endpoint_links
    assert (cert.traffic_scale, cert.capacity_unit) == (lower.traffic_scale,
                                                       lower.capacity_unit)
    assert cert.reroute is None and cert.plane is None and cert.symmetry is None
    # One way to make a certificate: the proofs, each made by its stage. The old keywords
    # (positional after ``load`` too) are no fields of it.
    same = FlowCertificate(cert.ga, cert.tiers, cert.load, lower, cert.upper_proof)
    assert fo.check_certificate(fab, replace(r, certificate=same)).ok
    for old in ({"lengths": None}, {"flow": None}, {"symmetry": None}, {"hose": None}):
        with pytest.raises(TypeError, match=next(iter(old))):
            FlowCertificate(cert.ga, cert.tiers, **old)
        with pytest.raises(TypeError, match=next(iter(old))):
            replace(cert, **old)
    with pytest.raises(TypeError):
        FlowCertificate(cert.ga, cert.tiers, cert.load, lower, cert.upper_proof, None)


def test_roots_carrying_puts_a_found_group_on_root_flows_only():
    from fabricopt.flow.lp_proof import roots_carrying

    fab = fo.fat_tree(4)
    found = fo.find_symmetry(fab)
    roots = fo.max_concurrent_flow(fab, method="symmetric").certificate
    carried = roots_carrying(roots, found)
    assert carried.lower_proof.symmetry is found
    assert carried.lower_proof.flow is roots.lower_proof.flow and carried.upper_proof is \
        roots.upper_proof
    # A full LP's flow is no root flow: left as it is.
    full = fo.max_concurrent_flow(fab, method="lp").certificate
    assert type(full.lower_proof) is FlowProof
    assert roots_carrying(full, found) is full


def _stages_agree(r, ends=("lower", "upper")):
    """Each end of ``r`` is named after a stage that yields its proof's class."""
    for end in ends:
        proof = getattr(r.certificate, f"{end}_proof")
        assert proof is not None and r.stages[end] in type(proof).STAGES, (end, r.stages)


def test_result_stages_name_a_stage_of_each_proof():
    fab = fo.fat_tree(4)
    _stages_agree(fo.max_concurrent_flow(fab, method="lp"))
    _stages_agree(fo.max_concurrent_flow(fab, method="symmetric"))
    # A bare graph (no claim): the routed bounds prove both ends.
    bare = fo.from_networkx(fab.graph.copy(), endpoints=fab.endpoints)
    routed = fo.max_concurrent_flow(bare)
    assert routed.stages["lower"] == "routed bounds"
    _stages_agree(routed)


def test_the_plan_table_names_each_stages_proof():
    text = (DOCS / "throughput.md").read_text().split("## What auto does", 1)[1]
    header = next(line for line in text.splitlines() if line.startswith("| # | stage"))
    column = next(i for i, c in enumerate(header.split("|")) if c.strip().startswith("proof"))
    table = text.split(header, 1)[1].split("\n\n", 1)[0]   # this table only
    rows = [line.split("|") for line in table.splitlines()[1:]]
    named = {name for row in rows for name in re.findall(r"`([A-Z]\w+)`", row[column])}
    assert named and named <= set(PROOFS), sorted(named - set(PROOFS))
    # Every proof class the engine makes is in the table.
    assert set(PROOFS) <= named


def test_a_merged_end_keeps_its_own_proof_and_name():
    # The two-phase floor under an open bracket: fat_tree(4)'s exact LP result with its lower
    # end taken away is floored at 400 / 15 by the two-phase rate (as time_limit=2 would be).
    from fabricopt.flow.brackets import with_hose_floor

    fab = fo.fat_tree(4)
    traffic = fo.all_to_all(fab)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp")
    opened = replace(exact, lower=0.0, theta=None, status="time_limit")
    floored = with_hose_floor(opened, fo.valiant_rate(fab), traffic)
    assert isinstance(floored.certificate.lower_proof, HoseFloor)
    assert floored.certificate.upper_proof is exact.certificate.upper_proof
    assert floored.lower == pytest.approx(400 / 15, rel=1e-12)
    assert fo.check_certificate(fab, floored).ok
    _stages_agree(floored)


def test_the_planes_narrow_an_end_with_their_proof():
    # A failed Clos answered first by its intact flow rerouted (its lower end halved here, so
    # that the planes' routing proves more): narrowed takes the planes' proof and names them.
    from fabricopt.failures.plane_bracket import narrowed

    clos = _clos(12)
    traffic = fo.all_to_all(clos)
    failed = fo.fail_random(clos, 0.05, seed=1)
    intact = IntactFlow.of(clos, fo.max_concurrent_flow(clos, traffic), traffic)
    first = rerouted_answer(failed, traffic, intact)
    first.stages = {"lower": "intact flow rerouted", "upper": "intact flow rerouted"}
    weaker = replace(first, lower=first.lower * 0.5, theta=None, status="inexact")
    planes = plane_bracket(failed, traffic)
    assert planes.lower > weaker.lower
    both = narrowed(weaker, planes)
    assert both.certificate.lower_proof is planes.certificate.lower_proof
    assert both.stages["lower"] == "planes"
    assert fo.check_certificate(failed, both).ok
    _stages_agree(both)


def test_the_hierarchy_cut():
    # leaf_spine(4, 2, 4) at 1 Gb/s: a leaf's 2 uplinks carry its 4 hosts' 4 x 12 Gb/s to
    # the other leaves, theta <= 2 / 48; the cut bracket proves that above, nothing below.
    from fabricopt.flow.bounds_first.brackets import cut_bracket
    from fabricopt.graph_arrays import GraphArrays

    fab = fo.leaf_spine(4, 2, 4, link_gbps=1.0)
    traffic = fo.all_to_all(fab)
    r = cut_bracket(fab, traffic, GraphArrays.from_fabric(fab), include_endpoint_links=True,
                    traffic_scale=1.0, capacity_unit=1.0)
    proof = r.certificate.upper_proof
    assert type(proof) is HierarchyCut and r.certificate.lower_proof is None
    assert r.upper == pytest.approx(2 / 48, rel=1e-12) and r.stages["upper"] == "hierarchy cut"
    assert _proves(proof, fab, traffic, "upper", r.upper)
    assert fo.check_certificate(fab, r).upper_ok
    _stages_agree(r, ends=("upper",))
    # The cut moved off its arcs (every length shifted by one arc): no longer that cut.
    assert not _proves(replace(proof, lengths=np.roll(proof.lengths, 1)), fab, traffic,
                       "upper", r.upper)
    other = fab.without_links([next(iter(fab.graph.edges()))])
    assert proof.check(other, fo.all_to_all(other)).value == np.inf
