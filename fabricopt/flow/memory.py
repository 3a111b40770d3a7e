"""Memory: what a large step would take, against what this process may still take.

A step whose arrays grow with the problem (the full LP, hashed routing's tables) estimates
its size first and refuses, with an error that names the size and the memory, before it
allocates anything: a raw ``MemoryError`` from deep inside scipy, or the kernel killing the
process, tells nobody what to change.

**What is available** is the smaller of two figures (:func:`available_memory`):

* the physical memory the system can still hand out (``psutil.virtual_memory().available``
  when psutil is installed, which counts reclaimable caches, else the free pages,
  ``os.sysconf("SC_AVPHYS_PAGES")`` times the page size);
* when the process runs under an address-space limit (``RLIMIT_AS``, as ``ulimit -v`` or a
  batch scheduler sets), that limit less the address space the process already maps.

**What the full LP takes.** :func:`~fabricopt.flow.formulation.flow_lp_size` counts the rows,
columns and nonzeros of :func:`~fabricopt.flow.build_flow_lp`'s LP from the endpoint collapse
alone, without building it; :class:`LPSize` prices each nonzero at
:data:`LP_BYTES_PER_NONZERO`.

>>> size = LPSize(rows=1_000, columns=2_000, nonzeros=10_000)
>>> size.bytes == 10_000 * LP_BYTES_PER_NONZERO
True
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from ..errors import InvalidParameterError

#: Bytes the full LP takes at its peak, per nonzero of its constraint matrix: the sparse
#: matrices as assembled (``scipy.sparse.kron`` builds each block in coordinate form before
#: compressing it, about 30 bytes a nonzero), then scipy's copy for HiGHS and HiGHS's own
#: (presolve, the interior point's factors). Measured as the peak resident memory over the
#: built model, solving with ``backend="highs"``: 315 to 410 bytes per nonzero on LPs of
#: 50,000 to 2.1 million nonzeros (fat-trees, a jellyfish, DGX H100 clusters of 8 to 32
#: nodes). The smallest of these is taken, so a refusal is never the estimate's fault.
LP_BYTES_PER_NONZERO = 300

#: Bytes the approximate method (:mod:`fabricopt.flow.approx`) takes per flow variable of
#: the LP it never assembles (a commodity on a core arc): its flows, the best of them, the
#: point in the LP's layout and the certificate's copy are each that long. Measured as the
#: peak resident memory of ``method="approx"`` (two rounds) over the process before it, on
#: DGX H100 clusters behind a 3-tier 2:1 Clos: 65, 80 and 73 bytes per variable at 64, 128
#: and 512 nodes (2.7, 10.9 and 186 million variables; the last peaked at 13.7 GB). The
#: smallest is rounded down.
APPROX_BYTES_PER_VARIABLE = 60


def gb(nbytes: float) -> str:
    """``nbytes`` in gigabytes (10**9), as a message prints them.

    >>> gb(172.3e9), gb(8.64e9), gb(2.5e8)
    ('172 GB', '8.6 GB', '0.25 GB')
    """
    gb = nbytes / 1e9
    return f"{gb:,.0f} GB" if gb >= 100 else f"{gb:.2g} GB"


@dataclass(frozen=True)
class Memory:
    """Bytes this process may still allocate, and where the figure comes from."""

    bytes: int
    source: str

    def __str__(self) -> str:
        return f"{gb(self.bytes)} ({self.source})"


def _mapped_bytes() -> int | None:
    """Address space this process maps now (its virtual size), or None when unknown."""
    try:
        import psutil  # optional
        return int(psutil.Process().memory_info().vms)
    except ImportError:
        pass
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _physical_available() -> tuple[int | None, str]:
    """Physical memory the system can still hand out, and what measured it."""
    try:
        import psutil  # optional
        return int(psutil.virtual_memory().available), "physical memory available"
    except ImportError:
        pass
    try:
        pages, size = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not a POSIX system that says
        return None, ""
    return int(pages) * int(size), "physical memory free"


def available_memory() -> Memory | None:
    """What this process may still allocate: the smaller of the physical memory available
    and, under an address-space limit (``RLIMIT_AS``), that limit less what the process
    already maps; None when neither can be read.

    >>> m = available_memory()
    >>> m is None or m.bytes >= 0
    True
    """
    figures: list[Memory] = []
    physical, how = _physical_available()
    if physical is not None:
        figures.append(Memory(physical, how))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        mapped = _mapped_bytes()
        if mapped is not None:
            figures.append(Memory(max(0, soft - mapped),
                                  f"the address-space limit of {gb(soft)} less the "
                                  f"{gb(mapped)} this process maps"))
    return min(figures, key=lambda m: m.bytes) if figures else None


@dataclass(frozen=True)
class LPSize:
    """Rows, columns and nonzeros of an LP, and the bytes it takes to build and solve."""

    rows: int
    columns: int
    nonzeros: int

    @property
    def bytes(self) -> int:
        """Peak bytes to assemble and solve it (:data:`LP_BYTES_PER_NONZERO`)."""
        return self.nonzeros * LP_BYTES_PER_NONZERO

    @property
    def approx_bytes(self) -> int:
        """Peak bytes of the approximate method on it (:data:`APPROX_BYTES_PER_VARIABLE`
        per flow variable: every column but theta)."""
        return max(self.columns - 1, 0) * APPROX_BYTES_PER_VARIABLE

    def __str__(self) -> str:
        return (f"{self.rows:,} rows, {self.columns:,} columns and {self.nonzeros:,} "
                f"nonzeros, about {gb(self.bytes)} to build and solve")


def shortfall(need: int) -> Memory | None:
    """The memory available when ``need`` bytes exceed it, else None (also when the memory
    cannot be read).

    >>> shortfall(1000) is None
    True
    """
    memory = available_memory()
    return None if memory is None or need <= memory.bytes else memory


def check_fits(func: str, what: str, need: int, size: str, instead: str) -> None:
    """Raise :class:`~fabricopt.InvalidParameterError` naming ``func`` when ``need`` bytes
    (``what``, of ``size``) exceed :func:`available_memory`; ``instead`` says what to do.
    Nothing is checked when the memory cannot be read.

    >>> check_fits("max_concurrent_flow", "method='lp'", 10**3, "a tiny LP", "-")
    """
    memory = shortfall(need)
    if memory is None:
        return
    raise InvalidParameterError(
        f"{func}(): {what} must fit in the memory available, {memory}; it needs {size}. "
        f"{instead}")


__all__ = ["APPROX_BYTES_PER_VARIABLE", "LP_BYTES_PER_NONZERO", "LPSize", "Memory",
           "available_memory", "check_fits", "gb", "shortfall"]
