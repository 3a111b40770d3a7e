"""The Fabric: the one data model every solver, estimator and plot consumes.

A fabric wraps a :class:`networkx.DiGraph`. A physical bidirectional link, or a bundle of
parallel links between the same two devices, is two arcs. Units and attributes:

==========  ===============  ==========================================================
where       attribute        meaning (who reads it)
==========  ===============  ==========================================================
arc         ``capacity``     Gb/s (10^9 bit/s) per direction, whole bundle (every solver)
arc         ``links``        physical links in the bundle (failures, cost, radix check)
arc         ``tech``         link technology, e.g. ``"nvlink4"``, ``"ndr"``, ``"800gbe"``
                             (scale-up or network: :mod:`fabricopt.tiers`; media, cost)
arc         ``tier``         e.g. ``"gpu-leaf"``, ``"leaf-spine"``, ``"spine-core"``
                             (scale-up or network, per-tier tables, cost)
arc, node   ``risk_group``   label(s) of a shared-risk group (``risk_groups``)
node        ``role``         ``"gpu"``, ``"switch"`` or ``"nic"``
node        ``layer``        0 for GPUs, rising towards the core (cuts, plots, layout)
node        ``node``         the server a GPU, NIC or in-server switch belongs to
node        ``rail``         the rail (the GPU's position in its server, its leaf's)
node        ``su, pod``      scalable unit, pod (hierarchy cuts, layout, plots)
node        ``plane``        the network plane of a multi-plane scale-out
node        ``group, dc``    a dragonfly group, a data centre (hierarchy cuts)
node        ``zone, tray``   a zone of a fabric, a tray of a rack-scale domain (cuts)
node        ``coords``       a torus node's coordinates (bisection cuts)
gpu         ``gpu_model``    catalog key of the GPU (training and serving)
switch      ``model``        catalog key of the switch (cost, power)
switch      ``radix``        ports at the rate of the links attached
switch      ``reduce``       True where the switch reduces in-network (SHARP)
==========  ===============  ==========================================================

Optional attributes mean something where present. Which GPUs share a scale-up domain or
a server, which switches are leaves, each node's rail and layer, and the hierarchy's
partitions are read once, as :class:`~fabricopt.graph_arrays.FabricShape`; a fabric's
provenance (the generator call and what was removed since) is :attr:`Fabric.origin`.

``capacity`` is the networkx flow convention, so ``networkx.maximum_flow(fab.graph, s, t)``
works as is.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from copy import deepcopy
from dataclasses import dataclass, field
from operator import methodcaller
from typing import Any

import networkx as nx
import numpy as np

from ._checks import MAX_LINK_GBPS as MAX_LINK_GBPS  # where generators and tests read it
from ._checks import (
    check_label,
    check_node_names,
    exact_text,
    fastest_links,
    too_fast,
)
from ._unchanged import once
from .errors import InvalidFabricError, InvalidParameterError
from .graph_arrays import GraphArrays, looks_valid
from .graph_arrays import tier_totals as _link_totals_on_arrays
from .symmetry_claim import Symmetry
from .tiers import SCALE_UP_TIERS as SCALE_UP_TIERS  # its old home; tiers.py owns it now
from .tiers import is_scale_up_arc, tier_of

ROLES = ("gpu", "switch", "nic")
#: Capacities (Gb/s per arc) a real link can have, from a 1 Mb/s management port to a
#: petabit trunk (:data:`~fabricopt._checks.MAX_LINK_GBPS`); :meth:`Fabric.validate` refuses a
#: link above it, and warns below it (bit/s given where Gb/s is meant).
PLAUSIBLE_GBPS = (1e-3, MAX_LINK_GBPS)
#: Capacities (Gb/s per arc) any fabric may hold, whatever unit it was given in: 1 bit/s to
#: 1 Eb/s. No link of any unit has a capacity outside them, and beyond them the engine's
#: scalings overflow (1e300 Gb/s made collective figures inf, a bracket's lower end pass its
#: upper): :meth:`Fabric.validate` refuses them even when the fabric records its unit.
REPRESENTABLE_GBPS = (1e-9, 1e9)


class Fabric:
    """A GPU interconnect: a directed graph with capacities, endpoints and metadata.

    Parameters
    ----------
    graph : networkx.DiGraph
        Arcs carry ``capacity`` (Gb/s per direction), ``links``, ``tech`` and ``tier``; nodes
        carry ``role`` and ``layer`` (see the module docstring).
    endpoints : iterable of nodes, optional
        The traffic endpoints, in order. By default every node whose role is ``"gpu"``, in
        graph order.
    name : str, optional
        A name for tables and plots.
    params : mapping, optional
        The parameters the fabric was built from (generators record their arguments here).
    symmetry : Symmetry, optional
        A claim about the fabric's automorphisms, attached by generators that know it.
    design : mapping, optional
        Where a design file built the fabric: ``{"file", "family", "description", "layout",
        "catalog"}`` (see :func:`fabricopt.load_design`); empty otherwise.
    recipe : mapping, optional
        The generator call that built the fabric, ``{"generator": name, "arguments": {...}}``
        with JSON-ready arguments, recorded by the generators of
        :data:`fabricopt.generators.GENERATORS` when the call can be replayed; None otherwise.
        The file writers store it so a reader can rebuild the fabric and re-check its claim.
    removed : Removed, optional
        What :meth:`without` took away from the fabric the generator built (for reports).

    Examples
    --------
    >>> import networkx as nx
    >>> import fabricopt as fo
    >>> fab = fo.from_networkx(nx.path_graph(3), default_capacity=100.0)
    >>> fab.endpoints
    (0, 1, 2)
    >>> fab.graph[0][1]["capacity"]
    100.0
    """

    def __init__(self, graph: nx.DiGraph, endpoints: Iterable[Hashable] | None = None,
                 name: str | None = None, params: Mapping[str, Any] | None = None,
                 symmetry: Symmetry | None = None,
                 design: Mapping[str, Any] | None = None,
                 recipe: Mapping[str, Any] | None = None,
                 removed: Removed | None = None) -> None:
        if not isinstance(graph, nx.DiGraph) or graph.is_multigraph():
            raise InvalidParameterError(
                f"Fabric(): graph must be a networkx.DiGraph, got {type(graph).__name__}")
        self.graph = graph
        if endpoints is None:
            endpoints = [v for v, d in graph.nodes(data=True) if d.get("role") == "gpu"]
        elif not isinstance(endpoints, Iterable) or isinstance(endpoints, str | bytes | Mapping):
            raise InvalidParameterError(f"Fabric(): endpoints must be None or an iterable of "
                                        f"nodes of the graph, got {endpoints!r}")
        for arg, value in (("params", params), ("design", design), ("recipe", recipe)):
            if value is not None and not isinstance(value, Mapping):
                raise InvalidParameterError(f"Fabric(): {arg} must be None or a mapping, got "
                                            f"{value!r}")
        if symmetry is not None and not isinstance(symmetry, Symmetry):
            raise InvalidParameterError(f"Fabric(): symmetry must be None or a Symmetry, got "
                                        f"{symmetry!r}")
        if removed is not None and not isinstance(removed, Removed):
            raise InvalidParameterError(f"Fabric(): removed must be None or a Removed record, "
                                        f"got {removed!r}")
        self.endpoints: tuple[Hashable, ...] = tuple(endpoints)
        try:  # C-level lookups (networkx's __contains__ per name: a second at 524,288 GPUs)
            known = all(map(graph._node.__contains__, self.endpoints))
        except TypeError:  # an unhashable name: the loop below names it
            known = False
        missing = [] if known else [e for e in self.endpoints if e not in graph]
        if missing:
            raise InvalidParameterError(
                f"Fabric(): endpoints must be nodes of the graph, got unknown {missing[:5]!r}")
        if len(set(self.endpoints)) != len(self.endpoints):
            raise InvalidParameterError("Fabric(): endpoints must not repeat")
        self.name = check_label("Fabric", "name", name) or "fabric"
        self.params: dict[str, Any] = dict(params or {})
        self._symmetry = symmetry
        self.design: dict[str, Any] = deepcopy(dict(design or {}))
        self.recipe: dict[str, Any] | None = deepcopy(dict(recipe)) if recipe else None
        self.removed: Removed = removed if removed is not None else Removed()

    # -- symmetry -------------------------------------------------------------------------
    @property
    def symmetry(self) -> Symmetry | None:
        """The generator's symmetry claim, or None once the graph or the endpoints were
        changed after building."""
        claim = self._symmetry
        if claim is not None and not once(  # keyed by the claim: a new claim is checked anew
                self, f"symmetry_matches {id(claim)}", lambda: _claim_holds(self, claim)):
            self._symmetry = None
        return self._symmetry

    # -- provenance -----------------------------------------------------------------------
    @property
    def origin(self) -> Origin:
        """Where the fabric came from: the generator call that built it (its
        :attr:`recipe`, None for a fabric built by hand) and what was removed from it since
        (:attr:`removed`, by :meth:`without`).

        The code that treats a failed fabric apart (answered from the intact fabric its recipe
        rebuilds, its symmetry claim dropped, its recipe not replayed as its own) reads this,
        not ``params["edited"]``, which :meth:`without` still writes for a release (and a
        saved file keeps).

        >>> import fabricopt as fo
        >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2)
        >>> fab.origin.edited, fab.without(switches=["spine0"]).origin.from_recipe
        (False, True)
        """
        return Origin(self.recipe, self.removed,
                      bool(self.params.get("edited")) or bool(self.removed))

    def as_built(self) -> Fabric | None:
        """The intact fabric this one's recipe builds (failed parts are installed hardware:
        pricing buys them), with this fabric's design record; None without a recipe.

        >>> import fabricopt as fo
        >>> failed = fo.ring(6).without(links=[("n0", "n1")])
        >>> failed.graph.number_of_edges(), failed.as_built().graph.number_of_edges()
        (10, 12)
        """
        built = _replay(self.recipe) if _replay is not None and self.origin.from_recipe else None
        if built is None or not _holds(built, self):  # a recipe saved by an older version may
            return None  # replay another fabric (a default changed since): not this one's
        built.design = self.design
        return built

    # -- views ----------------------------------------------------------------------------
    @property
    def gpus(self) -> list[Hashable]:
        """Nodes whose role is ``"gpu"``."""
        return [v for v, r in self.graph.nodes(data="role") if r == "gpu"]

    @property
    def switches(self) -> list[Hashable]:
        """Nodes whose role is ``"switch"``."""
        return [v for v, r in self.graph.nodes(data="role") if r == "switch"]

    def injection_gbps(self, endpoint: Hashable) -> float:
        """Total capacity (Gb/s) leaving ``endpoint``: what it can inject per direction."""
        self._check_node("Fabric.injection_gbps", endpoint)
        return float(sum(_arc_gbps(self.name, u, v, d)
                         for u, v, d in self.graph.out_edges(endpoint, data=True) if u != v))

    def scale_out_injection_gbps(self, endpoint: Hashable) -> float:
        """Capacity (Gb/s) leaving ``endpoint`` outside its scale-up domain (links that are not
        scale-up, :func:`fabricopt.tiers.is_scale_up_arc`), or all of it when it has no other
        links."""
        self._check_node("Fabric.scale_out_injection_gbps", endpoint)
        arcs = list(self.graph.out_edges(endpoint, data=True))
        out = sum(d["capacity"] for _, _, d in arcs if not is_scale_up_arc(d))
        return float(out) if out > 0 else float(sum(d["capacity"] for _, _, d in arcs))

    def _check_node(self, func: str, endpoint: Any) -> None:
        if endpoint not in self.graph:  # networkx answers False for unhashable names too
            raise InvalidParameterError(f"{func}(): endpoint must be a node of fabric "
                                        f"{self.name!r}, got {endpoint!r}")

    def copy(self) -> Fabric:
        """An independent copy; the symmetry claim and design record are kept."""
        return Fabric(self.graph.copy(), self.endpoints, self.name, self.params, self._symmetry,
                      self.design, self.recipe, self.removed)

    def without_links(self, links: Iterable[tuple[Hashable, Hashable]]) -> Fabric:
        """A copy with the given links (both arcs of each) removed: ``without(links=links)``.

        >>> import fabricopt as fo
        >>> fab = fo.ring(4).without_links([("n0", "n1")])
        >>> fab.graph.number_of_edges(), fab.symmetry is None
        (6, True)
        """
        return self._without(links, (), "without_links")

    def without(self, links: Iterable[tuple[Hashable, Hashable]]
                | Mapping[tuple[Hashable, Hashable], int] = (),
                switches: Iterable[Hashable] = ()) -> Fabric:
        """A copy with physical links or switches removed, e.g. to model failures.

        Parameters
        ----------
        links : iterable of (u, v), or mapping (u, v) -> int
            An iterable removes each named bundle whole: both arcs of ``u``-``v``, whatever its
            ``links`` count. A mapping removes that many of the bundle's parallel physical
            links: capacity (both arcs) shrinks in proportion to the links left, and the
            bundle goes when none is left. A link may be named by either end first.
        switches : iterable of nodes
            Switches (or NICs: any node that is not a GPU) to remove with all their arcs.
            GPUs cannot be removed: they are the traffic endpoints, and a traffic matrix over
            a different set of GPUs is a different question (remove the GPU's links instead to
            model a failed NIC or port).

        Returns
        -------
        Fabric
            A new fabric, named after this one, with no symmetry claim (a failure breaks
            it), the design record and recipe kept, and :attr:`removed` extended with what
            this call took away (physical link counts, and the switches): its :attr:`origin`
            says it was changed after building (``params["edited"] = True`` says so too, for
            a release).

        Raises
        ------
        InvalidParameterError
            For a link or switch the fabric does not have (the message names it), a GPU in
            ``switches``, a link named twice, or a count that is not a whole number between 1
            and the bundle's ``links``.

        Examples
        --------
        >>> import fabricopt as fo
        >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2, links_per_pair=2)
        >>> half = fab.without(links={("leaf0", "spine0"): 1})
        >>> half.graph["leaf0"]["spine0"]["links"], half.graph["leaf0"]["spine0"]["capacity"]
        (1, 400.0)
        >>> fab.without(switches=["spine0"]).removed
        Removed(links=(), switches=('spine0',))
        """
        return self._without(links, switches, "without")

    def _without(self, links: Any, switches: Any, func: str) -> Fabric:
        """:meth:`without`, its errors naming ``func``."""
        graph = self.graph.copy()
        if isinstance(links, Mapping):
            wanted = list(links.items())
        elif isinstance(links, str | bytes) or not isinstance(links, Iterable):
            raise InvalidParameterError(f"{func}(): links must be an iterable of (u, v) pairs "
                                        f"or a mapping (u, v) -> count, got {links!r}")
        else:
            wanted = [(pair, None) for pair in links]
        gone_links: list[tuple[Hashable, Hashable, int]] = []
        seen: set[frozenset[Hashable]] = set()
        for pair, count in wanted:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise InvalidParameterError(f"{func}(): each of links must be a (u, v) pair, "
                                            f"got {pair!r}")
            u, v = pair
            if frozenset(pair) in seen:
                raise InvalidParameterError(f"{func}(): link {u!r}-{v!r} is named twice")
            seen.add(frozenset(pair))
            if not graph.has_edge(u, v) and not graph.has_edge(v, u):
                raise InvalidParameterError(f"{func}(): fabric {self.name!r} has no link "
                                            f"between {u!r} and {v!r}")
            arcs = [(a, b) for a, b in ((u, v), (v, u)) if graph.has_edge(a, b)]
            bundle = max(link_count(graph[a][b]) for a, b in arcs)
            if count is None:
                count = bundle
            elif (isinstance(count, bool) or not isinstance(count, numbers.Integral)
                  or not 1 <= count <= bundle):
                raise InvalidParameterError(
                    f"{func}(): links to remove from {u!r}-{v!r} must be an integer from 1 to "
                    f"its {bundle} physical link(s), got {count!r}")
            for a, b in arcs:
                d = graph[a][b]
                left = link_count(d) - int(count)
                if left <= 0:
                    graph.remove_edge(a, b)
                else:
                    d["capacity"] = d["capacity"] * left / link_count(d)
                    d["links"] = left
            gone_links.append((u, v, int(count)))
        gone_switches = list(dict.fromkeys(check_node_names(func, "switches", switches)))
        for w in gone_switches:
            if w not in graph:
                raise InvalidParameterError(f"{func}(): switches must be nodes of fabric "
                                            f"{self.name!r}, which has no switch {w!r}")
            if graph.nodes[w].get("role") == "gpu":
                raise InvalidParameterError(
                    f"{func}(): {w!r} is a GPU, and GPUs are the traffic endpoints: remove "
                    "its links to model a failed NIC or port, or build the traffic over the "
                    "GPUs that are left")
        graph.remove_nodes_from(gone_switches)
        removed = Removed(self.removed.links + tuple(gone_links),
                          self.removed.switches + tuple(gone_switches))
        params = dict(self.params, edited=True)
        return Fabric(graph, self.endpoints, self.name + " (edited)", params, None, self.design,
                      self.recipe, removed)

    def __repr__(self) -> str:
        return (f"<Fabric {self.name!r}: {len(self.endpoints)} endpoints, "
                f"{len(self.switches)} switches, {self.graph.number_of_edges() // 2} links>")

    # -- checks ---------------------------------------------------------------------------
    def problems(self) -> list[str]:
        """Every way the fabric breaks the data model, as readable sentences (empty if none)."""
        g = self.graph
        out: list[str] = []
        for u, v, d in g.edges(data=True):
            if u == v:
                out.append(f"arc {u!r}->{v!r}: a self-loop is not a link")
            if "links" in d and not is_link_count(d["links"]):
                out.append(f"arc {u!r}->{v!r}: links must be a whole number >= 1 of physical "
                           f"links, got {d['links']!r}")
            cap = d.get("capacity")
            if not _is_capacity(cap):
                out.append(f"arc {u!r}->{v!r}: capacity must be a finite number > 0 Gb/s, "
                           f"got {cap!r}")
            if not g.has_edge(v, u):
                out.append(f"arc {u!r}->{v!r}: a link needs both directions, {v!r}->{u!r} "
                           "is missing")
        for e in self.endpoints:
            if e not in g:
                out.append(f"endpoint {e!r}: not a node of the graph (removed after the fabric "
                           "was built?)")
            elif g.nodes[e].get("role") != "gpu":
                out.append(f"endpoint {e!r}: role must be 'gpu', got {g.nodes[e].get('role')!r}")
        for v, d in g.nodes(data=True):
            role = d.get("role")
            if role not in ROLES:
                out.append(f"node {v!r}: role must be one of {ROLES}, got {role!r}")
            if role == "switch" and d.get("radix") is not None:
                used = sum(link_count(a) for _, _, a in g.out_edges(v, data=True)
                           if is_link_count(a.get("links", 1)))
                if used > d["radix"]:
                    out.append(f"switch {v!r}: uses {used} ports, more than its radix "
                               f"{d['radix']}")
        return out

    def validate(self) -> Fabric:
        """Check the data model; raise :class:`InvalidFabricError` listing every problem.

        Rules: every arc has a finite capacity > 0 and its reverse arc, joins two different
        nodes, and its ``links`` (when set) is a whole number >= 1; every endpoint has role
        ``"gpu"``; every node has a known role; no switch uses more ports than its ``radix``.
        A link above :data:`MAX_LINK_GBPS` (1 Pb/s: bit/s given as Gb/s) is refused and a
        capacity below :data:`PLAUSIBLE_GBPS` warned about, unless the fabric was built with
        an explicit unit (``from_networkx(..., capacity_unit=...)``). Returns the fabric.

        >>> import fabricopt as fo
        >>> fo.ring(4).validate().name
        'ring(4)'
        """
        # The rules on arrays first (graph_arrays.looks_valid); the sentences only for a
        # fabric that breaks one, or that the arrays cannot read.
        capacities = once(self, "looks_valid", lambda: looks_valid(self, ROLES))
        problems = self.problems() if capacities is None else []
        if problems:
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise InvalidFabricError(f"fabric {self.name!r} is invalid: "
                                     + "; ".join(problems[:10]) + more)
        self._check_capacity_magnitude(capacities)
        return self

    def _check_capacity_magnitude(self, capacities: np.ndarray | None = None) -> None:
        """Refuse a physical link above :data:`MAX_LINK_GBPS` (bit/s given as Gb/s would read
        1e9 times too fast, exit 0 and all) and warn (``UserWarning``) on an arc below
        :data:`PLAUSIBLE_GBPS`, unless the fabric records an explicit unit."""
        low, high = PLAUSIBLE_GBPS
        if capacities is not None and np.all((capacities >= low) & (capacities <= high)):
            return
        if self.params.get("capacity_unit") is not None:
            self._check_representable(capacities)
            return
        fast = fastest_links(self.graph.edges(data=True))
        if fast:
            u, v, gbps = fast[0]
            raise InvalidFabricError(
                too_fast(f"fabric {self.name!r}", gbps, f"arc {u!r}->{v!r} at "
                         f"{exact_text(gbps)} Gb/s") + f" ({len(fast)} such arc(s)); give "
                "capacities in Gb/s, or build the fabric with fo.from_networkx(G, "
                "capacity_unit='bit/s') (or the unit they are in)")
        self._check_representable(capacities)
        odd = [(u, v, c) for u, v, c in self.graph.edges(data="capacity") if c < low]
        if odd:
            u, v, cap = odd[0]
            warnings.warn(f"fabric {self.name!r}: {len(odd)} arc(s) have a capacity below "
                          f"{low:g} Gb/s, e.g. {u!r}->{v!r} at {cap:g}; capacities are in "
                          "Gb/s per direction (bit/s given by mistake?)",
                          UserWarning, stacklevel=3)

    def _check_representable(self, capacities: np.ndarray | None) -> None:
        """Refuse an arc outside :data:`REPRESENTABLE_GBPS`, whatever the fabric's unit."""
        low, high = REPRESENTABLE_GBPS
        if capacities is None:
            capacities = np.array([c for _, _, c in self.graph.edges(data="capacity")],
                                  dtype=float)
        outside = np.flatnonzero((capacities < low) | (capacities > high))
        if len(outside):
            u, v, cap = next(edge for k, edge in enumerate(self.graph.edges(data="capacity"))
                             if k == outside[0])
            raise InvalidFabricError(
                f"fabric {self.name!r}: arc {u!r}->{v!r} has capacity {exact_text(cap)} Gb/s "
                f"({len(outside)} such arc(s)), outside the {low:g} to {high:g} Gb/s (1 bit/s "
                "to 1 Eb/s) any link has, whatever its unit; give capacities in Gb/s, or in "
                "the unit they are in with fo.from_networkx(G, capacity_unit=...)")

    def summary(self) -> FabricSummary:
        """Counts and capacities at a glance (see :class:`FabricSummary`).

        >>> import fabricopt as fo
        >>> s = fo.ring(6).summary()
        >>> s.endpoints, s.links_by_tier
        (6, {'ring': 6})
        """
        g = self.graph
        roles = Counter(map(methodcaller("get", "role"), g._node.values()))
        layers = Counter(map(methodcaller("get", "layer"), g._node.values()))
        totals = _link_totals_on_arrays(self)
        links, capacity, techs, out_gbps = totals if totals else _link_totals(self)
        inj = [out_gbps[e] for e in self.endpoints]
        claim = self.symmetry  # checked against the graph once (0.14 s on 24,576 GPUs)
        return FabricSummary(
            name=self.name,
            endpoints=len(self.endpoints),
            nodes_by_role=dict(sorted(roles.items(), key=lambda kv: str(kv[0]))),
            nodes_by_layer=dict(sorted(layers.items(), key=lambda kv: (kv[0] is None, kv[0]))),
            links_by_tier=dict(links),
            capacity_gbps_by_tier=dict(capacity),
            tech_by_tier={t: ", ".join(sorted(x for x in s if x)) for t, s in techs.items()},
            injection_gbps_min=min(inj) if inj else 0.0,
            injection_gbps_max=max(inj) if inj else 0.0,
            symmetry=claim.group if claim else None,
            params=dict(self.params),
        )


