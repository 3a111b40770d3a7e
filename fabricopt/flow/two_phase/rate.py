r"""Two-phase (Valiant) routing: a certified rate at which *every* hose traffic is carried.

In the hose model each endpoint sends at most :math:`r` and receives at most :math:`r` Gb/s,
to and from anyone (Duffield et al., SIGCOMM 1999). Two-phase routing (Valiant and Brebner,
STOC 1981; Zhang-Shen and McKeown, HotNets 2004) fixes one flow per endpoint:

* phase 1: endpoint :math:`s` sends :math:`r\,p(\tau)` to each *hub* :math:`\tau`
  (:math:`p` in proportion to the capacity entering each hub), a flow :math:`g_s`;
* phase 2: the same flows reversed, so hub :math:`\tau` delivers :math:`r\,p(\tau)` to
  endpoint :math:`t` along :math:`g_t` backwards.

A pair :math:`(s, t)` with demand :math:`d` sends :math:`d\,p(\tau)` through each hub, on
:math:`d/r` of :math:`g_s` and :math:`d/r` of reversed :math:`g_t`. Summed over any traffic
whose row and column sums are at most :math:`r`, arc :math:`a` carries at most
:math:`L(a) + L(\bar a)` with :math:`L = \sum_s g_s` and :math:`\bar a` the reverse arc. So
the largest :math:`r` with :math:`L(a) + L(\bar a) \le c(a)` on every arc is a certified
rate for the whole hose: every permutation, every all-to-all within it.

Bisection follows: a split into halves :math:`A, B` with :math:`|A| \le |B|` is crossed by a
matching of :math:`|A|` pairs at :math:`r` each, so at least :math:`r\,|A|` Gb/s cross from
A to B. On a non-blocking Clos with the top tier as hubs, :math:`r` is the injection rate and
this bound is the exact bisection (which all-to-all throughput alone proves only to half).

The LP is solved per source (``method="lp"``) or, on fabrics with a symmetry claim, for one
root per endpoint orbit with one capacity row per arc orbit and colour refinement, exactly as
:mod:`fabricopt.flow.symmetric` does for all-to-all. Either way the rate reported is
re-proved from the lifted flows by :func:`~fabricopt.flow.certificate.certify`, as every
throughput answer is: conservation residual charged, then scaled by the worst overload (the
load checked against each arc's capacity being :math:`L(a) + L(\bar a)`).

Before either LP, ``method="auto"`` runs a bounds stage (:mod:`fabricopt.flow.two_phase.bounds`,
:mod:`fabricopt.flow.two_phase.domains`): a cut of the hierarchy above, WCMP phase-1 flows or
the LP with alike scale-up domains merged below. Where they meet, that is the answer (method
``"bounds"``) and no LP over every endpoint is built. What runs, in what order, is one plan
of named stages (:func:`fabricopt.flow.two_phase.plan.plan`); ``result.stages`` names the
stage that proved each end.
"""


from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

from ...fabric import check_endpoint_group
from ...graph_arrays import GraphArrays
from ..budget import now
from ..problem import Budget
from .arrays import _Arrays, _levels, hub_levels, hub_nodes
from .plan import plan, run
from .problem import TwoPhaseProblem, checked_options, resolved_hubs
from .result import ValiantBound

__all__ = ["ValiantBound", "best_hub_level", "hub_levels", "hub_nodes", "valiant_rate"]


