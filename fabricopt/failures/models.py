"""Failure models: what fails, and how likely, drawn reproducibly from a seed.

A model turns a seed into failure patterns (:class:`Draw`: the links and switches that fail,
and the GPUs that go down with them and leave the traffic). Four kinds compose:

* :class:`EverySingle`: each unit of a kind alone (links, switches, or risk groups), the N-1
  set; enumerable, each pattern weighted equally.
* :class:`Independent`: each unit fails on its own with its own probability (given, per
  unit, or from an annual failure rate attribute over a time window).
* :class:`GroupFailures`: ``count`` shared-risk groups at a time, drawn uniformly (all of them
  one by one when ``count=1``). Groups come from :func:`~fabricopt.risk_groups`, or from a
  node attribute or a mapping (:func:`groups_by`: racks, rows, planes, power feeds), nested
  with :func:`nest_groups`.
* :class:`Mixture`: one of several models per draw, by weight.

GPUs in a failed group are **down**: they leave the all-to-all (the job runs on the GPUs left)
and their links fail, so no traffic transits them; a GPU merely cut off by failed links stays
in the traffic (and theta drops to 0, which is the truth for a job that needs it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_choice, check_int, did_you_mean, fail
from ..analysis.selection import describe, select_links, select_nodes
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from .orbits import Pattern
from .risk_groups import (
    RiskGroup,
    _bundles,
    check_group_names,
    check_groups,
    risk_groups,
)
from .sweep import _check_tiers, check_tier_names

HOURS_PER_YEAR = 8766.0  # 365.25 days


@dataclass(frozen=True)
class Draw:
    """One failure pattern: ``pattern`` (links and switches) and the GPUs ``down`` with it;
    ``weight`` its probability when a model enumerates its patterns."""

    pattern: Pattern
    down: frozenset[Hashable] = frozenset()
    label: str = ""
    weight: float = 1.0

    def apply(self, fab: Fabric) -> Fabric:
        """``fab`` with the pattern failed: its links, its switches whole, and the GPUs that
        are down (gone from the graph and from the endpoints)."""
        g = fab.graph
        gone = set(self.pattern.switches)
        whole = {frozenset((x, y)) for x in self.down
                 for y in set(g.successors(x)) | set(g.predecessors(x))}
        links: dict[tuple[Hashable, Hashable], int] = {}
        for pair in set(self.pattern.links) | whole:
            if pair & gone:
                continue
            u, v = tuple(pair)
            n = self.pattern.links.get(pair, 0)
            links[(u, v)] = int(g[u][v].get("links", 1)) if (n == 0 or pair in whole) else n
        failed = fab.without(links=links, switches=sorted(gone, key=str))
        if not self.down:
            return failed
        # GPUs down leave the fabric, so the traffic over the GPUs left is the failed
        # fabric's own all-to-all (and the flow engine's symmetric method still applies).
        graph = failed.graph.copy()
        graph.remove_nodes_from(self.down)
        return Fabric(graph, [e for e in failed.endpoints if e not in self.down], failed.name,
                      failed.params, None, failed.design, failed.recipe, failed.removed)

    def key_pattern(self) -> Pattern:
        """The pattern with the GPUs down counted as failed nodes (for symmetry keys)."""
        return Pattern(self.pattern.links, self.pattern.switches | self.down)


def check_model_call(method: str, fab: Any, *rng: Any) -> None:
    """Check the arguments of a failure model's ``draw``/``enumerate``/``probabilities``
    (``method`` names it in messages, e.g. ``"EverySingle.draw"``); ``rng`` when the method
    takes one.

    >>> check_model_call("EverySingle.draw", None)
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: EverySingle.draw(): fab must be a Fabric, got NoneType
    """
    check_fabric(method, fab)
    if rng and not isinstance(rng[0], np.random.Generator):
        raise fail(method, "rng", "a numpy.random.Generator (numpy.random.default_rng(seed))",
                   type(rng[0]).__name__)


class FailureModel:
    """Base of the failure models: ``draw(fab, rng)`` one pattern; ``enumerate(fab)`` every
    pattern with its probability, or None when there are too many to list."""

    name = "failure model"

    def draw(self, fab: Fabric, rng: np.random.Generator) -> Draw:
        raise NotImplementedError

    def drawer(self, fab: Fabric) -> Callable[[np.random.Generator], Draw]:
        """``draw`` on ``fab`` as a function of the generator alone: what many draws on one
        fabric call, so a model reads the fabric once (a model may do that work here)."""
        return lambda rng: self.draw(fab, rng)

    def enumerate(self, fab: Fabric) -> list[Draw] | None:
        return None


def _units(fab: Fabric, kind: str, tiers: frozenset[str] | None,
           groups: Sequence[RiskGroup] | None) -> list[tuple[str, Draw]]:
    """Every unit of a kind as (label, draw): one physical link of a bundle (weighted by
    the bundle's links), a switch, or a group."""
    g = fab.graph
    out: list[tuple[str, Draw]] = []
    if kind == "links":
        for u, v, n, tier in _bundles(fab):
            if tiers is None or tier in tiers:
                out += [(f"link {u}-{v}", Draw(Pattern({frozenset((u, v)): 1}, frozenset()),
                                               label=f"link {u}-{v}"))] * n
    elif kind == "switches":
        for w in fab.switches:
            if tiers is None or any(str(d.get("tier", "link")) in tiers
                                    for _, _, d in g.out_edges(w, data=True)):
                out.append((f"switch {w}", Draw(Pattern({}, frozenset([w])),
                                                label=f"switch {w}")))
    else:
        for grp in (groups if groups is not None else risk_groups(fab)):
            out.append((grp.name, group_draw(grp)))
    return out


def group_draw(grp: RiskGroup) -> Draw:
    """The failure of one risk group: its links (whole bundles), switches and GPUs."""
    return Draw(Pattern({pair: 0 for pair in grp.links}, frozenset(grp.switches)),
                frozenset(getattr(grp, "gpus", frozenset())), grp.name)


@dataclass(frozen=True)
class EverySingle(FailureModel):
    """Each unit of ``kind`` failing alone, each equally likely (the N-1 set).

    >>> import fabricopt as fo
    >>> len(EverySingle("switches").enumerate(fo.leaf_spine(leaves=2, spines=1,
    ...                                                     endpoints_per_leaf=1)))
    3
    """

    kind: str = "links"
    tiers: str | Sequence[str] | None = None
    groups: Sequence[RiskGroup] | None = None

    def __post_init__(self) -> None:
        check_choice("EverySingle", "kind", self.kind, ("links", "switches", "groups"))
        check_tier_names("EverySingle", self.tiers)
        if self.groups is not None:
            object.__setattr__(self, "groups",
                               check_group_names("EverySingle", "groups", self.groups))

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"every single {self.kind[:-1] if self.kind != 'switches' else 'switch'}"

    def _every_unit(self, method: str, fab: Fabric) -> list[tuple[str, Draw]]:
        check_model_call(method, fab)
        if self.kind == "groups" and self.groups is not None:
            check_groups("EverySingle", fab, self.groups)
        units = _units(fab, self.kind, _check_tiers("EverySingle", fab, self.tiers),
                       self.groups)
        if not units:
            raise fail(method, "fab", f"a fabric with {self.kind} to fail ({fab.name!r} has "
                       "none)", fab.name)
        return units

    def enumerate(self, fab: Fabric) -> list[Draw]:
        units = self._every_unit("EverySingle.enumerate", fab)
        merged: dict[str, Draw] = {}
        for label, d in units:  # a bundle of n links: n units, one pattern of weight n
            merged[label] = Draw(d.pattern, d.down, label,
                                 merged[label].weight + 1 if label in merged else 1)
        return [Draw(d.pattern, d.down, d.label, d.weight / len(units))
                for d in merged.values()]

    def draw(self, fab: Fabric, rng: np.random.Generator) -> Draw:
        check_model_call("EverySingle.draw", fab, rng)
        units = self._every_unit("EverySingle.draw", fab)
        return units[int(rng.integers(len(units)))][1]


@dataclass(frozen=True)
class Independent(FailureModel):
    """Each unit fails on its own: with ``probability`` (a number for every unit, or a
    mapping from a unit's label or a tier to a number, default 0), else from the attribute
    ``afr`` (annual failure rate, failures per year) of the link or switch over ``hours``:
    ``p = 1 - exp(-afr * hours / 8766)``.

    A mapping's keys are checked against the fabric the model is applied to, before
    anything is drawn: a unit's label (``"link leaf0-spine0"``, ``"switch leaf0"``) gives that
    unit its probability; a tier (``"leaf-spine"``) gives it to every link of the tier, or to
    every switch with a link of the tier (as ``tiers=`` chooses them). A unit's own label
    wins over its tiers; a switch whose tiers are given different numbers must be given its
    own. A key that names nothing of the fabric is an error (with the closest name), never a
    probability of 0.

    >>> import fabricopt as fo
    >>> fab = fo.ring(4)
    >>> d = Independent("links", probability=1.0).draw(fab, np.random.default_rng(0))
    >>> len(d.pattern.links)   # every link fails
    4
    >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    >>> d = Independent(probability={"leaf-spine": 1.0}).draw(fab, np.random.default_rng(0))
    >>> sorted(sorted(pair) for pair in d.pattern.links)   # both leaf-spine links, no GPU link
    [['leaf0', 'spine0'], ['leaf1', 'spine0']]
    """

    kind: str = "links"
    probability: float | Mapping[str, float] | None = None
    attribute: str = "afr"
    hours: float = 24.0
    tiers: str | Sequence[str] | None = None

    def __post_init__(self) -> None:
        check_choice("Independent", "kind", self.kind, ("links", "switches"))
        p = self.probability
        if isinstance(p, Mapping):
            if not p:
                raise fail("Independent", "probability", "a number from 0 to 1, or a "
                           "non-empty mapping from unit labels or tiers to such numbers", p)
            bad = [k for k in p if not isinstance(k, str) or not k]
            if bad:
                raise fail("Independent", "probability", "a mapping whose keys are unit "
                           "labels ('link leaf0-spine0', 'switch leaf0') or tiers "
                           f"('leaf-spine'), strings; not {bad[0]!r}", p)
        values = [] if p is None else (list(p.values()) if isinstance(p, Mapping) else [p])
        if any(isinstance(x, bool) or not isinstance(x, int | float) or not 0 <= x <= 1
               for x in values):
            raise fail("Independent", "probability", "numbers from 0 to 1", p)
        if isinstance(self.hours, bool) or not isinstance(self.hours, int | float) \
                or not 0 < self.hours < math.inf:
            raise fail("Independent", "hours", "a finite number > 0", self.hours)
        if not isinstance(self.attribute, str) or not self.attribute:
            raise fail("Independent", "attribute", "the name of a link or switch attribute "
                       "holding an annual failure rate (a non-empty string)", self.attribute)
        check_tier_names("Independent", self.tiers)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"independent {self.kind}"

    def probabilities(self, fab: Fabric) -> list[tuple[str, Draw, float]]:
        """Every unit with its probability of failing in one draw."""
        check_model_call("Independent.probabilities", fab)
        g = fab.graph
        units = _units(fab, self.kind, _check_tiers("Independent", fab, self.tiers), None)
        given = self._given(fab, units) if isinstance(self.probability, Mapping) else None
        out = []
        for label, d in units:
            if given is not None:
                p = given[label]
            elif self.probability is not None:
                p = float(self.probability)
            else:
                if self.kind == "links":
                    u, v = tuple(next(iter(d.pattern.links)))
                    afr = g[u][v].get(self.attribute)
                else:
                    afr = g.nodes[next(iter(d.pattern.switches))].get(self.attribute)
                p = 0.0 if afr is None else 1.0 - math.exp(-float(afr) * self.hours
                                                           / HOURS_PER_YEAR)
            out.append((label, d, p))
        if self.probability is None and out and not any(p > 0 for _, _, p in out) \
                and not self._any_rate(fab):
            # Nothing to draw from: every draw would fail nothing, a silent "no loss".
            raise InvalidParameterError(
                f"Independent(): no {self.kind[:-1]} of fabric {fab.name!r} has an "
                f"{self.attribute!r} attribute (failures per year) to draw from; give "
                "probability= (on the command line, --probability)")
        return out

    def _given(self, fab: Fabric, units: list[tuple[str, Draw]]) -> dict[str, float]:
        """Each unit's probability from the mapping: its label's, else its tiers' (0 when
        neither is given); an error for a key that names no unit or tier of ``fab``, or a
        switch whose tiers are given different numbers."""
        mapping: Mapping[str, float] = self.probability  # type: ignore[assignment]
        g = fab.graph
        tiers_of: dict[str, frozenset[str]] = {}
        for label, d in units:
            if self.kind == "links":
                u, v = tuple(next(iter(d.pattern.links)))
                tiers_of[label] = frozenset([str(g[u][v].get("tier", "link"))])
            else:
                w = next(iter(d.pattern.switches))
                tiers_of[label] = frozenset(str(t) for _, _, t in
                                            g.out_edges(w, data="tier", default="link"))
        tiers = sorted(set().union(*tiers_of.values())) if tiers_of else []
        unknown = [k for k in mapping if k not in tiers_of and k not in tiers]
        if unknown:
            key = unknown[0]
            near = did_you_mean(key, tiers) or did_you_mean(key, tiers_of)
            example = next(iter(tiers_of), None)
            where = "" if self.tiers is None else " (of the tiers chosen by tiers=)"
            unit = "link" if self.kind == "links" else "switch"
            raise InvalidParameterError(
                f"Independent(): probability keys must be {unit} labels{where} such as "
                f"{example!r}, or tiers of fabric {fab.name!r} ({', '.join(tiers) or 'none'})"
                f", got {key!r}{near}")
        out = {}
        for label, unit_tiers in tiers_of.items():
            if label in mapping:
                out[label] = float(mapping[label])
                continue
            values = {t: float(mapping[t]) for t in sorted(unit_tiers) if t in mapping}
            if len(set(values.values())) > 1:
                raise InvalidParameterError(
                    f"Independent(): probability gives {label!r} more than one number "
                    f"through its tiers ({', '.join(f'{t}: {p:g}' for t, p in values.items())})"
                    f"; give it its own ({label!r}: p)")
            out[label] = next(iter(values.values()), 0.0)
        return out

    def _any_rate(self, fab: Fabric) -> bool:
        """Whether any link (or switch) of ``fab`` carries the rate attribute."""
        g = fab.graph
        if self.kind == "links":
            return any(self.attribute in d for _, _, d in g.edges(data=True))
        return any(self.attribute in d for _, d in g.nodes(data=True))

    def draw(self, fab: Fabric, rng: np.random.Generator) -> Draw:
        check_model_call("Independent.draw", fab, rng)
        return self.drawer(fab)(rng)

    def drawer(self, fab: Fabric) -> Callable[[np.random.Generator], Draw]:
        """``draw`` on ``fab`` with every unit's probability read once: reading them is most
        of a draw (0.9 s of a 1,024-GPU SuperPOD's), the draw itself one random vector.

        >>> import fabricopt as fo
        >>> draw = Independent("links", probability=1.0).drawer(fo.ring(4))
        >>> [len(draw(np.random.default_rng(seed)).pattern.links) for seed in (0, 1)]
        [4, 4]
        """
        check_model_call("Independent.drawer", fab)
        units = self.probabilities(fab)
        chance = np.array([p for _, _, p in units])
        return lambda rng: self._drawn(units, rng.random(len(units)) < chance)

    @staticmethod
    def _drawn(units: list[tuple[str, Draw, float]], hit: np.ndarray) -> Draw:
        """The pattern of the units ``hit`` marks, one draw."""
        links: dict[frozenset, int] = {}
        switches: set[Hashable] = set()
        for (_, d, _), h in zip(units, hit, strict=True):
            if h:
                for pair, n in d.pattern.links.items():
                    links[pair] = links.get(pair, 0) + n
                switches |= d.pattern.switches
        return Draw(Pattern(links, frozenset(switches)), label=f"{int(hit.sum())} failed")


@dataclass(frozen=True)
class GroupFailures(FailureModel):
    """``count`` distinct risk groups failing together, drawn uniformly; ``groups`` default to
    :func:`~fabricopt.risk_groups`. With ``count=1`` every group is enumerable.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    >>> len(GroupFailures(groups_by(fab, {"g0": "a", "leaf0": "a"})).enumerate(fab))
    1
    """

    groups: Sequence[RiskGroup] | None = None
    count: int = 1

    def __post_init__(self) -> None:
        check_int("GroupFailures", "count", self.count, minimum=1)
        if self.groups is not None:
            groups = check_group_names("GroupFailures", "groups", self.groups)
            if len(groups) < self.count:
                raise fail("GroupFailures", "groups", f"at least count={self.count} "
                           "group(s)", len(groups))
            object.__setattr__(self, "groups", groups)

    @property
    def name(self) -> str:  # type: ignore[override]
        return ("one risk group at a time" if self.count == 1 else
                f"{self.count} risk groups at once")

    def _groups(self, fab: Fabric) -> Sequence[RiskGroup]:
        if self.groups is not None:
            check_groups("GroupFailures", fab, self.groups)
        groups = self.groups if self.groups is not None else risk_groups(fab)
        if len(groups) < self.count:
            raise InvalidParameterError(f"GroupFailures(): {self.count} groups asked for, "
                                        f"{len(groups)} exist")
        return groups

    def enumerate(self, fab: Fabric) -> list[Draw] | None:
        check_model_call("GroupFailures.enumerate", fab)
        if self.count != 1:
            return None
        groups = self._groups(fab)
        return [Draw(d.pattern, d.down, d.label, 1 / len(groups))
                for d in (group_draw(grp) for grp in groups)]

    def draw(self, fab: Fabric, rng: np.random.Generator) -> Draw:
        check_model_call("GroupFailures.draw", fab, rng)
        groups = self._groups(fab)
        picks = np.sort(rng.choice(len(groups), size=self.count, replace=False))
        return union_draw([group_draw(groups[i]) for i in picks])


@dataclass(frozen=True)
class Selected(FailureModel):
    """``count`` distinct units chosen among those a selector picks, by weighted choice.

    ``select`` picks the units (:mod:`fabricopt.analysis.selection`): for ``kind="switches"``,
    switches by name pattern or node conditions (``"role=switch,tier=spine"``, ``"s*"``);
    for ``kind="links"``, links by their attributes (``"tier=leaf-spine"``, ``"end=r0.*"``),
    each physical link of a bundle a unit. ``weight`` makes some likelier than others: None,
    all alike; the name of a numeric attribute of the unit (``"afr"``: the link's or switch's
    annual failure rate), a unit without it an error; or a mapping from selectors to weights
    (``{"tier=spine": 3, "tier=core": 1}``), a unit taking the weight of the first selector
    it meets and 0 when it meets none. With ``count=1`` every unit is enumerable, each
    pattern with its probability (weight over the total).

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    >>> m = Selected("role=switch,tier=spine")
    >>> [(d.label, d.weight) for d in m.enumerate(fab)]
    [('switch spine0', 0.5), ('switch spine1', 0.5)]
    >>> m = Selected("tier=leaf-spine", kind="links", weight={"end=spine0": 3, "end=*": 1})
    >>> [round(d.weight, 3) for d in m.enumerate(fab)]   # 3, 1, 3, 1 over 8
    [0.375, 0.125, 0.375, 0.125]
    """

    select: Any = None
    kind: str = "switches"
    weight: str | Mapping[str, float] | None = None
    count: int = 1

    def __post_init__(self) -> None:
        check_choice("Selected", "kind", self.kind, ("links", "switches"))
        check_int("Selected", "count", self.count, minimum=1)
        if not isinstance(self.select, str | Mapping | list | tuple) or not self.select \
                or (isinstance(self.select, str) and not self.select.strip()):
            raise fail("Selected", "select", "a name pattern, conditions key=value "
                       "(role=switch,tier=spine; tier=leaf-spine for links) or a list of "
                       "names", self.select)
        w = self.weight
        if isinstance(w, Mapping):
            if not w or any(isinstance(x, bool) or not isinstance(x, int | float)
                            or not 0 <= x < math.inf for x in w.values()):
                raise fail("Selected", "weight", "a mapping from selectors to finite "
                           "weights >= 0", w)
        elif w is not None and (not isinstance(w, str) or not w):
            raise fail("Selected", "weight", "None, an attribute name or a mapping from "
                       "selectors to weights", w)

    @property
    def name(self) -> str:  # type: ignore[override]
        what = f"{self.count} {self.kind if self.count > 1 else self.kind[:-1]}"
        if what.endswith("switche"):
            what = what[:-1]
        w = self.weight
        by = "" if w is None else f", weighted by {describe(w) if isinstance(w, Mapping) else w}"
        return f"{what} of {describe(self.select)}{by}"

    def units(self, fab: Fabric) -> list[tuple[Draw, float]]:
        """Every unit the selector picks, with its weight (bundles of ``n`` links: ``n``
        units)."""
        func = "Selected"
        check_fabric("Selected.units", fab)
        g = fab.graph
        if self.kind == "switches":
            picked = [v for v in select_nodes(fab, self.select, _func=func, _name="select")
                      if g.nodes[v].get("role") == "switch"]
            if not picked:
                raise fail(func, "select", f"a selector that picks switches of {fab.name!r}",
                           describe(self.select))
            units = [(Draw(Pattern({}, frozenset([w])), label=f"switch {w}"),
                      g.nodes[w], {"name": w}) for w in picked]
        else:
            units = []
            for u, v in select_links(fab, self.select, _func=func, _name="select"):
                draw = Draw(Pattern({frozenset((u, v)): 1}, frozenset()),
                            label=f"link {u}-{v}")
                units += [(draw, g[u][v], {"end": (u, v)})] * int(g[u][v].get("links", 1))
        matched: list[tuple[set, float]] = []
        if isinstance(self.weight, Mapping):  # each selector's units, found once
            for selector, factor in self.weight.items():
                if self.kind == "switches":
                    hits: set = set(select_nodes(fab, selector, _func="Selected",
                                                 _name="weight", empty_ok=True))
                else:
                    hits = {frozenset(a) for a in select_links(
                        fab, selector, _func="Selected", _name="weight", empty_ok=True)}
                matched.append((hits, float(factor)))
        out = [(draw, self._weight_of(draw, data, where, matched))
               for draw, data, where in units]
        if sum(1 for _, w in out if w > 0) < self.count:
            raise fail(func, "weight" if self.weight is not None else "count",
                       f"at least count={self.count} unit(s) of positive weight "
                       f"({sum(1 for _, w in out if w > 0)} among the {len(out)} selected)",
                       self.weight if self.weight is not None else self.count)
        return out

    def _weight_of(self, draw: Draw, data: Mapping[str, Any], where: Mapping[str, Any],
                   matched: list[tuple[set, float]]) -> float:
        w = self.weight
        if w is None:
            return 1.0
        if isinstance(w, str):
            value = data.get(w)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not 0 <= value < math.inf:
                raise fail("Selected", "weight", f"an attribute every selected unit holds as "
                           f"a number >= 0 ({draw.label} has {value!r})", w)
            return float(value)
        key = where["name"] if self.kind == "switches" else frozenset(where["end"])
        return next((factor for hits, factor in matched if key in hits), 0.0)

    def enumerate(self, fab: Fabric) -> list[Draw] | None:
        check_model_call("Selected.enumerate", fab)
        if self.count != 1:
            return None
        units = self.units(fab)
        total = sum(w for _, w in units)
        merged: dict[str, Draw] = {}
        for d, w in units:  # a bundle's links: one pattern, their weights summed
            if w > 0:
                before = merged[d.label].weight if d.label in merged else 0.0
                merged[d.label] = Draw(d.pattern, d.down, d.label, before + w)
        return [Draw(d.pattern, d.down, d.label, d.weight / total) for d in merged.values()]

    def draw(self, fab: Fabric, rng: np.random.Generator) -> Draw:
        check_model_call("Selected.draw", fab, rng)
        units = self.units(fab)
        p = np.array([w for _, w in units], dtype=float)
        picks = np.sort(rng.choice(len(units), size=self.count, replace=False, p=p / p.sum()))
        return union_draw([units[i][0] for i in picks])


def union_draw(draws: Iterable[Draw]) -> Draw:
    """Several failures at once (links counted once per bundle, whole when any is whole)."""
    links: dict[frozenset, int] = {}
    switches: set[Hashable] = set()
    down: set[Hashable] = set()
    labels = []
    for d in draws:
        for pair, n in d.pattern.links.items():
            links[pair] = 0 if (n == 0 or links.get(pair) == 0) else links.get(pair, 0) + n
        switches |= d.pattern.switches
        down |= d.down
        labels.append(d.label)
    return Draw(Pattern(links, frozenset(switches)), frozenset(down), "; ".join(labels))


@dataclass(frozen=True)
class Mixture(FailureModel):
    """One of ``parts`` per draw, ``(weight, model)`` pairs chosen in proportion to weight.

    >>> import fabricopt as fo
    >>> m = Mixture([(0.9, EverySingle("links")), (0.1, EverySingle("switches"))])
    >>> round(sum(d.weight for d in m.enumerate(fo.fat_tree(4))), 6)
    1.0
    """

    parts: Sequence[tuple[float, FailureModel]] = field(default_factory=list)

    def __post_init__(self) -> None:
        def pair(x: object) -> bool:
            return (isinstance(x, Sequence) and not isinstance(x, str) and len(x) == 2
                    and isinstance(x[0], int | float) and not isinstance(x[0], bool)
                    and math.isfinite(x[0]) and x[0] >= 0 and isinstance(x[1], FailureModel))

        parts = self.parts
        if (isinstance(parts, str) or not isinstance(parts, Sequence) or not parts
                or not all(pair(x) for x in parts) or sum(w for w, _ in parts) <= 0):
            raise fail("Mixture", "parts", "(weight >= 0, FailureModel) pairs with a "
                       "positive total weight", parts)

    @property
    def name(self) -> str:  # type: ignore[override]
        return " or ".join(f"{m.name} ({w:g})" for w, m in self.parts)

    def _weights(self) -> np.ndarray:
        w = np.array([w for w, _ in self.parts], dtype=float)
        return w / w.sum()

    def enumerate(self, fab: Fabric) -> list[Draw] | None:
        check_model_call("Mixture.enumerate", fab)
        out = []
        for share, (_, model) in zip(self._weights(), self.parts, strict=True):
            listed = model.enumerate(fab)
            if listed is None:
                return None
            out += [Draw(d.pattern, d.down, d.label, d.weight * float(share)) for d in listed]
        return out

    def draw(self, fab: Fabric, rng: np.random.Generator) -> Draw:
        check_model_call("Mixture.draw", fab, rng)
        i = int(rng.choice(len(self.parts), p=self._weights()))
        return self.parts[i][1].draw(fab, rng)

    def drawer(self, fab: Fabric) -> Callable[[np.random.Generator], Draw]:
        """``draw`` on ``fab`` with each part's own drawer (each reads the fabric once); the
        same draws as :meth:`draw` from the same generator."""
        check_model_call("Mixture.drawer", fab)
        parts, weights = [m.drawer(fab) for _, m in self.parts], self._weights()
        return lambda rng: parts[int(rng.choice(len(parts), p=weights))](rng)


def groups_by(fab: Fabric, key: str | Mapping[Hashable, Hashable], *,
              prefix: str | None = None) -> list[RiskGroup]:
    """Risk groups of the nodes sharing a value: of a node attribute (``"rack"``, ``"su"``,
    ``"plane"``, ``"power_feed"``), or of a mapping from node to label (a placement's racks).

    Each group fails its switches whole, its GPUs go down (leave the traffic, links failed),
    and every link between two of its nodes fails. Nodes without a value are in no group.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    >>> [(g.name, sorted(g.switches), sorted(g.gpus)) for g in groups_by(fab, {"g0": 1,
    ...                                                                       "leaf0": 1})]
    [('1', ['leaf0'], ['g0'])]
    """
    func = "groups_by"
    check_fabric(func, fab)
    if prefix is not None and not isinstance(prefix, str):
        raise fail(func, "prefix", "None or a string put before each label", prefix)
    g = fab.graph
    if isinstance(key, str):
        values = {v: d[key] for v, d in g.nodes(data=True) if d.get(key) is not None}
        if not values:
            present = sorted({str(k) for _, d in g.nodes(data=True) for k in d})
            raise fail(func, "key", f"a node attribute of {fab.name!r}, one of "
                       + ", ".join(present) + did_you_mean(key, present), key)
        head = f"{key} " if prefix is None else prefix
    elif isinstance(key, Mapping):
        unknown = [v for v in key if not isinstance(v, Hashable) or v not in g]
        if unknown:
            raise fail(func, "key", f"a mapping from nodes of {fab.name!r} to labels "
                       f"(not nodes: {unknown[:3]!r}"
                       + did_you_mean(str(unknown[0]), map(str, g)) + ")", key)
        bad = [x for x in key.values() if not isinstance(x, Hashable)]
        if bad:
            raise fail(func, "key", "a mapping from node to a label (str or number)", key)
        values = {v: label for v, label in key.items() if label is not None}
        if not values:
            raise fail(func, "key", "a mapping that puts at least one node in a group (a "
                       "node mapped to None is in none)", key)
        head = "" if prefix is None else prefix
    else:
        raise fail(func, "key", "a node attribute name or a mapping node -> label", key)
    members: dict[Hashable, list[Hashable]] = {}
    for v, label in values.items():
        members.setdefault(label, []).append(v)
    named: dict[str, Hashable] = {}
    for label in members:
        name = f"{head}{label}"
        if name in named:  # 1 and "1": two groups one name, so one report line for both
            raise InvalidParameterError(
                f"{func}(): labels {named[name]!r} and {label!r} both make the group name "
                f"{name!r}; give labels that differ as text")
        named[name] = label
    return [_group(fab, name, members[label]) for name, label in named.items()]


def _group(fab: Fabric, name: str, nodes: Iterable[Hashable]) -> RiskGroup:
    g = fab.graph
    nodes = set(nodes)
    gpus = frozenset(v for v in nodes if g.nodes[v].get("role") == "gpu")
    switches = frozenset(nodes - gpus)
    links = frozenset(frozenset((u, v)) for u in nodes for v in g.successors(u)
                      if v in nodes and u != v)
    return RiskGroup(name, links, switches, gpus)


def nest_groups(fab: Fabric, groups: Sequence[RiskGroup], parent: Mapping[str, str],
                ) -> list[RiskGroup]:
    """Parent groups made of child groups (racks into rows, rows into a power feed): each
    parent fails every member of its children. ``parent`` maps child name to parent name.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    >>> racks = groups_by(fab, {"g0": "r0", "leaf0": "r0", "g1": "r1", "leaf1": "r1"})
    >>> [(g.name, len(g.gpus)) for g in nest_groups(fab, racks, {"r0": "row", "r1": "row"})]
    [('row', 2)]
    """
    func = "nest_groups"
    check_fabric(func, fab)
    groups = check_group_names(func, "groups", groups)
    check_groups(func, fab, groups)
    names = {grp.name: grp for grp in groups}
    if not isinstance(parent, Mapping) or not parent or not all(
            isinstance(c, str) and isinstance(t, str) and t for c, t in parent.items()):
        raise fail(func, "parent", "a non-empty mapping child group name -> parent group "
                   "name (non-empty strings)", parent)
    unknown = [c for c in parent if c not in names]
    if unknown:
        raise fail(func, "parent", "keys naming groups, one of " + ", ".join(list(names)[:8])
                   + did_you_mean(unknown[0], names), unknown[0])
    for child, top in parent.items():
        if top == child:
            raise InvalidParameterError(f"{func}(): parent puts group {child!r} in itself; a "
                                        "parent needs a name of its own")
        if top in parent:
            shape = "a cycle" if parent[top] == child else "a chain"
            raise InvalidParameterError(
                f"{func}(): parent makes {child!r} -> {top!r} -> {parent[top]!r} {shape}; a "
                "parent's name must not be a child's: nest one level per call (racks into "
                "rows, then rows into halls)")
        if top in names:
            raise InvalidParameterError(
                f"{func}(): parent names {top!r} as the parent of {child!r}, but {top!r} is "
                "already a group's name (two groups one name); give the parent a name of its "
                "own")
    children: dict[str, list[RiskGroup]] = {}
    for child, top in parent.items():
        children.setdefault(top, []).append(names[child])
    out = []
    for top, kids in children.items():
        nodes = set().union(*(k.switches | k.gpus for k in kids))
        grp = _group(fab, top, nodes)
        links = grp.links.union(*(k.links for k in kids))
        out.append(RiskGroup(top, links, grp.switches, grp.gpus))
    return out


__all__ = ["Draw", "EverySingle", "FailureModel", "GroupFailures", "Independent", "Mixture",
           "Selected",
           "check_model_call",
           "group_draw", "groups_by", "nest_groups", "union_draw"]