#: How a recipe is built again (None if it cannot be): the generators' work, handed here.
_replay: Callable[[Any], Fabric | None] | None = None


def register_replay(replay: Callable[[Any], Fabric | None]) -> None:
    """Set how :meth:`Fabric.as_built` builds a recipe again; the generators call it."""
    global _replay
    _replay = replay


def _holds(built: Fabric, part: Fabric) -> bool:
    """Whether ``built`` has every node of ``part``, and every arc with at least its capacity."""
    g = built.graph
    if any(v not in g for v in part.graph):
        return False
    for u, v, cap in part.graph.edges(data="capacity", default=0.0):
        arc = g.get_edge_data(u, v)
        if arc is None or arc.get("capacity", 0.0) < cap * (1 - 1e-9):
            return False
    return True


def _claim_holds(fab: Fabric, claim: Symmetry) -> bool:
    """``claim.matches(fab.graph, fab.endpoints)``; in a study row (``with unchanged(fab):``,
    where the fabric's arrays are read once for every metric) checked on those arrays when
    the claim's builder order fits them: the same checks without a pass over the arcs (the
    match took 0.08 s of a 24,576-GPU cluster's summary)."""
    order = claim.__dict__.get("_order")
    probe = once(fab, "claim_probe", list)
    in_row = probe is once(fab, "claim_probe", list)  # the same list: inside such a block
    if not in_row or order is None or type(fab.graph) is not nx.DiGraph:
        return claim.matches(fab.graph, fab.endpoints)
    try:
        ga = GraphArrays.from_fabric(fab)  # read once in the row, shared with every metric
    except InvalidFabricError:
        return claim.matches(fab.graph, fab.endpoints)
    if not order.fits(ga.nodes, ga.tail, ga.head):
        return claim.matches(fab.graph, fab.endpoints)
    # Symmetry.matches' checks, the arcs' part on the arrays (the same arcs, in the order
    # the claim's codes are in).
    endpoints = frozenset(fab.endpoints)
    return (ga.n_nodes == claim.n_nodes and ga.n_arcs == claim.n_arcs
            and endpoints == claim.endpoints
            and (claim.endpoint_orbit is None or frozenset(claim.endpoint_orbit) == endpoints)
            and len(claim.arc_orbit) == claim.n_arcs
            and order.one_capacity_per_orbit(ga.capacity))


