"""Media selection: which cable or optics each link gets, and the policies a user can force.

For a link of rate ``r`` Gb/s and length ``L`` m, the candidates are the catalog media with
``rate_gbps >= r`` and ``reach_m >= L`` (and, where an entry restricts them, the link's tech and
tier). Opt-in media (LPO, CPO) take part only under a policy that allows them. Among the
candidates the policy's objective picks the cheapest link (``"cost"``) or the one drawing least
power (``"power"``), the other figure breaking ties. A link's price and power:

* a module or cable serves ``share = max(r / rate_gbps, 1 / split)`` of its capacity to the
  link (twin-port and breakout modules are pooled: a 400G link on an 800G twin-port module uses
  half of one module);
* the two ends of a link may take different modules of one type (the same fibre): a switch
  end takes the module or cable that fills one of the switch's cages (an 800G twin-port OSFP
  in a QM9700 or SN5600 cage, shared by two 400G ports), when the catalog has one of that type
  at the cage's rate; a NIC or GPU end is a cage of its own and takes one whole module (a
  single-port 400G module at a 400G NIC);
* pluggable optics (sr, dr, fr, lpo; cpo at switch ends): ``2 * share`` modules plus one fibre
  of ``cable_usd + cable_usd_per_m * length``, the length rounded up to a standard length
  (:data:`LENGTH_BUCKETS_M`);
* cables (dac, acc, aec, aoc, nvlink): ``share`` of a cable, which draws ``power_w_per_end`` at
  each of its two ends.

An end is described by its kind: ``None`` for a NIC or GPU, otherwise the rate of one cage
of the switch there (``radix * port_gbps / cages`` of its catalog entry), ``0.0`` for a switch
whose cages the catalog does not give (switch chips), whose ends pool freely.

Scale-up NVLink links of tier ``"gpu-nvswitch"`` use the catalog's NVLink copper (no
transceivers) whenever its reach covers them; every policy leaves them alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_bool, check_choice, dataclass_from_mapping, did_you_mean, fail
from ..catalog import TRANSCEIVER_TYPES, Catalog, Entry
from ..tiers import check_tier_names

LENGTH_BUCKETS_M = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0,
                    70.0, 100.0, 150.0, 200.0, 300.0, 500.0, 1000.0, 2000.0)
"""Standard cable lengths: a link gets the shortest that covers it (capped at the reach)."""

def length_bucket(length_m: float, reach_m: float = math.inf) -> float:
    """The standard cable length bought for a link of ``length_m`` (at most ``reach_m``).

    >>> length_bucket(0.3), length_bucket(2.2), length_bucket(2.2, reach_m=2.4), length_bucket(2345)
    (0.5, 2.5, 2.4, 2400.0)
    """
    for b in LENGTH_BUCKETS_M:
        if length_m <= b:
            return min(b, reach_m)
    return min(math.ceil(length_m / 100.0) * 100.0, reach_m)


OBJECTIVES = ("cost", "power")

POLICY_PRESETS: dict[str, dict[str, Any]] = {
    "cost": {},
    "power": {"objective": "power"},
    "all_optics": {"all_optics": True},
    "lpo": {"lpo": True},
    "cpo": {"cpo": True},
    "aec_in_row": {"aec_in_row": True},
    "reference": {"all_optics": True, "nic_twin_port": True},
}
"""Named policies, for the command line: ``Policy.coerce("lpo") == Policy(lpo=True)``."""


@dataclass(frozen=True)
class Policy:
    """How links get their media and switches their model.

    Parameters
    ----------
    objective : {"cost", "power"}
        Cheapest link, or least power per link.
    all_optics : bool
        Network links use pluggable optics only (no DAC, ACC, AEC or AOC).
    lpo : bool
        Allow linear pluggable optics (LPO) wherever their reach covers a link.
    cpo : bool
        Switches with co-packaged optics: every optical link end at a switch uses the catalog's
        CPO port instead of a pluggable module (when one covers the link's rate and reach), and
        such links use optics only, as a CPO switch has no electrical ports; a link between
        two switches is then all CPO, fibre included.
    aec_in_row : bool
        Links between racks of one row that an AEC reaches use AEC, never optics.
    nic_twin_port : bool
        NIC ends sit two to a twin-port cage of the server and pool twin-port modules as a
        switch end does: a DGX H100 or B200 brings its eight 400G ConnectX-7 ports out on four
        800G twin-port OSFP cages, so one 800G module serves two NICs.
    medium_by_tier : mapping of str to str
        Force a catalog medium on every link of a tier (it must cover rate and reach).
    switch_model : str, optional
        Catalog key used for every network switch whose ``model`` is None.
    exclude : tuple of str
        Medium keys or types never to use.

    Examples
    --------
    >>> import fabricopt as fo
    >>> Policy.coerce("lpo")
    Policy(objective='cost', all_optics=False, lpo=True, cpo=False, aec_in_row=False, \
nic_twin_port=False, medium_by_tier={}, switch_model=None, exclude=())
    >>> Policy(objective="speed")
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: Policy(): objective must be one of 'cost', \
'power', got 'speed'
    """

    objective: str = "cost"
    all_optics: bool = False
    lpo: bool = False
    cpo: bool = False
    aec_in_row: bool = False
    nic_twin_port: bool = False
    medium_by_tier: Mapping[str, str] = field(default_factory=dict)
    switch_model: str | None = None
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        func = "Policy"
        check_choice(func, "objective", self.objective, OBJECTIVES)
        for name in ("all_optics", "lpo", "cpo", "aec_in_row", "nic_twin_port"):
            check_bool(func, name, getattr(self, name))
        if not isinstance(self.medium_by_tier, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.medium_by_tier.items()):
            raise fail(func, "medium_by_tier", "a mapping from tier to medium key",
                       self.medium_by_tier)
        object.__setattr__(self, "medium_by_tier", dict(self.medium_by_tier))
        if self.switch_model is not None and not isinstance(self.switch_model, str):
            raise fail(func, "switch_model", "None or a catalog switch key", self.switch_model)
        if (isinstance(self.exclude, str) or not isinstance(self.exclude, Iterable)
                or not all(isinstance(x, str) for x in self.exclude)):
            raise fail(func, "exclude", "a tuple of medium keys or types", self.exclude)
        object.__setattr__(self, "exclude", tuple(self.exclude))

    @classmethod
    def coerce(cls, value: Any, func: str = "estimate_cost") -> Policy:
        """``value`` as a Policy: None, a Policy, a preset name or a mapping of fields.

        >>> Policy.coerce({"objective": "power"}).objective
        'power'
        """
        if value is None:
            return cls()
        if isinstance(value, Policy):
            return value
        if isinstance(value, str):
            check_choice(func, "policy", value, tuple(POLICY_PRESETS))
            return cls(**POLICY_PRESETS[value])
        if isinstance(value, Mapping):
            return dataclass_from_mapping(func, "policy", cls, value, "a Policy, a preset "
                                          "name or a mapping of Policy fields")
        raise fail(func, "policy", "None, a Policy, one of "
                   + ", ".join(map(repr, POLICY_PRESETS)) + " or a mapping", value)

    def check_against(self, catalog: Catalog, func: str = "estimate_cost",
                      fab: Any = None) -> None:
        """Raise if the policy names media or switches the catalog lacks, excludes a name
        that is neither a medium key nor a medium type of it, or (given ``fab``) forces a
        medium on a tier that ``fab`` has not and no generator builds.

        >>> Policy(medium_by_tier={"leaf-spine": "dr_800g"}).check_against(Catalog.default())
        """
        if not isinstance(catalog, Catalog):
            raise fail(func, "catalog", "a Catalog", type(catalog).__name__)
        names = set(catalog.media) | {e["type"] for e in catalog.media.values()}
        for i, name in enumerate(self.exclude):
            if name not in names:
                raise fail(func, f"policy.exclude[{i}]", "a medium key or type of the catalog"
                           + did_you_mean(name, names), name)
        if fab is not None:
            check_tier_names(func, "policy.medium_by_tier", self.medium_by_tier, fab)
        for tier, key in self.medium_by_tier.items():
            if key not in catalog.media:
                raise fail(func, f"policy.medium_by_tier[{tier!r}]",
                           "a medium key of the catalog (" + ", ".join(sorted(catalog.media))
                           + ")", key)
        if self.switch_model is not None and self.switch_model not in catalog.switches:
            raise fail(func, "policy.switch_model", "a switch key of the catalog ("
                       + ", ".join(sorted(catalog.switches)) + ")", self.switch_model)


@dataclass(frozen=True)
class LinkMedium:
    """The medium chosen for one kind of link, with its figures per physical link.

    ``ends`` lists the module entry at each end (None for cables), ``share`` the fraction of a
    module or cable per end, ``usd`` and ``w`` the price and power of one link.
    """

    medium: Entry
    end_modules: tuple[Entry | None, Entry | None]
    shares: tuple[float, float]
    cable_share: float
    fibre_usd: float
    usd: float
    w: float


def share(entry: Entry, rate_gbps: float) -> float:
    """Fraction of a module or cable of ``entry`` one link of ``rate_gbps`` uses.

    >>> cat = Catalog.default()
    >>> share(cat.media["dr_800g"], 400.0), share(cat.media["dr_800g"], 1.0)
    (0.5, 0.25)
    """
    return max(rate_gbps / entry["rate_gbps"], 1.0 / entry["split"])


EndKind = float | None
"""One end of a link: None for a NIC or GPU, else the cage rate (Gb/s) of the switch there,
0.0 when the catalog gives no cages for it."""


def _end_kinds(ends: tuple[Any, Any]) -> tuple[EndKind, EndKind]:
    """``ends`` as end kinds: booleans (a switch end or not) are accepted for a switch of
    unknown cages and a NIC end."""
    out = []
    for e in ends:
        if e is None or e is False:
            out.append(None)
        elif e is True:
            out.append(0.0)
        else:
            out.append(float(e))
    return out[0], out[1]


def _cost(entry: Entry, rate: float, length: float, ends: tuple[EndKind, EndKind],
          cpo: Entry | None, end_modules: tuple[Entry, Entry]) -> LinkMedium:
    """Price one link on ``entry``, the module at each end given (``entry`` at NIC ends)."""
    s = share(entry, rate)
    if entry["type"] in TRANSCEIVER_TYPES:
        at_switch = tuple(e is not None for e in ends)
        if cpo is not None and all(at_switch):
            entry = cpo  # switch to switch: the CPO ports and their fibre are the whole link
            end_modules = (cpo, cpo)
        mods = tuple(cpo if (cpo is not None and sw) else m
                     for m, sw in zip(end_modules, at_switch, strict=True))
        # A switch pools the ports of twin-port modules across its links; a NIC port is its
        # own cage, so a GPU/NIC end takes whole modules.
        shares = tuple(share(m, rate) if sw else float(math.ceil(share(m, rate) - 1e-9))
                       for m, sw in zip(mods, at_switch, strict=True))
        fibre = entry["cable_usd"] + entry["cable_usd_per_m"] * length_bucket(length,
                                                                               entry["reach_m"])
        usd = sum(sh * m["price_usd_per_end"] for sh, m in zip(shares, mods, strict=True))
        w = sum(sh * m["power_w_per_end"] for sh, m in zip(shares, mods, strict=True))
        return LinkMedium(entry, mods, shares, 0.0, fibre, usd + fibre, w)  # type: ignore[arg-type]
    cable = s * (entry["cable_usd"]
                 + entry["cable_usd_per_m"] * length_bucket(length, entry["reach_m"]))
    return LinkMedium(entry, (None, None), (0.0, 0.0), s, 0.0, cable,
                      2.0 * s * entry["power_w_per_end"])


#: Selectors over the shipped catalog, one per policy (by its ``repr``), kept across estimates:
#: an optimizer prices a dozen fabrics under the same few policies, and each fabric has
#: about 180 kinds of link (a millisecond or two each to choose), mostly the same kinds.
_SHIPPED_SELECTORS: dict[str, MediaSelector] = {}
#: Most policies kept there (a search names a handful; past this the store starts over).
SHIPPED_SELECTORS_KEPT = 64


class MediaSelector:
    """Choose media for links under a policy, caching by (rate, length, tech, tier, ends)."""

    @classmethod
    def shipped(cls, policy: Policy) -> MediaSelector:
        """The selector of ``policy`` over the shipped catalog (:meth:`Catalog.default`),
        shared by every estimate that prices with that catalog, so a kind of link is chosen
        once per process. The choice depends only on the catalog, the policy and the key.

        >>> MediaSelector.shipped(Policy()) is MediaSelector.shipped(Policy())
        True
        """
        key = repr(policy)
        selector = _SHIPPED_SELECTORS.get(key)
        if selector is None:
            if len(_SHIPPED_SELECTORS) >= SHIPPED_SELECTORS_KEPT:
                _SHIPPED_SELECTORS.clear()
            selector = _SHIPPED_SELECTORS[key] = cls(Catalog.default(), policy)
        return selector

    def __init__(self, catalog: Catalog, policy: Policy) -> None:
        self.catalog = catalog
        self.policy = policy
        excluded = set(policy.exclude)
        self.media = [e for e in catalog.media.values()
                      if e.key not in excluded and e["type"] not in excluded]
        self.cpo = [e for e in self.media if e["type"] == "cpo"] if policy.cpo else []
        self._cache: dict[tuple[Any, ...], LinkMedium] = {}

    def choose(self, rate_gbps: float, length_m: float, tech: str, tier: str,
               switch_ends: tuple[Any, Any], in_row: bool) -> LinkMedium:
        """The medium for one link (see the module notes); raises if none covers it.

        ``switch_ends`` gives each end's kind: None (or False) for a NIC or GPU, the cage rate
        of the switch there in Gb/s, or True for a switch of unknown cages.

        >>> sel = MediaSelector(Catalog.default(), Policy())
        >>> sel.choose(800.0, 40.0, "800g", "leaf-spine", (True, True), False).medium.key
        'sr_800g'
        >>> lm = sel.choose(400.0, 40.0, "ndr", "gpu-leaf", (None, 800.0), False)
        >>> [m.key for m in lm.end_modules], lm.shares  # single-port at the NIC, twin at the switch
        (['sr_400g', 'sr_800g'], (1.0, 0.5))
        """
        ends = _end_kinds(switch_ends)
        key = (rate_gbps, length_m, tech, tier, ends, in_row)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._choose(*key)
        return hit

    def _fits(self, e: Entry, rate: float, length: float, tech: str, tier: str) -> bool:
        return (e["rate_gbps"] >= rate and e["reach_m"] >= length
                and (e.get("techs") is None or tech in e["techs"])
                and (e.get("tiers") is None or tier in e["tiers"]))

    def _cage_fit(self, e: Entry, fits: list[Entry], cage_gbps: float) -> Entry | None:
        """The entry of ``e``'s type for a switch end whose cages run at ``cage_gbps``: the one
        that fills a cage (cheapest, or least power, per module), else the fastest that fits
        in one; None when ``fits`` has neither of that type."""
        same = [m for m in fits if m["type"] == e["type"] and m["rate_gbps"] <= cage_gbps]
        if not same:
            return None
        best_rate = max(m["rate_gbps"] for m in same)
        field_order = ("power_w_per_end", "price_usd_per_end") \
            if self.policy.objective == "power" else ("price_usd_per_end", "power_w_per_end")
        return min((m for m in same if m["rate_gbps"] == best_rate),
                   key=lambda m: (m[field_order[0]], m[field_order[1]], m.key))

    def _candidates(self, e: Entry, fits: list[Entry], ends: tuple[EndKind, EndKind]
                    ) -> tuple[Entry, Entry] | None:
        """The module at each end of a link on ``e`` (None: ``e`` does not suit a switch end).

        A transceiver takes the module of its type that fills a cage of the switch at a switch
        end (a twin-port 800G module in an 800G cage, a 400G one in a 400G cage), ``e`` itself
        at a NIC end. A cable has one entry for both ends, so it must itself fit the cages of
        each switch end: no faster than the cage, and filling it when its type offers a cable
        that does. A switch of unknown cages takes any module (pooled)."""
        if e["type"] in TRANSCEIVER_TYPES:
            mods = []
            for end in ends:
                fit = self._cage_fit(e, fits, end) if end else None
                if end and fit is None:
                    return None  # no module of this type fits the cage
                mods.append(fit or e)
            return mods[0], mods[1]
        for end in ends:
            if end and (e["rate_gbps"] > end or (e["rate_gbps"] != end and any(
                    m["type"] == e["type"] and m["rate_gbps"] == end for m in fits))):
                return None
        return e, e

    def _choose(self, rate: float, length: float, tech: str, tier: str,
                ends: tuple[EndKind, EndKind], in_row: bool) -> LinkMedium:
        pol = self.policy
        where = f"a {rate:g} Gb/s {tech} link of {length:g} m in tier {tier!r}"
        switch_ends = tuple(e is not None for e in ends)
        forced = pol.medium_by_tier.get(tier)
        all_fits = [e for e in self.media if e["type"] != "cpo"
                    and self._fits(e, rate, length, tech, tier)]
        if pol.nic_twin_port and not all(switch_ends) and not any(
                e["type"] == "nvlink" for e in all_fits):
            # The server's twin-port cage holds two NIC ports: pooled like a switch's cage.
            ends = tuple(2.0 * rate if e is None else e for e in ends)  # type: ignore[assignment]
        if forced is not None:
            e = self.catalog.media[forced]
            if not self._fits(e, rate, length, tech, tier):
                raise fail("estimate_cost", f"policy.medium_by_tier[{tier!r}]",
                           f"a medium that carries {where} (reach {e['reach_m']:g} m, rate "
                           f"{e['rate_gbps']:g} Gb/s)", forced)
            mods = self._candidates(e, all_fits + [e], ends) or (e, e)
            return _cost(e, rate, length, ends, self._cpo_for(e, rate, length), mods)
        fits = all_fits
        scale_up = [e for e in fits if e["type"] == "nvlink"]
        if scale_up:
            fits = scale_up
        else:
            fits = [e for e in fits if e["type"] != "nvlink"
                    and (pol.lpo or not e.get("opt_in", False))]
            cpo_here = any(switch_ends) and any(
                c["rate_gbps"] >= rate and c["reach_m"] >= length for c in self.cpo)
            if pol.all_optics or cpo_here:
                fits = [e for e in fits if e["type"] in TRANSCEIVER_TYPES]
            if pol.aec_in_row and in_row:
                aec = [e for e in fits if e["type"] == "aec"]
                fits = aec or fits
        options = []
        # Media that fit the cages of the switch ends; none fitting, the best of the rest (the
        # estimate then lists the switch among those given more modules than cages).
        fitted = [(e, self._candidates(e, fits, ends)) for e in fits]
        if all(mods is None for _, mods in fitted):
            loose = tuple(None if x is None else 0.0 for x in ends)
            fitted = [(e, self._candidates(e, fits, loose)) for e in fits]
        for e, mods in fitted:
            if mods is not None:
                lm = _cost(e, rate, length, ends, self._cpo_for(e, rate, length), mods)
                # Among equal links, name the run after the module its switch ends carry.
                odd = sum(m is not None and m is not lm.medium for m in lm.end_modules)
                options.append((lm, odd))
        if not options:
            raise fail("estimate_cost", "catalog",
                       f"a catalog with a medium for {where}; add one (Catalog.load) or "
                       "shorten the layout", "none")
        if pol.objective == "power":
            return min(options, key=lambda o: (o[0].w, o[0].usd, o[1], o[0].medium.key))[0]
        return min(options, key=lambda o: (o[0].usd, o[0].w, o[1], o[0].medium.key))[0]

    def _cpo_for(self, e: Entry, rate: float, length: float) -> Entry | None:
        if not self.cpo or e["type"] not in TRANSCEIVER_TYPES:
            return None
        fits = [c for c in self.cpo if c["rate_gbps"] >= rate and c["reach_m"] >= length]
        key = (lambda c: (share(c, rate) * c["power_w_per_end"], c.key)) \
            if self.policy.objective == "power" else \
            (lambda c: (share(c, rate) * c["price_usd_per_end"], c.key))
        return min(fits, key=key) if fits else None
