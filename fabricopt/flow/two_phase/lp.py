"""The two-phase LPs: one phase-1 flow per endpoint (:class:`_FullPhaseOne`), or one root's
per endpoint orbit with a capacity row per arc orbit (:class:`_SymmetricPhaseOne`), each
a :class:`~fabricopt.flow.model.ThroughputModel` whose theta is the rate, and
:func:`_solve`, which certifies what the solver returns
(:func:`~fabricopt.flow.certificate.certify`).

>>> import fabricopt as fo
>>> from fabricopt.flow.two_phase.arrays import _Arrays, hub_shares, rate_scale
>>> a = _Arrays.of(fo.fat_tree(4))
>>> eps = np.array([a.ga.index[e] for e in fo.fat_tree(4).endpoints])
>>> hubs = np.array([a.ga.index[h] for h in a.ga.nodes if str(h).startswith("core")])
>>> model = _FullPhaseOne.build(a.ga, a.rev, eps, hubs, rate_scale(a.ga, eps),
...                             hub_shares(a.ga, hubs, eps))
>>> round(_solve(model, "highs", None, {})["rate"], 6)   # a non-blocking fat tree: 400 Gb/s
400.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...graph_arrays import GraphArrays
from ..backends import solve_lp
from ..certificate import certify
from ..lp import LinearProgram
from ..model import DistanceBound, LiftedFlow, max_theta_lp
from ..symmetric import (
    OrbitClasses,
    class_conservation_rows,
    conservation_residual,
    endpoint_orbits,
    fabric_arc_orbits,
    invariant_loads,
)

__all__ = ["rate_lp_nonzeros"]


def rate_lp_nonzeros(n_endpoints: int, n_arcs: int) -> int:
    """Nonzeros of the per-endpoint LP (:class:`_FullPhaseOne`): per endpoint, each arc's
    flow in two conservation rows and one capacity row, and the rate in one."""
    return n_endpoints * (3 * n_arcs + 1)


def _phase_one_supply(n: int, root: int, hub_idx: np.ndarray, share: np.ndarray,
                      scale: float) -> np.ndarray:
    """Net outflow per node of one source's phase-1 flow per unit rate (in ``scale``)."""
    supply = np.zeros(n)
    supply[root] += scale
    np.add.at(supply, hub_idx, -scale * share)
    return supply


@dataclass(frozen=True)
class _FullPhaseOne:
    """One phase-1 flow per endpoint; capacity rows ``L(a) + L(reverse a) <= c(a)``.

    Follows :class:`~fabricopt.flow.model.ThroughputModel` with theta the rate (in
    ``scale``); the lifted flow is the phase-1 load per arc, its load phase 1 plus phase 2.
    """

    lp: LinearProgram
    ga: GraphArrays
    rev: np.ndarray
    supplies: np.ndarray     # (T, n) per unit rate
    scale: float
    min_demand: float

    @classmethod
    def build(cls, ga: GraphArrays, rev: np.ndarray, ep_idx: np.ndarray,
              hub_idx: np.ndarray, scale: float, share: np.ndarray) -> _FullPhaseOne:
        T, m = len(ep_idx), ga.n_arcs
        supplies = np.stack([_phase_one_supply(ga.n_nodes, int(s), hub_idx, share, scale)
                             for s in ep_idx])
        both = sp.identity(m, format="csr") + sp.csr_matrix(
            (np.ones(m), (np.arange(m), rev)), shape=(m, m))
        lp = max_theta_lp(sp.kron(sp.identity(T, format="csr"), ga.incidence(), format="csr"),
                          supplies.reshape(-1),
                          sp.kron(sp.csr_matrix(np.ones((1, T))), both, format="csr"),
                          ga.capacity)
        return cls(lp, ga, rev, supplies, scale, scale * float(share[share > 0].min()))

    @property
    def constrained(self) -> np.ndarray:
        return np.ones(self.ga.n_arcs, dtype=bool)

    def lift(self, x: np.ndarray) -> LiftedFlow:
        """Phase-1 load per arc, both phases' load, and the largest per-source L1
        conservation residual."""
        T, m = self.supplies.shape[0], self.ga.n_arcs
        g = np.clip(x[:-1].reshape(T, m), 0.0, None)
        net = (self.ga.incidence() @ g.T).T - x[-1] * self.supplies
        load = g.sum(axis=0)
        return LiftedFlow(float(x[-1]), load + load[self.rev],
                          float(np.abs(net).sum(axis=1).max()), load)

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray:
        return np.clip(-dual_ub[: self.ga.n_arcs], 0.0, None)

    def length_bound(self, lengths: np.ndarray) -> DistanceBound | None:
        return None  # a certified rate for every traffic: only the lower side is proven