@dataclass(frozen=True)
class Removed:
    """What :meth:`Fabric.without` took away, accumulated over successive calls.

    ``links`` holds ``(u, v, count)``: ``count`` physical links of the bundle ``u``-``v``;
    ``switches`` the removed nodes.
    """

    links: tuple[tuple[Hashable, Hashable, int], ...] = ()
    switches: tuple[Hashable, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.links or self.switches)

    @property
    def physical_links(self) -> int:
        """Physical links removed by name (not counting those of removed switches)."""
        return sum(n for _, _, n in self.links)


@dataclass(frozen=True)
class Origin:
    """Where a fabric came from (:attr:`Fabric.origin`).

    ``recipe`` is the generator call that built the intact fabric (None for a fabric built
    by hand or read without one), ``removed`` what :meth:`Fabric.without` took away since,
    and ``edited`` whether the fabric was changed after the generator built it (the recipe
    then rebuilds the intact fabric, not this one).
    """

    recipe: Mapping[str, Any] | None
    removed: Removed
    edited: bool

    @property
    def from_recipe(self) -> bool:
        """A changed fabric whose intact original its recipe rebuilds: a failed fabric
        that can be answered from that fabric."""
        return self.edited and self.recipe is not None

    @property
    def replayable(self) -> bool:
        """The recipe rebuilds this very fabric (a generator's, unchanged since)."""
        return self.recipe is not None and not self.edited


