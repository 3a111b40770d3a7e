"""Argument checks shared by every public function.

Messages follow one pattern: ``"func(): name must be RULE, got VALUE"`` so a user sees which call,
which argument, what is allowed and what they passed.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .errors import InvalidParameterError


def fail(func: str, name: str, rule: str, value: Any, *, word: Any = None,
         choices: Iterable[Any] = (), hint: str = "") -> InvalidParameterError:
    """Build the standard error for argument ``name`` of ``func``; with ``word`` (a
    misspelt name) and ``choices``, the closest of them is suggested; ``hint`` (such a
    suggestion made otherwise, e.g. by :func:`near_file`) is added as it is."""
    near = did_you_mean(word, [c for c in choices if isinstance(c, str)]) if (
        isinstance(word, str)) else hint
    return InvalidParameterError(f"{func}(): {name} must be {rule}, got {value!r}{near}")


def dataclass_from_mapping(func: str, name: str, cls: type, value: Mapping[str, Any],
                           expected: str) -> Any:
    """``cls(**value)``, or the standard error naming the first field ``cls`` lacks."""
    unknown = sorted(set(value) - set(cls.__dataclass_fields__))  # type: ignore[attr-defined]
    if unknown:
        raise fail(func, name, f"{expected} (unknown field {unknown[0]!r})", dict(value))
    return cls(**value)


def check_int(func: str, name: str, value: Any, minimum: int | None = None,
              maximum: int | None = None, even: bool = False) -> int:
    """Return ``value`` as an int, or raise if it is not a whole number in range."""
    rule = "an integer"
    if even:
        rule = "an even integer"
    if minimum is not None:
        rule += f" >= {minimum}"
    if maximum is not None:
        rule += f" <= {maximum}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise fail(func, name, rule, value)
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise fail(func, name, rule, value)
    if even and value % 2:
        raise fail(func, name, rule, value)
    return value


#: Most Gb/s one physical link may carry per direction: 1 Pb/s. The fastest ports shipped
#: carry 1.6 Tb/s (1.6 Tb Ethernet) and an NVLink 5 link 400 Gb/s; a petabit per second is
#: what laboratory records have pushed through one whole multi-core fibre, over 600 times the
#: fastest port. A rate in bit/s is at least a thousand times above it (a 1 Gb/s link given
#: as 1e9), so a capacity above it is refused as a unit mistake (a rate in Mb/s, 400,000 for
#: 400 Gb/s, stays below it and is not caught). Bundles may exceed it: the bound is on the
#: capacity over the bundle's ``links``.
MAX_LINK_GBPS = 1e6
#: Units :func:`~fabricopt.from_networkx` converts capacities from (their size in Gb/s):
#: bits or bytes (``B``, 8 bits) per second, decimal prefixes; ``bps`` spellings are bits.
CAPACITY_UNITS = {"bit/s": 1e-9, "kb/s": 1e-6, "Mb/s": 1e-3, "Gb/s": 1.0, "Tb/s": 1e3,
                  "MB/s": 8e-3, "GB/s": 8.0, "TB/s": 8e3,
                  "bps": 1e-9, "kbps": 1e-6, "Mbps": 1e-3, "Gbps": 1.0, "Tbps": 1e3}


def check_capacity_unit(func: str, value: Any) -> float:
    """The size in Gb/s of the unit ``value`` names (a key of :data:`CAPACITY_UNITS`), else
    the error naming the units; case matters (``Gb/s`` is bits, ``GB/s`` bytes), and a
    spelling that differs only in case is pointed at the bits.

    >>> check_capacity_unit("from_networkx", "bit/s")
    1e-09
    >>> check_capacity_unit("from_networkx", "gb/s")
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: from_networkx(): capacity_unit must be one of \
'bit/s', 'kb/s', 'Mb/s', 'Gb/s', 'Tb/s', 'MB/s', 'GB/s', 'TB/s' (or bps, kbps, Mbps, Gbps, \
Tbps), got 'gb/s' (did you mean 'Gb/s'?)
    """
    if isinstance(value, str) and value in CAPACITY_UNITS:
        return CAPACITY_UNITS[value]
    names = [u for u in CAPACITY_UNITS if "/" in u]
    same = [u for u in CAPACITY_UNITS if isinstance(value, str) and u.lower() == value.lower()]
    near = f" (did you mean {same[0]!r}?)" if same else (
        did_you_mean(value, names) if isinstance(value, str) else "")
    raise InvalidParameterError(
        f"{func}(): capacity_unit must be one of {', '.join(map(repr, names))} (or "
        f"{', '.join(u for u in CAPACITY_UNITS if '/' not in u)}), got {value!r}{near}")


def exact_text(x: float) -> str:
    """``x`` as ``:g`` writes it when that is exact, else all its digits (so a number just
    above a bound never reads as the bound).

    >>> exact_text(4e11), exact_text(1.000001e6)
    ('4e+11', '1000001.0')
    """
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


def too_fast(where: str, gbps: float, what: str) -> str:
    """The end of the message for a link rate above :data:`MAX_LINK_GBPS`: what is wrong
    and what the number would be if it was in bit/s.

    >>> too_fast("ring(4)", 4e11, "link_gbps=4e+11")
    'ring(4): link_gbps=4e+11 is above 1e+06 Gb/s (1 Pb/s) per link, faster than any link; \
rates are in Gb/s per direction (4e+11 bit/s would be 400 Gb/s)'
    """
    return (f"{where}: {what} is above {MAX_LINK_GBPS:g} Gb/s (1 Pb/s) per link, faster than "
            f"any link; rates are in Gb/s per direction ({gbps:g} bit/s would be "
            f"{gbps / 1e9:g} Gb/s)")


def unit_mistake(func: str, gbps: float, before: str, after: str = "") -> str:
    """:func:`too_fast` for an argument of ``func`` that takes a unit: ``before`` and
    ``after`` the rate name it, and the message ends on how to give the unit.

    >>> unit_mistake("from_networkx", 4e11, "default_capacity=")[-77:]
    "Gb/s); give capacity_unit= (e.g. 'bit/s') when capacities are in another unit"
    """
    return (too_fast(f"{func}()", gbps, f"{before}{exact_text(gbps)}{after}")
            + "; give capacity_unit= (e.g. 'bit/s') when capacities are in another unit")


def fastest_links(edges: Iterable[tuple[Any, Any, Mapping[str, Any]]]
                  ) -> list[tuple[Any, Any, float]]:
    """The arcs ``(u, v, data)`` whose physical links carry more than :data:`MAX_LINK_GBPS`
    (``capacity`` over ``links``, 1 when that is not a whole number >= 1), with that rate.

    >>> fastest_links([("a", "b", {"capacity": 1.6e6, "links": 1000}),
    ...                ("b", "c", {"capacity": 4e11})])
    [('b', 'c', 400000000000.0)]
    """
    out = []
    for u, v, d in edges:
        n = d.get("links", 1)
        whole = isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 1
        per_link = d["capacity"] / (n if whole else 1)
        if per_link > MAX_LINK_GBPS:
            out.append((u, v, per_link))
    return out


def check_capacity_attribute(func: str, G: Any, capacity: str) -> None:
    """Refuse an attribute name no edge has (a typo would give every edge
    ``default_capacity``); warn when only some edges lack it. The default name may be absent
    everywhere: a plain graph takes ``default_capacity`` on purpose."""
    keys: set[Any] = set()
    lacking = 0
    for _, _, d in G.edges(data=True):
        keys.update(d)
        lacking += capacity not in d
    edges = G.number_of_edges()
    if lacking == edges and edges and capacity != "capacity":
        names = sorted(map(str, keys))
        raise InvalidParameterError(
            f"{func}(): capacity must name an edge attribute of G, got {capacity!r}, which no "
            f"edge has{did_you_mean(capacity, names)}; edge attributes: "
            f"{', '.join(names) or 'none'} (leave capacity out to give every edge "
            "default_capacity)")
    if 0 < lacking < edges:
        warnings.warn(f"{func}(): {lacking} of {edges} edges lack the attribute {capacity!r} "
                      "and get default_capacity", stacklevel=3)


#: Bytes a generator's fabric takes at the peak of its build, per node and per arc (two per
#: link): networkx's attribute and adjacency dictionaries and the builder's own copies while
#: it works; and per arc, the arrays a solve reads from the graph. Measured as the peak
#: resident memory of the build over the process before it: a 65,536-GPU fat tree (70,656
#: nodes, 393,216 arcs) 257 MB, a 300,000-node ring 628 MB (the two solved for a node and an
#: arc figure: about 1,230 and 430 bytes); its symmetric all-to-all 200 to 245 bytes per arc
#: over the built graph (fat trees, a 4,096-GPU SuperPOD). Each is rounded down, so a
#: refusal is never the estimate's fault.
BUILD_BYTES_PER_NODE = 1_000
BUILD_BYTES_PER_ARC = 400
SOLVE_BYTES_PER_ARC = 200

#: Largest fabric a generator builds when the memory at hand cannot be read (no psutil and
#: no POSIX page counts): what a 24 GB machine holds with room to solve.
MAX_NODES = 2_000_000
MAX_LINKS = 4_000_000


def build_bytes(nodes: int, links: int) -> int:
    """Peak bytes to build a fabric of ``nodes`` nodes and ``links`` links (two arcs each)
    and read it for a solve (:data:`BUILD_BYTES_PER_NODE`, :data:`BUILD_BYTES_PER_ARC`,
    :data:`SOLVE_BYTES_PER_ARC`).

    >>> build_bytes(544_768, 1_572_864) / 1e9    # fat_tree(128): 524,288 GPUs
    2.432204...
    """
    return nodes * BUILD_BYTES_PER_NODE + 2 * links * (BUILD_BYTES_PER_ARC
                                                       + SOLVE_BYTES_PER_ARC)


def memory_at_hand() -> tuple[int, str] | None:
    """Bytes this process may still allocate and what says so: the smaller of the physical
    memory available (``psutil.virtual_memory().available`` with psutil, else the free pages)
    and, under an address-space limit (``RLIMIT_AS``, as ``ulimit -v`` sets), that limit less
    what the process maps; None when neither can be read.

    >>> at_hand = memory_at_hand()
    >>> at_hand is None or at_hand[0] >= 0
    True
    """
    import os
    import resource

    figures: list[tuple[int, str]] = []
    mapped: int | None = None
    try:
        import psutil  # optional

        figures.append((int(psutil.virtual_memory().available), "physical memory available"))
        mapped = int(psutil.Process().memory_info().vms)
    except ImportError:
        try:
            figures.append((os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"),
                            "physical memory free"))
            with open("/proc/self/statm") as f:
                mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError, IndexError):  # a system that does not say
            pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and mapped is not None:
        figures.append((max(0, soft - mapped), f"the address-space limit of "
                        f"{soft / 1e9:.3g} GB less the {mapped / 1e9:.3g} GB this process maps"))
    return min(figures) if figures else None


def check_size(func: str, nodes: int, links: int) -> None:
    """Raise before building when a fabric of ``nodes`` nodes and ``links`` links (bundles
    count once) would not fit, with a solve, in the memory at hand (:func:`build_bytes`
    against :func:`memory_at_hand`); where that memory cannot be read, when it would hold
    more than :data:`MAX_NODES` nodes or :data:`MAX_LINKS` links.

    >>> check_size("ring", 8, 8)
    >>> check_size("torus", 10**10, 2 * 10**10)
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: torus(): the fabric would have 10,000,000,000 \
nodes and 20,000,000,000 links, about 3.4e+04 GB to build and solve...
    """
    need = build_bytes(nodes, links)
    at_hand = memory_at_hand()
    if at_hand is not None:
        if need <= at_hand[0]:
            return
        limit = f"the limit is the memory at hand, {at_hand[0] / 1e9:.3g} GB ({at_hand[1]})"
    elif nodes <= MAX_NODES and links <= MAX_LINKS:
        return
    else:
        limit = (f"the memory at hand cannot be read, so the limit is {MAX_NODES:,} nodes "
                 f"and {MAX_LINKS:,} links")
    raise InvalidParameterError(
        f"{func}(): the fabric would have {nodes:,} nodes and {links:,} links, about "
        f"{need / 1e9:.3g} GB to build and solve (networkx keeps each node and arc as "
        f"dictionaries); {limit}")


#: Most flow solves one call may ask for (failure trials x fractions): each is an LP, and
#: 100,000 of the smallest take hours. More is a runaway input, refused before the first.
MAX_SOLVES = 100_000


#: Most ports a switch may have. Switch ASICs have at most a few hundred; the sizing loops of
#: the generators are linear in the radix, so an absurd one would run for hours.
MAX_RADIX = 65_536


def check_radix(func: str, name: str, value: Any) -> int:
    """Return ``value`` as a switch radix: an integer from 2 to :data:`MAX_RADIX`.

    >>> check_radix("rail_optimized", "leaf_radix", 64)
    64
    """
    value = check_int(func, name, value, minimum=2)
    if value > MAX_RADIX:
        raise fail(func, name, f"at most {MAX_RADIX:,} ports (a switch radix)", value)
    return value


def check_positive(func: str, name: str, value: Any, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number > 0 (or >= 0).

    A rate in Gb/s (an argument whose name ends in ``gbps``) may be text with a unit, as the
    command line and design files write it (:func:`parse_gbps`).

    >>> check_positive("fat_tree", "link_gbps", "400G"), check_positive("f", "x", 2)
    (400.0, 2.0)
    """
    if isinstance(value, str) and name.endswith("gbps"):
        return parse_gbps(func, name, value)
    rule = "a finite number >= 0" if allow_zero else "a finite number > 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise fail(func, name, rule, value)
    value = float(value)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise fail(func, name, rule, value)
    return value


