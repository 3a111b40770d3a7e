"""How often each kind of component fails: sourced annual failure rates, and the units a
fabric holds of each.

The shipped figures (``fabricopt/data/reliability.toml``) are derived from Table 5 of The
Llama 3 Herd of Models (419 unexpected interruptions in 54 days on 16,384 H100 GPUs), each
with its source and confidence; :meth:`FailureRates.load` merges a user file over them, as
:meth:`~fabricopt.Catalog.load` does for the hardware catalog. ``docs/goodput.md`` derives
every figure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .._checks import check_bool, check_label, check_path
from .._toml import read_toml
from ..catalog import CONFIDENCES, CatalogError
from ..fabric import Fabric
from ..tiers import is_scale_up_arc

#: What one unit of a component kind is, and so how many a fabric holds of it.
UNITS = ("gpu", "server", "network link", "network switch", "scale-up switch",
         "scale-up link", "transceiver")
#: The component kinds of the shipped figures.
COMPONENTS = ("gpu", "hbm", "nic", "host", "power_supply", "software", "switch", "cable",
              "transceiver", "nvswitch", "nvlink")
_FIELDS = ("per", "failures_per_year", "repair_h", "source", "confidence")


@dataclass(frozen=True)
class FailureRate:
    """One component kind: ``failures_per_year`` of one unit (``per``), ``repair_h`` hours
    until it is back, and where the figures come from."""

    kind: str
    per: str
    failures_per_year: float
    repair_h: float
    source: str
    confidence: str

    @property
    def per_second(self) -> float:
        """Failures of one unit per second."""
        return self.failures_per_year / (365.0 * 86400.0)


def _parse(origin: str, kind: str, table: Any, base: FailureRate | None) -> FailureRate:
    where = f"{origin}: [reliability.{kind}]"
    if not isinstance(table, Mapping):
        raise CatalogError(f"{where} must be a table with fields {', '.join(_FIELDS)}")
    unknown = sorted(set(table) - set(_FIELDS))
    if unknown:
        raise CatalogError(f"{where}: unknown field {unknown[0]!r}; fields: "
                           + ", ".join(_FIELDS))
    values: dict[str, Any] = {} if base is None else {f: getattr(base, f) for f in _FIELDS}
    values.update(table)
    if "source" not in table or "confidence" not in table:
        raise CatalogError(f"{where}: every table needs source and confidence (what the "
                           "figures rest on)")
    missing = [f for f in _FIELDS if f not in values]
    if missing:
        raise CatalogError(f"{where}: a new component kind needs {', '.join(missing)}")
    if values["per"] not in UNITS:
        raise CatalogError(f"{where}: per must be one of {', '.join(UNITS)}, got "
                           f"{values['per']!r}")
    for name in ("failures_per_year", "repair_h"):
        x = values[name]
        if isinstance(x, bool) or not isinstance(x, int | float) or not x >= 0 \
                or x == float("inf"):
            raise CatalogError(f"{where}: {name} must be a finite number >= 0, got {x!r}")
    if values["confidence"] not in CONFIDENCES:
        raise CatalogError(f"{where}: confidence must be one of {', '.join(CONFIDENCES)}, got "
                           f"{values['confidence']!r}")
    if not isinstance(values["source"], str) or not values["source"].strip():
        raise CatalogError(f"{where}: source must be a non-empty text")
    return FailureRate(kind, values["per"], float(values["failures_per_year"]),
                       float(values["repair_h"]), values["source"], values["confidence"])


class FailureRates:
    """Annual failure rates per component kind, each with its source.

    Examples
    --------
    >>> import fabricopt as fo
    >>> rates = fo.FailureRates.default()
    >>> round(rates["gpu"].failures_per_year, 4), rates["gpu"].per
    (0.0809, 'gpu')
    >>> ours = rates.merged({"reliability": {"switch": {"failures_per_year": 0.02,
    ...     "source": "our fleet, 2025", "confidence": "vendor"}}}, origin="fleet.toml")
    >>> ours["switch"].failures_per_year, ours["switch"].repair_h
    (0.02, 4.0)
    """

    def __init__(self, rates: Mapping[str, FailureRate] | None = None,
                 origins: tuple[str, ...] = ()) -> None:
        self._rates = dict(rates or {})
        self.origins = origins

    @classmethod
    def default(cls) -> FailureRates:
        """The figures shipped with fabricopt."""
        text = resources.files("fabricopt").joinpath("data", "reliability.toml")
        with resources.as_file(text) as path:
            data = read_toml(path, CatalogError, "reliability file")
        return cls().merged(data, origin="fabricopt reliability figures")

    @classmethod
    def load(cls, path: str | os.PathLike[str], merge: bool = True) -> FailureRates:
        """Read ``[reliability.KIND]`` tables from a TOML file, by default over the shipped
        figures.

        Raises
        ------
        CatalogError
            Naming the file, the table and the field that is wrong.

        Examples
        --------
        >>> import os, tempfile, fabricopt as fo
        >>> path = os.path.join(tempfile.mkdtemp(), "fleet.toml")
        >>> with open(path, "w") as f:
        ...     _ = f.write('[reliability.cable]\\nfailures_per_year = 0.004\\n'
        ...                 'source = "our fleet"\\nconfidence = "vendor"\\n')
        >>> fo.FailureRates.load(path)["cable"].failures_per_year
        0.004
        """
        origin = os.fspath(check_path("FailureRates.load", "path", path))
        merge = check_bool("FailureRates.load", "merge", merge)
        data = read_toml(origin, CatalogError, "reliability file")
        return (cls.default() if merge else cls()).merged(data, origin=origin)

    def merged(self, data: Mapping[str, Any], origin: str = "user figures") -> FailureRates:
        """New rates: ``data`` (the TOML layout, ``{"reliability": {kind: table}}``) over
        these; a table may give some fields of a known kind (with its source)."""
        check_label("FailureRates.merged", "origin", origin, optional=False)
        if not isinstance(data, Mapping):
            raise CatalogError(f"{origin}: FailureRates.merged(): data must be a table with a "
                               f"[reliability] section, got {data!r}")
        unknown = sorted(set(data) - {"meta", "reliability"})
        if unknown:
            raise CatalogError(f"{origin}: unknown section [{unknown[0]}]; sections: "
                               "reliability, meta")
        tables = data.get("reliability", {})
        if not isinstance(tables, Mapping):
            raise CatalogError(f"{origin}: [reliability] must hold tables [reliability.KIND]")
        rates = dict(self._rates)
        for kind, table in tables.items():
            rates[kind] = _parse(origin, kind, table, rates.get(kind))
        return FailureRates(rates, self.origins + (origin,))

    def __getitem__(self, kind: str) -> FailureRate:
        try:
            return self._rates[kind]
        except KeyError:
            raise KeyError(f"no reliability figure for {kind!r}; kinds: "
                           + ", ".join(self._rates)) from None

    def __iter__(self) -> Iterator[FailureRate]:
        return iter(self._rates.values())

    def __len__(self) -> int:
        return len(self._rates)

    def __repr__(self) -> str:
        return f"FailureRates({len(self)} kinds from {', '.join(self.origins) or 'nothing'})"

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per component kind."""
        return [{"kind": r.kind, "per": r.per, "failures_per_year": r.failures_per_year,
                 "repair_h": r.repair_h, "confidence": r.confidence, "source": r.source}
                for r in self]


