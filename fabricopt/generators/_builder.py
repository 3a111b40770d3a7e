"""The one place generators create nodes and links, so every fabric has the same schema.

Generators describe devices and links; the builder fills in the attribute schema of
``fabricopt.fabric``, merges parallel links into bundles, and, when the generator knows a group
of automorphisms transitive on the endpoints, records the arc orbits of that group.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from itertools import chain, islice, repeat
from itertools import count as count_from
from operator import itemgetter
from typing import Any, NamedTuple

import networkx as nx
import numpy as np

from .._checks import MAX_LINK_GBPS, exact_text, too_fast
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..symmetry_claim import ArcOrbits, ClaimOrder, Symmetry

#: InfiniBand generation by link rate (Gb/s per direction): the scale-out of NVIDIA's
#: reference designs, and so the default technology of a generated network link.
INFINIBAND_BY_GBPS = {100.0: "edr", 200.0: "hdr", 400.0: "ndr", 800.0: "xdr"}


def default_tech(link_gbps: float) -> str:
    """Technology of a network link of the given rate when the caller names none: the
    InfiniBand generation of that rate (``'ndr'`` for 400 Gb/s), else a generic label
    (``'1g'``) that names no family, so a cost estimate then asks for one.

    >>> default_tech(400), default_tech(800), default_tech(1)
    ('ndr', 'xdr', '1g')
    """
    return INFINIBAND_BY_GBPS.get(float(link_gbps), f"{link_gbps:g}g")


def defaults_of(func: Callable[..., Any]) -> dict[str, Any]:
    """The keyword defaults of a generator, by parameter name.

    >>> from fabricopt.generators.classic import ring
    >>> defaults_of(ring)
    {'link_gbps': 1.0, 'tech': 'generic'}
    """
    return {k: p.default for k, p in inspect.signature(func).parameters.items()
            if p.default is not inspect.Parameter.empty}


def options_shown(given: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[str]:
    """``"key=value"`` for every option in ``given`` whose value differs from its default, in
    the order given: a generator's name carries them, so that fabrics built with different
    options never share a name (a comparison would show identical rows).

    >>> options_shown({"link_gbps": 400, "tech": "generic"}, {"link_gbps": 1.0,
    ...               "tech": "generic"})
    ['link_gbps=400']
    >>> options_shown({"radix": [32, 64]}, {"radix": 64})
    ['radix=[32, 64]']
    """
    out = []
    for key, value in given.items():
        default = defaults.get(key, inspect.Parameter.empty)
        if _same(value, default):
            continue
        out.append(f"{key}={_option_text(value)}")
    return out


def with_options(base: str, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    """``base`` with :func:`options_shown` inside its closing parenthesis, or after it in
    parentheses when it has none.

    >>> with_options("ring(4)", {"link_gbps": 400}, {"link_gbps": 1.0})
    'ring(4, link_gbps=400)'
    >>> with_options("DGX H100", {"in_network_reduction": False}, {"in_network_reduction": True})
    'DGX H100 (in_network_reduction=False)'
    >>> with_options("ring(4)", {"link_gbps": 1.0}, {"link_gbps": 1.0})
    'ring(4)'
    """
    shown = options_shown(given, defaults)
    if not shown:
        return base
    if base.endswith(")"):
        return base[:-1] + ", " + ", ".join(shown) + ")"
    return f"{base} ({', '.join(shown)})"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _option_text(value: Any) -> str:
    if isinstance(value, Fabric):
        return value.name
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_option_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return str(value.get("family", value))
    return str(value)


class _Run(NamedTuple):
    """Arcs one bulk call added, each new and none twice: their ends as node positions (the
    order of ``FabricBuilder.nodes``), their attribute dicts, and their orbit labels as
    codes into ``labels``, in the order added."""

    tail: np.ndarray
    head: np.ndarray
    dicts: list[dict[str, Any]]
    labels: tuple[str, ...]
    codes: np.ndarray


class _Template(NamedTuple):
    """A fabric to copy, read once for all its copies: its nodes and their attributes, its
    arcs (ends by name and by position among its nodes, attributes, orbit labels, the
    labels also as codes into ``vocab``), and its endpoints' positions."""

    names: list[Hashable]
    datas: list[dict[str, Any]]
    tails: list[Hashable]
    heads: list[Hashable]
    dicts: list[dict[str, Any]]
    labels: list[str]
    tail: np.ndarray
    head: np.ndarray
    vocab: tuple[str, ...]
    codes: np.ndarray
    endpoints: np.ndarray


