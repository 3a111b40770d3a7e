"""What a throughput computation returns: the bracket, its proofs, and where the load sits."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph_arrays import GraphArrays
from ..symmetry_claim import Symmetry

Arc = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class TierUtilization:
    """Utilization of one tier's arcs: the largest and the mean load/capacity."""

    tier: str
    max_utilization: float
    mean_utilization: float
    binding_arcs: int


def tier_utilization(util: np.ndarray, tiers: Any, binding: np.ndarray,
                     coded: tuple[np.ndarray, list[str]] | None = None,
                     ) -> dict[str, TierUtilization]:
    """Per tier, in order of first appearance: max and mean of ``util`` (load / capacity per
    arc) and how many arcs ``binding`` marks. ``tiers`` is the tier of each arc (a sequence
    of str); ``coded``, when given, is its codes in order of first appearance and the
    distinct tiers (:attr:`GraphArrays.tier_codes <fabricopt.graph_arrays.GraphArrays.tier_codes>`).

    >>> tier_utilization(np.array([0.5, 1.0, 0.25]), ["a", "b", "a"],
    ...                  np.array([False, True, False]))["a"].max_utilization
    0.5
    """
    if coded is not None:
        code, names = coded
        return _per_tier(util, code, zip(names, itertools.count()), binding)
    # One code per arc by a dict pass, then an integer mask per tier: a numpy array of the
    # names and a string comparison per tier took a tenth of a second on 300,000 arcs.
    if isinstance(tiers, np.ndarray):
        tiers = tiers.tolist()
    seen: dict[str, int] = {}
    code = np.fromiter(map(seen.setdefault, tiers, itertools.count()), dtype=np.int64,
                       count=len(tiers))
    return _per_tier(util, code, seen.items(), binding)


def _per_tier(util: np.ndarray, code: np.ndarray, tiers: Iterable[tuple[str, int]],
              binding: np.ndarray) -> dict[str, TierUtilization]:
    """The table of :func:`tier_utilization`, tier ``t``'s arcs those of code ``k`` for each
    ``(t, k)`` of ``tiers`` (in order)."""
    out = {}
    for tier, k in tiers:
        sel = code == k
        out[tier] = TierUtilization(tier, float(util[sel].max()), float(util[sel].mean()),
                                    int(binding[sel].sum()))
    return out


@dataclass(frozen=True)
class FlowCertificate:
    """What proves a :class:`FlowResult`'s bracket, kept so that
    :func:`~fabricopt.check_certificate` can re-prove it from the fabric alone.

    Attributes
    ----------
    ga : GraphArrays
        The fabric's arcs as the solve saw them (their order indexes the arrays below).
    tiers : tuple of str
        The ``tier`` of each arc.
    load : ndarray or None
        Gb/s per arc of the flow that proves ``lower`` (at the solver's theta).
    lower_proof : LowerProof or None
        What proves the lower end (the better proof, as the engine's bracket keeps it): a
        :class:`~fabricopt.flow.lp_proof.FlowProof`, a
        :class:`~fabricopt.flow.lp_proof.RootFlowProof`, a
        :class:`~fabricopt.flow.two_phase.check.HoseFloor`, a
        :class:`~fabricopt.failures.reroute.ReroutedFlow`, a
        :class:`~fabricopt.failures.plane_routing.PlaneProof` (:mod:`fabricopt.flow.proof`);
        None when nothing does (lower 0).
    upper_proof : UpperProof or None
        What proves the upper end: :class:`~fabricopt.flow.proof.ArcLengths` (an LP's
        duals, a cut's lengths, the cut around each endpoint); None when nothing does.

    The attributes of the certificate before its proofs were typed are read from the proofs
    (read-only): ``lengths`` (the upper proof's arc lengths), ``flow`` and ``theta`` (a
    stored LP point and its theta, solve units), ``traffic_scale`` and ``capacity_unit`` (the
    solve's units, :mod:`fabricopt.flow.units`), ``include_endpoint_links``, ``symmetry`` (a
    found symmetry the root flows use), ``hose`` (the two-phase rate of a two-phase floor),
    ``reroute`` (a rerouted intact flow) and ``plane`` (a routing through the planes). A
    certificate is made one way: each stage makes the proof of the end it proves, beside it,
    and hands it as ``lower_proof`` / ``upper_proof``.

    Examples
    --------
    >>> import fabricopt as fo
    >>> cert = fo.max_concurrent_flow(fo.ring(6), method="lp").certificate
    >>> cert.proofs
    {'lower': 'FlowProof', 'upper': 'ArcLengths'}
    >>> cert
    FlowCertificate(lower_proof=FlowProof, upper_proof=ArcLengths, GraphArrays(6 nodes, 12 arcs))
    """

    ga: GraphArrays
    tiers: tuple[str, ...]
    load: np.ndarray | None = None
    lower_proof: Any = None
    upper_proof: Any = None

    def __repr__(self) -> str:
        # Its arrays (a tier per arc, a proof's shares per leaf) would print in the hundreds
        # of thousands of characters in a notebook; the proofs' classes say what it holds.
        return (f"FlowCertificate(lower_proof={self.proofs['lower'] or None}, "
                f"upper_proof={self.proofs['upper'] or None}, {self.ga!r})")

    @property
    def proofs(self) -> dict[str, str]:
        """The class of each end's proof, by name (``""`` when none proves it)."""
        return {end: "" if p is None else type(p).__name__
                for end, p in (("lower", self.lower_proof), ("upper", self.upper_proof))}

    @property
    def lengths(self) -> np.ndarray | None:
        return getattr(self.upper_proof, "lengths", None)

    @property
    def flow(self) -> np.ndarray | None:
        return getattr(self.lower_proof, "flow", None)

    @property
    def theta(self) -> float | None:
        return getattr(self.lower_proof, "theta", None)

    @property
    def symmetry(self) -> Symmetry | None:
        return getattr(self.lower_proof, "symmetry", None)

    @property
    def traffic_scale(self) -> float:
        return self._unit("traffic_scale")

    @property
    def capacity_unit(self) -> float:
        return self._unit("capacity_unit")

    def _unit(self, name: str) -> float:
        """The solve unit ``name`` of whichever proof was made in solve units (1 else)."""
        for proof in (self.lower_proof, self.upper_proof):
            if hasattr(proof, name):
                return getattr(proof, name)
        return 1.0

    @property
    def include_endpoint_links(self) -> bool:
        for proof, name in ((self.lower_proof, "include_endpoint_links"),
                            (self.upper_proof, "endpoint_cut")):
            if hasattr(proof, name):
                return getattr(proof, name)
        return True

    @property
    def hose(self) -> Any:
        return getattr(self.lower_proof, "hose", None)

    @property
    def reroute(self) -> Any:
        return self.lower_proof if hasattr(self.lower_proof, "detours") else None

    @property
    def plane(self) -> Any:
        return self.lower_proof if hasattr(self.lower_proof, "relay_leaves") else None


