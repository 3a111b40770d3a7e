r"""All-reduce as NCCL runs it across scale-up domains: one expected figure per algorithm NCCL
has (ring, tree, NVLS, NVLS-tree, CollNet Direct), chosen by time as NCCL's tuner does.

The participants fall into ``k`` scale-up domains of ``g`` GPUs (reducing NVSwitch domains, or
islands joined by NVLink / UALink); each GPU has ``U`` of scale-up bandwidth and ``b`` of
network (NIC) bandwidth. The algorithms, as NCCL's tuning model describes them (facts read from
NCCL's ``src/graph/tuning.cc``; ``docs/collectives.md#nccl-algorithms-across-domains``):

* **Ring**: every channel's ring crosses every domain boundary, so a ring is no faster than the
  per-GPU scale-up link nor than the network bandwidth its channels reach per domain: busbw
  ``min(U e_up, B_net e_net)``. It gets none of the ``k/(k-1)`` relief of the volume bound.
* **Tree** (``k > 1``): a chain in the domain and a double binary tree across domains; NCCL
  rates it at 0.92 of the ring's network bandwidth.
* **NVLS** (one domain, or several with reducing network switches, InfiniBand SHARP): NVLink
  SHARP moves ``S + S/g`` per GPU at the calibrated ``nvls`` efficiency; across domains the
  network carries the domain's shards at ``B_net e_net``.
* **NVLS-tree** (several reducing domains, no network reduction): NVLS inside, a tree across;
  NCCL counts twice the network bandwidth for two domains.
* **CollNet Direct** (network reduction): reduce-scatter in the domain, each GPU's shard
  ``S/g`` aggregated in the network through its own NIC; NCCL discounts it by 0.85 on Hopper
  and later.

``B_net`` is the domain's network bandwidth NCCL reaches: at most :data:`NET_HEADS` NICs at line
rate per domain (calibrated: multi-rack GB200 NVL72, 72 NICs per rack, measures about 400 GB/s
busbw at 20 racks; NVL4 and NVL8 partitions ring at 197 and 394 GB/s with 4 and 8 NICs,
NVIDIA/nccl issue 1801). Each algorithm's time adds NCCL's base and per-step latency for its
Simple protocol, so small buffers pick the algorithm with the fewest steps, as NCCL does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .parts import partition
from .problem import Problem, reduce_domains

#: NICs per scale-up domain that NCCL's channels drive at once (see the module docstring).
NET_HEADS = 8
#: NCCL's rating of a tree against the ring over the same network channels.
TREE_FACTOR = 0.92
#: NCCL's discount of CollNet Direct on Hopper and later GPUs.
COLLNET_FACTOR = 0.85
#: Latencies of NCCL's Simple protocol, microseconds (NCCL's tuning constants): base per
#: algorithm, per step over NVLink and over the network.
RING_BASE_US, RING_NVLINK_US, RING_NET_US = 8.4, 3.4, 14.0
TREE_BASE_US, TREE_NVLINK_US, TREE_NET_US = 8.4, 4.0, 14.0
NVLS_NVLINK_US, NVLS_NET_US, NVLS_TREE_NET_US = 25.0, 18.0, 20.9
COLLNET_NET_US, COLLNET_NVLINK_US, COLLNET_ARITY_US = 31.0, 3.7, 0.4


@dataclass(frozen=True)
class Domains:
    """The participants as NCCL sees them: ``k`` domains of at least ``g`` GPUs, per-GPU
    scale-up and NIC bandwidth and the network bandwidth of the least-connected domain (all
    GB/s), and whether the domains and the network reduce."""

    k: int
    g: int
    up_GBps: float
    nic_GBps: float
    domain_net_GBps: float
    nvls: bool
    sharp: bool

    @property
    def net_GBps(self) -> float:
        """Network bandwidth per domain that NCCL's channels reach (:data:`NET_HEADS`)."""
        return min(self.domain_net_GBps, NET_HEADS * self.nic_GBps)


def domains_of(p: Problem, red_up: np.ndarray, red_out: np.ndarray) -> Domains:
    """The domains of the participants: reducing NVSwitch domains when ``red_up`` marks
    switches that reduce, else the islands their scale-up links join."""
    ga = p.ga
    groups, _ = reduce_domains(p, red_up)
    nvls = bool(groups) and max(len(d) for d in groups) > 1
    if not nvls:
        gpu = np.zeros(ga.n_nodes, dtype=bool)
        gpu[p.gpus] = True
        label = partition(ga, gpu, p.scale_up_arc, "scale-up domains").label
        # The GPUs of each island, in the order of p.gpus (a stable sort by island, not a
        # Python loop per GPU); only their count, sizes and NIC sums are read below.
        gpus = np.asarray(p.gpus)
        by_label = np.argsort(label[gpus], kind="stable")
        starts = np.flatnonzero(np.diff(label[gpus][by_label])) + 1
        groups = np.split(gpus[by_label], starts) if len(gpus) else []
    up = np.bincount(ga.tail[p.scale_up_arc], weights=ga.capacity[p.scale_up_arc],
                     minlength=ga.n_nodes)
    net = ~p.scale_up_arc
    nic = np.bincount(ga.tail[net], weights=ga.capacity[net], minlength=ga.n_nodes)
    domain_net = min(float(nic[d].sum()) for d in groups)
    return Domains(len(groups), min(len(d) for d in groups), float(up[p.gpus].min()) / 8,
                   float(nic[p.gpus].min()) / 8, domain_net / 8, nvls, bool(red_out.any()))


