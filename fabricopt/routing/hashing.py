"""Per-flow hashing: every flow pinned to one shortest path, as ECMP hashing does on RoCE.

A switch hashes a flow's header (the 5-tuple; on RoCE the UDP source port of a queue pair)
with its own seed and sends the whole flow out of one of the equal-cost next hops. Distinct
switches hash independently, so a flow's path is a walk down the shortest-path DAG that
takes a uniformly random DAG arc at every node: the same law as the ECMP fluid split, drawn
once per flow. Colliding flows share an arc in full, which is what costs throughput.

All flows of all trials walk together, one vectorised step per hop.
"""

from __future__ import annotations

import numpy as np

from .planes import Plane

#: Flow-steps (flows x out-arcs) expanded at once.
WALK_BLOCK = 4_000_000


def hashed_loads(plane: Plane, src: np.ndarray, dst: np.ndarray, gbps: np.ndarray,
                 trials: int, rng: np.random.Generator) -> np.ndarray:
    """Gb/s on every plane arc in each trial: shape (trials, plane arcs).

    ``src``, ``dst`` (endpoint positions) and ``gbps`` list the flows; each trial draws every
    flow's path anew.
    """
    load = np.zeros((trials, plane.n_arcs))
    if not len(src):
        return load
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
        _walk(plane, plane.source[src][flows], flows, trial, gbps, to_target, rng, load)
    return load


def _walk(plane: Plane, node: np.ndarray, flows: np.ndarray, trial: np.ndarray,
          gbps: np.ndarray, to_target: object, rng: np.random.Generator,
          load: np.ndarray) -> None:
    m = plane.n_arcs
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
        choices = np.bincount(owner, weights=dag, minlength=len(flows)).astype(np.int64)
        if np.any(choices == 0):
            raise RuntimeError("routing: a flow reached a node with no way on")
        pick = np.floor(rng.random(len(flows)) * choices).astype(np.int64)
        cum = np.cumsum(dag)
        # DAG arcs of the flow's node before this one: running count minus the count before
        # the node's first arc.
        before = cum[seg_start] - dag[seg_start]
        chosen = dag & (cum - 1 - before[owner] == pick[owner])
        taken = arc[chosen]
        who = owner[chosen]
        load += np.bincount(trial[who] * m + taken, weights=gbps[flows[who]],
                            minlength=load.size).reshape(load.shape)
        node = plane.head[taken]
        flows, trial = flows[who], trial[who]
        remaining = remaining[who] - 1