@dataclass
class FlowResult:
    """Max-concurrent-flow answer with its certificate.

    Attributes
    ----------
    theta : float or None
        Largest scale of the traffic that fits; None unless ``status == "optimal"``.
    lower, upper : float
        Certified bracket ``lower <= theta* <= upper``: ``lower`` from a feasible flow scaled
        by its worst overload, ``upper`` from arc lengths through the distance bound.
    status : str
        ``"optimal"``, ``"time_limit"``, ``"infeasible"``, ``"not_solved"``, ... (see
        :data:`fabricopt.flow.lp.STATUSES`).
    method, backend : str
        ``"lp"`` (full LP) or ``"symmetric"``; the solver backend.
    seconds : float
        Wall time of build plus solve plus certificate.
    per_endpoint_gbps : float
        ``lower`` times the mean demand sent per sending endpoint (Gb/s, per direction).
    cut : frozenset or None
        When a demand pair is disconnected: the nodes reachable from its source (nothing
        leaves them), which proves theta = 0.
    mean_out_gbps : float or None
        Mean demand sent per sending endpoint (Gb/s) of the traffic as solved (same-switch
        pairs left out in the fabric-only view).
    certificate : FlowCertificate or None
        The flow and arc lengths behind the bracket.
    work_limit : int or None
        The cap on the solver's work the result was computed under (iterations or rounds),
        None when there was none.
    stages : dict
        Which stage proved each end: ``{"lower": ..., "upper": ...}`` (names of
        :mod:`fabricopt.flow.plan`'s stages: ``"routed bounds"``, ``"hierarchy cut"``,
        ``"two-phase floor"``, ``"full LP"``...); every result of
        :func:`~fabricopt.max_concurrent_flow` names both, each a stage its proof's class
        lists in ``STAGES`` (``certificate.lower_proof``, ``certificate.upper_proof``;
        a stage handed in names both ends after itself).
    """

    theta: float | None
    lower: float
    upper: float
    status: str
    method: str
    backend: str
    seconds: float
    per_endpoint_gbps: float
    message: str = ""
    fabric_name: str = ""
    traffic_name: str = ""
    cut: frozenset[Hashable] | None = None
    unreachable: Arc | None = None
    max_overload: float = 0.0
    max_residual: float = 0.0
    lp_size: dict[str, int] = field(default_factory=dict)
    mean_out_gbps: float | None = None
    certificate: FlowCertificate | None = field(default=None, repr=False)
    work_limit: int | None = None
    stages: dict[str, str] = field(default_factory=dict)

    @property
    def _ga(self) -> GraphArrays | None:
        return self.certificate.ga if self.certificate else None

    @property
    def _load(self) -> np.ndarray | None:
        return self.certificate.load if self.certificate else None

    @property
    def _lengths(self) -> np.ndarray | None:
        return self.certificate.lengths if self.certificate else None

    @property
    def exact(self) -> bool:
        """True when the bracket closes: both bounds finite and
        ``upper - lower <= 1e-6 * upper`` (``"disconnected"``: both 0, a pair has no path)."""
        return (self.status in ("optimal", "disconnected") and math.isfinite(self.upper)
                and self.upper - self.lower <= 1e-6 * max(self.upper, 1e-300))

    @property
    def per_endpoint_gbps_bracket(self) -> tuple[float, float] | None:
        """The certified bracket in Gb/s per endpoint: ``lower`` and ``upper`` times the
        mean demand sent per endpoint (None when the result does not record the demand)."""
        if self.mean_out_gbps is None:
            return None
        return self.lower * self.mean_out_gbps, self.upper * self.mean_out_gbps

    @property
    def link_load(self) -> dict[Arc, float]:
        """Gb/s on each arc in the solution that proves ``lower`` (at ``theta``)."""
        if self._load is None or self._ga is None:
            return {}
        return dict(zip(self._ga.arcs, self._load.tolist(), strict=True))

    @property
    def utilization(self) -> dict[Arc, float]:
        """Load / capacity on each arc."""
        if self._load is None or self._ga is None:
            return {}
        return dict(zip(self._ga.arcs, (self._load / self._ga.capacity).tolist(), strict=True))

    @property
    def lengths(self) -> dict[Arc, float]:
        """The arc lengths that prove ``upper`` (dual values of the capacity rows)."""
        if self._lengths is None or self._ga is None:
            return {}
        return dict(zip(self._ga.arcs, self._lengths.tolist(), strict=True))

    @property
    def bottlenecks(self) -> list[Arc]:
        """Arcs that bind: positive dual length (relative to the largest), i.e. the links
        whose capacity limits theta."""
        if self._lengths is None or self._ga is None or not self._lengths.size:
            return []
        top = float(self._lengths.max())
        if top <= 0:
            return []
        return [self._ga.arcs[a] for a in np.flatnonzero(self._lengths > 1e-9 * top)]

    @property
    def tiers(self) -> dict[str, TierUtilization]:
        """Per tier: max and mean utilization and how many arcs bind."""
        if self._load is None or self._ga is None or self.certificate is None:
            return {}
        util = self._load / self._ga.capacity
        names = self.certificate.tiers
        binding = (self._lengths > 1e-9 * self._lengths.max()) if (
            self._lengths is not None and self._lengths.size and self._lengths.max() > 0) \
            else np.zeros(len(util), dtype=bool)
        coded = self._ga.tier_codes if names is self._ga.tiers else None
        return tier_utilization(util, names, binding, coded)

    @property
    def binding_tier(self) -> str | None:
        """The tier with the most binding arcs (ties: the highest utilization); None when
        nothing binds because the traffic has no path at all (theta 0: a cut with no arcs)."""
        tiers = self.tiers
        if not tiers or self.upper <= 0:
            return None
        return max(tiers.values(),
                   key=lambda t: (t.binding_arcs > 0, t.max_utilization, t.binding_arcs)).tier

    def __str__(self) -> str:
        theta = f"{self.theta:.6g}" if self.theta is not None else "unknown (not proven)"
        lines = [
            f"fabric           {self.fabric_name}",
            f"traffic          {self.traffic_name}",
            f"status           {self.status} ({self.method}, {self.backend}, "
            f"{self.seconds:.2f} s)",
            f"theta            {theta}",
            f"certified        {self.lower:.6g} <= theta <= {self.upper:.6g}",
        ]
        bracket = self.per_endpoint_gbps_bracket
        if self.theta is not None:
            lines.append(f"per endpoint     {self.per_endpoint_gbps:.6g} Gb/s "
                         f"({self.per_endpoint_gbps / 8:.6g} GB/s) per direction")
        elif bracket is not None:
            # Never print the lower end alone as if it were the answer.
            lines.append(f"per endpoint     unknown: {bracket[0]:.6g} to {bracket[1]:.6g} Gb/s "
                         "per direction (certified)")
        else:
            lines.append("per endpoint     unknown")
        if self.binding_tier:
            # Read from the bound's lengths: only an exact result proves which tier binds.
            hedge = "" if self.theta is not None else " (most likely: the bracket is open)"
            lines.append(f"binding tier     {self.binding_tier}{hedge}")
        if self.unreachable:
            lines.append(f"disconnected     {self.unreachable[0]!r} cannot reach "
                         f"{self.unreachable[1]!r}")
        if self.stages:
            # Which stage proved each end: what to read in the certificate, and where a
            # bracket left open came from.
            ends = [f"{end} by {self.stages[end]}" for end in ("lower", "upper")
                    if end in self.stages]
            lines.append(f"proven           {', '.join(ends)}")
        if self.message and self.status != "optimal":
            lines.append(f"solver says      {self.message}")
        return "\n".join(lines)
