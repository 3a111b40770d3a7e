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

All flows of all trials walk together, one vectorised step per hop.
"""

from __future__ import annotations

import numpy as np

from .planes import Plane

#: Flow-steps (flows x out-arcs) expanded at once.
WALK_BLOCK = 4_000_000


def hashed_loads(plane: Plane, src: np.ndarray, dst: np.ndarray, gbps: np.ndarray,
                 trials: int, rng: np.random.Generator, links: np.ndarray | None = None,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Gb/s on every plane arc in each trial, carried and port-equivalent: two arrays of shape
    (trials, plane arcs).

    ``src``, ``dst`` (endpoint positions) and ``gbps`` list the flows; each trial draws every
    flow's path anew. ``links`` gives each plane arc's member links (default one each).
    """
    links = np.ones(plane.n_arcs, dtype=np.int64) if links is None else links.astype(np.int64)
    first_member = np.cumsum(links) - links
    load = np.zeros((trials, int(links.sum())))
    if not len(src):
        return np.zeros((trials, plane.n_arcs)), np.zeros((trials, plane.n_arcs))
    classes, col = np.unique(plane.klass[dst], return_inverse=True)
    dist = plane.distances_to(classes)
    big = np.iinfo(np.int32).max // 2
    hops = np.where(np.isfinite(dist), dist, big).astype(np.int32)
    offset = plane.collapsed[dst].astype(np.int32)
    target = plane.target[dst]

    def to_target(node: np.ndarray, flows: np.ndarray) -> np.ndarray:
        d = hops[node, col[flows]] + offset[flows]
        return np.where(node == target[flows], 0, d)

    max_deg = int(np.diff(plane.indptr).max(initial=1))
    per_trial = max(1, WALK_BLOCK // max(len(src) * max_deg, 1))
    for first in range(0, trials, per_trial):
        count = min(per_trial, trials - first)
        flows = np.tile(np.arange(len(src)), count)
        trial = np.repeat(np.arange(first, first + count), len(src))
        _walk(plane, plane.source[src][flows], flows, trial, gbps, to_target, rng, load, links,
              first_member)
    return (np.add.reduceat(load, first_member, axis=-1),
            port_equivalent(load, links, first_member))


def port_equivalent(member_load: np.ndarray, links: np.ndarray, first_member: np.ndarray,
                    ) -> np.ndarray:
    """Per arc: its member links times the load of its busiest member (last axis: members).

    >>> port_equivalent(np.array([[1.0, 3.0, 2.0]]), np.array([2, 1]), np.array([0, 2]))
    array([[6., 2.]])
    """
    return np.maximum.reduceat(member_load, first_member, axis=-1) * links


def _walk(plane: Plane, node: np.ndarray, flows: np.ndarray, trial: np.ndarray,
          gbps: np.ndarray, to_target: object, rng: np.random.Generator,
          load: np.ndarray, links: np.ndarray, first_member: np.ndarray) -> None:
    m = load.shape[1]
    remaining = to_target(node, flows)  # type: ignore[operator]
    if np.any(remaining >= np.iinfo(np.int32).max // 4):
        raise RuntimeError("routing: a flow has no path in its plane")
    while len(flows):
        moving = remaining > 0
        node, flows, trial, remaining = (node[moving], flows[moving], trial[moving],
                                         remaining[moving])
        if not len(flows):
            break
        start = plane.indptr[node]
        deg = plane.indptr[node + 1] - start
        owner = np.repeat(np.arange(len(flows)), deg)
        seg_start = np.cumsum(deg) - deg
        arc = start[owner] + np.arange(len(owner)) - seg_start[owner]
        nxt = plane.head[arc]
        dag = to_target(nxt, flows[owner]) == remaining[owner] - 1  # type: ignore[operator]
        # Every member link of a DAG arc is one equal-cost port.
        ports = np.where(dag, links[arc], 0)
        choices = np.bincount(owner, weights=ports, minlength=len(flows)).astype(np.int64)
        if np.any(choices == 0):
            raise RuntimeError("routing: a flow reached a node with no way on")
        pick = np.floor(rng.random(len(flows)) * choices).astype(np.int64)
        cum = np.cumsum(ports)
        # Ports of the flow's node before this arc: running count minus the count before the
        # node's first arc; the flow takes the arc whose ports hold its pick.
        before = cum[seg_start] - ports[seg_start]
        low = cum - ports - before[owner]
        chosen = dag & (low <= pick[owner]) & (pick[owner] < low + ports)
        taken = arc[chosen]
        who = owner[chosen]
        member = first_member[taken] + pick[who] - low[chosen]
        load += np.bincount(trial[who] * m + member, weights=gbps[flows[who]],
                            minlength=load.size).reshape(load.shape)
        node = plane.head[taken]
        flows, trial = flows[who], trial[who]
        remaining = remaining[who] - 1