LinkTotals = tuple[dict[str, int], dict[str, float], dict[str, set[str]],
                   Mapping[Hashable, float]]


def _link_totals(fab: Fabric) -> LinkTotals:
    """Links, capacity and techs per tier (a link is two arcs: counted once, by the arc whose
    ends' reprs sort first), and the capacity out of every node: what
    :meth:`Fabric.summary` reports, one arc at a time."""
    g = fab.graph
    links: dict[str, int] = defaultdict(int)
    capacity: dict[str, float] = defaultdict(float)
    techs: dict[str, set[str]] = defaultdict(set)
    out_gbps: dict[Hashable, float] = defaultdict(float)
    label = {v: repr(v) for v in g}  # one repr per node, not two per arc
    for u, v, d in g.edges(data=True):
        if u == v:  # a self-loop joins no two devices: no link (problems() reports it)
            continue
        cap = _arc_gbps(fab.name, u, v, d)
        out_gbps[u] += cap
        # A link is two arcs: count it once, by the arc whose ends sort first.
        if g.has_edge(v, u) and label[u] > label[v]:
            continue
        tier = tier_of(d)
        links[tier] += int(d.get("links", 1))
        capacity[tier] += cap
        techs[tier].add(str(d.get("tech", "")))
    return links, capacity, techs, out_gbps


