"""Answers for a failed fabric from the intact fabric it was made from.

A fabric made by ``without`` or ``fail_random`` keeps the recipe of the generator call that
built the intact one. The failure layer, which can rebuild and solve that fabric and send its
flow around what failed (:mod:`fabricopt.analysis.failure_reroute`), registers an answerer
here; :func:`~fabricopt.max_concurrent_flow`, one floor below it, asks before any routing of
its own. Each answerer returns a certified result or None.
"""

from __future__ import annotations

from collections.abc import Callable

from ..fabric import Fabric
from ..traffic import Traffic
from .result import FlowResult

#: The registered answerers, asked in turn.
ANSWERERS: list[Callable[[Fabric, Traffic], FlowResult | None]] = []


def answer_from_intact(fab: Fabric, traffic: Traffic, gap: float, too_large: bool
                       ) -> FlowResult | None:
    """The first registered answer for ``fab`` that is exact, or within ``gap``; or, when
    ``too_large`` (the fabric is too large for the routed bounds, and its approximate rounds
    would take minutes for a worse bracket), the best bracket, its message saying so. None
    otherwise, and for a fabric that is not an edited one with a recipe."""
    if not fab.params.get("edited") or fab.recipe is None:
        return None
    best = None
    for answer in ANSWERERS:
        r = answer(fab, traffic)
        if r is None:
            continue
        if r.exact or r.upper - r.lower <= gap * r.upper:
            return r
        if best is None or r.upper - r.lower < best.upper - best.lower:
            best = r
    if best is not None and too_large:
        best.message += (f"; not within gap {gap:.3%}, and the fabric is too large for the "
                         "routed bounds: method='approx' would continue from here")
        return best
    return None


__all__ = ["ANSWERERS", "answer_from_intact"]
