"""Per-flow hashing: every flow pinned to one shortest path and one physical port per hop, as
ECMP hashing does on RoCE.

A switch hashes a flow's header (the 5-tuple; on RoCE the UDP source port of a queue pair)
with its own seed and sends the whole flow out of one of its equal-cost ports. An ECMP group
(or a LAG) lists every member link of every next-hop bundle, so the flow takes a uniformly
random *member link* among the DAG arcs' members: a bundle of ``L`` links is ``L`` next hops,
each of ``1/L`` of the bundle's capacity, never one fluid pipe. Distinct switches hash
independently, so a flow's path is a walk down the shortest-path DAG drawn once per flow.
Colliding flows share a member link in full, which is what costs throughput.

Loads come back twice per arc: what the bundle carries (the sum over its members, which
conserves flow), and *port-equivalent*: ``L`` times the load of its busiest member, so
``capacity / load`` is the busiest member's headroom and the throughput formula over arcs
stays exact.

**Bounded memory.** Flows walk together, one vectorised step per hop, a block at a time:
several whole trials when they are few (:data:`WALK_BLOCK`), else at most
:data:`FLOW_BLOCK` flows of one trial, so what a step holds never grows with the traffic.
At each step the flows are grouped by (node, destination class): the DAG's ports out of a
node towards a class are listed once per group, not once per flow, and each flow draws its
port among its group's (a flow one hop from its destination's receiving copy takes the one
arc into it). The hop table (every network node's distance to every destination class) is
built once per network, a block of classes at a time. What stays is one load per member link
per trial. :func:`walk_bytes` estimates it all before anything is allocated.
"""

from __future__ import annotations

import numpy as np

from .networks import Network

#: Flow-steps (flows x out-arcs of the busiest node) of whole trials walked at once; a trial
#: of more flows than :data:`FLOW_BLOCK` is walked in blocks of that many instead.
WALK_BLOCK = 4_000_000
#: Most flows one block of a trial walks at once.
FLOW_BLOCK = 500_000
#: Bytes a block of the walk holds per flow at its peak (positions, nodes, hops left, draws,
#: groups, picks, the member taken and its weight, their masks). Measured with tracemalloc
#: on a block of a million flows of a 1,024-GPU DGX H100 cluster: 225 bytes a flow, the
#: pairs' own arrays included.
BYTES_PER_FLOW = 240
#: Bytes held per pair of a block of pairs while its flows walk (class, hops after the
#: last switch, last arc, share of the demand).
BYTES_PER_PAIR = 32
#: Destination classes whose distances are searched at once (the search returns floats,
#: kept as 32-bit hop counts).
CLASS_BLOCK = 256
#: Largest node x class table looked up densely when grouping flows at a step (and only
#: when it is not much larger than the step itself; else the keys are sorted).
DENSE_GROUPS = 1 << 22
#: Hop count standing for "no path" in the hop table.
NO_PATH = np.iinfo(np.int32).max // 2