def _arc_gbps(name: str, u: Hashable, v: Hashable, arc: Mapping[str, Any]) -> float:
    """The capacity of arc ``u``->``v`` as a float, or :class:`InvalidFabricError` naming it."""
    cap = arc.get("capacity")
    if type(cap) is float and 0.0 * cap == 0.0:  # the usual case, without the ABC checks below
        return cap
    if isinstance(cap, bool) or not isinstance(cap, numbers.Real) or not math.isfinite(cap):
        raise InvalidFabricError(f"fabric {name!r}: arc {u!r}->{v!r} has capacity {cap!r}; "
                                 "every arc needs a finite capacity > 0 Gb/s (see "
                                 "Fabric.problems())")
    return float(cap)


def _is_capacity(cap: Any) -> bool:
    """True for a finite real number > 0 (bools are not capacities)."""
    kind = type(cap)
    if kind is float:  # the usual cases, without the ABC checks below
        return 0 < cap < math.inf
    if kind is int:
        return math.isfinite(cap) and cap > 0
    return (not isinstance(cap, bool) and isinstance(cap, numbers.Real)
            and math.isfinite(cap) and cap > 0)


def is_link_count(value: Any) -> bool:
    """True for a whole number >= 1 (an integer, or a float with an integer value)."""
    if type(value) is int:  # the usual case, without the ABC checks below
        return math.isfinite(value) and value >= 1
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    return math.isfinite(value) and value >= 1 and float(value).is_integer()


