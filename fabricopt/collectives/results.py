"""What a collective bound says: the collectives, nccl-tests' bus factor, the cut that binds,
one bound, and the result of :func:`~fabricopt.collective_bounds`."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from ..routing.schedules import RoutedCollective

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
GBPS_TO_BYTES = 1e9 / 8  # one Gb/s of capacity moves this many bytes per second


def bus_factor(collective: str, n_endpoints: int) -> float:
    """nccl-tests' busbw / algbw factor.

    >>> bus_factor("all_reduce", 8), bus_factor("all_gather", 8), bus_factor("broadcast", 8)
    (1.75, 0.875, 1.0)
    """
    n = n_endpoints
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective == "broadcast":
        return 1.0
    return (n - 1) / n


@dataclass(frozen=True)
class CutInfo:
    """A set of nodes that binds a bound: GPUs inside, capacity leaving (or entering), and
    how many of its crossing arcs lie in each tier."""

    endpoints_inside: int
    capacity_gbps: float
    direction: str
    tiers: dict[str, int]
    nodes: frozenset[Hashable] = field(repr=False, default=frozenset())

    def describe(self) -> str:
        tiers = ", ".join(f"{t}: {k}" for t, k in sorted(self.tiers.items()))
        return (f"{self.endpoints_inside:,} GPU(s) inside, {self.capacity_gbps:,.6g} Gb/s "
                f"{self.direction} ({tiers})")


@dataclass(frozen=True)
class Bound:
    """One time bound with its rates and the reason it holds."""

    name: str
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    kind: str          # "lower" (no algorithm is faster) or "achievable" (some algorithm is)
    why: str
    cut: CutInfo | None = None


@dataclass
class CollectiveBounds:
    """What :func:`collective_bounds` returns.

    ``lower_time_s`` is the largest lower bound (no algorithm on this fabric is faster);
    ``achievable_time_s`` the best schedule known to exist; ``algbw_GBps``/``busbw_GBps`` the
    best rates the fabric allows (from ``lower_time_s``). ``bounds`` lists every bound
    computed; ``expected`` (when asked for) is a labelled estimate, kept apart.

    ``routed`` (when ``routing=`` is given) is neither a bound nor an estimate: the ring
    schedule routed as deployed (:func:`~fabricopt.routed_collective`), what a ring gets with
    that routing's collisions; ``routed_busbw_GBps`` and ``routed_busbw_distribution`` read
    it. No routing lets the ring beat ``busbw_GBps``.

    ``unreachable`` is ``(a, b)`` when participant ``a`` cannot reach participant ``b`` (the
    fabric splits the group): no schedule exists, so ``lower_time_s`` is infinite,
    ``algbw_GBps`` and ``busbw_GBps`` are 0, ``achievable_time_s`` is None, ``binding`` is
    ``"disconnected"`` and ``binding_cut`` holds the nodes ``a`` reaches (nothing leaves
    them). ``disconnected`` says so; pass ``endpoints=`` a group that is connected.
    """

    collective: str
    n_endpoints: int
    message_bytes: float
    lower_time_s: float
    achievable_time_s: float | None
    algbw_GBps: float
    busbw_GBps: float
    binding: str
    binding_cut: CutInfo | None
    bounds: list[Bound]
    in_network_reduction: bool
    latency_s: float = 0.0
    expected: dict[str, float] | None = None
    notes: list[str] = field(default_factory=list)
    routed: RoutedCollective | None = None
    unreachable: tuple[Hashable, Hashable] | None = None

    @property
    def disconnected(self) -> bool:
        """True when some participant cannot reach another (see ``unreachable``)."""
        return self.unreachable is not None

    @property
    def routed_busbw_GBps(self) -> float | None:
        """Busbw of the ring under ``routing`` (the median hashed trial), pure bandwidth (no
        latency term); None without ``routing``."""
        return None if self.routed is None else self.routed.busbw_GBps

    @property
    def routed_busbw_distribution(self) -> dict[str, float] | None:
        """The routed ring's busbw over the hashed trials (GB/s): ``min``, ``p5``,
        ``median``, ``p95``, ``max`` and ``mean``; one trial for a deterministic routing."""
        if self.routed is None:
            return None
        t = np.asarray(self.routed.busbw_GBps_trials, dtype=float)
        p5, median, p95 = np.percentile(t, [5, 50, 95])
        return {"min": float(t.min()), "p5": float(p5), "median": float(median),
                "p95": float(p95), "max": float(t.max()), "mean": float(t.mean())}

    @property
    def achievable_busbw_GBps(self) -> float | None:
        if self.achievable_time_s is None:
            return None
        return self.message_bytes / self.achievable_time_s / 1e9 * bus_factor(
            self.collective, self.n_endpoints)

    def __repr__(self) -> str:
        # One line for a REPL or a notebook cell; str() gives the full report.
        achievable = self.achievable_busbw_GBps
        return (f"<CollectiveBounds {self.collective}, {self.n_endpoints:,} GPUs, "
                f"{self.message_bytes:,.0f} bytes: busbw <= {self.busbw_GBps:,.4g} GB/s, "
                f"achievable {'unknown' if achievable is None else f'{achievable:,.4g}'}"
                f" GB/s, binding {self.binding}>")

    def __str__(self) -> str:
        # The size as the user wrote it: a whole number of one unit (1 GiB, 512 MB).
        size = self.message_bytes
        shown = next((f"{size / b:.0f} {u}" for u, b in (
            ("TiB", 2**40), ("TB", 1e12), ("GiB", 2**30), ("GB", 1e9), ("MiB", 2**20),
            ("MB", 1e6), ("KiB", 2**10), ("kB", 1e3)) if size % b == 0 and 1 <= size / b < 1024),
            f"{size:,.0f} bytes")
        lines = [f"{self.collective} of {shown} on {self.n_endpoints:,} GPUs"
                 + (" (in-network reduction)" if self.in_network_reduction else "")]
        if self.unreachable is not None:
            a, b = self.unreachable
            lines.append(f"  disconnected   {a!r} cannot reach {b!r}: no schedule exists, "
                         "busbw 0 GB/s")
            lines.append("  what to do     pass endpoints= a group that is connected, or "
                         "join the parts")
            return "\n".join(lines)
        lines.append(f"  best possible  {self.lower_time_s * 1e3:.6g} ms, algbw "
                     f"{self.algbw_GBps:.6g} GB/s, busbw {self.busbw_GBps:.6g} GB/s "
                     f"(binding: {self.binding})")
        if self.achievable_time_s is not None:
            lines.append(f"  achievable     {self.achievable_time_s * 1e3:.6g} ms, busbw "
                         f"{self.achievable_busbw_GBps:.6g} GB/s")
        if self.binding_cut is not None:
            lines.append(f"  binding cut    {self.binding_cut.describe()}")
        if self.expected:
            label = str(self.expected["label"]).removeprefix("expected ")
            lines.append(f"  expected       busbw {self.expected['busbw_GBps']:.6g} GB/s "
                         + (label if label.startswith("(") else f"({label})"))
        if self.routed is not None:
            r = self.routed
            line = (f"  routed ring    busbw {r.busbw_GBps:.6g} GB/s under {r.routing} "
                    f"({r.order} order; the ring as routed, not a bound)")
            if len(r.busbw_GBps_trials) > 1:
                d = self.routed_busbw_distribution
                line += (f"; over {len(r.busbw_GBps_trials)} trials p5 {d['p5']:.6g}, "  # type: ignore[index]
                         f"median {d['median']:.6g} GB/s")  # type: ignore[index]
            lines.append(line)
        return "\n".join(lines)