def _seconds(size: float, busbw: float, bus: float) -> float:
    """Time of a buffer at an nccl-tests busbw (GB/s) with bus factor ``bus``."""
    return math.inf if busbw <= 0 else size * bus / (busbw * 1e9)


def ring_latency_us(d: Domains, n: int, passes: int) -> float:
    """NCCL's Simple-protocol latency (microseconds) of a ring over ``n`` GPUs in ``d.k``
    domains: ``passes`` times ``n - 1`` steps (2 for all-reduce, 1 for all-gather and
    reduce-scatter), ``k - 1`` of each pass across domains.

    >>> d = Domains(k=8, g=8, up_GBps=450, nic_GBps=50, domain_net_GBps=400, nvls=True,
    ...             sharp=False)
    >>> round(ring_latency_us(d, 64, 1), 6)  # 8.4 + 56 x 3.4 + 7 x 14
    296.8
    """
    return RING_BASE_US + passes * ((n - d.k) * RING_NVLINK_US + (d.k - 1) * RING_NET_US)


def all_reduce_algorithms(d: Domains, size: float, n: int, effs: dict[str, float]
                          ) -> dict[str, tuple[float, float, str]]:
    """Each algorithm NCCL could run: ``{name: (busbw GB/s at large sizes, time s, the links
    that limit it)}``.

    ``effs`` holds the calibrated ``scale_up``, ``nvls`` and ``network`` efficiencies.

    >>> d = Domains(k=8, g=8, up_GBps=450, nic_GBps=50, domain_net_GBps=400, nvls=True,
    ...             sharp=False)
    >>> algs = all_reduce_algorithms(d, 2**33, 64, {"scale_up": 370 / 450, "nvls": 480 / 700,
    ...                                             "network": 0.94})
    >>> {a: (round(b), limit) for a, (b, _, limit) in algs.items()}
    {'ring': (370, 'scale-up'), 'tree': (346, 'network'), 'NVLS-tree': (376, 'network')}
    """
    bus = 2 * (n - 1) / n
    up = d.up_GBps * effs["scale_up"] if d.g > 1 else math.inf
    net = d.net_GBps * effs["network"] if d.k > 1 else math.inf
    # NVLink SHARP in one domain: S + S/g per GPU each way at the calibrated efficiency.
    nvls_in = d.up_GBps * effs["nvls"] * bus / (1 + 1 / d.g)
    log_k = math.log2(d.k) if d.k > 1 else 0.0
    out: dict[str, tuple[float, float, str]] = {}

    def by(*rates: tuple[str, float]) -> tuple[float, str]:
        name, rate = min(rates, key=lambda r: r[1])
        return rate, name

    ring, ring_by = by(("scale-up", up), ("network", net))
    ring_lat = ring_latency_us(d, n, 2)
    out["ring"] = (ring, ring_by, ring_lat)
    if d.k > 1:
        out["tree"] = (*by(("scale-up", up), ("network", TREE_FACTOR * net)),
                       TREE_BASE_US + 2 * ((d.g - 1) * TREE_NVLINK_US + log_k * TREE_NET_US))
    if d.nvls and (d.k == 1 or d.sharp):
        out["NVLS"] = (*by(("NVLS", nvls_in), ("network", net)),
                       NVLS_NVLINK_US + (NVLS_NET_US if d.k > 1 else 0.0))
    if d.nvls and d.k > 1:
        out["NVLS-tree"] = (*by(("NVLS", nvls_in), ("network", net * (2 if d.k <= 2 else 1))),
                            NVLS_NVLINK_US + 2 * log_k * NVLS_TREE_NET_US)
    if d.sharp and d.k > 1:
        # Reduce-scatter in the domain (2(g-1)/g S per GPU), the shard S/g through each
        # GPU's NIC, pipelined: algbw is the slower of the two.
        t_in = 2 * (d.g - 1) / d.g / up if d.g > 1 else 0.0
        t_net = 1 / d.g / (d.nic_GBps * effs["network"])
        out["CollNet"] = (COLLNET_FACTOR * bus / max(t_in, t_net),
                          "scale-up" if t_in >= t_net else "network",
                          2 * (COLLNET_NVLINK_US + (d.g - 1) * COLLNET_ARITY_US)
                          + COLLNET_NET_US)
    return {a: (bw, lat * 1e-6 + _seconds(size, bw, bus), limit)
            for a, (bw, limit, lat) in out.items()}
