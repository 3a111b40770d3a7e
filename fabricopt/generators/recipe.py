"""Recipes: the generator call that built a fabric, recorded so it can be replayed.

A generator of ``GENERATORS`` records ``fab.recipe = {"generator": name, "arguments": {...}}``
with the arguments the caller passed, in JSON-ready form. A fabric passed as an argument (the
scale-up domain of :func:`~fabricopt.cluster`) is recorded by its own recipe. A call that cannot
be replayed records no recipe: an argument that is neither JSON data nor a fabric with a recipe,
or ``seed=None`` (a different random build each time).

The file readers replay a recipe to re-check a symmetry claim: if the replayed graph is
identical to the one in the file, the generator's claim holds for it too.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import Any

from .._checks import did_you_mean
from .._gc import paused_gc
from ..errors import FabricOptError
from ..fabric import Fabric, register_replay

#: Key that marks a fabric-valued argument recorded by its recipe.
FABRIC_KEY = "fabric_recipe"


class _NotReplayable(Exception):
    """An argument has no JSON form (internal signal)."""


def _portable(value: Any) -> Any:
    if isinstance(value, Fabric):
        if not value.origin.replayable:
            raise _NotReplayable
        return {FABRIC_KEY: value.recipe}
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise _NotReplayable from None
    return json.loads(text)


def recipe_of(name: str, func: Callable[..., Fabric], args: tuple, kwargs: dict,
              ) -> dict[str, Any] | None:
    """The recipe of the call ``func(*args, **kwargs)`` named ``name``, or None."""
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except TypeError:
        return None
    seed = inspect.signature(func).parameters.get("seed")
    if seed is not None and bound.arguments.get("seed", seed.default) is None:
        return None  # a different random build each time
    arguments: dict[str, Any] = {}
    for key, value in bound.arguments.items():
        param = bound.signature.parameters[key]
        if param.kind is param.VAR_KEYWORD:
            items = value.items()
        elif param.kind is param.VAR_POSITIONAL:
            return None
        else:
            items = [(key, value)]
        for k, v in items:
            try:
                arguments[k] = _portable(v)
            except _NotReplayable:
                return None
    return {"generator": name, "arguments": arguments}


def recording(name: str, func: Callable[..., Fabric]) -> Callable[..., Fabric]:
    """``func`` that also records its call as the returned fabric's recipe, and names the
    keyword meant when one is misspelt (Python's own TypeError names only the wrong one).

    >>> import fabricopt as fo
    >>> try:
    ...     fo.superpod(scalable_unit=4)
    ... except TypeError as exc:
    ...     print(exc)
    superpod() got an unexpected keyword argument 'scalable_unit' (did you mean \
'scalable_units'?)
    """
    params = inspect.signature(func).parameters
    names = None if any(p.kind is p.VAR_KEYWORD for p in params.values()) else set(params)

    @functools.wraps(func)
    def generator(*args: Any, **kwargs: Any) -> Fabric:
        if names is not None and not names.issuperset(kwargs):
            wrong = next(k for k in kwargs if k not in names)
            raise TypeError(f"{name}() got an unexpected keyword argument {wrong!r}"
                            f"{did_you_mean(wrong, sorted(names))}")
        with paused_gc():  # a large fabric is millions of small objects and no cycles
            fab = func(*args, **kwargs)
        fab.recipe = recipe_of(name, func, args, kwargs)
        return fab

    return generator


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {FABRIC_KEY}:
        return replay(value[FABRIC_KEY])
    return value


def replay(recipe: Any) -> Fabric:
    """Build the fabric a recipe describes; raises :class:`FabricOptError` (or whatever the
    generator raises) when it cannot."""
    # Imported here, a cycle: the registry (the package) wraps every generator with this
    # module's ``recording``, so this module loads first.
    from . import GENERATORS, make

    if (not isinstance(recipe, dict) or recipe.get("generator") not in GENERATORS
            or not isinstance(recipe.get("arguments"), dict)):
        raise FabricOptError(f"not a recipe of a known generator: {recipe!r}")
    arguments = {k: _decode(v) for k, v in recipe["arguments"].items()}
    return make(recipe["generator"], arguments, caller="replay")


def try_replay(recipe: Any) -> Fabric | None:
    """:func:`replay`, or None when the recipe cannot be replayed (unknown generator, arguments
    this version rejects)."""
    if recipe is None:
        return None
    try:
        return replay(recipe)
    except (FabricOptError, TypeError, ValueError, KeyError):
        return None


# Pricing (a floor below this one) builds a failed fabric's intact twin through this.
register_replay(try_replay)
