"""One record per two-phase rate asked for one set of hubs: what is asked (endpoints, hubs,
method, backend, bounds first or not), the fabric's arrays read once for every hub level,
the hubs' shares, the sizes that decide the plan, the fabric's claim and the call's
:class:`~fabricopt.flow.problem.Budget` (every level of one call shares it).

The stages of :mod:`fabricopt.flow.two_phase.plan` read this record and nothing else.

>>> import fabricopt as fo
>>> p = TwoPhaseProblem.of(fo.fat_tree(4))    # the farthest level: the 4 cores
>>> p.level, len(p.hubs), p.nonzeros, p.stage_on
(3, 4, 4624, True)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..._checks import check_bool, check_choice
from ...errors import InvalidParameterError
from ...fabric import check_endpoint_group
from ...graph_arrays import GraphArrays
from ..backends import check_solve_args
from ..problem import Budget
from .arrays import _Arrays, _check_level, _levels, hub_shares, rate_scale
from .lp import rate_lp_nonzeros

__all__ = ["METHODS", "TwoPhaseProblem", "checked_options", "resolved_hubs"]

#: The methods of :func:`~fabricopt.flow.two_phase.rate.valiant_rate`.
METHODS = ("auto", "symmetric", "lp")


def checked_options(func: str, method: Any, backend: Any, time_limit: Any, bounds_first: Any,
                    options: dict[str, Any]) -> tuple[float | None, bool | None]:
    """``method`` and the solve arguments of ``func`` checked before any work; the time
    limit and ``bounds_first``."""
    check_choice(func, "method", method, METHODS)
    if bounds_first is not None:
        bounds_first = check_bool(func, "bounds_first", bounds_first)
    return check_solve_args(func, backend, time_limit, options), bounds_first


def resolved_hubs(fab: Any, eps: tuple[Hashable, ...], hubs: Any,
                  ga: GraphArrays | None = None) -> tuple[tuple[Hashable, ...], int | None]:
    """The hubs ``hubs`` names, checked: a level of
    :func:`~fabricopt.flow.two_phase.arrays.hub_levels` (hops from the endpoints) or nodes of
    the fabric; and the level (None for nodes given). ``ga``: the fabric's arrays, when
    read already."""
    level = None
    if isinstance(hubs, int) and not isinstance(hubs, bool):
        levels = _levels(fab, ga if ga is not None else GraphArrays.from_fabric(fab), eps)
        level = _check_level(levels, hubs)
        hub_list = levels[level]
    elif isinstance(hubs, str | bool | Mapping) or not isinstance(hubs, Iterable):
        raise InvalidParameterError(f"valiant_rate(): hubs must be None, a level (int) or "
                                    f"an iterable of nodes, got {hubs!r}")
    else:
        given = tuple(hubs)
        if not all(isinstance(h, Hashable) for h in given):
            raise InvalidParameterError(f"valiant_rate(): hubs must be nodes of the fabric "
                                        f"(node names), got {given!r}")
        hub_list = tuple(dict.fromkeys(given))
    unknown = [h for h in hub_list if h not in fab.graph]
    if unknown or not hub_list:
        raise InvalidParameterError(f"valiant_rate(): hubs must be nodes of the fabric, "
                                    f"got {unknown[:3] if unknown else 'none'}")
    return hub_list, level


@dataclass
class TwoPhaseProblem:
    """A two-phase rate for one set of hubs, read once (see the module notes).

    ``beat`` is a rate already proven with other hubs (a level whose cut is no higher is
    passed over); ``fab`` may gain the symmetry a search proves (the same graph).
    """

    fab: Any
    eps: tuple[Hashable, ...]
    hubs: tuple[Hashable, ...]
    level: int | None = None
    method: str = "auto"
    backend: str = "highs"
    bounds_first: bool | None = None
    budget: Budget = field(default_factory=lambda: Budget(None))
    backend_options: dict[str, Any] = field(default_factory=dict)
    arrays: _Arrays = field(default=None)  # type: ignore[assignment]
    beat: float | None = None

    def __post_init__(self) -> None:
        self.arrays = self.arrays or _Arrays.of(self.fab)
        ga = self.arrays.ga
        self.ep_idx = np.array([ga.index[e] for e in self.eps])
        self.hub_idx = np.array([ga.index[h] for h in self.hubs])
        self.share = hub_shares(ga, self.hub_idx, self.ep_idx,
                                self.arrays.dead_ends(self.ep_idx))

    @classmethod
    def of(cls, fab: Any, endpoints: Iterable[Hashable] | None = None, hubs: Any = None,
           **asked: Any) -> TwoPhaseProblem:
        """The record of ``fab``'s hose over ``endpoints`` (default: all) through ``hubs``
        (a level, nodes, or by default the farthest level), the other arguments as
        :func:`~fabricopt.valiant_rate` takes them, all checked.

        >>> import fabricopt as fo
        >>> TwoPhaseProblem.of(fo.ring(4), method="exact")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        fabricopt.errors.InvalidParameterError: TwoPhaseProblem.of(): method must be one of ...
        """
        func = "TwoPhaseProblem.of"
        time_limit, bounds_first = checked_options(
            func, asked.get("method", "auto"), asked.get("backend", "highs"),
            asked.pop("time_limit", None), asked.get("bounds_first"),
            asked.get("backend_options", {}))
        eps = check_endpoint_group(func, fab, endpoints)
        arrays = _Arrays.of(fab)
        if hubs is None:
            hubs = max(_levels(fab, arrays.ga, eps, shape=arrays.shape))
        hub_list, level = resolved_hubs(fab, eps, hubs, arrays.ga)
        return cls(fab, eps, hub_list, level, budget=Budget(time_limit), arrays=arrays,
                   **{**asked, "bounds_first": bounds_first})

    @property
    def ga(self) -> GraphArrays:
        """The fabric's arrays (:class:`~fabricopt.graph_arrays.GraphArrays`)."""
        return self.arrays.ga

    @property
    def stage_on(self) -> bool:
        """Whether the bounds stages run: asked, or by default with ``method="auto"``."""
        return self.bounds_first if self.bounds_first is not None else self.method == "auto"

    @property
    def nonzeros(self) -> int:
        """Nonzeros of the per-endpoint LP
        (:func:`~fabricopt.flow.two_phase.lp.rate_lp_nonzeros`)."""
        return rate_lp_nonzeros(len(self.eps), self.ga.n_arcs)

    @property
    def every_endpoint(self) -> bool:
        """Whether the hose is over every endpoint of the fabric (a claim says nothing about
        a subset)."""
        return set(self.eps) == set(self.fab.endpoints)

    @cached_property
    def claim(self) -> Any:
        """The fabric's symmetry claim (re-checked against the graph at every read of
        ``fab.symmetry``: read once, when a stage first asks)."""
        return self.fab.symmetry

    @property
    def symmetric_ok(self) -> bool:
        """Whether the symmetric LP is exact here: a claim, hubs by level (every level is
        invariant) and every endpoint."""
        return self.claim is not None and self.level is not None and self.every_endpoint

    @cached_property
    def scale(self) -> float:
        """The unit the LPs count the rate in
        (:func:`~fabricopt.flow.two_phase.arrays.rate_scale`)."""
        return rate_scale(self.ga, self.ep_idx)

    @property
    def min_share(self) -> float:
        """The smallest positive hub share."""
        return float(self.share[self.share > 0].min())