def link_count(arc: Mapping[str, Any]) -> int:
    """Physical links in an arc's bundle (1 when the attribute is absent)."""
    return int(arc.get("links", 1))


@dataclass
class FabricSummary:
    """What :meth:`Fabric.summary` returns; ``str()`` gives a readable table.

    Capacities are Gb/s per direction summed over a tier's links; injection is the capacity
    leaving one endpoint.
    """

    name: str
    endpoints: int
    nodes_by_role: dict[str, int]
    nodes_by_layer: dict[int, int]
    links_by_tier: dict[str, int]
    capacity_gbps_by_tier: dict[str, float]
    tech_by_tier: dict[str, str]
    injection_gbps_min: float
    injection_gbps_max: float
    symmetry: str | None
    params: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"fabric      {self.name}"]
        if self.params:
            lines.append("params      " + ", ".join(f"{k}={v!r}" for k, v in self.params.items()))
        lines.append(f"endpoints   {self.endpoints}")
        lines.append("nodes       " + ", ".join(f"{k}: {v}" for k, v in
                                                self.nodes_by_role.items()))
        lines.append("layers      " + ", ".join(f"{k}: {v}" for k, v in
                                                self.nodes_by_layer.items()))
        if self.injection_gbps_min == self.injection_gbps_max:
            lines.append(f"injection   {format_gbps(self.injection_gbps_min)} per endpoint "
                         "per direction")
        else:
            lines.append(f"injection   {format_gbps(self.injection_gbps_min)} to "
                         f"{format_gbps(self.injection_gbps_max)} per endpoint per direction")
        lines.append(f"symmetry    {self.symmetry or 'none claimed'}")
        lines.append("")
        width = max([len(t) for t in self.links_by_tier] + [4])
        lines.append(f"{'tier':<{width}}  {'links':>8}  {'capacity/dir':>14}  tech")
        for tier, n in self.links_by_tier.items():
            lines.append(f"{tier:<{width}}  {n:>8}  "
                         f"{format_gbps(self.capacity_gbps_by_tier[tier]):>14}  "
                         f"{self.tech_by_tier.get(tier, '')}")
        return "\n".join(lines)


