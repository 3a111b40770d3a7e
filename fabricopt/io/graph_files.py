"""Write a Fabric to GraphML or node-link JSON and read it back, keeping what makes it fast.

GraphML holds only strings, numbers and booleans, so node names are written as strings (two
names that print alike, such as ``1`` and ``"1"``, are refused) and list-valued attributes as
JSON text (read back as lists). Node-link JSON keeps integer and string names as they are and
turns tuple names into lists, which are read back as tuples.

Besides the graph, a file records (in the graph attributes):

* the fabric's name, endpoints (in order) and ``params``;
* the design file's record (:attr:`Fabric.design`: its ``[layout]`` and ``[catalog]`` tables,
  which the cost model reads), so costs do not change on reloading;
* how the fabric was made (:attr:`Fabric.recipe`: the generator and its arguments), whether
  that generator claimed a symmetry, and what :meth:`Fabric.without` removed.

A symmetry claim is not stored as such: it is a statement about a generator, and a file can be
edited. Reading a file whose recipe claimed one replays the recipe and compares the rebuilt graph
with the file's (same nodes, arcs, attributes and endpoints); only when they are identical is
the generator's claim attached again, so an edited file is solved without it, never with a wrong
one. Replaying costs about what building the fabric costs. A symmetry found by
:func:`~fabricopt.find_symmetry` (attached with :func:`~fabricopt.symmetry.search.with_symmetry`)
carries its proof, so the file keeps its generators (permutations of the file's nodes, by
position); reading re-verifies each on the file's graph and recomputes the arc and endpoint
orbits from them, and drops the claim if any fails.

Every reading error (missing file, a directory, truncated or corrupted content, a node without
an id, an arc to an unknown node) raises :class:`~fabricopt.errors.DesignFileError` naming the
file and the problem.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np

from .._checks import check_path, near_file
from ..errors import DesignFileError, FabricOptError, InvalidParameterError
from ..fabric import Fabric, Removed, check_fabric
from ..generators.recipe import try_replay
from ..symmetry.search import FoundSymmetry, symmetry_from_generators
from ..symmetry_claim import Symmetry

_JSON_PREFIX = "json:"
#: Graph-attribute keys of GraphML files (JSON files use the same names without the prefix).
_META = ("name", "endpoints", "params", "design", "recipe", "symmetry", "removed")


def _plain(value: Any) -> Any:
    """``json.dumps``'s ``default``: a numpy number or array as the Python number or list it
    holds (so ``np.int64(2)`` links are written as 2, not ``"2"``), anything else as text."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return str(value)


def _to_graphml_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()  # GraphML types numbers by their Python type
    if isinstance(value, bool | int | float | str):
        return value
    return _JSON_PREFIX + json.dumps(value, default=_plain)


def _from_graphml_value(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_JSON_PREFIX):
        return json.loads(value[len(_JSON_PREFIX):])
    return value


def _meta(fab: Fabric) -> dict[str, Any]:
    """What a file records besides the graph (names of nodes still in Python form)."""
    claim = fab.symmetry
    return {
        "name": fab.name,
        "endpoints": list(fab.endpoints),
        "params": fab.params,
        "design": fab.design,
        "recipe": fab.recipe,
        "symmetry": _claim_record(fab, claim),
        "removed": {"links": [list(x) for x in fab.removed.links],
                    "switches": list(fab.removed.switches)},
    }


def _claim_record(fab: Fabric, claim: Symmetry | None) -> dict[str, Any] | None:
    """What a file says of the symmetry: the group for people; for a found symmetry also
    its generators, as permutations of the file's nodes by position (read back, they are
    re-verified and give the orbits again)."""
    if claim is None:
        return None
    record: dict[str, Any] = {"group": claim.group, "orbits": claim.n_orbits,
                              "endpoint_orbits": claim.n_endpoint_orbits}
    if isinstance(claim, FoundSymmetry):
        position = {v: i for i, v in enumerate(fab.graph)}
        to_file = [position[v] for v in claim.nodes]
        record["found"] = {
            "n_twin_swaps": claim.n_twin_swaps,
            "generators": [[[to_file[int(a)] for a in s], [to_file[int(b)] for b in i]]
                           for s, i in claim.generators]}
    return record