def check_message_bytes(func: str, name: str, value: Any) -> float:
    """Return ``value`` as a size in bytes: a finite number >= 1 (below one byte the times of
    a collective underflow to 0 s and its bandwidths divide by them), or text with a unit as
    the command line takes it (:func:`parse_bytes`).

    >>> check_message_bytes("collective_bounds", "message_bytes", 2**20)
    1048576.0
    >>> check_message_bytes("collective_bounds", "message_bytes", "1MiB")
    1048576.0
    """
    size = (parse_bytes(func, name, value) if isinstance(value, str) else
            check_positive(func, name, value))
    if size < 1:
        raise fail(func, name, "a size of at least 1 byte", value)
    return size


#: Range of a per-pair demand a traffic constructor takes, in Gb/s: one bit per second to one
#: exabit per second. Beyond it the solvers' sums of demands overflow, or their reciprocals do.
DEMAND_GBPS_RANGE = (1e-9, 1e9)


def check_demand_gbps(func: str, name: str, value: Any) -> float:
    """Return ``value`` as a per-pair demand in Gb/s within :data:`DEMAND_GBPS_RANGE`.

    >>> check_demand_gbps("all_to_all", "gbps", 400)
    400.0
    """
    gbps = check_positive(func, name, value)
    low, high = DEMAND_GBPS_RANGE
    if not low <= gbps <= high:
        raise fail(func, name, f"a demand from {low:g} to {high:g} Gb/s", value)
    return gbps