def block_flows(flows: int, trials: int, max_deg: int) -> int:
    """Most flows one step of the walk holds, for ``flows`` flows a trial: whole trials
    while ``flows`` is at most :data:`FLOW_BLOCK` (as many as :data:`WALK_BLOCK` flow-steps
    allow at out-degree ``max_deg``), else a block of :data:`FLOW_BLOCK`.

    >>> block_flows(1_000, 20, 10), block_flows(10**7, 20, 10)
    (20000, 500000)
    """
    if flows > FLOW_BLOCK:
        return FLOW_BLOCK
    per_trial = max(1, WALK_BLOCK // max(flows * max_deg, 1))
    return flows * min(per_trial, trials)


def walk_bytes(n_nodes: int, n_classes: int, members: int, trials: int, pairs: int,
               flows_per_pair: int = 1, max_deg: int = 1) -> int:
    """Peak bytes of hashing ``pairs`` pairs (``flows_per_pair`` flows each, at most
    ``pairs`` of them held at once) on a network of ``n_nodes`` nodes, out-degree at most
    ``max_deg``, towards ``n_classes`` destination classes, with ``members`` member links
    and ``trials`` trials: the hop table (4 bytes per node and class, and a block of classes
    searched in floats), one load per member link per trial (and the two per-arc reductions
    of it), the pairs' arrays and a block of flows (:func:`block_flows`).

    >>> walk_bytes(1_000, 10, 5_000, 20, 100)   # 40,000 + 80,000 + 2.4e6 + 3,200 + 480,000
    3003200
    """
    table = 4 * n_nodes * n_classes + 8 * n_nodes * min(n_classes, CLASS_BLOCK)
    loads = 3 * 8 * members * trials
    block = block_flows(pairs * flows_per_pair, trials, max_deg)
    return table + loads + BYTES_PER_PAIR * pairs + BYTES_PER_FLOW * block


class HashedWalk:
    """Hashed flows on one network, added a block of pairs at a time, their loads kept per
    member link and trial.

    ``classes`` are the network nodes the flows' destinations are routed towards (sorted; every
    destination's class must be among them), ``links`` each network arc's member links.
    """

    def __init__(self, network: Network, classes: np.ndarray, trials: int,
                 links: np.ndarray | None = None) -> None:
        self.network, self.trials = network, trials
        self.links = (np.ones(network.n_arcs, dtype=np.int64) if links is None
                      else links.astype(np.int64))
        self.first_member = np.cumsum(self.links) - self.links
        self.load = np.zeros((trials, int(self.links.sum())))
        self.classes = np.asarray(classes, dtype=np.int64)
        self.hops = _hop_table(network, self.classes)
        self.max_deg = int(np.diff(network.indptr).max(initial=1))

    def add(self, src: np.ndarray, dst: np.ndarray, gbps: np.ndarray,
            rng: np.random.Generator, flows_per_pair: int = 1) -> None:
        """Hash ``flows_per_pair`` flows of each pair (``src``, ``dst`` endpoint positions;
        ``gbps`` shared equally among its flows) in every trial; flows of one pair are
        consecutive, and each trial draws every flow's path anew."""
        if not len(src):
            return
        network = self.network
        self._src, self._fpp = np.asarray(src), flows_per_pair
        self._gbps = np.asarray(gbps, dtype=float) / flows_per_pair
        self._col = np.searchsorted(self.classes, network.klass[dst])
        self._offset = network.collapsed[dst].astype(np.int64)
        self._last = network.last_arc[dst]
        n_flows = len(src) * flows_per_pair
        if n_flows <= FLOW_BLOCK:
            # Whole trials at once, as many as WALK_BLOCK flow-steps allow (block_flows).
            per_trial = max(1, WALK_BLOCK // max(n_flows * self.max_deg, 1))
            for first in range(0, self.trials, per_trial):
                count = min(per_trial, self.trials - first)
                self._walk(np.tile(np.arange(n_flows), count),
                           np.repeat(np.arange(first, first + count), n_flows), first, rng)
            return
        for trial in range(self.trials):
            for first in range(0, n_flows, FLOW_BLOCK):
                flows = np.arange(first, min(first + FLOW_BLOCK, n_flows))
                self._walk(flows, np.full(len(flows), trial), trial, rng)

    def loads(self) -> tuple[np.ndarray, np.ndarray]:
        """Gb/s on every network arc in each trial, carried and port-equivalent: two arrays of
        shape (trials, network arcs)."""
        if not self.load.shape[1]:
            return (np.zeros((self.trials, self.network.n_arcs)),
                    np.zeros((self.trials, self.network.n_arcs)))
        return (np.add.reduceat(self.load, self.first_member, axis=-1),
                port_equivalent(self.load, self.links, self.first_member))

    def _walk(self, flows: np.ndarray, trial: np.ndarray, first_trial: int,
              rng: np.random.Generator) -> None:
        """Walk ``flows`` (indices: pair ``flow // flows_per_pair``) of trials ``trial``
        (the lowest ``first_trial``) from their sources to their destinations, adding their
        loads."""
        network, hops, links = self.network, self.hops, self.links
        pair = flows // self._fpp
        col, last = self._col[pair], self._last[pair]
        final_arc_ok = last >= 0
        node = network.source[self._src[pair]]
        remaining = hops[node, col].astype(np.int64) + self._offset[pair]
        if np.any(remaining >= NO_PATH // 2):
            raise RuntimeError("routing: a flow has no path in its network")
        m = self.load.shape[1]
        trials_here = int(trial.max()) - first_trial + 1
        weight = self._gbps[pair]
        n_classes = len(self.classes)
        while len(node):
            moving = remaining > 0
            if not moving.all():
                node, col, last, trial, remaining, weight, final_arc_ok = (
                    node[moving], col[moving], last[moving], trial[moving],
                    remaining[moving], weight[moving], final_arc_ok[moving])
            if not len(node):
                break
            draw = rng.random(len(node))
            taken = np.empty(len(node), dtype=np.int64)
            member = np.empty(len(node), dtype=np.int64)
            # One hop from a collapsed destination: the one arc into its receiving copy.
            final = final_arc_ok & (remaining == 1)
            if final.any():
                arc = last[final]
                pick = np.floor(draw[final] * links[arc]).astype(np.int64)
                taken[final], member[final] = arc, self.first_member[arc] + pick
            inner = ~final
            if inner.any():
                arc, offset = _ports(network, hops, links, node[inner], col[inner],
                                     draw[inner], n_classes)
                taken[inner], member[inner] = arc, self.first_member[arc] + offset
            self.load[first_trial:first_trial + trials_here] += np.bincount(
                (trial - first_trial) * m + member, weights=weight,
                minlength=trials_here * m).reshape(trials_here, m)
            node = network.head[taken]
            remaining = remaining - 1


def _ports(network: Network, hops: np.ndarray, links: np.ndarray, node: np.ndarray,
           col: np.ndarray, draw: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """For flows at ``node`` bound for class column ``col``: the arc each takes and the member
    link within it, drawn uniformly (``draw`` in [0, 1)) among the member links of the arcs
    one hop closer to the class. Arcs are listed once per (node, class) group."""
    key = node * n_classes + col
    groups, which = _groups(key, network.n_nodes * n_classes)
    g_node, g_col = groups // n_classes, groups % n_classes
    start = network.indptr[g_node]
    deg = network.indptr[g_node + 1] - start
    owner = np.repeat(np.arange(len(groups)), deg)
    seg_start = np.cumsum(deg) - deg
    arc = start[owner] + np.arange(len(owner)) - seg_start[owner]
    closer = hops[network.head[arc], g_col[owner]] == hops[g_node, g_col][owner] - 1
    ports = np.where(closer, links[arc], 0)
    choices = np.bincount(owner, weights=ports, minlength=len(groups)).astype(np.int64)
    if np.any(choices[which] == 0):
        raise RuntimeError("routing: a flow reached a node with no way on")
    cum = np.cumsum(ports)
    # Ports listed before each group's first arc; a flow's pick, counted from there, falls in
    # the arc whose running count first exceeds it.
    before = np.zeros(len(groups), dtype=np.int64)
    has = deg > 0
    before[has] = cum[seg_start[has]] - ports[seg_start[has]]
    pick = np.floor(draw * choices[which]).astype(np.int64)
    at = before[which] + pick
    # The arc holding each port, by port number: a gather where a search of the running
    # counts per flow took most of a trial (the first count above ``at``, as a search finds).
    entry = np.repeat(np.arange(len(ports)), ports)[at]
    return arc[entry], at - (cum[entry] - ports[entry])


def _groups(key: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``key`` (sorted) and each entry's index among them: a dense
    table when the key space is small, a sort otherwise."""
    if space <= DENSE_GROUPS and space <= 4 * len(key) + 65_536:
        seen = np.zeros(space, dtype=bool)
        seen[key] = True
        groups = np.flatnonzero(seen)
        index = np.zeros(space, dtype=np.int64)
        index[groups] = np.arange(len(groups))
        return groups, index[key]
    groups, which = np.unique(key, return_inverse=True)
    return groups, which.ravel()


def _hop_table(network: Network, classes: np.ndarray) -> np.ndarray:
    """Hop count from every network node to each class node (32-bit; :data:`NO_PATH` where
    there is none), searched a block of classes at a time."""
    table = np.empty((network.n_nodes, len(classes)), dtype=np.int32)
    for first in range(0, len(classes), CLASS_BLOCK):
        dist = network.distances_to(classes[first:first + CLASS_BLOCK])
        table[:, first:first + CLASS_BLOCK] = np.where(np.isfinite(dist), dist, NO_PATH)
    return table


def hashed_loads(network: Network, src: np.ndarray, dst: np.ndarray, gbps: np.ndarray,
                 trials: int, rng: np.random.Generator, links: np.ndarray | None = None,
                 flows_per_pair: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Gb/s on every network arc in each trial, carried and port-equivalent: two arrays of shape
    (trials, network arcs).

    ``src``, ``dst`` (endpoint positions) and ``gbps`` list the pairs, each hashed as
    ``flows_per_pair`` flows sharing its demand; each trial draws every flow's path anew.
    ``links`` gives each network arc's member links (default one each).

    >>> import numpy as np
    >>> import fabricopt as fo
    >>> from fabricopt.routing.networks import Networks
    >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    >>> network = Networks.of(fab).networks[1]   # scale-out: one path, g0 -> leaf -> spine -> leaf
    >>> carried, _ = hashed_loads(network, np.array([0]), np.array([1]), np.array([2.0]), 1,
    ...                           np.random.default_rng(0))
    >>> carried[0][carried[0] > 0].tolist()   # g0's link up, leaf-spine up, down, g1's link
    [2.0, 2.0, 2.0, 2.0]
    """
    if not len(src):
        return np.zeros((trials, network.n_arcs)), np.zeros((trials, network.n_arcs))
    walk = HashedWalk(network, np.unique(network.klass[dst]), trials, links)
    walk.add(src, dst, gbps, rng, flows_per_pair)
    return walk.loads()


def port_equivalent(member_load: np.ndarray, links: np.ndarray, first_member: np.ndarray,
                    ) -> np.ndarray:
    """Per arc: its member links times the load of its busiest member (last axis: members).

    >>> port_equivalent(np.array([[1.0, 3.0, 2.0]]), np.array([2, 1]), np.array([0, 2]))
    array([[6., 2.]])
    """
    return np.maximum.reduceat(member_load, first_member, axis=-1) * links