@dataclass(frozen=True)
class _SymmetricPhaseOne:
    """One root's phase-1 flow per endpoint orbit; arc orbit ``O`` carries
    ``sum_i (|O_i|/|O|) sum_O g_i`` on each arc (invariant flow).

    Follows :class:`~fabricopt.flow.model.ThroughputModel` like :class:`_FullPhaseOne`; the
    lifted flow is the roots' phase-1 flows on every arc, root after root.
    """

    lp: LinearProgram
    ga: GraphArrays
    rev: np.ndarray
    orbit: np.ndarray
    orbit_size: np.ndarray
    supplies: tuple[np.ndarray, ...]      # per root, per unit rate
    classes: tuple[OrbitClasses, ...]     # per root
    columns: tuple[slice, ...]            # per root
    root_orbit_size: np.ndarray           # endpoints per root's orbit
    scale: float
    min_demand: float

    @classmethod
    def build(cls, fab: Any, ga: GraphArrays, rev: np.ndarray, ep_idx: np.ndarray,
              hub_idx: np.ndarray, scale: float, claim: Any, share: np.ndarray,
              ) -> _SymmetricPhaseOne | None:
        sym = claim  # fab.symmetry, as the caller read it
        orbit = fabric_arc_orbits(fab, ga, sym)
        orbit_size = np.bincount(orbit).astype(float)
        n_orb = len(orbit_size)
        rev_orbit = np.full(n_orb, -1)
        rev_orbit[orbit] = orbit[rev]
        if np.any(rev_orbit[orbit] != orbit[rev]):
            return None  # an automorphism maps reverse arcs to reverse arcs; this claim doesn't
        # The caller passes all endpoints, maybe in another order: roots follow fab.endpoints.
        ep_orbit = endpoint_orbits(sym, tuple(fab.endpoints))
        roots = np.array([ga.index[e] for e in fab.endpoints], dtype=np.int64)
        sizes = np.bincount(ep_orbit)
        flow_blocks, rhs, cap_blocks, supplies, classes, columns = [], [], [], [], [], []
        col = 0
        for i, pos in enumerate(np.unique(ep_orbit, return_index=True)[1]):
            supply = _phase_one_supply(ga.n_nodes, int(roots[pos]), hub_idx, share, scale)
            oc = OrbitClasses.from_orbits(ga, orbit, np.round(supply / scale, 12))
            A_flow, rep = class_conservation_rows(ga, oc.node_class, oc.arc_class)
            # Row of orbit O: load on O (phase 1) plus load on its reverse orbit (phase 2);
            # an orbit that is its own reverse gets both terms, which the sparse sum adds up.
            coef = sizes[i] / oc.orbit_size[oc.class_orbit] * oc.class_size
            ids = np.arange(oc.n_classes)
            cap_blocks.append(sp.csr_matrix(
                (np.concatenate([coef, coef]),
                 (np.concatenate([oc.class_orbit, rev_orbit[oc.class_orbit]]),
                  np.concatenate([ids, ids]))), shape=(n_orb, oc.n_classes)))
            flow_blocks.append(A_flow)
            rhs.append(supply[rep])
            supplies.append(supply)
            classes.append(oc)
            columns.append(slice(col, col + oc.n_classes))
            col += oc.n_classes
        lp = max_theta_lp(sp.block_diag(flow_blocks, format="csr"), np.concatenate(rhs),
                          sp.hstack(cap_blocks, format="csr"), classes[0].orbit_cap)
        return cls(lp, ga, rev, orbit, orbit_size, tuple(supplies), tuple(classes),
                   tuple(columns), sizes.astype(float), scale,
                   scale * float(share[share > 0].min()))

    @property
    def constrained(self) -> np.ndarray:
        return np.ones(self.ga.n_arcs, dtype=bool)

    def lift(self, x: np.ndarray) -> LiftedFlow:
        """Both phases' load per arc (every endpoint routing like its orbit's root) and the
        largest root flow's L1 conservation residual on the whole graph (the same for every
        image)."""
        flows = np.stack([oc.lift(x[c]) for oc, c in zip(self.classes, self.columns,
                                                          strict=True)])
        load = invariant_loads(self.orbit, self.orbit_size, self.root_orbit_size, flows)
        residual = max(conservation_residual(self.ga, f, x[-1] * b)
                       for f, b in zip(flows, self.supplies, strict=True))
        return LiftedFlow(float(x[-1]), load + load[self.rev], residual, flows.ravel())

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray:
        return np.zeros(self.ga.n_arcs)  # no upper bound is derived from them

    def length_bound(self, lengths: np.ndarray) -> DistanceBound | None:
        return None


def _solve(model: _FullPhaseOne | _SymmetricPhaseOne, backend: str,
           time_limit: float | None, options: dict[str, Any]) -> dict[str, Any]:
    sol = solve_lp(model.lp, backend, time_limit, **options)
    cert = certify(model, sol)
    out: dict[str, Any] = {"model": model, "status": sol.status, "message": sol.message,
                           "x": cert.point,
                           "rate": cert.lower * model.scale, "overload": cert.max_overload,
                           "residual": cert.max_residual, "load": None}
    if cert.lifted is not None:
        theta_x = cert.lifted.theta
        out["load"] = cert.lifted.load * (cert.lower / theta_x) if theta_x > 0 else (
            cert.lifted.load * 0.0)
    return out