def check_node_names(func: str, name: str, value: Any,
                     error: type[Exception] = InvalidParameterError) -> tuple[Any, ...]:
    """``value`` as a tuple of node names: an iterable (not a string or a mapping) of hashable
    items, else ``error`` naming ``func`` and ``name``.

    >>> check_node_names("restrict", "endpoints", ["n0", "n1"])
    ('n0', 'n1')
    """
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise error(f"{func}(): {name} must be an iterable of node names, got {value!r}")
    names = tuple(value)
    try:
        set(names)  # hashes every name at C speed (an ABC check per name took seconds at 500K)
    except TypeError:
        for item in names:
            try:
                hash(item)
            except TypeError:
                raise error(f"{func}(): {name} must be node names (hashable), got {item!r}"
                            ) from None
        raise
    return names


def check_bool(func: str, name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (numpy bools too), else raise."""
    if not isinstance(value, bool | np.bool_):
        raise fail(func, name, "True or False", value)
    return bool(value)


def check_label(func: str, name: str, value: Any, optional: bool = True) -> Any:
    """Return ``value`` if it is a non-empty string (or None when ``optional``), else raise.

    Labels are the names a caller gives: a fabric's name, a link technology, a switch model.

    >>> check_label("clos", "tech", "ndr"), check_label("clos", "tech", None)
    ('ndr', None)
    """
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        rule = "None or a non-empty string" if optional else "a non-empty string"
        raise fail(func, name, rule, value)
    return value


def check_choice(func: str, name: str, value: Any, choices: Sequence[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``, else raise naming them (and the closest
    when a word was misspelt).

    >>> check_choice("f", "x", "clos", ("clos", "ring"))
    'clos'
    >>> check_choice("f", "x", "closs", ("clos", "ring"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    fabricopt.errors.InvalidParameterError: f(): x must be one of ... (did you mean 'clos'?)
    """
    try:
        known = value in choices
    except TypeError:  # an unhashable value against a set or mapping of choices
        known = False
    if not known:
        raise fail(func, name, "one of " + ", ".join(repr(c) for c in choices), value,
                   word=value, choices=choices)
    return value


def check_int_sequence(func: str, name: str, value: Any, minimum: int = 1,
                       length: int | None = None) -> tuple[int, ...]:
    """Return ``value`` as a tuple of ints >= ``minimum`` (optionally of a given length)."""
    rule = f"a sequence of integers >= {minimum}"
    if length is not None:
        rule += f" of length {length}"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise fail(func, name, rule, value)
    items = list(value)
    if not items or (length is not None and len(items) != length):
        raise fail(func, name, rule, value)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, numbers.Integral) or item < minimum:
            raise fail(func, name, rule, value)
    return tuple(int(i) for i in items)


