"""The one place generators create nodes and links, so every fabric has the same schema.

Generators describe devices and links; the builder fills in the attribute schema of
``fabricopt.fabric``, merges parallel links into bundles, and, when the generator knows a group
of automorphisms transitive on the endpoints, records the arc orbits of that group.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import chain, repeat
from itertools import count as count_from
from operator import itemgetter
from typing import Any

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


class FabricBuilder:
    """Collect nodes and links, then build a :class:`~fabricopt.Fabric` in one go.

    Orbit labels: each link gets a label (by default its tier); its two arcs get the label
    plus ``":up"``/``":down"`` by layer (``":fwd"``/``":rev"`` within a layer, or the labels
    given). A generator that passes ``symmetric=True`` to :meth:`build` asserts that these
    labels are the arc orbits of a group of automorphisms transitive on the endpoints.
    """

    def __init__(self, name: str, params: dict[str, Any]) -> None:
        self.name = name
        self.params = params
        self.nodes: dict[Hashable, dict[str, Any]] = {}
        self.arcs: dict[tuple[Hashable, Hashable], dict[str, Any]] = {}
        # The orbit label of each arc, in the order of ``arcs`` (a list beside the dict, not a
        # second dict: one insertion per arc fewer on a 300,000-arc build); ``orbit`` maps them.
        self._arc_orbits: list[str] = []
        self.endpoints: list[Hashable] = []
        # Per fabric copied: the fabric (so its id is not reused), its orbit map, its nodes
        # and labelled arcs (FabricBuilder.copy).
        self._templates: dict[tuple[int, int], tuple[Any, Any, tuple]] = {}
        # The two arc labels of a link, by its label and the sign of the layer difference
        # (made once: a 524,288-GPU fat tree adds 1.5 million links, and building two label
        # strings per link was a large part of its build).
        self._labels: dict[tuple[str, int], tuple[str, str]] = {}

    @property
    def orbit(self) -> dict[tuple[Hashable, Hashable], str]:
        """The orbit label of every arc, by arc (a new dict, in the order of ``arcs``)."""
        return dict(zip(self.arcs, self._arc_orbits, strict=True))

    def _add_arcs(self, keys: list[tuple[Hashable, Hashable]], dicts: Iterable[dict[str, Any]],
                  labels: Iterable[str]) -> None:
        """Add the arcs ``keys`` with their attribute dicts and orbit labels, in order; a key
        added before has its dict and label replaced where it stands (as ``dict.update``)."""
        before = len(self.arcs)
        self.arcs.update(zip(keys, dicts, strict=True))
        labels = list(labels)
        if len(labels) != len(keys):
            raise InvalidParameterError(f"FabricBuilder: {len(labels)} orbit labels for "
                                        f"{len(keys)} arcs")
        if len(self.arcs) == before + len(keys):  # every arc new: the usual case
            self._arc_orbits.extend(labels)
            return
        orbit = dict(zip(list(self.arcs)[:before], self._arc_orbits, strict=True))
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
        up = list(zip(lower, upper, strict=True))
        down = list(zip(upper, lower, strict=True))
        nodes, arcs = self.nodes, self.arcs
        bulk = (gbps <= MAX_LINK_GBPS and len(set(up)) == len(up)
                and arcs.keys().isdisjoint(up) and arcs.keys().isdisjoint(down))
        if bulk and up:
            layer = itemgetter("layer")
            bulk = (max(map(layer, map(nodes.__getitem__, set(lower))))
                    < min(map(layer, map(nodes.__getitem__, set(upper)))))
        counts = repeat(links, len(up)) if isinstance(links, int) else links
        bases = repeat(None, len(up)) if orbit is None else orbit
        if not bulk:
            for (u, v), n, base in zip(up, counts, bases, strict=True):
                self.link(u, v, gbps, tier, tech, links=n, orbit=base)
            return
        keys = list(chain.from_iterable(zip(up, down, strict=True)))
        if isinstance(links, int):
            template = {"capacity": gbps * links, "links": links, "tech": tech, "tier": tier}
            made: Iterable[dict[str, Any]] = map(dict.copy, repeat(template, len(keys)))
        else:
            made = [{"capacity": gbps * n, "links": n, "tech": tech, "tier": tier}
                    for n in links for _ in (0, 1)]
            if len(made) != len(keys):
                raise InvalidParameterError(f"add_links(): links holds {len(links)} counts "
                                            f"for {len(up)} pairs")
        if orbit is None:
            labels = chain.from_iterable(repeat(self._up_labels(tier), len(up)))
        else:
            labels = chain.from_iterable(self._up_labels(base or tier) for base in orbit)
        self._add_arcs(keys, made, labels)

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
        names, datas, tails, heads, dicts, labels = self._template(fab, orbit)
        name = dict(zip(names, map(rename, names), strict=True))
        get = name.__getitem__
        if attrs:
            datas = [{**d, **attrs} for d in datas]
        self.nodes.update(zip(map(get, names), map(dict.copy, datas), strict=True))
        self.endpoints.extend(map(get, fab.endpoints))
        keys = list(zip(map(get, tails), map(get, heads), strict=True))
        self._add_arcs(keys, map(dict.copy, dicts), labels)
        return name

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
        names, datas, tails, heads, dicts, labels = self._template(fab, orbit)
        k = len(names)
        new = [rename(i, v) for i in range(count) for v in names]
        made: list[dict[str, Any]] = []
        for i in range(count):
            extra = attrs(i)
            made.extend([{**d, **extra} for d in datas] if extra else map(dict.copy, datas))
        self.nodes.update(zip(new, made, strict=True))

        def renamed(of: list[Hashable]) -> list[Hashable]:
            # copy i's name of each node in ``of``: new[i * k + its place in the template]
            place = dict(zip(names, count_from(0)))
            at = np.fromiter(map(place.__getitem__, of), dtype=np.int64, count=len(of))
            every = (np.arange(count, dtype=np.int64)[:, None] * k + at).reshape(-1)
            return list(map(new.__getitem__, every.tolist()))

        self.endpoints.extend(renamed(list(fab.endpoints)))
        keys = list(zip(renamed(tails), renamed(heads), strict=True))
        self._add_arcs(keys, map(dict.copy, chain.from_iterable(repeat(dicts, count))),
                       chain.from_iterable(repeat(labels, count)))
        return [dict(zip(names, new[i * k:(i + 1) * k], strict=True)) for i in range(count)]

    def _template(self, fab: Fabric, orbit: Mapping[tuple[Hashable, Hashable], str] | None
                  ) -> tuple[list[Hashable], list[dict[str, Any]], list[Hashable],
                             list[Hashable], list[dict[str, Any]], list[str]]:
        """``fab``'s nodes and their attributes, and its arcs (tails, heads, attributes and
        orbit labels), in columns read once for all its copies (3,072 servers of a
        24,576-GPU cluster read one graph; networkx's views cost microseconds per arc each
        time, and the columns let each copy be made by C-level maps)."""
        key = (id(fab), id(orbit))
        held = self._templates.get(key)
        if held is None or held[0] is not fab or held[1] is not orbit:
            g = fab.graph
            arcs = list(g.edges(data=True))
            columns = (list(g.nodes), [d for _, d in g.nodes(data=True)],
                       [u for u, _, _ in arcs], [v for _, v, _ in arcs],
                       [d for _, _, d in arcs],
                       [orbit[(u, v)] if orbit else str(d.get("tier", "link"))
                        for u, v, d in arcs])
            held = (fab, orbit, columns)
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
        arcs, labelled = self.arcs, self._arc_orbits.append
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

    def build(self, symmetric: bool = False, group: str = "") -> Fabric:
        """The finished Fabric, with a symmetry claim when ``symmetric`` is True."""
        g = nx.DiGraph()
        # Nodes and arcs go into networkx's dictionaries directly, each attribute dict handed
        # over (the builder made every one and keeps none): add_nodes_from and add_edges_from
        # copy each dict and check each node, most of the build of a large fabric. Same
        # order, same graph.
        nodes = self.nodes
        g._node.update(nodes)
        succ, pred = g._succ, g._pred
        succ.update(zip(nodes, map(dict, [()] * len(nodes)), strict=True))
        pred.update(zip(nodes, map(dict, [()] * len(nodes)), strict=True))
        try:
            for (u, v), d in self.arcs.items():
                succ[u][v] = d
                pred[v][u] = d
        except KeyError:  # an arc to a node never added: networkx adds it, as it always did
            g.add_edges_from((u, v, d) for (u, v), d in self.arcs.items())
        symmetry = None
        eps = self.endpoints
        if symmetric:
            names = sorted(set(self._arc_orbits))
            index = {name: i for i, name in enumerate(names)}
            codes = list(map(index.__getitem__, self._arc_orbits))
            symmetry = Symmetry(ArcOrbits(list(self.arcs), codes),
                                group, len(g._node), sum(map(len, succ.values())),
                                frozenset(eps), tuple(names))
            # The orbits in the graph's order, for the checks that read the claim per arc
            # (symmetry_claim.ClaimOrder); the claim is frozen, so set past its __init__.
            order = ClaimOrder.of(g, list(self.arcs), np.array(codes, dtype=np.int64))
            if order is not None:
                object.__setattr__(symmetry, "_order", order)
        return Fabric(g, eps, self.name, self.params, symmetry)


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