def _graphml_graph(fab: Fabric, func: str = "write_graphml") -> nx.DiGraph:
    """The graph exactly as :func:`write_graphml` writes it: string names, GraphML values."""
    names: dict[str, Hashable] = {}
    for v in fab.graph:
        seen = names.setdefault(str(v), v)
        if seen != v:
            raise InvalidParameterError(
                f"{func}(): node names {seen!r} and {v!r} both become {str(v)!r} in GraphML, "
                "which stores names as strings; rename one of them")
    g = nx.DiGraph()
    for v, d in fab.graph.nodes(data=True):
        g.add_node(str(v), **{k: _to_graphml_value(x) for k, x in d.items() if x is not None})
    for u, v, d in fab.graph.edges(data=True):
        g.add_edge(str(u), str(v),
                   **{k: _to_graphml_value(x) for k, x in d.items() if x is not None})
    return g


def write_graphml(fab: Fabric, path: str | os.PathLike[str]) -> None:
    """Write ``fab`` as GraphML (node names become strings; see the module docstring).

    Raises
    ------
    InvalidParameterError
        When two node names print as the same string (``1`` and ``"1"``).

    Examples
    --------
    >>> import tempfile, os, fabricopt as fo
    >>> fab = fo.ring(4)
    >>> path = os.path.join(tempfile.mkdtemp(), "ring.graphml")
    >>> fo.write_graphml(fab, path)
    >>> back = fo.read_graphml(path)
    >>> back.graph.number_of_edges(), back.symmetry is not None   # claim re-checked
    (8, True)
    """
    check_fabric("write_graphml", fab)
    where = os.fspath(check_path("write_graphml", "path", path))
    g = _graphml_graph(fab)
    meta = _meta(fab)
    meta["endpoints"] = [str(e) for e in fab.endpoints]
    for key in _META:
        g.graph[f"fabric_{key}"] = meta[key] if key == "name" else json.dumps(meta[key],
                                                                              default=_plain)
    try:
        nx.write_graphml(g, where)
    except OSError as exc:
        raise DesignFileError(f"{where}: cannot be written: {exc.strerror or exc}") from None


def _check_path(path: Any, func: str) -> str:
    """The path as a string, or a DesignFileError when it is missing or a directory."""
    where = os.fspath(check_path(func, "path", path))
    if os.path.isdir(where):
        raise DesignFileError(f"{where}: is a directory, not a fabric file")
    if not os.path.exists(where):
        raise DesignFileError(f"{where}: no such file{near_file(where)}")
    return where


def read_graphml(path: str | os.PathLike[str]) -> Fabric:
    """Read a fabric written by :func:`write_graphml` (or any GraphML with capacities).

    Node names are strings. The design record, recipe and removals come back; a symmetry
    claim comes back when the recorded generator call rebuilds exactly this graph (see the
    module docstring).

    Raises
    ------
    DesignFileError
        For a missing file, a directory, or content that is not a readable fabric; the
        message names the file and the problem.

    Examples
    --------
    See :func:`write_graphml`.
    """
    where = _check_path(path, "read_graphml")
    try:
        g = nx.read_graphml(where)
    except ET.ParseError as exc:
        raise DesignFileError(f"{where}: not valid GraphML (XML error: {exc})") from None
    except (nx.NetworkXError, ValueError, KeyError, TypeError, OSError) as exc:
        raise DesignFileError(f"{where}: not a readable GraphML graph: {exc!r}") from None
    if not isinstance(g, nx.DiGraph) or g.is_multigraph():
        g = nx.DiGraph(g)
    raw = g.copy()
    try:
        meta = {key: g.graph[f"fabric_{key}"] if key == "name" else
                json.loads(g.graph[f"fabric_{key}"])
                for key in _META if f"fabric_{key}" in g.graph}
        for _, d in g.nodes(data=True):
            for k in list(d):
                d[k] = _from_graphml_value(d[k])
        for _, _, d in g.edges(data=True):
            for k in list(d):
                d[k] = _from_graphml_value(d[k])
    except json.JSONDecodeError as exc:
        raise DesignFileError(f"{where}: corrupted JSON in a GraphML attribute: {exc}") from None
    except RecursionError:
        raise DesignFileError(f"{where}: JSON in a GraphML attribute is nested too deeply to "
                              "be a fabric's") from None
    g.graph.clear()

    def same(rebuilt: Fabric) -> bool:
        canon = _graphml_graph(rebuilt)
        return (dict(canon.nodes(data=True)) == dict(raw.nodes(data=True))
                and {(u, v): d for u, v, d in canon.edges(data=True)}
                == {(u, v): d for u, v, d in raw.edges(data=True)})

    return _fabric(where, g, meta, same, str)