def format_gbps(gbps: float) -> str:
    """Format Gb/s with a readable prefix: ``format_gbps(51200) == '51.2 Tb/s'``."""
    if gbps >= 1e6:
        return f"{gbps / 1e6:.4g} Pb/s"
    if gbps >= 1e3:
        return f"{gbps / 1e3:.4g} Tb/s"
    return f"{gbps:.4g} Gb/s"


def check_fabric(func: str, fab: Any, name: str = "fab") -> Any:
    """Return ``fab`` if it is a :class:`~fabricopt.Fabric` whose endpoints are nodes of its
    graph, else raise naming its type (or the missing endpoints).

    >>> check_fabric("risk_groups", None)
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: risk_groups(): fab must be a Fabric, got NoneType
    """
    if not isinstance(fab, Fabric):
        raise InvalidParameterError(f"{func}(): {name} must be a Fabric, got "
                                    f"{type(fab).__name__}")
    # C-level lookups, made once in a study row (every metric checks its fabric), again if
    # the list of endpoints was replaced.
    listed, present = once(fab, "endpoints_in_graph", lambda: _endpoints_in_graph(fab))
    if listed is not fab.endpoints:
        listed, present = _endpoints_in_graph(fab)
    if not present:
        missing = [e for e in fab.endpoints if e not in fab.graph]
        raise InvalidFabricError(f"{func}(): {name} has endpoints that are not nodes of its "
                                 f"graph (removed after it was built?): {missing[:3]!r}")
    return fab