class FabricBuilder:
    """Collect nodes and links, then build a :class:`~fabricopt.Fabric` in one go.

    Orbit labels: each link gets a label (by default its tier); its two arcs get the label
    plus ``":up"``/``":down"`` by layer (``":fwd"``/``":rev"`` within a layer, or the labels
    given). A generator that passes ``symmetric=True`` to :meth:`build` asserts that these
    labels are the arc orbits of a group of automorphisms transitive on the endpoints.

    Arcs are kept as arrays while every bulk call (:meth:`add_links`, :meth:`copies`) adds
    arcs that are new, none twice: their ends as node positions, no name pair or dict entry
    per arc, and :meth:`build` assembles networkx's adjacency dicts from them in bulk. The
    first call that may meet an arc already there (:meth:`link`, which adds to a bundle) or
    that reads :attr:`arcs` turns them into the dict :attr:`arcs`, which then holds them.
    Either way the fabric is the same, node for node and arc for arc, in the same order.
    """

    def __init__(self, name: str, params: dict[str, Any]) -> None:
        self.name = name
        self.params = params
        self.nodes: dict[Hashable, dict[str, Any]] = {}
        self.endpoints: list[Hashable] = []
        # The arcs as runs of arrays (None once they are the dict ``_arcs``), the positions
        # of the nodes they name (``nodes``' order) and, per position, whether an arc ends
        # there (a pair with an end no arc touches is new).
        self._runs: list[_Run] | None = []
        self._index: dict[Hashable, int] = {}
        self._touched = np.zeros(0, dtype=bool)
        self._arcs: dict[tuple[Hashable, Hashable], dict[str, Any]] = {}
        # The orbit label of each arc of ``_arcs``, in its order (a list beside the dict, not
        # a second dict: one insertion per arc fewer); ``orbit`` maps them.
        self._arc_orbits: list[str] = []
        # Per fabric copied: the fabric (so its id is not reused), its orbit map, its columns
        # (FabricBuilder.copies).
        self._templates: dict[tuple[int, int], tuple[Any, Any, _Template]] = {}
        # The two arc labels of a link, by its label and the sign of the layer difference
        # (made once: a 524,288-GPU fat tree adds 1.5 million links, and building two label
        # strings per link was a large part of its build).
        self._labels: dict[tuple[str, int], tuple[str, str]] = {}

    @property
    def arcs(self) -> dict[tuple[Hashable, Hashable], dict[str, Any]]:
        """Every arc's attribute dict, by arc, in the order added; what :meth:`build` builds
        (an edit here is built)."""
        self._as_dict()
        return self._arcs

    @property
    def orbit(self) -> dict[tuple[Hashable, Hashable], str]:
        """The orbit label of every arc, by arc (a new dict, in the order of ``arcs``)."""
        return dict(zip(self.arcs, self._arc_orbits, strict=True))

    def _as_dict(self) -> None:
        """Move the arcs of the runs into the dict ``_arcs`` (in order), for good."""
        runs, self._runs = self._runs, None
        if not runs:
            return
        names = list(self._index)  # each name at the position its arcs were given
        get = names.__getitem__
        for run in runs:
            keys = zip(map(get, run.tail.tolist()), map(get, run.head.tolist()), strict=True)
            self._arcs.update(zip(keys, run.dicts, strict=True))
            self._arc_orbits.extend(map(run.labels.__getitem__, run.codes.tolist()))

    def _synced_index(self) -> dict[Hashable, int]:
        """The positions of the nodes, the ones added since the last call included."""
        index, nodes = self._index, self.nodes
        if len(index) < len(nodes):
            index.update(zip(islice(nodes, len(index), None), count_from(len(index))))
        return index

    def _positions(self, names: Sequence[Hashable]) -> np.ndarray | None:
        """The positions of ``names``; None when the nodes are no longer those the positions
        were given to (a node taken out of ``nodes``): the arcs are then the dict's."""
        index = self._synced_index()
        try:
            return np.fromiter(map(index.__getitem__, names), dtype=np.int64, count=len(names))
        except KeyError:
            if list(index) == list(self.nodes):
                raise  # a node never added, as networkx's own lookup would say
            self._as_dict()
            return None

    def _add_run(self, tail: np.ndarray, head: np.ndarray, dicts: list[dict[str, Any]],
                 labels: tuple[str, ...], codes: np.ndarray) -> None:
        """Keep new arcs (none there already, none twice) as a run."""
        if not len(tail):
            return
        n = len(self._index)
        if len(self._touched) < n:
            grown = np.zeros(max(n, 2 * len(self._touched)), dtype=bool)
            grown[:len(self._touched)] = self._touched
            self._touched = grown
        self._touched[tail] = True
        self._touched[head] = True
        self._runs.append(_Run(tail, head, dicts, labels, codes))  # type: ignore[union-attr]

    def _add_arcs(self, keys: list[tuple[Hashable, Hashable]], dicts: Iterable[dict[str, Any]],
                  labels: Iterable[str]) -> None:
        """Add the arcs ``keys`` with their attribute dicts and orbit labels to the dict, in
        order; a key added before has its dict and label replaced where it stands (as
        ``dict.update``)."""
        self._as_dict()
        arcs = self._arcs
        before = len(arcs)
        arcs.update(zip(keys, dicts, strict=True))
        labels = list(labels)
        if len(labels) != len(keys):
            raise InvalidParameterError(f"FabricBuilder: {len(labels)} orbit labels for "
                                        f"{len(keys)} arcs")
        if len(arcs) == before + len(keys):  # every arc new: the usual case
            self._arc_orbits.extend(labels)
            return
        orbit = dict(zip(list(arcs)[:before], self._arc_orbits, strict=True))
        orbit.update(zip(keys, labels, strict=True))
        self._arc_orbits = list(orbit.values())

    def gpu(self, name: Hashable, /, **attrs: Any) -> Hashable:
        """Add an endpoint GPU (role ``gpu``, layer 0); ``attrs`` may include ``node``."""
        self.nodes[name] = {"role": "gpu", "layer": 0, **attrs}
        self.endpoints.append(name)
        return name

    def switch(self, name: Hashable, /, layer: int, radix: int | None,
               model: str | None = None, reduce: bool = False, **attrs: Any) -> Hashable:
        """Add a switch at ``layer`` with ``radix`` ports; ``model`` is its catalog key."""
        self.nodes[name] = {"role": "switch", "layer": layer, "radix": radix,
                            "model": model, "reduce": reduce, **attrs}
        return name

    def add_nodes(self, names: Sequence[Hashable], attrs: Mapping[str, Any] | None = None,
                  each: Mapping[str, Sequence[Any]] | None = None) -> None:
        """Add many nodes at once: node ``names[i]`` gets ``attrs`` (a role and a layer at
        least) and ``each[key][i]`` for every key of ``each``; GPUs become endpoints in the
        order given. The same as one :meth:`gpu` or :meth:`switch` call per name, at C
        speed (a 524,288-GPU fat tree adds half a million nodes).

        >>> b = FabricBuilder("demo", {})
        >>> b.add_nodes(["g0", "g1"], {"role": "gpu", "layer": 0}, {"pod": [0, 1]})
        >>> b.nodes["g1"], b.endpoints
        ({'role': 'gpu', 'layer': 0, 'pod': 1}, ['g0', 'g1'])
        """
        base = dict(attrs or {})
        made = list(map(dict.copy, repeat(base, len(names))))
        for key, values in (each or {}).items():
            for d, value in zip(made, values, strict=True):
                d[key] = value
        self.nodes.update(zip(names, made, strict=True))
        if base.get("role") == "gpu":
            self.endpoints.extend(names)

    def add_links(self, lower: Sequence[Hashable], upper: Sequence[Hashable], gbps: float,
                  tier: str, tech: str, links: int | Sequence[int] = 1,
                  orbit: Sequence[str | None] | None = None) -> None:
        """Add a link of ``links`` parallel links (or ``links[i]``) from ``lower[i]`` up to
        ``upper[i]`` for every ``i``, in order: the graph :meth:`link` builds called once per
        pair (with ``orbit=orbit[i]`` when given), the arcs made in bulk when every pair is
        new and every lower node sits below its upper one (else pair by pair through
        :meth:`link`).

        >>> b = FabricBuilder("demo", {})
        >>> b.add_nodes(["g0", "g1"], {"role": "gpu", "layer": 0})
        >>> b.add_nodes(["s"], {"role": "switch", "layer": 1, "radix": 2})
        >>> b.add_links(["g0", "g1"], ["s", "s"], 400.0, "gpu-leaf", "ndr")
        >>> list(b.arcs)[:2], b.orbit[("s", "g1")], b.arcs[("g0", "s")]["capacity"]
        ([('g0', 's'), ('s', 'g0')], 'gpu-leaf:down', 400.0)
        """
        if len(lower) != len(upper):
            raise InvalidParameterError(f"add_links(): lower and upper differ in length "
                                        f"({len(lower)} and {len(upper)})")
        if (gbps <= MAX_LINK_GBPS and self._runs is not None
                and self._new_links(lower, upper, gbps, tier, tech, links, orbit)):
            return
        self._as_dict()
        up = list(zip(lower, upper, strict=True))
        down = list(zip(upper, lower, strict=True))
        arcs = self._arcs
        bulk = (gbps <= MAX_LINK_GBPS and len(set(up)) == len(up)
                and arcs.keys().isdisjoint(up) and arcs.keys().isdisjoint(down))
        if bulk and up:
            bulk = self._below(lower, upper)
        counts = repeat(links, len(up)) if isinstance(links, int) else links
        bases = repeat(None, len(up)) if orbit is None else orbit
        if not bulk:
            for (u, v), n, base in zip(up, counts, bases, strict=True):
                self.link(u, v, gbps, tier, tech, links=n, orbit=base)
            return
        keys = list(chain.from_iterable(zip(up, down, strict=True)))
        labels = (chain.from_iterable(repeat(self._up_labels(tier), len(up))) if orbit is None
                  else chain.from_iterable(self._up_labels(base or tier) for base in orbit))
        self._add_arcs(keys, self._link_dicts(len(up), gbps, tier, tech, links), labels)

    def _new_links(self, lower: Sequence[Hashable], upper: Sequence[Hashable], gbps: float,
                   tier: str, tech: str, links: int | Sequence[int],
                   orbit: Sequence[str | None] | None) -> bool:
        """:meth:`add_links`' bulk case as a run: True when done, False (nothing added) when
        a pair may be there already, comes twice, or a lower node is not below its upper one
        (:meth:`add_links` then reads the dict, as always)."""
        lo, hi = self._positions(lower), self._positions(upper)
        if lo is None or hi is None:
            return False
        m = len(lo)
        if m:
            n = len(self._index)
            code = np.sort(lo * n + hi)
            if (np.any(code[1:] == code[:-1]) or self._any_there(lo, hi, n)
                    or not self._below(lower, upper)):
                return False
        if orbit is None:
            labels, codes = self._up_labels(tier), np.tile(np.array([0, 1], np.int64), m)
        else:
            labels, codes = _coded(list(chain.from_iterable(
                self._up_labels(base or tier) for base in orbit)))
            if len(codes) != 2 * m:
                raise InvalidParameterError(f"FabricBuilder: {len(codes)} orbit labels for "
                                            f"{2 * m} arcs")
        dicts = self._link_dicts(m, gbps, tier, tech, links)
        # Each link's arcs up then down, link by link: the order of one link() per pair.
        self._add_run(np.stack((lo, hi), axis=1).reshape(-1),
                      np.stack((hi, lo), axis=1).reshape(-1), dicts, labels, codes)
        return True

    def _any_there(self, lo: np.ndarray, hi: np.ndarray, n: int) -> bool:
        """True when an arc of the runs joins ``lo[i]`` and ``hi[i]`` (either way) for some
        ``i``; ``n`` nodes. Only pairs whose two ends both have arcs can be joined, and only
        arcs between such ends are compared."""
        touched = np.zeros(n, dtype=bool)
        touched[:min(n, len(self._touched))] = self._touched[:n]
        both = touched[lo] & touched[hi]
        if not both.any():
            return False
        lo, hi = lo[both], hi[both]
        ends = np.zeros(n, dtype=bool)
        ends[lo] = True
        ends[hi] = True
        there = [r.tail[inside] * n + r.head[inside] for r in self._runs or ()
                 if (inside := ends[r.tail] & ends[r.head]).any()]
        if not there:
            return False
        codes = np.concatenate(there)
        return bool(np.isin(lo * n + hi, codes).any() or np.isin(hi * n + lo, codes).any())

    def _below(self, lower: Sequence[Hashable], upper: Sequence[Hashable]) -> bool:
        """True when every node of ``lower`` sits on a lower layer than every one of
        ``upper`` (so each pair's arcs are an up and a down, and no pair meets another's
        reverse)."""
        layer, get = itemgetter("layer"), self.nodes.__getitem__
        return max(map(layer, map(get, set(lower)))) < min(map(layer, map(get, set(upper))))

    @staticmethod
    def _link_dicts(m: int, gbps: float, tier: str, tech: str,
                    links: int | Sequence[int]) -> list[dict[str, Any]]:
        """The attribute dicts of ``m`` links' arcs, up and down link by link."""
        if isinstance(links, int):
            template = {"capacity": gbps * links, "links": links, "tech": tech, "tier": tier}
            return list(map(dict.copy, repeat(template, 2 * m)))
        made = [{"capacity": gbps * n, "links": n, "tech": tech, "tier": tier}
                for n in links for _ in (0, 1)]
        if len(made) != 2 * m:
            raise InvalidParameterError(f"add_links(): links holds {len(links)} counts "
                                        f"for {m} pairs")
        return made

    def _up_labels(self, base: str) -> tuple[str, str]:
        """The labels of the two arcs of a link labelled ``base`` from a lower layer up."""
        labels = self._labels.get((base, -1))
        if labels is None:
            labels = self._labels[(base, -1)] = _arc_labels(base, -1)
        return labels

    def set_attrs(self, name: Hashable, /, **attrs: Any) -> None:
        """Set attributes of a node already added (e.g. the pod a Clos puts it in)."""
        self.nodes[name].update(attrs)

    def set_each(self, names: Sequence[Hashable], key: str, values: Sequence[Any]) -> None:
        """``set_attrs(names[i], key=values[i])`` for every ``i``, in order, at C speed (the
        pods of a 24,576-GPU cluster's GPUs were a tenth of its wiring one call at a time).

        >>> b = FabricBuilder("demo", {})
        >>> b.add_nodes(["g0", "g1"], {"role": "gpu", "layer": 0})
        >>> b.set_each(["g0", "g1"], "pod", [0, 1])
        >>> b.nodes["g1"]
        {'role': 'gpu', 'layer': 0, 'pod': 1}
        """
        if len(names) != len(values):
            raise InvalidParameterError(f"set_each(): names and values differ in length "
                                        f"({len(names)} and {len(values)})")
        # dict.__setitem__ on each node's attribute dict: the builder made every one a dict.
        list(map(dict.__setitem__, map(self.nodes.__getitem__, names), repeat(key), values))

    def copy(self, fab: Fabric, rename: Callable[[Hashable], Hashable],
             orbit: Mapping[tuple[Hashable, Hashable], str] | None = None,
             **attrs: Any) -> dict[Hashable, Hashable]:
        """Add a copy of ``fab``; return the name of each of its nodes in the copy.

        Node ``v`` becomes ``rename(v)`` with all its attributes and ``attrs``; arcs keep all
        their attributes; ``fab``'s endpoints become endpoints, in their order. ``orbit`` labels
        each arc of ``fab`` (default: its tier).

        >>> import fabricopt as fo
        >>> b = FabricBuilder("two rings", {})
        >>> names = [b.copy(fo.ring(3), lambda v, i=i: f"c{i}.{v}", copy=i) for i in range(2)]
        >>> names[1]["n2"], b.nodes["c1.n2"]["copy"], len(b.endpoints), len(b.arcs)
        ('c1.n2', 1, 6, 12)
        """
        return self._copies(fab, 1, lambda i, v: rename(v), orbit, lambda i: attrs)[0]

    def copies(self, fab: Fabric, count: int, rename: Callable[[int, Hashable], Hashable],
               orbit: Mapping[tuple[Hashable, Hashable], str] | None = None,
               attrs: Callable[[int], Mapping[str, Any]] = lambda i: {}
               ) -> list[dict[Hashable, Hashable]]:
        """Add ``count`` copies of ``fab``; return each copy's name map: what
        ``[copy(fab, lambda v: rename(i, v), orbit, **attrs(i)) for i in range(count)]``
        adds, in the same order, made in one go (the 3,072 servers of a 24,576-GPU cluster
        were 3,072 calls of a dozen dict updates each, a third of its build).

        >>> import fabricopt as fo
        >>> b = FabricBuilder("two rings", {})
        >>> names = b.copies(fo.ring(3), 2, lambda i, v: f"c{i}.{v}", attrs=lambda i: {"copy": i})
        >>> names[1]["n2"], b.nodes["c1.n2"]["copy"], len(b.endpoints), len(b.arcs)
        ('c1.n2', 1, 6, 12)
        """
        return self._copies(fab, count, rename, orbit, attrs)

    def _copies(self, fab: Fabric, count: int, rename: Callable[[int, Hashable], Hashable],
                orbit: Mapping[tuple[Hashable, Hashable], str] | None,
                attrs: Callable[[int], Mapping[str, Any]]) -> list[dict[Hashable, Hashable]]:
        """:meth:`copies` (and :meth:`copy`, one copy): the arcs a run when every node the
        copies add is new, else added to the dict by name."""
        t = self._template(fab, orbit)
        k = len(t.names)
        new = [rename(i, v) for i in range(count) for v in t.names]
        made: list[dict[str, Any]] = []
        for i in range(count):
            extra = attrs(i)
            made.extend([{**d, **extra} for d in t.datas] if extra else map(dict.copy, t.datas))
        nodes = self.nodes
        before = len(self._synced_index()) if self._runs is not None else -1
        fresh = before == len(nodes)
        nodes.update(zip(new, made, strict=True))
        first = np.arange(count, dtype=np.int64)[:, None] * k  # copy i's nodes: new[i * k:]
        self.endpoints.extend(map(new.__getitem__, (first + t.endpoints).reshape(-1).tolist()))
        dicts = list(map(dict.copy, chain.from_iterable(repeat(t.dicts, count))))
        if fresh and len(nodes) == before + len(new) and len(self._synced_index()) == len(nodes):
            # Every node new: copy i's arcs are the template's shifted to its positions.
            self._add_run((before + first + t.tail).reshape(-1),
                          (before + first + t.head).reshape(-1), dicts, t.vocab,
                          np.tile(t.codes, count))
        else:
            def renamed(at: np.ndarray) -> list[Hashable]:
                return list(map(new.__getitem__, (first + at).reshape(-1).tolist()))

            self._add_arcs(list(zip(renamed(t.tail), renamed(t.head), strict=True)), dicts,
                           chain.from_iterable(repeat(t.labels, count)))
        return [dict(zip(t.names, new[i * k:(i + 1) * k], strict=True)) for i in range(count)]

    def _template(self, fab: Fabric, orbit: Mapping[tuple[Hashable, Hashable], str] | None
                  ) -> _Template:
        """``fab``'s nodes and arcs in columns read once for all its copies (3,072 servers of
        a 24,576-GPU cluster read one graph; networkx's views cost microseconds per arc each
        time, and the columns let each copy be made by C-level maps and array sums)."""
        key = (id(fab), id(orbit))
        held = self._templates.get(key)
        if held is None or held[0] is not fab or held[1] is not orbit:
            g = fab.graph
            names = list(g.nodes)
            place = dict(zip(names, count_from()))
            arcs = list(g.edges(data=True))
            tails, heads = [u for u, _, _ in arcs], [v for _, v, _ in arcs]
            labels = [orbit[(u, v)] if orbit else str(d.get("tier", "link"))
                      for u, v, d in arcs]

            def at(of: Sequence[Hashable]) -> np.ndarray:
                return np.fromiter(map(place.__getitem__, of), dtype=np.int64, count=len(of))

            vocab, codes = _coded(labels)
            held = (fab, orbit, _Template(names, [d for _, d in g.nodes(data=True)], tails,
                                          heads, [d for _, _, d in arcs], labels, at(tails),
                                          at(heads), vocab, codes, at(list(fab.endpoints))))
            self._templates[key] = held
        return held[2]

    def link(self, u: Hashable, v: Hashable, gbps: float, tier: str, tech: str,
             links: int = 1, orbit: str | tuple[str, str] | None = None) -> None:
        """Add ``links`` parallel physical links of ``gbps`` each between ``u`` and ``v``.

        Repeated calls for the same pair add to one bundle. ``orbit`` is a label for the link
        or a pair of labels for the arcs ``u->v`` and ``v->u``.

        A generator asked for a rate above :data:`~fabricopt._checks.MAX_LINK_GBPS` (1 Pb/s: a
        rate in bit/s given as Gb/s) refuses it here, naming itself and the argument that
        gave it, before the rest is built. A builder driven directly (a test's fabric, a
        near-infinite link standing for an ideal one) builds what it is told;
        :meth:`~fabricopt.Fabric.validate` refuses such a fabric where fabrics are validated.
        """
        if gbps > MAX_LINK_GBPS:
            func, arguments = _called_generator()
            if func:
                raise InvalidParameterError(self._too_fast(gbps, tier, func, arguments))
        self._as_dict()
        if orbit.__class__ is tuple:
            fwd, rev = orbit  # type: ignore[misc]
        else:
            nodes = self.nodes
            lu, lv = nodes[u]["layer"], nodes[v]["layer"]
            key = (orbit or tier, (lu > lv) - (lu < lv))  # type: ignore[operator]
            labels = self._labels.get(key)
            if labels is None:
                labels = self._labels[key] = _arc_labels(*key)
            fwd, rev = labels
        arcs, labelled = self._arcs, self._arc_orbits.append
        capacity = gbps * links
        for key, label in (((u, v), fwd), ((v, u), rev)):
            arc = arcs.get(key)
            if arc is None:
                arcs[key] = {"capacity": capacity, "links": links, "tech": tech, "tier": tier}
                labelled(label)
            else:
                arc["capacity"] += capacity
                arc["links"] += links

    def _too_fast(self, gbps: float, tier: str, func: str,
                  arguments: Mapping[str, Any]) -> str:
        """The message for a link of ``gbps`` above the bound, naming the generator ``func``
        and its ``*_gbps`` argument above the bound (else the link's rate and tier).

        >>> FabricBuilder("ring(4)", {})._too_fast(4e11, "ring", "ring", {"link_gbps": 4e11})
        'ring(): link_gbps=4e+11 is above 1e+06 Gb/s (1 Pb/s) per link, faster than any link; \
rates are in Gb/s per direction (4e+11 bit/s would be 400 Gb/s)'
        """
        for given in (arguments, self.params):
            for key, value in given.items():
                if (isinstance(key, str) and key.endswith("gbps")
                        and isinstance(value, int | float) and not isinstance(value, bool)
                        and value > MAX_LINK_GBPS):
                    return too_fast(f"{func}()", float(value), f"{key}={exact_text(value)}")
        return too_fast(f"{func}()", gbps, f"a {tier} link of {exact_text(gbps)} Gb/s")

    def _columns(self, names: list[Hashable]
                 ) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]] | None:
        """Every arc's tail and head (positions in ``names``, the nodes in order) and
        attribute dict, in the order added; None when an arc names a node never added."""
        if self._runs is not None:
            index = self._synced_index()
            if len(index) == len(names) and list(index) == names:
                runs = self._runs
                return (_joined([r.tail for r in runs]), _joined([r.head for r in runs]),
                        list(chain.from_iterable(r.dicts for r in runs)))
            self._as_dict()  # a node taken out after its arcs were added: read by name
        index = dict(zip(names, count_from()))
        keys = list(self._arcs)
        try:
            tail = np.fromiter(map(index.__getitem__, map(itemgetter(0), keys)),
                               dtype=np.int64, count=len(keys))
            head = np.fromiter(map(index.__getitem__, map(itemgetter(1), keys)),
                               dtype=np.int64, count=len(keys))
        except KeyError:
            return None
        return tail, head, list(self._arcs.values())

    def _orbit_codes(self) -> tuple[list[str], np.ndarray]:
        """The orbit labels used, sorted, and each arc's label as a code into them, in the
        order added."""
        if self._runs is None:
            names = sorted(set(self._arc_orbits))
            index = {name: i for i, name in enumerate(names)}
            return names, np.fromiter(map(index.__getitem__, self._arc_orbits),
                                      dtype=np.int64, count=len(self._arc_orbits))
        names = sorted(set(chain.from_iterable(r.labels for r in self._runs)))
        index = {name: i for i, name in enumerate(names)}
        return names, _joined([np.array([index[x] for x in r.labels], dtype=np.int64)[r.codes]
                               for r in self._runs])

    def build(self, symmetric: bool = False, group: str = "") -> Fabric:
        """The finished Fabric, with a symmetry claim when ``symmetric`` is True."""
        g = nx.DiGraph()
        # Nodes and arcs go into networkx's dictionaries directly, each attribute dict handed
        # over (the builder made every one and keeps none): add_nodes_from and add_edges_from
        # copy each dict and check each node, most of the build of a large fabric. Same
        # order, same graph.
        nodes = self.nodes
        g._node.update(nodes)
        names = list(nodes)
        columns = self._columns(names)
        order = None
        if columns is None:  # an arc to a node never added: networkx adds it, as it always did
            g.add_edges_from((u, v, d) for (u, v), d in self._arcs.items())
        else:
            order = _adjacency(g, names, *columns)
        symmetry = None
        eps = self.endpoints
        if symmetric:
            labels, codes = self._orbit_codes()
            arcs: Sequence[tuple[Hashable, Hashable]] = (
                list(self._arcs) if columns is None else _ArcNames(names, *columns[:2]))
            symmetry = Symmetry(ArcOrbits(arcs, codes.tolist()), group, len(g._node),
                                sum(map(len, g._succ.values())), frozenset(eps), tuple(labels))
            # The orbits in the graph's order, for the checks that read the claim per arc
            # (symmetry_claim.ClaimOrder); the claim is frozen, so set past its __init__.
            claim = (ClaimOrder.of(g, arcs, codes) if order is None else
                     ClaimOrder(names, order[0], order[1], order[2], order[3],
                                _frozen(codes[order[4]])))
            if claim is not None:
                object.__setattr__(symmetry, "_order", claim)
        return Fabric(g, eps, self.name, self.params, symmetry)


