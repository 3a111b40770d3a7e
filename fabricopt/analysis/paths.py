"""The k shortest paths between two nodes of a fabric, with what each path crosses.

:func:`k_shortest_paths` lists the ``k`` shortest simple paths from one node to another,
shortest first (Yen's algorithm, through :func:`networkx.shortest_simple_paths`), by hop count
or by an arc attribute (``length_m``, or any number on the arcs). Each path says its hops, the
tiers it crosses and its bottleneck (the smallest capacity on it, Gb/s per direction): the
paths ECMP would spread a flow over are the shortest ones of equal length.

In a switched fabric, paths do not pass through other GPUs (a GPU is an endpoint, not a
switch), unless ``transit_gpus=True``; in a direct topology (a ring, a torus: no switch at
all) GPUs forward, and they may.

The list is checked as it is built: each path is simple and made of arcs of the fabric, no
path repeats, lengths never decrease, and the first path's length is the shortest distance
(Dijkstra's, computed apart). Yen's algorithm makes the list exact: no simple path shorter
than the last one listed is left out.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from .._checks import check_bool, check_int, did_you_mean, fail
from ..errors import FabricOptError
from ..fabric import Fabric, check_fabric, format_gbps

__all__ = ["Path", "k_shortest_paths"]


@dataclass(frozen=True)
class Path:
    """One path: its ``nodes`` in order, ``length`` (hops, or the sum of the weight),
    ``tiers`` crossed (one per hop) and ``bottleneck_gbps`` (its smallest arc capacity)."""

    nodes: tuple[Hashable, ...]
    length: float
    tiers: tuple[str, ...]
    bottleneck_gbps: float

    @property
    def hops(self) -> int:
        return len(self.nodes) - 1

    def __str__(self) -> str:
        return (" -> ".join(map(str, self.nodes)) + f"  ({self.hops} hops"
                + (f", length {self.length:g}" if self.length != self.hops else "")
                + f", bottleneck {format_gbps(self.bottleneck_gbps)})")


def _view(fab: Fabric, source: Hashable, target: Hashable, transit_gpus: bool) -> Any:
    g = fab.graph
    if transit_gpus:
        return g
    ends = {source, target}
    gpus = set(fab.endpoints)
    return nx.subgraph_view(g, filter_node=lambda v: v in ends or v not in gpus)


def _check_node(func: str, name: str, fab: Fabric, node: Any) -> Hashable:
    if node in fab.graph:
        return node
    by_text = {str(v): v for v in fab.graph}
    if isinstance(node, str) and node in by_text:
        return by_text[node]  # a name typed on the command line, for a node named by a number
    raise fail(func, name, f"a node of {fab.name!r}" + did_you_mean(str(node), list(by_text)),
               node)


def k_shortest_paths(fab: Fabric, source: Hashable, target: Hashable, k: int = 4, *,
                     weight: str | None = None, transit_gpus: bool | None = None
                     ) -> list[Path]:
    """The ``k`` shortest simple paths from ``source`` to ``target``, shortest first.

    Parameters
    ----------
    fab : Fabric
    source, target : node
        Two distinct nodes (a name given as text is matched against the nodes' names).
    k : int
        How many paths, at most (fewer when fewer exist).
    weight : str, optional
        An arc attribute holding each arc's length (a missing value counts 1); default
        None: every hop counts 1.
    transit_gpus : bool, optional
        Whether paths may pass through GPUs other than the two ends. Default: only in a
        fabric without switches (rings, tori, hypercubes forward through their GPUs).

    Returns
    -------
    list of Path

    Raises
    ------
    InvalidParameterError
        A node not in the fabric (with a suggestion), ``source == target``, ``k < 1``, or a
        ``weight`` no arc carries. :class:`~fabricopt.FabricOptError` when no path joins
        them.

    Examples
    --------
    Two GPUs on different leaves of a 2-leaf, 2-spine fabric: two paths of 4 hops, one
    through each spine.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    >>> for p in k_shortest_paths(fab, "g0", "g2", k=3):
    ...     print(p)
    g0 -> leaf0 -> spine0 -> leaf1 -> g2  (4 hops, bottleneck 400 Gb/s)
    g0 -> leaf0 -> spine1 -> leaf1 -> g2  (4 hops, bottleneck 400 Gb/s)
    """
    func = "k_shortest_paths"
    check_fabric(func, fab)
    source = _check_node(func, "source", fab, source)
    target = _check_node(func, "target", fab, target)
    if source == target:
        raise fail(func, "target", "a node other than the source", target)
    k = check_int(func, "k", k, minimum=1)
    g = fab.graph
    if weight is not None:
        if not isinstance(weight, str) or not any(weight in d for _, _, d in g.edges(data=True)):
            keys = sorted({key for _, _, d in g.edges(data=True) for key in d})
            raise fail(func, "weight", "None (hops) or an arc attribute of the fabric ("
                       + ", ".join(keys) + ")", weight)
    if transit_gpus is None:
        transit_gpus = not fab.switches
    transit_gpus = check_bool(func, "transit_gpus", transit_gpus)
    view = _view(fab, source, target, transit_gpus)

    def length_of(u: Hashable, v: Hashable, d: dict[str, Any]) -> float:
        return 1.0 if weight is None else float(d.get(weight, 1.0))

    try:
        shortest = nx.shortest_path_length(view, source, target, weight=length_of)
        found = list(itertools.islice(nx.shortest_simple_paths(
            view, source, target, weight=None if weight is None else length_of), k))
    except nx.NetworkXNoPath:
        raise FabricOptError(f"{func}(): no path from {source} to {target} in "
                             f"{fab.name!r}" + ("" if transit_gpus else
                                                " without passing through other GPUs "
                                                "(transit_gpus=True allows it)")) from None
    paths = []
    for nodes in found:
        arcs = list(zip(nodes, nodes[1:], strict=False))
        paths.append(Path(tuple(nodes), sum(length_of(u, v, g[u][v]) for u, v in arcs),
                          tuple(str(g[u][v].get("tier", "link")) for u, v in arcs),
                          min(float(g[u][v].get("capacity", 0.0)) for u, v in arcs)))
    _check(paths, shortest)
    return paths


def _check(paths: list[Path], shortest: float) -> None:
    """The list's certificate: simple, distinct, non-decreasing, the first one shortest."""
    tol = 1e-9 * max(1.0, shortest)
    first = paths[0].length if paths else None
    if first is None or abs(first - shortest) > tol:
        raise FabricOptError(f"k_shortest_paths(): the first path ({first}) is not the "
                             f"shortest distance ({shortest})")
    for a, b in zip(paths, paths[1:], strict=False):
        if b.length < a.length - tol:
            raise FabricOptError("k_shortest_paths(): lengths decrease along the list")
    if len({p.nodes for p in paths}) != len(paths) or any(
            len(set(p.nodes)) != len(p.nodes) for p in paths):
        raise FabricOptError("k_shortest_paths(): a path repeats or is not simple")