def _node_key(value: Any) -> Hashable:
    return tuple(_node_key(x) for x in value) if isinstance(value, list) else value


def to_json_data(fab: Fabric) -> dict[str, Any]:
    """The node-link dictionary of ``fab`` (``json.dumps`` accepts it), with the record of
    how it was made (see the module docstring)."""
    data = nx.node_link_data(fab.graph, edges="edges")
    data["graph"] = _meta(fab)
    return data


def _portable(data: Any) -> Any:
    """``data`` as it comes back from a JSON file."""
    return json.loads(json.dumps(data, default=_plain))


def from_json_data(data: dict[str, Any], source: str = "from_json_data()") -> Fabric:
    """Rebuild a fabric from :func:`to_json_data` output.

    ``source`` names where the data came from in error messages (the file name when reading
    one). A symmetry claim comes back when the recorded generator call rebuilds this graph.
    """
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) \
            or not isinstance(data.get("edges"), list):
        raise DesignFileError(f"{source}: not a node-link fabric: needs lists 'nodes' and "
                              "'edges'")
    data = _portable(data)  # deep copy; node ids are rewritten below
    raw_nodes, raw_edges = json.dumps(data["nodes"]), json.dumps(data["edges"])
    for i, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or "id" not in node:
            raise DesignFileError(f"{source}: node {i} has no 'id': {node!r}")
        node["id"] = _node_key(node["id"])
    ids = {node["id"] for node in data["nodes"]}
    for i, edge in enumerate(data["edges"]):
        if not isinstance(edge, dict) or "source" not in edge or "target" not in edge:
            raise DesignFileError(f"{source}: edge {i} needs 'source' and 'target': {edge!r}")
        edge["source"] = _node_key(edge["source"])
        edge["target"] = _node_key(edge["target"])
        for end in ("source", "target"):
            if edge[end] not in ids:
                raise DesignFileError(f"{source}: edge {i} joins unknown node {edge[end]!r}")
    meta = data.get("graph") or {}
    if not isinstance(meta, dict):
        raise DesignFileError(f"{source}: 'graph' must be an object, got {meta!r}")
    data["graph"] = {}
    try:
        g = nx.node_link_graph(data, directed=True, multigraph=False, edges="edges")
    except (nx.NetworkXError, KeyError, TypeError, ValueError) as exc:
        raise DesignFileError(f"{source}: not a readable node-link graph: {exc!r}") from None
    if meta.get("endpoints") is not None:
        meta["endpoints"] = [_node_key(e) for e in meta["endpoints"]]

    def same(rebuilt: Fabric) -> bool:
        canon = _portable(nx.node_link_data(rebuilt.graph, edges="edges"))
        return (json.dumps(canon["nodes"]) == raw_nodes
                and json.dumps(canon["edges"]) == raw_edges)

    return _fabric(source, g, meta, same, lambda v: _node_key(_portable(v)))