def as_rng(seed: Any, func: str | None = None) -> np.random.Generator:
    """Normalise ``seed`` (None, int or numpy Generator) into a numpy Generator; an error
    names ``func``, the public function that was called, when given.

    >>> bool(as_rng(1).integers(100) == as_rng(1).integers(100))
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)
                        and int(seed) >= 0):
        return np.random.default_rng(None if seed is None else int(seed))
    raise fail(func, "seed", "None, an integer >= 0 or a numpy.random.Generator", seed) \
        if func else InvalidParameterError(
            f"seed must be None, an integer >= 0 or a numpy.random.Generator, got {seed!r}")


def check_path(func: str, name: str, value: Any) -> Any:
    """Return ``value`` if it names a file (a non-empty str or an os.PathLike), else raise.

    Integers are refused: ``open(1)`` would write to (and then close) standard output.

    >>> check_path("read_json", "path", "ring.json")
    'ring.json'
    """
    import os

    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        raise fail(func, name, "a file path (a non-empty str or os.PathLike)", value)
    return value


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``choices``, or ``""`` when none is close.

    >>> did_you_mean("acelerators", ["accelerators", "switches"])
    " (did you mean 'accelerators'?)"
    >>> did_you_mean("zzz", ["accelerators"])
    ''

    A name the word heads is meant before a name one letter away; among names as close,
    the one that begins as the word does (h200: h100_sxm, not b200):

    >>> did_you_mean("h200", ["h200_sxm", "b200"]), did_you_mean("h200", ["h100_sxm", "b200"])
    (" (did you mean 'h200_sxm'?)", " (did you mean 'h100_sxm'?)")
    >>> did_you_mean("a100", ["a100_sxm_40gb", "a100_sxm_80gb", "b200"])
    " (did you mean 'a100_sxm_40gb' or 'a100_sxm_80gb'?)"
    """
    import difflib

    names = [str(c) for c in dict.fromkeys(str(c) for c in choices)]
    word = str(word)
    # A short form of a name (h200 of h200_sxm) is not a typo of another name (b200), unless
    # the word is one letter from that name (microbatch: micro_batch, not microbatch_group).
    started = [c for c in names if _starts_name(c, word)]
    typo = difflib.get_close_matches(word, names, n=1, cutoff=0.85)
    if typo:
        return f" (did you mean {typo[0]!r}?)"
    if started:
        return " (did you mean " + " or ".join(repr(c) for c in started[:3]) + "?)"

    def score(name: str) -> tuple[float, int]:
        head = re.split(r"[_\-. ]", name, maxsplit=1)[0]
        ratio = max(difflib.SequenceMatcher(None, word, n).ratio() for n in {name, head})
        same = len(os.path.commonprefix([word.lower(), name.lower()]))
        return round(ratio, 6), same

    scored = [(score(c), c) for c in names]
    best = max((s for s in scored if s[0][0] >= 0.6), default=None, key=lambda s: s[0])
    return f" (did you mean {best[1]!r}?)" if best else ""


