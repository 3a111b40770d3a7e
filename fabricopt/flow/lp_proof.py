"""The lower proofs of the LP solvers: a stored flow, re-proven from the fabric alone.

:class:`FlowProof` is the point of the full LP (the full LP, the approximate rounds, and the
bounds stage's routings, each an LP point): the LP is rebuilt from the fabric without
reductions, the point lifted onto every arc, and its conservation and capacities recomputed
(:func:`~fabricopt.flow.certificate.certified_lower`). :class:`RootFlowProof` is one root
flow per orbit of a symmetry group on the endpoints (the symmetric LP, and the bounds stage
on a fabric whose symmetry it found): re-proven for the roots and spread over the arc
orbits. With a generator's claim this relies on the claim (prove a claim on a small instance
with :func:`fabricopt.verify_symmetry`); with a symmetry :func:`fabricopt.find_symmetry`
found (carried by the proof) nothing is taken on trust: its generators are re-verified as
automorphisms of the fabric and its orbits recomputed from them first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidFabricError
from ..graph_arrays import GraphArrays
from ..symmetry.search import FoundSymmetry, verify_found_symmetry, with_symmetry
from ..symmetry_claim import Symmetry
from ..traffic import Traffic
from .certificate import certified_lower
from .formulation import build_flow_lp
from .model import LiftedFlow, ThroughputModel
from .proof import ProofCheck, graph_of, solve_units
from .symmetric import build_symmetric_lp

__all__ = ["FlowProof", "ProvenFlow", "RootFlowProof", "proven_flow", "roots_carrying",
           "with_proven_symmetry"]


@dataclass(frozen=True)
class ProvenFlow:
    """A flow re-proven on its fabric: it carries ``theta`` times the traffic (in the
    traffic's own units) with every commodity conserved, and puts at most ``load`` Gb/s on
    each arc of ``ga``."""

    ga: GraphArrays
    theta: float
    load: np.ndarray


@dataclass(frozen=True)
class FlowProof:
    """The full LP's point as a lower proof.

    Attributes
    ----------
    ga : GraphArrays
        The fabric's arcs as the solve saw them (Gb/s); the point's columns follow them.
    flow : ndarray
        The point of the LP (in Gb/s divided by ``capacity_unit``).
    theta : float
        The solver's theta at that point, in the solve's units.
    traffic_scale, capacity_unit : float
        The solve's units (:mod:`fabricopt.flow.units`): a theta proven there is multiplied
        by ``traffic_scale`` back.
    include_endpoint_links : bool
        Whether collapsed endpoint links were constraints.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.ring(6)
    >>> proof = fo.max_concurrent_flow(fab, method="lp").certificate.lower_proof
    >>> round(proof.check(fab, fo.all_to_all(fab)).value, 6)
    0.222222
    """

    ga: GraphArrays
    flow: np.ndarray
    theta: float
    traffic_scale: float = 1.0
    capacity_unit: float = 1.0
    include_endpoint_links: bool = True

    STAGES: ClassVar[tuple[str, ...]] = ("full LP", "approximate rounds", "routed bounds")

    def lifted(self, fab: Any, traffic: Traffic, ga: GraphArrays
               ) -> tuple[LiftedFlow, ThroughputModel] | None:
        """The flow on every arc of ``fab`` (``traffic`` and ``ga`` in the solve's units)
        and the model that lifted it."""
        model = build_flow_lp(fab, traffic, self.include_endpoint_links, ga=ga)
        return model.lift(self.flow), model

    def check(self, fab: Any, traffic: Traffic) -> ProofCheck:
        """The theta the flow proves for ``traffic`` on ``fab`` (0 on another graph)."""
        return _checked(self, fab, traffic)

    def proven(self, fab: Any, traffic: Traffic) -> ProvenFlow | None:
        """The flow re-proven on ``fab`` for ``traffic``: the theta it carries with every
        commodity conserved (what does not conserve is taken off, as for the lower bound)
        and its load on every arc, in Gb/s. None on another graph."""
        ga = graph_of(fab, self.ga)
        if ga is None:
            return None
        solved, ga_solve = solve_units(traffic, ga, self.traffic_scale, self.capacity_unit)
        lifted = self.lifted(fab, solved, ga_solve)
        if lifted is None:
            return None
        flow, model = lifted
        kept = flow.theta - flow.residual_l1 / model.min_demand
        # Arcs the model leaves unconstrained carry no commodity's flow but the endpoint rows'.
        return ProvenFlow(ga, max(kept, 0.0) * self.traffic_scale,
                          flow.load * self.capacity_unit)


@dataclass(frozen=True)
class RootFlowProof(FlowProof):
    """One root flow per orbit of a symmetry group on the endpoints, as a lower proof (the
    fields of :class:`FlowProof`; ``flow`` holds each root's flow on every arc, root after
    root, in order of the orbits' first endpoints, then theta).

    ``symmetry``: the symmetry :func:`~fabricopt.find_symmetry` found, re-verified before
    it is used; None when the fabric's own (generator's) claim holds the orbits. Only
    all-to-all traffic over every endpoint is carried this way.

    >>> import fabricopt as fo
    >>> fab = fo.fat_tree(4)
    >>> r = fo.max_concurrent_flow(fab, method="symmetric")
    >>> type(r.certificate.lower_proof).__name__, r.certificate.lower_proof.check(
    ...     fab, fo.all_to_all(fab)).proves_lower(r.lower)
    ('RootFlowProof', True)
    """

    symmetry: Symmetry | None = None

    STAGES: ClassVar[tuple[str, ...]] = ("symmetric LP", "orbit roots routed")

    def lifted(self, fab: Any, traffic: Traffic, ga: GraphArrays
               ) -> tuple[LiftedFlow, ThroughputModel] | None:
        """The root flows spread over every arc of ``fab``; None when the group cannot be
        re-proven or the traffic is not all-to-all over its endpoints."""
        claimed = with_proven_symmetry(fab, self.symmetry)
        if claimed is None or not (traffic.is_uniform
                                   and set(traffic.endpoints) == set(claimed.endpoints)):
            return None
        # The claim was just checked against the graph (or the found group re-verified):
        # hand it over rather than check it again (4 s on 128,000 GPUs).
        model = build_symmetric_lp(claimed, traffic.uniform_gbps, reduce=False,
                                   include_endpoint_links=self.include_endpoint_links,
                                   ga=ga, symmetry=claimed._symmetry, assemble=False)
        return model.lift(np.append(self.flow, self.theta)), model


def _checked(proof: FlowProof, fab: Any, traffic: Traffic) -> ProofCheck:
    """What ``proof``'s flow proves: its theta with what does not conserve taken off, over
    its worst overload (:func:`~fabricopt.flow.certificate.certified_lower`)."""
    ga = graph_of(fab, proof.ga)
    if ga is None:
        return ProofCheck(0.0)
    traffic, ga = solve_units(traffic, ga, proof.traffic_scale, proof.capacity_unit)
    lifted = proof.lifted(fab, traffic, ga)
    if lifted is None:
        return ProofCheck(0.0)
    flow, model = lifted
    cons = model.constrained
    lower, overload = certified_lower(flow.theta, flow.load[cons], ga.capacity[cons],
                                      flow.residual_l1, model.min_demand)
    return ProofCheck(lower * proof.traffic_scale, overload, flow.residual_l1)


def with_proven_symmetry(fab: Any, found: Symmetry | None) -> Any:
    """``fab`` itself when it carries a claim; else ``fab`` carrying the found symmetry once
    its generators are re-verified, or None when nothing was found (a generator's claim the
    fabric lost) or they are not automorphisms of ``fab`` or do not give the found orbits
    (then nothing is proven through them)."""
    if fab.symmetry is not None:
        return fab
    if not isinstance(found, FoundSymmetry):
        return None  # a generator's claim that no longer holds (endpoints changed): no lift
    try:
        verify_found_symmetry(fab, found)
    except InvalidFabricError:
        return None
    return with_symmetry(fab, found)


def roots_carrying(certificate: Any, symmetry: Symmetry | None) -> Any:
    """``certificate`` with its root flows carrying ``symmetry`` (the group
    :func:`~fabricopt.find_symmetry` found, which their check re-verifies), so that a
    symmetric solve of a fabric given a found group is re-proven on the fabric without it.
    A lower end proven by anything but root flows is left as it is (a full flow is no
    root flow, whatever group the fabric has).

    >>> import fabricopt as fo
    >>> fab = fo.fat_tree(4)
    >>> cert = fo.max_concurrent_flow(fab, method="symmetric").certificate
    >>> roots_carrying(cert, None) == cert
    True
    """
    proof = getattr(certificate, "lower_proof", None)
    if not isinstance(proof, RootFlowProof):
        return certificate
    return replace(certificate, lower_proof=replace(proof, symmetry=symmetry))


def proven_flow(fab: Any, result: Any, traffic: Traffic) -> ProvenFlow | None:
    """The flow ``result``'s certificate stores, re-proven on ``fab`` for ``traffic``
    (:meth:`FlowProof.proven`); None when its lower end is proven by no stored flow, or
    on another graph."""
    cert = getattr(result, "certificate", None)
    proof = None if cert is None else cert.lower_proof
    if not isinstance(proof, FlowProof):
        return None
    return proof.proven(fab, traffic)
