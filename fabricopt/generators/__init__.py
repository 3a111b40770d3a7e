"""Pure functions that return a :class:`~fabricopt.Fabric`.

``GENERATORS`` maps each generator's name to the function, for the command line and design
files. The functions exported here record their call on the fabric they return
(:attr:`Fabric.recipe`, see :mod:`fabricopt.generators.recipe`), so files can replay it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Any

from .._checks import did_you_mean
from ..errors import InvalidParameterError
from ..fabric import Fabric
from .classic import complete, dragonfly, hypercube, jellyfish, ring, torus
from .clos import clos, fat_tree, leaf_spine
from .cluster import cluster, superpod
from .rail import rail_optimized
from .recipe import recording
from .scaleup import (
    dgx_a100,
    dgx_b200,
    dgx_h100,
    dgx_h200,
    gb200_nvl72,
    hgx_h800,
    nvl576,
    nvlink_switch_system,
    nvswitch_domain,
    ualink_pod,
)

GENERATORS: dict[str, Callable[..., Fabric]] = {
    "ring": ring,
    "torus": torus,
    "hypercube": hypercube,
    "complete": complete,
    "dragonfly": dragonfly,
    "jellyfish": jellyfish,
    "fat_tree": fat_tree,
    "clos": clos,
    "leaf_spine": leaf_spine,
    "rail_optimized": rail_optimized,
    "nvswitch_domain": nvswitch_domain,
    "dgx_a100": dgx_a100,
    "dgx_h100": dgx_h100,
    "hgx_h800": hgx_h800,
    "dgx_h200": dgx_h200,
    "dgx_b200": dgx_b200,
    "gb200_nvl72": gb200_nvl72,
    "nvlink_switch_system": nvlink_switch_system,
    "nvl576": nvl576,
    "ualink_pod": ualink_pod,
    "cluster": cluster,
    "superpod": superpod,
}

GENERATORS = {name: recording(name, func) for name, func in GENERATORS.items()}
globals().update(GENERATORS)  # the exported names are the recording ones


def keyword_parameters(func: Callable[..., Any]) -> tuple[dict[str, inspect.Parameter], bool]:
    """A generator's keyword-usable parameters, and whether it takes ``**kwargs``."""
    sig = inspect.signature(func)
    named = {n: p for n, p in sig.parameters.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    open_ended = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    return named, open_ended


def check_call(family: Any, arguments: Mapping[str, Any], *, caller: str = "make",
               families: Collection[str] | None = None) -> Callable[..., Fabric]:
    """The generator ``family`` names, once ``arguments`` are known to fit its signature.

    Raises :class:`~fabricopt.InvalidParameterError` naming the caller for an unknown family
    (with a suggestion), an argument the generator does not take (likewise) or a required
    one missing. ``families`` narrows the generators allowed.
    """
    allowed = sorted(GENERATORS if families is None else families)
    if not isinstance(family, str) or family not in allowed:
        raise InvalidParameterError(f"{caller}(): unknown generator {family!r}"
                                    f"{did_you_mean(str(family), allowed)}; generators: "
                                    + ", ".join(allowed))
    generator = GENERATORS[family]
    named, open_ended = keyword_parameters(generator)
    for key in arguments:
        if key not in named and not open_ended:
            raise InvalidParameterError(f"{caller}(): {key!r} is not a parameter of {family}"
                                        f"{did_you_mean(key, named)}; parameters: "
                                        + ", ".join(named))
    missing = [n for n, p in named.items()
               if p.default is inspect.Parameter.empty and n not in arguments]
    if missing:
        # A generator that passes extra keywords on (cluster's to its scale-up domain) takes
        # a misspelt key without a word: name it where it is close to a missing one.
        extra = [k for k in arguments if k not in named]
        hints = [f"; {k!r} is given: did you mean {m!r}?" for m in missing for k in extra
                 if did_you_mean(k, [m])]
        raise InvalidParameterError(f"{caller}(): missing required parameter(s) "
                                    + ", ".join(missing) + f" of {family}" + "".join(hints))
    return generator


def make(family: str, arguments: Mapping[str, Any] | None = None, *, caller: str = "make",
         families: Collection[str] | None = None) -> Fabric:
    """Build a fabric from a generator's name and keyword arguments: the one door through
    which design files, graph files' recipes, search candidates, a cluster's domain table and
    the command line call a generator.

    >>> make("ring", {"n": 4}).name
    'ring(4)'
    >>> make("rign", {"n": 4})
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: make(): unknown generator 'rign' (did you mean ...
    """
    arguments = dict(arguments or {})
    return check_call(family, arguments, caller=caller, families=families)(**arguments)

# The package's public generators (``fo.*``); ``make``, ``check_call`` and
# ``keyword_parameters`` are the registry's door, imported by name from here.
__all__ = ["GENERATORS", "clos", "cluster", "complete", "dgx_a100", "dgx_b200", "dgx_h100",
           "dgx_h200", "dragonfly", "fat_tree", "gb200_nvl72", "hgx_h800", "hypercube",
           "jellyfish", "leaf_spine", "nvl576", "nvlink_switch_system", "nvswitch_domain",
           "rail_optimized", "ring", "superpod", "torus", "ualink_pod"]