def _endpoints_in_graph(fab: Any) -> tuple[Any, bool]:
    """``fab``'s list of endpoints, and whether every one is a node of its graph."""
    return fab.endpoints, all(map(fab.graph._node.__contains__, fab.endpoints))


def _hashable(value: Any) -> bool:
    """True when ``value`` can be hashed (a tuple holding a list cannot, though it is a
    :class:`~collections.abc.Hashable`)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _own_endpoints(fab: Any) -> tuple[tuple[Hashable, ...], set[Hashable], Any]:
    """``fab``'s endpoints as a tuple and as a set, and the list they were read from."""
    eps = tuple(fab.endpoints)
    return eps, set(eps), fab.endpoints


def check_endpoint_group(func: str, fab: Any, endpoints: Iterable[Hashable] | None,
                         minimum: int = 2,
                         error: type[Exception] = InvalidParameterError,
                         name: str = "endpoints") -> tuple[Hashable, ...]:
    """The participating endpoints (default: all of ``fab``'s), checked: known, distinct,
    at least ``minimum`` of them. Raises ``error`` naming ``func`` and the argument ``name``."""
    check_fabric(func, fab)
    # The fabric's own endpoints as a tuple and a set, read once in a study row (its flow,
    # bisection and collective metrics each check the group: two sets of 24,576 names a
    # check); read again if the list was replaced.
    own, known, listed = once(fab, "endpoint_group", lambda: _own_endpoints(fab))
    if listed is not fab.endpoints:
        own, known, listed = _own_endpoints(fab)
    if endpoints is None or endpoints is fab.endpoints:
        eps, given = own, known  # the fabric's own: known by definition
    elif isinstance(endpoints, Iterable) and not isinstance(endpoints, str | bytes | Mapping):
        eps = tuple(endpoints)
        given = None
    else:
        raise error(f"{func}(): {name} must be None or an iterable of endpoints of fabric "
                    f"{fab.name!r}, got {endpoints!r}")
    # Set operations first (C speed on 24,576 endpoints); the lists naming a culprit only
    # when one of them fails.
    try:
        given = set(eps) if given is None else given
    except TypeError:
        unhashable = next(e for e in eps if not _hashable(e))
        raise error(f"{func}(): {name} must be endpoints of fabric {fab.name!r} (node "
                    f"names), got {unhashable!r}") from None
    if given is not known and not given <= known:
        unknown = [e for e in eps if e not in known]
        raise error(f"{func}(): {name} must be endpoints of fabric {fab.name!r}, "
                    f"got unknown {unknown[:3]!r}")
    if len(given) != len(eps):
        repeated = sorted({repr(e) for e in eps if eps.count(e) > 1})
        raise error(f"{func}(): {name} must not repeat, got {', '.join(repeated[:3])} more "
                    "than once")
    if len(eps) < minimum:
        raise error(f"{func}(): {name} must hold at least {minimum} distinct endpoints, got "
                    f"{len(eps)}")
    return eps
