"""The hardware catalog: switches, NICs, link media, GPUs and systems, each with its source.

The default catalog is a TOML file shipped in the package (``fabricopt/data/catalog.toml``);
its figures come from the project's hardware reference, with the weakest figures (prices, some
powers) marked ``"estimate"`` and the way they were estimated written in ``source``. A user file
with the same layout is merged over the defaults: an entry that exists is updated field by field,
a new key adds an entry. Every entry, default or user, must say its ``source`` and
``confidence``.

The fields of each kind (``gpu``, ``system``, ``switch``, ``nic``, ``medium``) are listed in
:data:`FIELDS`, the single source of truth for validation. Confidence levels, strongest first:
``"vendor"`` (primary or vendor source), ``"derived"`` (arithmetic on sourced figures),
``"secondary"`` (blog, press, compilation), ``"estimate"`` (unchecked or assumed).
"""

from __future__ import annotations

import math
import numbers
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from ._checks import check_bool, check_label, check_path
from ._toml import read_toml
from .errors import DesignFileError

CONFIDENCES = ("vendor", "derived", "secondary", "estimate")
"""Confidence levels, strongest first."""

MEDIUM_TYPES = ("dac", "acc", "aec", "aoc", "sr", "dr", "fr", "lpo", "cpo", "nvlink")
"""Link media: copper cables (dac, acc, aec), active optical cable (aoc), pluggable optics
(sr, dr, fr, lpo), co-packaged optics (cpo) and in-system NVLink copper (nvlink)."""

TRANSCEIVER_TYPES = ("sr", "dr", "fr", "lpo", "cpo")
"""Media that need a transceiver module at each end and a separate fibre."""

SWITCH_FAMILIES = ("infiniband", "ethernet", "nvlink", "ualink")
"""Switch families: the technology family (:data:`fabricopt.tiers.TECH_FAMILIES`) of the
links a switch carries; the cost model picks a switch of its links' family only."""

KINDS = ("gpu", "system", "switch", "nic", "medium")