def _adjacency(g: nx.DiGraph, names: list[Hashable], tail: np.ndarray, head: np.ndarray,
               dicts: list[dict[str, Any]]
               ) -> tuple[list[int], list[Hashable], np.ndarray, np.ndarray, np.ndarray]:
    """Fill the successor and predecessor dicts of ``g`` (its nodes ``names``, in order, and
    no arcs yet) with the arcs ``tail[a] -> head[a]`` (positions in ``names``) carrying
    ``dicts[a]``, in that order: what setting ``succ[u][v]`` and ``pred[v][u]`` arc by arc
    does, each node's dicts made at once from its run of the arcs sorted stably by tail (by
    head for ``pred``), which keeps each node's arcs in the order added.

    Returns the graph's arc order (:class:`~fabricopt.symmetry_claim.ClaimOrder`'s fields):
    the out-degrees, the heads by name, the tails and heads as positions, and the order added
    of each arc in it (``by_tail``).

    >>> g = nx.DiGraph()
    >>> g.add_nodes_from("abc")
    >>> d = [{"i": i} for i in range(4)]
    >>> degrees, heads, *_ = _adjacency(g, list("abc"), np.array([2, 0, 2, 0]),
    ...                                 np.array([0, 1, 1, 2]), d)
    >>> list(g.edges(data="i")), degrees, heads, dict(g.pred["b"])
    ([('a', 'b', 1), ('a', 'c', 3), ('c', 'a', 0), ('c', 'b', 2)], [2, 0, 2], \
['b', 'c', 'a', 'b'], {'a': {'i': 1}, 'c': {'i': 2}})
    """
    n, m = len(names), len(tail)
    of = np.fromiter(names, dtype=object, count=n)
    data = np.fromiter(dicts, dtype=object, count=m)
    by_tail = np.argsort(tail, kind="stable")
    degrees = np.bincount(tail, minlength=n).tolist()
    heads = of[head[by_tail]].tolist()
    rows = zip(heads, data[by_tail].tolist(), strict=True)
    g._succ.update(zip(names, map(dict, map(islice, repeat(rows), degrees)), strict=True))
    by_head = np.argsort(head, kind="stable")
    rows = zip(of[tail[by_head]].tolist(), data[by_head].tolist(), strict=True)
    g._pred.update(zip(names, map(dict, map(islice, repeat(rows),
                                            np.bincount(head, minlength=n).tolist())),
                       strict=True))
    return (degrees, heads, _frozen(tail[by_tail]), _frozen(head[by_tail]), by_tail)