def valiant_rate(fab: Any, endpoints: Iterable[Hashable] | None = None, *,
                 hubs: int | Iterable[Hashable] | None = None, method: str = "auto",
                 backend: str = "highs", time_limit: float | None = None,
                 bounds_first: bool | None = None, **backend_options: Any) -> ValiantBound:
    """Certified per-endpoint rate at which two-phase routing carries every hose traffic.

    Parameters
    ----------
    fab : Fabric
    endpoints : iterable, optional
        The endpoints of the hose (default: all).
    hubs : int or iterable, optional
        Intermediate nodes of phase 1: a level of :func:`hub_levels` (hops from the
        endpoints) or any nodes. Default: the best of the levels, tried from the top tier
        down until a rate reaches the endpoints' injection.
    method : {"auto", "symmetric", "lp"}
        ``"symmetric"`` solves one root's flow per endpoint orbit (needs a valid symmetry
        claim, all endpoints and hubs given by level); ``"lp"`` one flow per endpoint;
        ``"auto"`` the first that applies, and without a claim, when the per-endpoint LP
        would exceed ``MAX_RATE_LP_NONZEROS``, the group :func:`~fabricopt.search_symmetry`
        finds (when it has at most a quarter as many endpoint orbits as endpoints).
    backend, time_limit, **backend_options
        As for :func:`~fabricopt.max_concurrent_flow`.
    bounds_first : bool, optional
        Before any LP, bound the rate by cuts of the fabric's hierarchy and prove one by
        WCMP phase-1 flows (:mod:`fabricopt.flow.two_phase.bounds`); when they meet (to 1e-6)
        that is the answer, with method ``"bounds"`` and no LP. Default: with
        ``method="auto"`` only.

    Returns
    -------
    ValiantBound
        ``rate_gbps`` (0 with a status when nothing was proven), the per-arc load and,
        after the bounds stage, ``upper_gbps`` and its ``cut``; ``stages`` names the stage
        that proved each end.

    Examples
    --------
    A non-blocking fat-tree carries any traffic at the full link rate through its cores:

    >>> import fabricopt as fo
    >>> round(fo.valiant_rate(fo.fat_tree(4)).rate_gbps, 6)
    400.0
    """
    budget = Budget(None, now())
    time_limit, bounds_first = checked_options("valiant_rate", method, backend, time_limit,
                                               bounds_first, backend_options)
    budget.time_limit = time_limit
    eps = check_endpoint_group("valiant_rate", fab, endpoints)
    if hubs is None:
        return best_hub_level(fab, eps, method=method, backend=backend, time_limit=time_limit,
                              bounds_first=bounds_first, **backend_options)
    hub_list, level = resolved_hubs(fab, eps, hubs)
    problem = TwoPhaseProblem(fab, eps, hub_list, level, method, backend, bounds_first, budget,
                              backend_options)
    return run(plan(problem), problem)  # type: ignore[return-value]  # no rate to beat


def best_hub_level(fab: Any, endpoints: Iterable[Hashable] | None = None, *,
                   enough_gbps: float | None = None, method: str = "auto",
                   backend: str = "highs", time_limit: float | None = None,
                   bounds_first: bool | None = None, arrays: GraphArrays | None = None,
                   **backend_options: Any) -> ValiantBound:
    """The best :func:`valiant_rate` over the hub levels, from the top tier down (cores,
    spines, leaves): the top usually wins on a Clos, the leaves where GPUs relay over NVLink
    to another rail's NIC.

    Stops at a solve that does not finish, at a rate of ``enough_gbps`` (what the caller
    needs, e.g. to close a bracket) or at the scale-out injection of an endpoint (past which
    no level does better in a cluster of several domains: a permutation across domains
    fills their NICs). With the bounds stage, a level whose cut is no better than the rate
    already proven is passed over without a solve. ``arrays`` are the fabric's
    :class:`~fabricopt.graph_arrays.GraphArrays` when the caller read them already; the other
    arguments are :func:`valiant_rate`'s.
    """
    budget = Budget(None, now())
    time_limit, bounds_first = checked_options("valiant_rate", method, backend, time_limit,
                                               bounds_first, backend_options)
    budget.time_limit = time_limit
    eps = check_endpoint_group("valiant_rate", fab, endpoints)
    # Reading the arrays checks every arc first.
    prepared = _Arrays.of(fab, arrays)
    ep_idx = np.array([prepared.ga.index[e] for e in eps])
    levels = _levels(fab, prepared.ga, eps, prepared.dead_ends(ep_idx), prepared.shape)
    ceiling = prepared.scale_out_injection(eps)
    if enough_gbps is not None:
        ceiling = min(ceiling, enough_gbps)
    best: ValiantBound | None = None
    for level in sorted(levels, reverse=True):
        problem = TwoPhaseProblem(fab, eps, levels[level], level, method, backend,
                                  bounds_first, budget, backend_options, prepared,
                                  beat=None if best is None else best.rate_gbps)
        tried = run(plan(problem), problem)
        if tried is None:
            continue  # its cut is below the rate proven: no better here
        if best is None or tried.rate_gbps > best.rate_gbps:
            best = tried
        if tried.status != "optimal" or best.rate_gbps >= ceiling * (1 - 1e-9):
            break
    assert best is not None
    best.seconds = now() - budget.start
    return best
