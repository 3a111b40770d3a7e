"""What :func:`~fabricopt.flow.two_phase.rate.valiant_rate` returns: :class:`ValiantBound`,
a certified two-phase rate with its load per arc, the bound above it and the stage that
proved each end.

>>> import fabricopt as fo
>>> b = fo.valiant_rate(fo.fat_tree(4))
>>> b.rate_gbps, b.method, b.stages
(400.0, 'bounds', {'lower': 'WCMP phase-1 flows', 'upper': 'hierarchy cut'})
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...graph_arrays import GraphArrays
from .bounds import HoseProof

__all__ = ["ArcValues", "ValiantBound", "arc_array"]


@dataclass
class ValiantBound:
    """What :func:`valiant_rate` returns.

    ``rate_gbps`` is certified: every traffic in which no endpoint sends or receives more
    than it is routable at once. ``load_gbps`` is the two-phase load per arc at that rate
    (phase 1 plus phase 2), never above the arc's capacity. ``level`` is the hub level (hops
    from the endpoints) when the hubs were chosen by level.
    """

    rate_gbps: float
    status: str
    method: str
    hubs: tuple[Hashable, ...]
    n_endpoints: int
    max_overload: float = 0.0
    max_residual: float = 0.0
    seconds: float = 0.0
    message: str = ""
    load_gbps: Mapping[tuple[Hashable, Hashable], float] = field(default_factory=dict,
                                                                 repr=False)
    level: int | None = None
    #: The least bound of the cuts tried by the bounds stage (inf when it did not run): the
    #: best two-phase rate with these hubs is at most this.
    upper_gbps: float = np.inf
    #: The nodes on one side of that cut, when a cut gives it; else the arc lengths whose
    #: two-phase distance bound does (``lengths``).
    cut: frozenset[Hashable] | None = field(default=None, repr=False)
    lengths: Mapping[tuple[Hashable, Hashable], float] | None = field(default=None, repr=False)
    #: The flows behind ``rate_gbps``, re-proven by :func:`~fabricopt.check_certificate`.
    proof: HoseProof | None = field(default=None, repr=False)
    #: The stage that proved each end (``{"lower": ..., "upper": ...}``, ``"none"`` for an
    #: end nothing proved): the plan's names (:func:`~fabricopt.flow.two_phase.plan.plan`).
    stages: dict[str, str] = field(default_factory=lambda: {"lower": "none", "upper": "none"})

    def recheck(self, fab: Any) -> Any:
        """This rate re-proven from ``fab``
        (:func:`~fabricopt.flow.two_phase.check.check_hose_certificate`)."""
        # Lazy: the check imports this module (an import cycle otherwise).
        from .check import check_hose_certificate

        return check_hose_certificate(fab, self)

    def __str__(self) -> str:
        return (f"two-phase rate   {self.rate_gbps:.6g} Gb/s per endpoint, any traffic "
                f"of its hose (via {len(self.hubs)} hubs; {self.method}, {self.status})")


class ArcValues(Mapping):
    """One float per arc of a fabric's arrays, keyed by arc ``(u, v)``: a read-only mapping
    kept as the arrays' arcs and one array, its dict made on the first lookup by key.

    Iterating, ``len``, ``values()`` and ``items()`` read the arcs and the array in their
    order without it: making the dict of every arc of a 24,576-GPU cluster (300,000 of them)
    was a third of its two-phase rate, for a mapping the study row never looks into by key.
    :func:`arc_array` hands the array itself to a caller on the same arrays.

    >>> import fabricopt as fo
    >>> ga = GraphArrays.from_fabric(fo.ring(3))
    >>> loads = ArcValues(ga.arcs, np.arange(ga.n_arcs) / 2)
    >>> len(loads), loads[ga.arcs[3]], dict(loads) == dict(zip(ga.arcs, [0, .5, 1, 1.5, 2, 2.5]))
    (6, 1.5, True)
    """

    def __init__(self, arcs: Sequence[tuple[Hashable, Hashable]], values: Any) -> None:
        self._arcs = arcs
        self._values = np.asarray(values, dtype=float)
        if len(self._values) != len(arcs):
            raise ValueError(f"ArcValues: {len(self._values)} values for {len(arcs)} arcs")
        self._by_arc: dict[tuple[Hashable, Hashable], float] | None = None

    def _dict(self) -> dict[tuple[Hashable, Hashable], float]:
        if self._by_arc is None:
            # tolist converts in C: a float call per arc was a tenth of the two-phase rate on
            # a 24,576-GPU cluster.
            self._by_arc = dict(zip(self._arcs, self._values.tolist(), strict=True))
        return self._by_arc

    def __getitem__(self, arc: tuple[Hashable, Hashable]) -> float:
        return self._dict()[arc]

    def __contains__(self, arc: object) -> bool:
        return arc in self._dict()

    def __iter__(self) -> Iterator[tuple[Hashable, Hashable]]:
        return iter(self._arcs)

    def __len__(self) -> int:
        return len(self._arcs)

    def values(self) -> list[float]:  # type: ignore[override]
        return self._values.tolist()

    def items(self) -> Iterator[tuple[tuple[Hashable, Hashable], float]]:  # type: ignore[override]
        return zip(self._arcs, self._values.tolist(), strict=True)

    def __repr__(self) -> str:
        return f"<ArcValues of {len(self):,} arcs>"


def arc_array(values: Mapping[tuple[Hashable, Hashable], float], ga: GraphArrays,
              missing: float = 0.0) -> np.ndarray:
    """``values`` per arc of ``ga`` as an array (``missing`` for an arc it lacks): the
    :class:`ArcValues` array itself, read-only, when it was made on ``ga``'s arcs.

    >>> import fabricopt as fo
    >>> ga = GraphArrays.from_fabric(fo.ring(3))
    >>> arc_array({ga.arcs[1]: 2.0}, ga).tolist()
    [0.0, 2.0, 0.0, 0.0, 0.0, 0.0]
    """
    if isinstance(values, ArcValues) and (values._arcs is ga.arcs or (
            len(values._arcs) == ga.n_arcs and list(values._arcs) == list(ga.arcs))):
        out = values._values.view()
        out.flags.writeable = False
        return out
    return np.array([values.get(arc, missing) for arc in ga.arcs], dtype=float)


def per_arc(ga: GraphArrays, values: Any) -> ArcValues:
    """``values`` (one per arc) keyed by the arcs of ``ga`` (:class:`ArcValues`)."""
    return ArcValues(ga.arcs, values)
