"""Design files: a fabric (or a sweep of fabrics) described in TOML.

A design file names a generator and its keyword arguments; comments cite where the figures come
from. The whole file is checked before anything is built, and every error names the file, the
key, what was wrong and what is allowed.

Format::

    # comments cite sources
    name = "DGX H100 node"        # optional: name of the fabric(s)
    family = "dgx_h100"           # required: a key of fabricopt.generators.GENERATORS
    description = "..."           # optional
    source = "..."                # optional: the published design it follows
    departures = "..."            # optional: where and why it departs from that source

    [params]                      # keyword arguments of the generator
    in_network_reduction = true

    [sweep]                       # optional: lists of values; the grid of all combinations
    accelerators = [64, 128]

    [layout]                      # optional, kept on the fabric for the cost model
    [catalog]                     # optional, kept on the fabric for the cost model
    policy = "cost"               # optional: the optics policy the cost model prices with
                                  # (a preset name, or a [policy] table of its fields)
    [job]                         # optional, kept on the fabric: a training job to run on it
    model = "llama3-405b"         #   (keys of fabricopt.TrainingJob; ``fabricopt train``)
    tp = 8
    [serving]                     # optional, kept on the fabric: a serving workload
    model = "llama3-70b"          #   (keys of fabricopt.serving_capacity's workload;
    ttft_s = 0.5                  #   ``fabricopt serve``)
    tpot_s = 0.05

Rules:

- Top-level keys are exactly ``name``, ``family``, ``description``, ``source``,
  ``departures``, ``params``, ``sweep``, ``layout``, ``catalog``, ``policy``, ``job`` and
  ``serving``;
  ``family`` is required.
  ``source`` names the published design (paper, reference architecture) the file follows and
  ``departures`` says where the file departs from it; the shipped files give both.
- ``params`` and ``sweep`` keys must be keyword arguments of the generator
  (:func:`inspect.signature`); a key may not be in both. Every generator argument without a
  default must be given in one of them.
- Every ``sweep`` value is a non-empty list; the file then gives one fabric per combination,
  in file order, with the last key varying fastest. Their names end in the swept values:
  ``"UALink pod [accelerators=64]"``.
- ``layout`` and ``catalog`` are tables, passed through untouched; ``policy`` is a preset name
  of :class:`~fabricopt.Policy` or a table of its fields, checked when the file is read;
  ``job`` is a table passed through untouched (its keys are checked by
  :func:`fabricopt.workload.plan.job_from_mapping` when a job is built from it), and so is
  ``serving`` (checked by ``fabricopt serve`` when it serves the workload).

Each fabric records where it came from in :attr:`Fabric.design`: ``{"file", "family",
"description", "source", "departures", "layout", "catalog", "policy", "job", "serving"}``.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import os
from dataclasses import dataclass
from typing import Any

from .._checks import check_path, did_you_mean
from .._toml import read_toml
from ..cost import Layout, Policy
from ..errors import DesignFileError, FabricOptError
from ..fabric import Fabric
from ..generators import GENERATORS, keyword_parameters, make

ALLOWED_KEYS = ("name", "family", "description", "source", "departures", "params", "sweep",
                "layout", "catalog", "policy", "job", "serving")


def _format_value(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def load_design(path: str | os.PathLike[str], **overrides: Any) -> Fabric | list[Fabric]:
    """Build the fabric a design file describes, or the list of fabrics of its sweep.

    Parameters
    ----------
    path : str or path-like
        A TOML design file (format in the module docstring of :mod:`fabricopt.io.design_files`).
    **overrides
        Generator arguments that replace the file's ``[params]`` value, or fix a swept key to
        one value (the command line passes ``key=value`` words here).

    Returns
    -------
    Fabric or list of Fabric
        One fabric, or one per combination when the file has a ``[sweep]`` table. Each carries
        ``design = {"file", "family", "description", "source", "departures", "layout",
        "catalog", "policy", "job", "serving"}``.

    Raises
    ------
    DesignFileError
        For an unreadable file, bad TOML, an unknown or missing key, an unknown generator,
        arguments the generator does not take, a malformed sweep, or a value the generator
        rejects; the message names the file and the key.

    Examples
    --------
    >>> import os, tempfile
    >>> import fabricopt as fo
    >>> path = os.path.join(tempfile.mkdtemp(), "rings.toml")
    >>> with open(path, "w") as f:
    ...     _ = f.write('name = "ring"\\nfamily = "ring"\\n[sweep]\\nn = [4, 8]\\n')
    >>> [fab.name for fab in fo.load_design(path)]
    ['ring [n=4]', 'ring [n=8]']
    """
    plan = _read_design(path, overrides)
    if plan.sweep_keys is None:
        return plan.build({})
    return [plan.build(point) for point in plan.points()]


def design_points(path: str | os.PathLike[str], **overrides: Any) -> list[dict[str, Any]]:
    """The swept values of each fabric a design file gives, without building any of them.

    The whole file is checked as by :func:`load_design`. ``load_design(path, **overrides,
    **point)`` then builds the one fabric of ``point`` (a list of one, as for any sweep file),
    named as in the sweep; a file without a ``[sweep]`` table gives ``[{}]``.

    Parameters
    ----------
    path : str or path-like
        A TOML design file.
    **overrides
        As for :func:`load_design`; an override fixes a swept key.

    Returns
    -------
    list of dict
        One ``{swept key: value}`` per fabric, in the order :func:`load_design` builds them.

    Examples
    --------
    >>> import os, tempfile
    >>> import fabricopt as fo
    >>> path = os.path.join(tempfile.mkdtemp(), "rings.toml")
    >>> with open(path, "w") as f:
    ...     _ = f.write('name = "ring"\\nfamily = "ring"\\n[sweep]\\nn = [4, 8]\\n')
    >>> points = design_points(path)
    >>> points, fo.load_design(path, **points[1])[0].name
    ([{'n': 4}, {'n': 8}], 'ring [n=8]')
    """
    plan = _read_design(path, overrides)
    return plan.points() if plan.sweep_keys is not None else [{}]


@dataclass
class _DesignPlan:
    """A checked design file: what to call and how to name what it builds."""

    where: str
    family: str
    params: dict[str, Any]
    overrides: dict[str, Any]
    sweep: dict[str, list[Any]]
    sweep_keys: list[str] | None      # still swept; None: the file has no [sweep] table
    file_sweep_keys: list[str]        # as the file lists them, overridden ones too
    base_name: str | None
    design: dict[str, Any]

    def points(self) -> list[dict[str, Any]]:
        keys = self.sweep_keys or []
        return [dict(zip(keys, combo, strict=True))
                for combo in itertools.product(*(self.sweep[k] for k in keys))]

    def build(self, point: dict[str, Any]) -> Fabric:
        kwargs = {**self.params, **point}
        try:
            fab = make(self.family, kwargs, caller="load_design")
        except FabricOptError as exc:
            raise DesignFileError(f"{self.where}: {self.family}: {exc}") from None
        # Overrides name the fabric as swept values do, so two variants of one file never
        # share a name; a swept key fixed by an override keeps its place in the sweep order.
        given = {**self.overrides, **point}
        named = {k: given[k] for k in self.file_sweep_keys if k in given}
        named.update({k: v for k, v in given.items() if k not in named})
        name = self.base_name or fab.name
        if named:
            name += " [" + ", ".join(f"{k}={_format_value(v)}" for k, v in named.items()) + "]"
        if self.design["layout"]:  # its tiers are known once the fabric is built
            try:
                Layout.coerce(self.design["layout"], "layout").check_tiers(fab, "layout")
            except FabricOptError as exc:
                raise DesignFileError(f"{self.where}: [layout]: {exc}") from None
        fab.name = name
        fab.design = copy.deepcopy(self.design)
        return fab


def folder_message(where: str, kind: str, reads: str) -> str:
    """What to say when a folder is given where one ``kind`` of file is read: how many
    design files it holds, and that ``compare`` is what takes a folder of them.

    >>> import tempfile
    >>> folder_message(tempfile.mkdtemp(), "design file", "load_design reads one")[-79:]
    'fo.compare(folder) and `fabricopt compare FOLDER` take a folder of design files'
    """
    try:
        count = sum(name.endswith(".toml") for name in os.listdir(where))
    except OSError:
        count = 0
    held = f" (it holds {count} .toml file{'s' if count != 1 else ''})" if count else ""
    return (f"{where}: is a folder{held}, not a {kind}: {reads} file, such as "
            f"{os.path.join(where, 'NAME.toml')}; fo.compare(folder) and "
            "`fabricopt compare FOLDER` take a folder of design files")


def _read_design(path: str | os.PathLike[str], overrides: dict[str, Any]) -> _DesignPlan:
    """Read and check a design file (every rule of the module docstring)."""
    where = os.fspath(check_path("load_design", "path", path))
    if os.path.isdir(where):
        raise DesignFileError(folder_message(where, "design file", "load_design reads one"))
    data = read_toml(where, DesignFileError, "design file")

    allowed = ", ".join(ALLOWED_KEYS)
    for key in data:
        if key not in ALLOWED_KEYS:
            raise DesignFileError(f"{where}: key {key!r} is not allowed"
                                  f"{did_you_mean(key, ALLOWED_KEYS)}; allowed keys: {allowed}")
    if "family" not in data:
        raise DesignFileError(f"{where}: key 'family' is missing; it names the generator, "
                              "one of: " + ", ".join(sorted(GENERATORS)))
    family = data["family"]
    if not isinstance(family, str) or family not in GENERATORS:
        raise DesignFileError(f"{where}: key 'family' must name a generator, one of: "
                              + ", ".join(sorted(GENERATORS)) + f"; got {family!r}"
                              + (did_you_mean(family, GENERATORS) if isinstance(family, str)
                                 else ""))
    for key in ("name", "description", "source", "departures"):
        if key in data and not isinstance(data[key], str):
            raise DesignFileError(f"{where}: key {key!r} must be a string, got {data[key]!r}")
    for key in ("params", "sweep", "layout", "catalog", "job", "serving"):
        if key in data and not isinstance(data[key], dict):
            raise DesignFileError(f"{where}: key {key!r} must be a table ([{key}]), got "
                                  f"{data[key]!r}")
    if data.get("layout"):
        try:  # the cost model's own check, reported against this file
            Layout.coerce(data["layout"], "layout")
        except (ValueError, TypeError) as exc:
            raise DesignFileError(f"{where}: [layout]: {exc}") from None

    if "policy" in data:
        if not isinstance(data["policy"], str | dict):
            raise DesignFileError(f"{where}: key 'policy' must be a preset name or a table "
                                  f"([policy]), got {data['policy']!r}")
        try:  # the cost model's own check, reported against this file
            Policy.coerce(data["policy"], "policy")
        except (ValueError, TypeError) as exc:
            raise DesignFileError(f"{where}: policy: {exc}") from None

    generator = GENERATORS[family]
    named, open_ended = keyword_parameters(generator)
    takes = ", ".join(named) or "none"

    def check_names(table: str, keys: Any) -> None:
        for key in keys:
            if key not in named and not open_ended:
                raise DesignFileError(f"{where}: {table} key {key!r} is not a parameter of "
                                      f"{family}{did_you_mean(key, named)}; allowed: {takes}")

    params = dict(data.get("params", {}))
    sweep = dict(data.get("sweep", {}))
    file_sweep_keys = list(sweep)
    check_names("[params]", params)
    check_names("[sweep]", sweep)
    check_names("override", overrides)
    for key, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise DesignFileError(f"{where}: [sweep] key {key!r} must be a non-empty list of "
                                  f"values, got {values!r}")
        if key in params:
            raise DesignFileError(f"{where}: key {key!r} is in both [params] and [sweep]; "
                                  "give it in one of them")
    params.update(overrides)
    for key in overrides:
        sweep.pop(key, None)
    missing = [n for n, p in named.items()
               if p.default is inspect.Parameter.empty and n not in params and n not in sweep]
    if missing:
        raise DesignFileError(f"{where}: [params] is missing required parameter(s) of {family}: "
                              + ", ".join(missing))

    design = {"file": where, "family": family, "description": data.get("description", ""),
              "source": data.get("source", ""), "departures": data.get("departures", ""),
              "layout": data.get("layout", {}), "catalog": data.get("catalog", {}),
              "policy": data.get("policy"), "job": data.get("job", {}),
              "serving": data.get("serving", {})}
    base_name = data.get("name")

    sweep_keys = None if "sweep" not in data else list(sweep)
    return _DesignPlan(where, family, params, dict(overrides), sweep, sweep_keys,
                       file_sweep_keys, base_name, design)