def _starts_name(name: str, word: str) -> bool:
    """``word`` is ``name``'s head up to a separator: ``h200`` of ``h200_sxm``, any case."""
    name, word = name.lower(), word.lower()
    return bool(word) and name != word and name.startswith(word) and name[len(word)] in "_-. "


def short_name(word: Any, choices: Iterable[str]) -> Any:
    """The one of ``choices`` that ``word`` names: itself, the same name in another case,
    or the only name it is the head of (``h200`` for ``h200_sxm``); else ``word`` unchanged
    (for the caller's check to refuse, naming the choices: ``a100`` heads two).

    >>> keys = ("a100_sxm_40gb", "a100_sxm_80gb", "h200_sxm", "b200")
    >>> short_name("h200", keys), short_name("B200", keys), short_name("a100", keys)
    ('h200_sxm', 'b200', 'a100')
    """
    if not isinstance(word, str):
        return word
    names = [str(c) for c in choices]
    if word in names:
        return word
    same = [c for c in names if c.lower() == word.lower()]
    if len(same) == 1:
        return same[0]
    started = [c for c in names if _starts_name(c, word)]
    return started[0] if len(started) == 1 else word


def near_file(path: Any) -> str:
    """``" (did you mean 'folder/name'?)"`` for the entry of ``path``'s folder whose name is
    closest to ``path``'s (a misspelt file name), or ``""`` when none is close or the folder
    cannot be read.

    >>> import os, fabricopt
    >>> near_file(os.path.join(os.path.dirname(fabricopt.__file__), "_chekcs.py")).endswith(
    ...     "_checks.py'?)")
    True
    >>> near_file("no/such/folder/file.toml")
    ''
    """
    import difflib
    import os

    folder, name = os.path.split(os.fspath(path))
    try:
        names = sorted(os.listdir(folder or "."))
    except OSError:
        return ""
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {os.path.join(folder, close[0])!r}?)" if close else ""