class CatalogError(DesignFileError):
    """A catalog file or entry is invalid; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class FieldSpec:
    """One catalog field: its type, whether it is required, its unit and meaning."""

    type: str  # "str", "int", "number", "positive", "bool", "modes", "strings", or "choice"
    required: bool
    unit: str
    description: str
    choices: tuple[str, ...] = ()


FIELDS: dict[str, dict[str, FieldSpec]] = {
    "gpu": {
        "name": FieldSpec("str", False, "", "display name"),
        "nvlink_links": FieldSpec("int", False, "", "NVLink links per GPU"),
        "nvlink_gbps_per_link": FieldSpec("positive", False, "Gb/s", "per link per direction"),
        "tdp_w": FieldSpec("number", False, "W", "thermal design power"),
        "price_usd": FieldSpec("number", False, "USD", "unit price"),
        "hbm_gb": FieldSpec("positive", False, "GB", "HBM capacity"),
        "hbm_tbps": FieldSpec("positive", False, "TB/s", "HBM bandwidth"),
        "bf16_tflops": FieldSpec("positive", False, "TFLOP/s", "peak dense BF16 tensor rate"),
        "fp8_tflops": FieldSpec("positive", False, "TFLOP/s", "peak dense FP8 tensor rate"),
        "fp4_tflops": FieldSpec("positive", False, "TFLOP/s", "peak dense FP4 tensor rate"),
        "bf16_efficiency": FieldSpec("positive", False, "", "fraction of the dense BF16 peak "
                                     "a large transformer's training compute reaches end to "
                                     "end (a calibrated estimate)"),
        "fp8_efficiency": FieldSpec("positive", False, "", "the same for FP8, of the dense "
                                    "FP8 peak"),
        "fp4_efficiency": FieldSpec("positive", False, "", "the same for FP4, of the dense "
                                    "FP4 peak"),
        "hbm_efficiency": FieldSpec("positive", False, "", "fraction of the HBM bandwidth "
                                    "serving's decode kernels reach (a calibrated estimate)"),
        "attention_efficiency": FieldSpec("positive", False, "", "fraction of the dense BF16 "
                                          "peak reached on attention's model FLOPs (the full "
                                          "s x s matrix, as PaLM counts them)"),
        "compute_efficiency": FieldSpec("positive", False, "", "the older single efficiency, "
                                        "read as bf16_efficiency (and for a precision whose "
                                        "own key the entry lacks)"),
    },
    "system": {
        "name": FieldSpec("str", False, "", "display name"),
        "gpus": FieldSpec("int", True, "", "GPUs per system"),
        "nvswitch_chips": FieldSpec("int", False, "", "NVSwitch chips per system"),
        "power_w": FieldSpec("number", False, "W", "maximum system power"),
        "price_usd": FieldSpec("number", False, "USD", "unit price"),
    },
    "switch": {
        "name": FieldSpec("str", False, "", "display name"),
        "family": FieldSpec("choice", True, "", "switch family", SWITCH_FAMILIES),
        "radix": FieldSpec("int", True, "", "ports at port_gbps"),
        "port_gbps": FieldSpec("positive", True, "Gb/s", "native port rate per direction"),
        "breakout": FieldSpec("modes", False, "", "[[ports, Gb/s], ...] other port configs"),
        "power_w": FieldSpec("number", True, "W", "typical power without optics"),
        "power_w_max": FieldSpec("number", False, "W", "maximum power with active media"),
        "price_usd": FieldSpec("number", True, "USD", "unit price"),
        "rack_units": FieldSpec("int", False, "U", "height"),
        "latency_ns": FieldSpec("positive", False, "ns", "port-to-port traversal latency"),
        "chips": FieldSpec("int", False, "", "switch chips per unit when a fabric models each "
                           "chip as its own switch (radix counts the whole unit); default 1"),
        "cages": FieldSpec("int", False, "", "pluggable module cages of the unit (a twin-port "
                           "OSFP cage holds one module for two ports); no cage check without"),
        "tech": FieldSpec("str", False, "", "the link generation the switch speaks (an NVSwitch "
                          "chip's NVLink generation); a switch of unnamed model is only priced "
                          "as one whose tech its links have"),
    },
    "nic": {
        "name": FieldSpec("str", False, "", "display name"),
        "modes": FieldSpec("modes", True, "", "[[ports, Gb/s], ...] port configurations"),
        "power_w": FieldSpec("number", True, "W", "typical power"),
        "price_usd": FieldSpec("number", True, "USD", "unit price"),
    },
    "medium": {
        "name": FieldSpec("str", False, "", "display name"),
        "type": FieldSpec("choice", True, "", "kind of medium", MEDIUM_TYPES),
        "rate_gbps": FieldSpec("positive", True, "Gb/s", "module or cable rate per direction"),
        "split": FieldSpec("int", False, "", "links one module or cable can serve (default 1)"),
        "reach_m": FieldSpec("positive", True, "m", "longest supported link"),
        "power_w_per_end": FieldSpec("number", True, "W", "power of one module or cable end"),
        "price_usd_per_end": FieldSpec("number", True, "USD", "price of one module (0 if none)"),
        "cable_usd": FieldSpec("number", False, "USD", "fixed price of the cable or fibre"),
        "cable_usd_per_m": FieldSpec("number", False, "USD/m", "cable price per metre"),
        "opt_in": FieldSpec("bool", False, "", "used only when a policy allows it"),
        "techs": FieldSpec("strings", False, "", "link techs it may carry (default: any)"),
        "tiers": FieldSpec("strings", False, "", "tiers it may serve (default: any)"),
    },
}

_COMMON = ("source", "confidence", "confidence_by_field", "range_by_field", "notes")

#: Figures that price or power a part: an estimated one gives its low-high range.
PRICED_FIELDS = ("price_usd", "power_w", "price_usd_per_end", "power_w_per_end", "cable_usd",
                 "cable_usd_per_m")


@dataclass(frozen=True)
class Entry:
    """One catalog entry: its figures, where they come from and how far to trust them.

    ``entry["price_usd"]`` reads a figure; :meth:`confidence_of` gives the weakest confidence of
    the figures named.
    """

    kind: str
    key: str
    values: Mapping[str, Any]
    source: str
    confidence: str
    confidence_by_field: Mapping[str, str] = field(default_factory=dict)
    origin: str = "default catalog"
    #: ``{field: (low, high)}``: the spread of public figures around an estimated value.
    range_by_field: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def get(self, name: str, default: Any = None) -> Any:
        """A figure, or ``default`` when the entry does not give it."""
        return self.values.get(name, default)

    @property
    def name(self) -> str:
        """Display name (the key when the entry has none)."""
        return str(self.values.get("name", self.key))

    def range_of(self, name: str) -> tuple[float, float]:
        """``(low, high)`` of a figure: its ``range_by_field`` entry, else the value twice.

        >>> Catalog.default().switches["qm9700"].range_of("price_usd")
        (12000.0, 16000.0)
        """
        value = float(self.values.get(name, 0.0))
        return self.range_by_field.get(name, (value, value))

    def confidence_of(self, *names: str) -> str:
        """The weakest confidence among the named figures (all figures when none is named).

        >>> e = Catalog.default().switches["qm9700"]
        >>> e.confidence_of("power_w"), e.confidence_of("power_w", "price_usd")
        ('secondary', 'estimate')
        """
        names = names or tuple(self.values)
        levels = [self.confidence_by_field.get(n, self.confidence) for n in names]
        return max(levels, key=CONFIDENCES.index, default=self.confidence)


def _err(origin: str, kind: str, key: str, msg: str) -> CatalogError:
    return CatalogError(f"{origin}: [{kind}.{key}] {msg}")


def _check_value(origin: str, kind: str, key: str, name: str, spec: FieldSpec,
                 value: Any) -> Any:
    def bad(rule: str) -> CatalogError:
        return _err(origin, kind, key, f"{name} must be {rule}, got {value!r}")

    def real(v: Any) -> bool:
        return (isinstance(v, numbers.Real) and not isinstance(v, bool)
                and math.isfinite(v))

    if spec.type == "str":
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if spec.type == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if spec.type == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad("an integer >= 1")
        return value
    if spec.type == "number":
        if not real(value) or value < 0:
            raise bad("a finite number >= 0")
        return float(value)
    if spec.type == "positive":
        if not real(value) or value <= 0:
            raise bad("a finite number > 0")
        return float(value)
    if spec.type == "choice":
        if value not in spec.choices:
            raise bad("one of " + ", ".join(repr(c) for c in spec.choices))
        return value
    if spec.type == "strings":
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise bad("a list of strings")
        return tuple(value)
    # modes: [[ports, gbps], ...]
    rule = "a list of [ports >= 1, Gb/s > 0] pairs"
    if not isinstance(value, list) or not value:
        raise bad(rule)
    out = []
    for pair in value:
        if (not isinstance(pair, list) or len(pair) != 2 or isinstance(pair[0], bool)
                or not isinstance(pair[0], int) or pair[0] < 1 or not real(pair[1])
                or pair[1] <= 0):
            raise bad(rule)
        out.append((int(pair[0]), float(pair[1])))
    return tuple(out)


def _parse_entry(origin: str, kind: str, key: str, table: Any,
                 base: Entry | None) -> Entry:
    """Validate one raw table (merged over ``base`` when the key exists already)."""
    if not isinstance(table, Mapping):
        raise _err(origin, kind, key, f"must be a table of fields, got {table!r}")
    specs = FIELDS[kind]
    unknown = sorted(set(table) - set(specs) - set(_COMMON))
    if unknown:
        raise _err(origin, kind, key, f"unknown field {unknown[0]!r}; fields of a {kind}: "
                   + ", ".join(list(specs) + ["source", "confidence", "confidence_by_field"]))
    for name in ("source", "confidence"):
        if name not in table:
            raise _err(origin, kind, key, f"{name} is required: every figure needs a source "
                       f"and a confidence ({', '.join(CONFIDENCES)})")
    source = table["source"]
    if not isinstance(source, str) or not source.strip():
        raise _err(origin, kind, key, f"source must be a non-empty string, got {source!r}")
    confidence = table["confidence"]
    if confidence not in CONFIDENCES:
        raise _err(origin, kind, key, "confidence must be one of "
                   + ", ".join(map(repr, CONFIDENCES)) + f", got {confidence!r}")
    by_field = table.get("confidence_by_field", {})
    if not isinstance(by_field, Mapping):
        raise _err(origin, kind, key, f"confidence_by_field must be a table, got {by_field!r}")
    for name, level in by_field.items():
        if name not in specs:
            raise _err(origin, kind, key, f"confidence_by_field names unknown field {name!r}")
        if level not in CONFIDENCES:
            raise _err(origin, kind, key, f"confidence_by_field.{name} must be one of "
                       + ", ".join(map(repr, CONFIDENCES)) + f", got {level!r}")
    new = {name: _check_value(origin, kind, key, name, specs[name], value)
           for name, value in table.items() if name in specs}
    ranges = _check_ranges(origin, kind, key, table.get("range_by_field", {}),
                           {**(base.values if base is not None else {}), **new})
    if base is None:
        values = new
        conf_by_field = dict(by_field)
        merged_source = source
    else:
        values = {**base.values, **new}
        # Figures kept from the base keep their own confidence; the new ones take the user's.
        conf_by_field = {n: base.confidence_by_field.get(n, base.confidence)
                         for n in base.values if n not in new}
        conf_by_field.update({n: by_field.get(n, confidence) for n in new})
        merged_source = (f"{source} [{origin}: {', '.join(sorted(new)) or 'no figures'}]; "
                         f"other figures: {base.source}")
    missing = [n for n, s in specs.items() if s.required and n not in values]
    if missing:
        raise _err(origin, kind, key, f"{missing[0]} is required for a {kind}")
    if kind == "medium" and values.get("rate_gbps") is not None:
        values.setdefault("split", 1)
        values.setdefault("cable_usd", 0.0)
        values.setdefault("cable_usd_per_m", 0.0)
    levels = [conf_by_field.get(n, confidence) for n in values] + \
             ([confidence] if base is None else [])
    weakest = max(levels, key=CONFIDENCES.index)
    if base is not None:
        ranges = {**{n: r for n, r in base.range_by_field.items() if n not in new}, **ranges}
    return Entry(kind, key, values, merged_source, weakest, conf_by_field, origin, ranges)


def _check_ranges(origin: str, kind: str, key: str, raw: Any, values: Mapping[str, Any],
                  ) -> dict[str, tuple[float, float]]:
    """``range_by_field`` checked: a table of ``field = [low, high]`` with low <= value <= high
    for figures the entry gives."""
    if not isinstance(raw, Mapping):
        raise _err(origin, kind, key, f"range_by_field must be a table, got {raw!r}")
    out = {}
    for name, pair in raw.items():
        if name not in values:
            raise _err(origin, kind, key, f"range_by_field names {name!r}, a figure the entry "
                       "does not give")
        ok = (isinstance(pair, list | tuple) and len(pair) == 2
              and all(isinstance(x, int | float) and not isinstance(x, bool)
                      and math.isfinite(x) for x in pair))
        if not ok or not pair[0] <= values[name] <= pair[1]:
            raise _err(origin, kind, key, f"range_by_field.{name} must be [low, high] with low "
                       f"<= {values[name]!r} <= high, got {pair!r}")
        out[name] = (float(pair[0]), float(pair[1]))
    return out


class Catalog:
    """Hardware figures for cost and power, every one with a source and a confidence.

    Use :meth:`default` for the shipped catalog and :meth:`load` to merge a user file over it.
    Entries are grouped by kind: :attr:`gpus`, :attr:`systems`, :attr:`switches`, :attr:`nics`,
    :attr:`media` (dicts from key to :class:`Entry`); ``catalog["switch.qm9700"]`` reads one.

    Examples
    --------
    >>> import fabricopt as fo
    >>> cat = fo.Catalog.default()
    >>> cat["switch.qm9700"]["radix"], cat.media["dr_800g"]["reach_m"]
    (64, 100.0)
    >>> cheaper = cat.merged({"switch": {"qm9700": {"price_usd": 20000.0,
    ...     "source": "our quote", "confidence": "vendor"}}}, origin="quote.toml")
    >>> cheaper["switch.qm9700"]["price_usd"], cheaper["switch.qm9700"]["radix"]
    (20000.0, 64)
    """

    def __init__(self, entries: Mapping[str, Mapping[str, Entry]] | None = None,
                 origins: tuple[str, ...] = ()) -> None:
        entries = entries or {}
        self._entries: dict[str, dict[str, Entry]] = {k: dict(entries.get(k, {}))
                                                      for k in KINDS}
        self.origins = origins

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def default(cls) -> Catalog:
        """The catalog shipped with fabricopt (a fresh object each call; it is immutable)."""
        return _default_catalog()

    @classmethod
    def empty(cls) -> Catalog:
        """A catalog with no entries, to build one from a file without the defaults.

        >>> len(Catalog.empty()), len(Catalog.default()) > 20
        (0, True)
        """
        return cls()

    @classmethod
    def load(cls, path: str | os.PathLike[str], merge: bool = True) -> Catalog:
        """Read a catalog file; by default merge it over the shipped catalog.

        Parameters
        ----------
        path : str or path-like
            A TOML file with tables ``[switch.KEY]``, ``[nic.KEY]``, ``[medium.KEY]``,
            ``[gpu.KEY]``, ``[system.KEY]`` (fields in :data:`FIELDS`; every table needs
            ``source`` and ``confidence``).
        merge : bool
            Merge over :meth:`default` (True) or use the file alone (False).

        Raises
        ------
        CatalogError
            Naming the file, the entry and the field that is wrong.

        Examples
        --------
        >>> import os, tempfile, fabricopt as fo
        >>> path = os.path.join(tempfile.mkdtemp(), "mine.toml")
        >>> with open(path, "w") as f:
        ...     _ = f.write('[medium.dac_800g]\\nreach_m = 2.5\\n'
        ...                 'source = "our cable vendor"\\nconfidence = "vendor"\\n')
        >>> fo.Catalog.load(path).media["dac_800g"]["reach_m"]
        2.5
        """
        origin = os.fspath(check_path("Catalog.load", "path", path))
        merge = check_bool("Catalog.load", "merge", merge)
        data = read_toml(origin, CatalogError, "catalog file")
        base = cls.default() if merge else cls.empty()
        return base.merged(data, origin=origin)

    def merged(self, data: Mapping[str, Any], origin: str = "user catalog") -> Catalog:
        """A new catalog: ``data`` (same layout as the TOML file) merged over this one.

        >>> cat = Catalog.default().merged({"nic": {"cx7": {"power_w": 18.0,
        ...     "source": "measured", "confidence": "vendor"}}})
        >>> cat.nics["cx7"]["power_w"], cat.nics["cx7"].confidence_of("power_w")
        (18.0, 'vendor')
        """
        check_label("Catalog.merged", "origin", origin, optional=False)
        if not isinstance(data, Mapping):
            raise CatalogError(f"{origin}: Catalog.merged(): data must be a table of kinds "
                               f"({', '.join(KINDS)}), got {data!r}")
        entries = {k: dict(v) for k, v in self._entries.items()}
        for kind, tables in data.items():
            if kind == "meta":
                continue
            if kind not in KINDS:
                raise CatalogError(f"{origin}: unknown section [{kind}]; sections: "
                                   + ", ".join(KINDS) + ", meta")
            if not isinstance(tables, Mapping):
                raise CatalogError(f"{origin}: [{kind}] must hold tables [{kind}.KEY]")
            for key, table in tables.items():
                entries[kind][key] = _parse_entry(origin, kind, key, table,
                                                  entries[kind].get(key))
        return Catalog(entries, self.origins + (origin,))

    # -- access ---------------------------------------------------------------------------
    @property
    def gpus(self) -> dict[str, Entry]:
        """GPU entries by key."""
        return self._entries["gpu"]

    @property
    def systems(self) -> dict[str, Entry]:
        """System entries (DGX, NVL72 racks) by key."""
        return self._entries["system"]

    @property
    def switches(self) -> dict[str, Entry]:
        """Switch entries by key (the ``model`` attribute of switch nodes)."""
        return self._entries["switch"]

    @property
    def nics(self) -> dict[str, Entry]:
        """NIC entries by key."""
        return self._entries["nic"]

    @property
    def media(self) -> dict[str, Entry]:
        """Link media entries by key."""
        return self._entries["medium"]

    def __getitem__(self, ref: str) -> Entry:
        kind, _, key = ref.partition(".")
        if kind not in self._entries or key not in self._entries[kind]:
            raise KeyError(f"no catalog entry {ref!r}")
        return self._entries[kind][key]

    def __iter__(self) -> Iterator[Entry]:
        for kind in KINDS:
            yield from self._entries[kind].values()

    def __len__(self) -> int:
        return sum(len(v) for v in self._entries.values())

    def __repr__(self) -> str:
        counts = ", ".join(f"{len(v)} {k}" for k, v in self._entries.items())
        return f"<Catalog: {counts}>"


@lru_cache(maxsize=1)
def _default_data() -> dict[str, Any]:
    text = resources.files("fabricopt").joinpath("data/catalog.toml").read_text("utf-8")
    return tomllib.loads(text)


def _default_catalog() -> Catalog:
    return Catalog().merged(_default_data(), origin="default catalog")