def server_of(fab: Fabric, gpu: Any) -> Any:
    """The server (host) a GPU sits in: its ``node`` attribute, else the GPU itself."""
    return fab.graph.nodes[gpu].get("node", gpu)


def unit_counts(fab: Fabric) -> dict[str, int]:
    """How many units of each kind (:data:`UNITS`) the fabric holds; transceivers are
    reported 0 (the goodput counts two per network link when a transceiver rate is given).

    >>> import fabricopt as fo
    >>> unit_counts(fo.superpod(1))["network link"], unit_counts(fo.superpod(1))["server"]
    (512, 32)
    """
    g = fab.graph
    counts = dict.fromkeys(UNITS, 0)
    counts["gpu"] = len(fab.endpoints)
    counts["server"] = len({server_of(fab, e) for e in fab.endpoints})
    up_switches = set()
    for u, v, d in g.edges(data=True):
        if repr(u) > repr(v) and g.has_edge(v, u):
            continue  # one physical bundle is two arcs: count it once
        up = is_scale_up_arc(d)
        counts["scale-up link" if up else "network link"] += int(d.get("links", 1))
        if up:
            up_switches.update(w for w in (u, v) if g.nodes[w].get("role") == "switch")
    switches = [w for w, r in g.nodes(data="role") if r == "switch"]
    counts["scale-up switch"] = len(up_switches)
    counts["network switch"] = len(switches) - len(up_switches)
    return counts


__all__ = ["COMPONENTS", "UNITS", "FailureRate", "FailureRates", "server_of", "unit_counts"]