def _fabric(source: str, g: nx.DiGraph, meta: dict[str, Any], same: Callable[[Fabric], bool],
            rename: Callable[[Hashable], Hashable]) -> Fabric:
    """The Fabric a file describes, with the generator's claim when it is re-verified."""
    try:
        design = meta.get("design") or {}
        removed = meta.get("removed") or {}
        if not isinstance(design, dict) or not isinstance(removed, dict):
            raise ValueError("'design' and 'removed' must be objects")
        fab = Fabric(g, meta.get("endpoints") or None, meta.get("name"),
                     meta.get("params") or {}, None, design, meta.get("recipe"),
                     Removed(tuple((rename(u), rename(v), int(n))
                                   for u, v, n in removed.get("links", [])),
                             tuple(rename(w) for w in removed.get("switches", []))))
    except (FabricOptError, ValueError, TypeError) as exc:
        raise DesignFileError(f"{source}: not a valid fabric: {exc}") from None
    claimed = meta.get("symmetry")
    fab._symmetry = (_reproven_found(fab, claimed["found"])
                     if isinstance(claimed, dict) and "found" in claimed
                     else _reverified_claim(fab, claimed, same, rename))
    return fab


def _reproven_found(fab: Fabric, found: Any) -> Symmetry | None:
    """A found symmetry's generators re-verified on the file's graph (so an edited file
    loses the claim, never gets a wrong one): the orbits are recomputed from them."""
    try:
        gens = [(list(s), list(i)) for s, i in found["generators"]]
        return symmetry_from_generators(fab, list(fab.graph), gens,
                                        int(found.get("n_twin_swaps", 0)))
    except (FabricOptError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _reverified_claim(fab: Fabric, claimed: Any, same: Callable[[Fabric], bool],
                      rename: Callable[[Hashable], Hashable]) -> Symmetry | None:
    """The recorded generator's symmetry claim, renamed to the file's node names, when the
    recipe rebuilds exactly the file's graph and endpoints; None otherwise."""
    if not claimed or not fab.origin.replayable:
        return None

    rebuilt = try_replay(fab.recipe)
    if rebuilt is None or rebuilt.symmetry is None:
        return None
    if [rename(e) for e in rebuilt.endpoints] != list(fab.endpoints) or not same(rebuilt):
        return None
    claim = rebuilt.symmetry
    return replace(claim, arc_orbit={(rename(u), rename(v)): orbit
                                     for (u, v), orbit in claim.arc_orbit.items()},
                   endpoints=frozenset(rename(e) for e in claim.endpoints),
                   endpoint_orbit=None if claim.endpoint_orbit is None else
                   {rename(e): orbit for e, orbit in claim.endpoint_orbit.items()})


def write_json(fab: Fabric, path: str | os.PathLike[str]) -> None:
    """Write ``fab`` as node-link JSON (see the module docstring for what is recorded).

    Examples
    --------
    >>> import tempfile, os, fabricopt as fo
    >>> path = os.path.join(tempfile.mkdtemp(), "torus.json")
    >>> fo.write_json(fo.torus((3, 3)), path)
    >>> back = fo.read_json(path)
    >>> back.endpoints[:2], back.symmetry is not None
    (('n0.0', 'n0.1'), True)
    """
    check_fabric("write_json", fab)
    where = os.fspath(check_path("write_json", "path", path))
    data = to_json_data(fab)
    try:
        with open(where, "w", encoding="utf-8") as f:
            json.dump(data, f, default=_plain)
    except OSError as exc:
        raise DesignFileError(f"{where}: cannot be written: {exc.strerror or exc}") from None


def read_json(path: str | os.PathLike[str]) -> Fabric:
    """Read a fabric written by :func:`write_json`.

    Raises
    ------
    DesignFileError
        For a missing file, a directory, truncated or invalid JSON, or content that is not a
        fabric; the message names the file and the problem.

    Examples
    --------
    See :func:`write_json`.
    """
    where = _check_path(path, "read_json")
    try:
        with open(where, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as exc:
        raise DesignFileError(f"{where}: not valid JSON (truncated or corrupted?): "
                              f"{exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DesignFileError(f"{where}: cannot be read: {exc}") from None
    except RecursionError:  # Python's decoder recurses once per level of nesting
        raise DesignFileError(f"{where}: JSON nested too deeply to be a fabric") from None
    try:
        return from_json_data(data, where)
    except RecursionError:  # deep values inside a fabric's attributes
        raise DesignFileError(f"{where}: JSON nested too deeply to be a fabric") from None
