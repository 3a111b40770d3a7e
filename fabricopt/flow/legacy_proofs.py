"""A certificate built the old way, with keywords (``flow=``, ``lengths=``, ``hose=``,
``reroute=``, ``plane=``, ``symmetry=``...), read into typed proofs.

:class:`~fabricopt.flow.result.FlowCertificate` holds a lower and an upper proof
(:mod:`fabricopt.flow.proof`); callers that still build one with the old keywords, or
``dataclasses.replace`` one of its old attributes, get the proofs those keywords make (over
what the certificate's proofs said before). Several lower proofs side by side, as the old
certificate allowed, become one :class:`~fabricopt.flow.proof.Strongest`.
"""

from __future__ import annotations

from typing import Any

from ..graph_arrays import GraphArrays
from .lp_proof import FlowProof, RootFlowProof
from .proof import ArcLengths, Strongest
from .two_phase.check import HoseFloor

__all__ = ["proofs_from"]

_LOWER = {"flow", "theta", "symmetry", "hose", "reroute", "plane"}
_UNITS = {"traffic_scale", "capacity_unit", "include_endpoint_links"}


def proofs_from(ga: GraphArrays, lower: Any, upper: Any, given: dict[str, Any]
                ) -> tuple[Any, Any]:
    """The ``(lower, upper)`` proofs of a certificate on ``ga`` whose proofs were ``lower``
    and ``upper`` once the old keywords ``given`` are applied over them."""
    view = _view(lower, upper)
    view.update(given)
    if lower is None or given.keys() & (_LOWER | _UNITS):
        lower = _lower(ga, view, isinstance(lower, RootFlowProof))
    if upper is None or given.keys() & ({"lengths"} | _UNITS):
        hops = isinstance(upper, ArcLengths) and upper.hops and view["lengths"] is None
        upper = ArcLengths(ga, view["lengths"], view["traffic_scale"], view["capacity_unit"],
                           view["include_endpoint_links"], hops)
    return lower, upper


def _view(lower: Any, upper: Any) -> dict[str, Any]:
    """What the old keywords were for the proofs ``lower`` and ``upper``."""
    parts = lower.proofs if isinstance(lower, Strongest) else (lower,)
    view: dict[str, Any] = {"lengths": getattr(upper, "lengths", None), "flow": None,
                            "theta": None, "symmetry": None, "hose": None, "reroute": None,
                            "plane": None, "traffic_scale": getattr(upper, "traffic_scale", 1.0),
                            "capacity_unit": getattr(upper, "capacity_unit", 1.0),
                            "include_endpoint_links": getattr(upper, "endpoint_cut", True)}
    for part in parts:
        if isinstance(part, FlowProof):
            view.update(flow=part.flow, theta=part.theta, traffic_scale=part.traffic_scale,
                        capacity_unit=part.capacity_unit,
                        include_endpoint_links=part.include_endpoint_links,
                        symmetry=getattr(part, "symmetry", None))
        elif isinstance(part, HoseFloor):
            view["hose"] = part.hose
        elif hasattr(part, "detours"):
            view["reroute"] = part
        elif hasattr(part, "relay_leaves"):
            view["plane"] = part
    return view


def _lower(ga: GraphArrays, view: dict[str, Any], roots: bool) -> Any:
    """The lower proof the old keywords in ``view`` make (root flows when the flow was
    one already, or a found symmetry comes with it)."""
    found: list[Any] = []
    if view["flow"] is not None and view["theta"] is not None:
        point = (ga, view["flow"], view["theta"], view["traffic_scale"],
                 view["capacity_unit"], view["include_endpoint_links"])
        found.append(RootFlowProof(*point, view["symmetry"])
                     if roots or view["symmetry"] is not None else FlowProof(*point))
    if view["hose"] is not None:
        found.append(HoseFloor(view["hose"]))
    if view["reroute"] is not None:
        found.append(view["reroute"])
    if view["plane"] is not None and view["include_endpoint_links"]:
        found.append(view["plane"])
    if len(found) > 1:
        return Strongest(tuple(found))
    return found[0] if found else None
