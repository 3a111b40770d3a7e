"""Choosing nodes and links of a fabric by name patterns or attribute conditions.

One way to say "these devices" for every question that names a group: the two ends of a
group max-flow (:func:`~fabricopt.analysis.group_flow.group_max_flow`), the units a failure
model draws from (:class:`~fabricopt.failures.models.Selected`), the command line's
``--from``, ``--to`` and ``--select``.

A **selector** is one of:

- a name pattern: ``"n0.gpu*"``, ``"s[0-3]"`` (shell-style, :mod:`fnmatch`, on the node's name
  as text);
- attribute conditions, comma-separated: ``"role=switch,tier=spine"``, ``"su=0,rail=3"``. Each
  condition is ``key=value``; a value may list alternatives (``rail=0|1``) and hold shell
  patterns (``model=qm*``); every condition must hold. ``name=`` matches the node's name;
  for a switch, ``tier=`` matches its place in the hierarchy, read from the tier of the links
  that reach it from below (``leaf`` under ``gpu-leaf``, ``spine`` under ``leaf-spine``,
  ``core``, ``nvswitch``), unless the node carries a ``tier`` attribute of its own;
- a mapping ``{key: value or list of values}``, read as conditions;
- an iterable of node names.

For links, conditions read the link's attributes (``tier=leaf-spine``, ``tech=ndr``) and
``end=pattern``, which holds when either end's name matches.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from .._checks import check_bool, did_you_mean, fail
from ..fabric import Fabric, check_fabric

__all__ = ["describe", "parse_conditions", "select_links", "select_nodes", "switch_tier"]


def parse_conditions(func: str, name: str, text: str) -> dict[str, tuple[str, ...]]:
    """``"role=switch,rail=0|1"`` as ``{"role": ("switch",), "rail": ("0", "1")}``.

    >>> parse_conditions("f", "select", "role=switch, rail=0|1")
    {'role': ('switch',), 'rail': ('0', '1')}
    """
    out: dict[str, tuple[str, ...]] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise fail(func, name, "conditions written key=value, comma-separated "
                       "(role=switch,tier=spine), or a name pattern without '='", text)
        out[key] = tuple(v.strip() for v in value.split("|"))
    if not out:
        raise fail(func, name, "at least one condition key=value", text)
    return out


def switch_tier(fab: Fabric, node: Hashable) -> str | None:
    """A switch's place in the hierarchy: the upper word of the tier of the links reaching it
    from below (``gpu-leaf`` -> ``leaf``), or its own ``tier`` attribute.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    >>> sorted({switch_tier(fab, s) for s in fab.switches})
    ['leaf', 'spine']
    """
    g = fab.graph
    data = g.nodes[node]
    if data.get("tier") is not None:
        return str(data["tier"])
    layer = data.get("layer")
    for u, _, d in g.in_edges(node, data=True):
        below = g.nodes[u].get("layer")
        if layer is not None and below is not None and below < layer:
            tier = str(d.get("tier", ""))
            return tier.split("-", 1)[1] if "-" in tier else tier or None
    return None


def _matches(value: Any, wanted: tuple[str, ...]) -> bool:
    if value is None:
        return False
    text = str(value)
    return any(fnmatch.fnmatchcase(text, w) for w in wanted)


def _conditions(func: str, name: str, selector: Any) -> dict[str, tuple[str, ...]] | None:
    """Conditions of a selector, or None when it is a name pattern or a list of names."""
    if isinstance(selector, Mapping):
        out = {}
        for key, value in selector.items():
            values = value if isinstance(value, list | tuple | set | frozenset) else [value]
            out[str(key)] = tuple(str(v) for v in values)
        if not out:
            raise fail(func, name, "at least one condition", selector)
        return out
    if isinstance(selector, str) and "=" in selector:
        return parse_conditions(func, name, selector)
    return None


def _known_keys(fab: Fabric, links: bool) -> list[str]:
    g = fab.graph
    if links:
        keys = {k for _, _, d in g.edges(data=True) for k in d} | {"end"}
    else:
        keys = {k for _, d in g.nodes(data=True) for k in d} | {"name", "tier"}
    return sorted(keys)


def _check_keys(func: str, name: str, fab: Fabric, conds: Mapping[str, Any],
                links: bool) -> None:
    known = _known_keys(fab, links)
    for key in conds:
        if key not in known:
            raise fail(func, name, f"conditions on {'link' if links else 'node'} attributes "
                       f"({', '.join(known)}){did_you_mean(key, known)}", key)


def select_nodes(fab: Fabric, selector: Any, *, empty_ok: bool = False,
                 _func: str = "select_nodes", _name: str = "selector") -> list[Hashable]:
    """The nodes a selector picks, in the fabric's order (see the module docstring).

    Raises :class:`~fabricopt.InvalidParameterError` naming the function and argument the
    caller was given (``_func``, ``_name``: select_nodes's own by default) when a
    condition names no attribute of the fabric, a listed node is not in it, or nothing is
    picked (with a few names of the fabric to show what names look like), unless
    ``empty_ok``.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    >>> select_nodes(fab, "role=switch,tier=spine")
    ['spine0', 'spine1']
    >>> len(select_nodes(fab, "g*")), select_nodes(fab, {"role": "gpu"})[:2]
    (4, ['g0', 'g1'])
    """
    func, name = _func, _name
    check_bool(func, "empty_ok", empty_ok)
    check_fabric(func, fab)
    g = fab.graph
    conds = _conditions(func, name, selector)
    if conds is not None:
        _check_keys(func, name, fab, conds, links=False)
        picked = []
        for v, d in g.nodes(data=True):
            ok = True
            for key, wanted in conds.items():
                if key == "name":
                    value: Any = v
                elif key == "tier" and d.get("role") == "switch":
                    value = switch_tier(fab, v)
                else:
                    value = d.get(key)
                if not _matches(value, wanted):
                    ok = False
                    break
            if ok:
                picked.append(v)
    elif isinstance(selector, str):
        if not selector:
            raise fail(func, name, "a name pattern or conditions key=value", selector)
        picked = [v for v in g if fnmatch.fnmatchcase(str(v), selector)]
    elif isinstance(selector, Iterable) and not isinstance(selector, bytes):
        wanted_nodes = list(selector)
        for v in wanted_nodes:
            if v not in g:
                raise fail(func, name, f"nodes of {fab.name!r}"
                           + did_you_mean(str(v), [str(u) for u in g]), v)
        keep = set(wanted_nodes)
        picked = [v for v in g if v in keep]
    else:
        raise fail(func, name, "a name pattern, conditions key=value, a mapping of "
                   "conditions or a list of nodes", selector)
    if not picked and not empty_ok:
        sample = ", ".join(str(v) for v in list(g)[:4])
        raise fail(func, name, f"a selector that picks some node of {fab.name!r} "
                   f"(names look like {sample})", selector)
    return picked


def select_links(fab: Fabric, selector: Any, *, empty_ok: bool = False,
                 _func: str = "select_links", _name: str = "selector"
                 ) -> list[tuple[Hashable, Hashable]]:
    """The physical links (each once, as the arc ``(u, v)`` with ``u`` first in the fabric's
    order) whose attributes meet the conditions; ``end=pattern`` holds when either end's
    name matches. None meeting them is an error unless ``empty_ok``.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    >>> len(select_links(fab, "tier=leaf-spine")), select_links(fab, "end=spine1")[0]
    (4, ('leaf0', 'spine1'))
    """
    func, name = _func, _name
    check_bool(func, "empty_ok", empty_ok)
    check_fabric(func, fab)
    conds = _conditions(func, name, selector)
    if conds is None:
        raise fail(func, name, "link conditions key=value (tier=leaf-spine, end=l*)", selector)
    _check_keys(func, name, fab, conds, links=True)
    g = fab.graph
    order = {v: i for i, v in enumerate(g)}
    picked = []
    for u, v, d in g.edges(data=True):
        if order[u] > order[v] and g.has_edge(v, u):
            continue  # one arc per physical link
        ok = all(_matches(u, w) or _matches(v, w) if key == "end" else _matches(d.get(key), w)
                 for key, w in conds.items())
        if ok:
            picked.append((u, v))
    if not picked and not empty_ok:
        raise fail(func, name, f"conditions some link of {fab.name!r} meets", selector)
    return picked


def describe(selector: Any) -> str:
    """A selector as a reader types it.

    >>> describe({"role": "switch", "rail": [0, 1]}), describe("n0.*")
    ('role=switch,rail=0|1', 'n0.*')
    """
    if isinstance(selector, Mapping):
        if all(isinstance(k, str) and "=" in k for k in selector):  # selectors to weights
            return "; ".join(f"{k}: {v:g}" for k, v in selector.items())
        return ",".join(f"{k}=" + ("|".join(map(str, v)) if isinstance(v, list | tuple | set)
                                   else str(v)) for k, v in selector.items())
    if isinstance(selector, str):
        return selector
    nodes = list(selector)
    return ", ".join(map(str, nodes[:3])) + (f" ... ({len(nodes)} nodes)" if len(nodes) > 3
                                              else "")