_BYTE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


_SECOND_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "min": 60.0}


def parse_seconds(func: str, name: str, value: Any) -> float:
    """A duration in seconds from a number or text with a unit: ``"2s"``, ``"500ms"``,
    ``"0.05"``; it must be > 0.

    >>> [parse_seconds("f", "t", text) for text in ("2s", "500ms", "0.05", 1, "250 us")]
    [2.0, 0.5, 0.05, 1.0, 0.00025]
    """
    return _with_unit(func, name, value, _SECOND_UNITS, "a duration > 0: a number of seconds "
                      "with an optional unit (s, ms, us, min), e.g. 2s or 500ms")


def parse_bytes(func: str, name: str, value: Any) -> float:
    """A size in bytes from a number or text with a unit: ``"1GiB"``, ``"512MB"``, ``"1e9"``.

    Decimal units (kB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB, GiB, TiB) powers
    of 1024, as in IEC 80000-13; case does not matter. The size must be > 0.

    A unit ending in a small ``b`` (``Gb``, ``Gib``, ``kb``) is bits, not bytes: refused, so
    a size is not read eight times too large.

    >>> [parse_bytes("f", "size", text) for text in ("1GiB", "512MB", "1e9", 4096)]
    [1073741824.0, 512000000.0, 1000000000.0, 4096.0]
    """
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9.eE+-]+\s*[A-Za-z]*b\s*", value):
        raise fail(func, name, "a size in bytes: a capital B (GB, GiB, kB); a small b is "
                   "bits", value)
    return _with_unit(func, name, value, _BYTE_UNITS, "a size in bytes: a number with an "
                      "optional unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 1GiB or 512MB")


#: Rates a ``*_gbps`` argument takes as text: a prefix (k, M, G, T; any case but a small
#: m, which reads as milli) alone or with bits or bytes per second.
_RATE_PREFIXES = {"": -9, "K": -6, "M": -3, "G": 0, "T": 3, "P": 6}  # powers of ten of Gb/s
_RATE_BITS = ("", "b", "bit", "bits", "b/s", "bps", "bit/s", "bits/s")
_RATE_BYTES = ("B/s", "Bps", "byte/s", "bytes/s")
_RATE_ALLOWED = ("a rate in Gb/s: a number, or one with a unit: a prefix alone (400G, 1.6T, "
                 "800M) or with bits or bytes per second (400Gb/s, 400Gbps, 50GB/s)")


