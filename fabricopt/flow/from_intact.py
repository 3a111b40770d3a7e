"""Answers for a failed fabric from the intact fabric it was made from.

A fabric made by ``without`` or ``fail_random`` keeps the recipe of the generator call that
built the intact one. The failure layer, which can rebuild and solve that fabric and send its
flow around what failed (:mod:`fabricopt.failures.intact_flow`), hands its stage to the
engine (``max_concurrent_flow(..., stages=...)``; nothing is registered here): the
:class:`~fabricopt.flow.plan.FromIntact` stage asks each such answerer before any routing of
its own, and takes the first :func:`acceptable` answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..fabric import Fabric
from ..traffic import Traffic
from .result import FlowResult


def acceptable(r: FlowResult, gap: float, too_large: bool, size: str = "") -> bool:
    """Whether ``r`` is the answer: exact, within ``gap``, or, when ``too_large`` (too large
    for the routed bounds, whose approximate rounds would take minutes for a worse bracket),
    its bracket as it is, the message saying so (``size`` says how large)."""
    if r.exact:
        return True
    if r.upper - r.lower <= gap * r.upper:
        r.message += f"; within gap {gap:.3%}"
        return True
    if too_large:
        r.message += (f"; not within gap {gap:.3%}, and the fabric is too large for the "
                      f"routed bounds{size}: method='approx' would continue from here")
    return too_large


def answer_from_intact(fab: Fabric, traffic: Traffic, gap: float, too_large: bool,
                       answerers: Sequence[Callable[[Fabric, Traffic], FlowResult | None]]
                       ) -> FlowResult | None:
    """The first answer of ``answerers`` for ``fab`` that is :func:`acceptable`; None
    otherwise, and for a fabric that is not an edited one with a recipe."""
    if not fab.origin.from_recipe:
        return None
    for answer in answerers:
        r = answer(fab, traffic)
        if r is not None and acceptable(r, gap, too_large):
            return r
    return None


__all__ = ["acceptable", "answer_from_intact"]