class _ArcNames(Sequence):
    """The arcs ``(names[tail[a]], names[head[a]])`` in order, as a read-only sequence whose
    name pairs are made on first use: a claim's arcs, which a claim aligned with its graph
    (:class:`~fabricopt.symmetry_claim.ClaimOrder`) never reads (making them was a tenth of
    a 24,576-GPU cluster's build).

    >>> arcs = _ArcNames(["a", "b"], np.array([0, 1]), np.array([1, 0]))
    >>> len(arcs), list(arcs), arcs[1]
    (2, [('a', 'b'), ('b', 'a')], ('b', 'a'))
    """

    def __init__(self, names: list[Hashable], tail: np.ndarray, head: np.ndarray) -> None:
        self._ends: tuple[list[Hashable], np.ndarray, np.ndarray] | None = (names, tail, head)
        self._made: list[tuple[Hashable, Hashable]] = []
        self._length = len(tail)

    def _pairs(self) -> list[tuple[Hashable, Hashable]]:
        if self._ends is not None:
            names, tail, head = self._ends
            of = np.fromiter(names, dtype=object, count=len(names))
            self._made = list(zip(of[tail].tolist(), of[head].tolist(), strict=True))
            self._ends = None
        return self._made

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, i: Any) -> Any:
        return self._pairs()[i]

    def __iter__(self) -> Iterator[tuple[Hashable, Hashable]]:
        return iter(self._pairs())


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays end to end (an empty int64 array for none)."""
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _coded(labels: list[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """The distinct ``labels`` in order of first appearance, and each label's code into them.

    >>> _coded(["up", "down", "up"])
    (('up', 'down'), array([0, 1, 0]))
    """
    seen: dict[str, int] = {}
    first = np.fromiter(map(seen.setdefault, labels, count_from()), dtype=np.int64,
                        count=len(labels))
    return tuple(seen), np.searchsorted(np.fromiter(seen.values(), dtype=np.int64,
                                                    count=len(seen)), first)


def _arc_labels(base: str, direction: int) -> tuple[str, str]:
    """The labels of the arcs ``u->v`` and ``v->u`` of a link labelled ``base``, ``direction``
    the sign of ``layer(u) - layer(v)``.

    >>> _arc_labels("gpu-leaf", -1), _arc_labels("ring", 0)
    (('gpu-leaf:up', 'gpu-leaf:down'), ('ring:fwd', 'ring:rev'))
    """
    if direction == 0:
        return base + ":fwd", base + ":rev"
    return (base + ":up", base + ":down") if direction < 0 else (base + ":down", base + ":up")


#: Modules of the generators' package that hold no generator: this one, and the recorder
#: whose wrapper (``generator``) calls each.
_NOT_GENERATORS = frozenset({__name__, "fabricopt.generators.recipe"})


def _called_generator() -> tuple[str, dict[str, Any]]:
    """The generator the caller called, and its arguments: the outermost public function of
    a generator module on the stack (``superpod`` rather than the ``cluster`` it calls), so
    an error raised while its links are made names what the caller typed. ``("", {})`` when
    no generator is on the stack (a builder driven directly). Read only when a rate is above
    the bound, so never on the way to a fabric."""
    import sys

    found: tuple[str, dict[str, Any]] = ("", {})
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        name = frame.f_code.co_name
        if (module.startswith("fabricopt.generators.") and module not in _NOT_GENERATORS
                and not name.startswith("_") and not name.startswith("<")):
            code = frame.f_code
            count = code.co_argcount + code.co_kwonlyargcount
            found = (name, {k: frame.f_locals.get(k) for k in code.co_varnames[:count]})
        frame = frame.f_back
    return found