def parse_gbps(func: str, name: str, value: Any) -> float:
    """A rate in Gb/s from a number or text with a unit: ``"400G"``, ``"400Gb/s"``,
    ``"400Gbps"``, ``"1.6T"``, ``"50GB/s"`` (bytes: eight times), ``"400"`` (Gb/s).

    A prefix alone, or with bits (``400Gb``), is a rate in bits per second, as link speeds
    are sold (400G). Refused as ambiguous: a small ``m`` (milli or mega), a binary prefix
    (``Gi``: link rates are decimal), and bytes without ``/s`` (``50GB``: bytes per second,
    or a small b meant?).

    >>> [parse_gbps("f", "link_gbps", t) for t in ("400G", "400Gb/s", "1.6 Tbps", "50GB/s")]
    [400.0, 400.0, 1600.0, 400.0]
    >>> parse_gbps("f", "link_gbps", "400GB")
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: f(): link_gbps must be a rate in Gb/s: ... \
got '400GB': bytes, not a rate; a rate is bits per second (400Gb/s) or bytes per second (400GB/s)
    """
    if not isinstance(value, str):
        return check_positive(func, name, value)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z/]*)\s*", value)
    if match is None:
        raise fail(func, name, _RATE_ALLOWED, value)
    number, unit = float(match.group(1)), match.group(2)
    prefix = unit[:1] if unit[:1].upper() in ("K", "M", "G", "T", "P") else ""
    rest = unit[len(prefix):]
    why = ""
    if prefix == "m":
        why = ": a small m is milli; write M for mega (800M) or G (0.8G)"
    elif rest[:1] == "i":
        why = ": link rates are decimal; write G, not Gi"
    elif rest in ("B", "byte", "bytes"):
        why = (f": bytes, not a rate; a rate is bits per second ({match.group(1)}{prefix}b/s) "
               f"or bytes per second ({match.group(1)}{prefix}B/s)")
    elif rest in _RATE_BITS or rest in _RATE_BYTES:
        power = _RATE_PREFIXES[prefix.upper()]  # divided, not times 1e-9: 1e12 bit/s is 1000
        gbps = (number * 10**power if power >= 0 else number / 10**-power) * (
            8 if rest in _RATE_BYTES else 1)
        if not unit:  # a plain number is in Gb/s, as the argument's name says
            gbps = number
        return check_positive(func, name, gbps)
    raise fail(func, name, _RATE_ALLOWED, value, hint=why)


def parse_count(func: str, name: str, value: Any) -> int:
    """A whole count (of tokens) from a number or text with a binary unit: ``"8192"``,
    ``"8Ki"`` (8 x 1,024), ``"1Mi"``. A decimal ``k`` or ``M`` is refused: a context of
    ``8k`` tokens is said of 8,192 as often as of 8,000, and the two give different steps.

    >>> parse_count("f", "seq_len", "8Ki"), parse_count("f", "seq_len", "4096")
    (8192, 4096)
    >>> parse_count("f", "seq_len", "8k")
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: f(): seq_len must be a whole number >= 1, ... \
got '8k': 8k may mean 8,000 or 8,192; write 8Ki or 8192 (or 8000)
    """
    allowed = ("a whole number >= 1, or one with a binary unit (8Ki = 8,192, "
               "1Mi = 1,048,576)")
    if not isinstance(value, str):
        return check_int(func, name, value, minimum=1)
    # digits only: no exponent (1e308 tokens is no count a step holds)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", value)
    unit = match.group(2) if match else ""
    scale = {"": 1, "ki": 2**10, "mi": 2**20}.get(unit.lower())
    if match is None or scale is None:
        hint = ""
        if match and unit.lower() in ("k", "m"):
            n = float(match.group(1))
            dec, binary = n * (1e3 if unit.lower() == "k" else 1e6), n * (
                2**10 if unit.lower() == "k" else 2**20)
            hint = (f": {value.strip()} may mean {dec:,.0f} or {binary:,.0f}; write "
                    f"{match.group(1)}{unit.upper()[0]}i or {binary:.0f} (or {dec:.0f})")
        raise fail(func, name, allowed, value, hint=hint)
    count = float(match.group(1)) * scale
    if not count.is_integer() or count < 1:
        raise fail(func, name, allowed, value)
    return int(count)


def _with_unit(func: str, name: str, value: Any, units: dict[str, float], allowed: str
               ) -> float:
    """``value`` (a number, or text: a number and one of ``units``, case ignored) as a
    number > 0 in the base unit; ``allowed`` says what is in the error."""
    import re

    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z\u00b5]*)\s*",
                             value)
        unit = match.group(2).lower() if match else None
        if match is None or unit not in units:
            raise fail(func, name, allowed, value)
        value = float(match.group(1)) * units[unit]
    return check_positive(func, name, value)
