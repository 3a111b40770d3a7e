"""Which network of a fabric carries a pair's traffic, and the graphs routes are drawn on.

A GPU cluster routes a pair by where its ends sit, not by the whole graph's shortest paths:

* **scale-up**: two GPUs of one NVLink (or UALink) domain talk over that domain's links;
* **scale-out**: two GPUs of different domains talk through their own NICs: the source GPU's
  traffic enters the network on its own rail (its ``"gpu-leaf"`` link) and leaves it at the
  destination's NIC. No GPU forwards in the network, and the NVLink domain is not a transit
  hop: NCCL's default is to send from the GPU that owns the data through its own NIC;
* **whole fabric**: only a pair that neither network connects (a rail-only fabric, whose rails
  meet nowhere in the network; a direct network such as a ring or torus, where every node
  forwards) is routed over every arc, GPUs forwarding. On a rail-only cluster that is the
  "PXN" route: over NVLink to the GPU on the destination's rail, then out of its NIC.

Each is a :class:`Network` (called a plane before; a plane is now only one of a scale-out
network's parallel copies): a graph in which every endpoint is split into a sending copy
(its own node index, arcs out of it) and a receiving copy (arcs into it), so no route can pass
through a GPU. The whole-fabric network keeps GPUs whole.

Destinations are routed by a *class* node: when a destination's receiving copy has a single
arc into it (a NIC under one leaf), every route to it ends with that arc, so all destinations
under one leaf share the routes to the leaf. This turns all-to-all on a SuperPOD's 4,096 GPUs
into 128 destination classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, shortest_path

from ..fabric import Fabric
from ..graph_arrays import FabricShape, GraphArrays

#: The networks of a fabric a pair can be routed on, in the order they are tried.
NETWORK_NAMES = ("scale-up", "scale-out", "whole fabric")
#: Largest table of (sending set x receiving set) a network keeps to tell which pairs it
#: connects (booleans: 16 MB).
DISTINCT_TABLE = 16_000_000


@dataclass
class Network:
    """One network of the fabric, as the graph routes are drawn on (see the module docstring).

    Network nodes ``0 .. n_ga - 1`` are the fabric's nodes; in a split network, node
    ``n_ga + i`` is the receiving copy of endpoint ``i``.

    Attributes
    ----------
    name : str
        One of :data:`NETWORK_NAMES`.
    arc : ndarray
        For each network arc (sorted by tail), the fabric arc index it stands for.
    tail, head : ndarray
        Network node indices of each network arc.
    indptr : ndarray
        ``arc[indptr[u]:indptr[u + 1]]`` are the arcs leaving network node ``u``.
    source, target : ndarray
        For endpoint ``i``: the network node it sends from and the one it receives at.
    klass : ndarray
        For endpoint ``i``: the network node its routes are drawn towards (its only upstream
        neighbour, or ``target[i]`` itself).
    last_arc : ndarray
        For endpoint ``i``: the network arc ``klass -> target`` when the two differ, else -1.
    component : ndarray
        Weak component of each network node (two endpoints can talk in this network when their
        source and target lie in one component).
    layer : ndarray
        The ``layer`` attribute of each network node.
    capacity : ndarray
        Gb/s of each network arc.
    """

    name: str
    n_nodes: int
    arc: np.ndarray
    tail: np.ndarray
    head: np.ndarray
    indptr: np.ndarray
    source: np.ndarray
    target: np.ndarray
    klass: np.ndarray
    last_arc: np.ndarray
    component: np.ndarray
    layer: np.ndarray
    capacity: np.ndarray
    has_arcs: np.ndarray
    #: Head-to-tail adjacency, built on first use by :meth:`reverse_matrix`.
    _reverse: sp.csr_matrix | None = field(init=False, repr=False, compare=False,
                                           default=None)

    @property
    def n_arcs(self) -> int:
        return len(self.arc)

    @property
    def collapsed(self) -> np.ndarray:
        """True for endpoints routed through their class node (one arc into them)."""
        return self.last_arc >= 0

    def __post_init__(self) -> None:
        # Reachability through forwarding nodes: an endpoint reaches another when one of the
        # nodes it sends into shares a component of the forwarding nodes with one that feeds
        # the other, or by a direct arc. Weak components of the whole network would be wrong:
        # two senders feeding one receiving copy are weakly joined but cannot reach each other.
        forwards = np.ones(self.n_nodes, dtype=bool)
        forwards[self.target] = False
        forwards[self.source] = self.name == "whole fabric"
        core = forwards[self.tail] & forwards[self.head]
        n = self.n_nodes
        matrix = sp.csr_matrix((np.ones(int(core.sum())), (self.tail[core], self.head[core])),
                               shape=(n, n))
        _, comp = connected_components(matrix, directed=True, connection="strong")
        T = len(self.target)
        pos_of_source = np.full(n, -1, dtype=np.int64)
        pos_of_source[self.source] = np.arange(T)
        pos_of_target = np.full(n, -1, dtype=np.int64)
        pos_of_target[self.target] = np.arange(T)
        into = forwards[self.head] & (pos_of_source[self.tail] >= 0)
        feeds = forwards[self.tail] & (pos_of_target[self.head] >= 0)
        direct = (pos_of_source[self.tail] >= 0) & (pos_of_target[self.head] >= 0) & ~(
            forwards[self.tail] & forwards[self.head])
        K = int(comp.max()) + 1 if n else 1
        self._send = sp.csr_matrix((np.ones(int(into.sum())), (pos_of_source[self.tail[into]],
                                                                comp[self.head[into]])),
                                   shape=(T, K)).astype(bool).tocsr()
        self._recv = sp.csr_matrix((np.ones(int(feeds.sum())), (pos_of_target[self.head[feeds]],
                                                                 comp[self.tail[feeds]])),
                                   shape=(T, K)).astype(bool).tocsr()
        self._direct = np.unique(pos_of_source[self.tail[direct]] * T
                                 + pos_of_target[self.head[direct]])
        single = (np.diff(self._send.indptr).max(initial=0) <= 1
                  and np.diff(self._recv.indptr).max(initial=0) <= 1)
        self._single = single
        self._table: np.ndarray | None = None
        if not single:
            # Endpoints that send into (receive from) the same components alike: one row per
            # distinct set, and a table of which sets meet (the GPUs of a DGX H100 send into
            # its four NVSwitches, so 16,384 GPUs make 2,048 sets, not 268 million pairs).
            send_rows, self._send_set = _distinct_rows(self._send)
            recv_rows, self._recv_set = _distinct_rows(self._recv)
            if send_rows.shape[0] * recv_rows.shape[0] <= DISTINCT_TABLE:
                self._table = (send_rows @ recv_rows.T).toarray() > 0
        if single:
            self._send_label = np.full(T, -1, dtype=np.int64)
            rows = np.flatnonzero(np.diff(self._send.indptr))
            self._send_label[rows] = self._send.indices
            self._recv_label = np.full(T, -2, dtype=np.int64)
            rows = np.flatnonzero(np.diff(self._recv.indptr))
            self._recv_label[rows] = self._recv.indices

    def reaches(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Whether endpoint ``src[j]`` can send to endpoint ``dst[j]`` in this network."""
        if self._single:
            ok = self._send_label[src] == self._recv_label[dst]
        elif self._table is not None:
            ok = self._table[self._send_set[src], self._recv_set[dst]]
        else:
            ok = np.asarray(self._send[src].multiply(self._recv[dst]).sum(axis=1)).ravel() > 0
        if len(self._direct):
            ok |= np.isin(src * len(self.target) + dst, self._direct)
        return ok

    def reach_groups(self) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix] | None:
        """Reachability by groups: ``(send_group, recv_group, meets)`` with endpoint ``s``
        reaching endpoint ``t`` (besides :meth:`direct_pairs`) exactly when
        ``meets[send_group[s], recv_group[t]]``. None when the network keeps no such table
        (too many distinct sets of components)."""
        if self._single:
            labels = np.unique(np.concatenate([self._send_label, self._recv_label]))
            labels = labels[labels >= 0]
            k = len(labels)
            # Endpoints without a label share one more group, which meets nothing.
            send = np.where(self._send_label >= 0, np.searchsorted(labels, self._send_label), k)
            recv = np.where(self._recv_label >= 0, np.searchsorted(labels, self._recv_label), k)
            meets = sp.diags(np.r_[np.ones(k), 0.0], format="csr").astype(bool)
            meets.eliminate_zeros()
            return send, recv, meets
        if self._table is None:
            return None
        return self._send_set, self._recv_set, sp.csr_matrix(self._table)

    def direct_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Endpoint pairs ``(src, dst)`` joined by an arc from one to the other with no
        forwarding node at either end (reached whatever the groups say)."""
        T = len(self.target)
        return self._direct // T, self._direct % T

    def reverse_matrix(self) -> sp.csr_matrix:
        """Head-to-tail adjacency: a search from a node on it finds who can reach that node
        (built once per network: every block of destinations searches on it)."""
        if self._reverse is None:
            n = self.n_nodes
            self._reverse = sp.csr_matrix((np.ones(self.n_arcs), (self.head, self.tail)),
                                          shape=(n, n))
        return self._reverse

    def distances_to(self, nodes: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Hop distances from every network node (or from the nodes ``rows`` only, which must
        hold every node that reaches ``nodes``: whole components) to each of ``nodes``:
        shape (n_nodes or len(rows), len(nodes))."""
        n_rows = self.n_nodes if rows is None else len(rows)
        if len(nodes) == 0:
            return np.zeros((n_rows, 0))
        reverse, nodes = self.reverse_matrix(), np.asarray(nodes)
        if rows is not None:
            local = np.full(self.n_nodes, -1, dtype=np.int64)
            local[rows] = np.arange(n_rows)
            reverse, nodes = reverse[rows][:, rows], local[nodes]
        dist = shortest_path(reverse, directed=True, unweighted=True, indices=nodes)
        return np.atleast_2d(dist).T


def _distinct_rows(matrix: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """The distinct rows of a boolean CSR matrix (as a float CSR matrix) and the index of
    each row among them."""
    seen: dict[bytes, int] = {}
    which = np.empty(matrix.shape[0], dtype=np.int64)
    firsts = []
    for i in range(matrix.shape[0]):
        cols = matrix.indices[matrix.indptr[i]:matrix.indptr[i + 1]]
        key = np.sort(cols).tobytes()
        if key not in seen:
            seen[key] = len(firsts)
            firsts.append(i)
        which[i] = seen[key]
    return matrix[np.array(firsts, dtype=np.int64)].astype(float), which


def build_network(name: str, ga: GraphArrays, fab: Fabric, arc_mask: np.ndarray,
                endpoint_index: np.ndarray, split: bool, layer: np.ndarray) -> Network:
    """The network over the fabric arcs in ``arc_mask`` (see :class:`Network`)."""
    n, T = ga.n_nodes, len(endpoint_index)
    arcs = np.flatnonzero(arc_mask)
    tail = ga.tail[arcs].copy()
    head = ga.head[arcs].copy()
    n_nodes = n + T if split else n
    target = endpoint_index.copy()
    if split:
        # Arcs into an endpoint end at its receiving copy: nothing leaves a receiving copy.
        copy_of = np.full(n, -1, dtype=np.int64)
        copy_of[endpoint_index] = n + np.arange(T)
        into_endpoint = copy_of[head] >= 0
        head[into_endpoint] = copy_of[head[into_endpoint]]
        target = n + np.arange(T)
    order = np.argsort(tail, kind="stable")
    arcs, tail, head = arcs[order], tail[order], head[order]
    indptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(tail, minlength=n_nodes), out=indptr[1:])
    # An endpoint reached by one arc only is reached through that arc's tail.
    in_count = np.bincount(head, minlength=n_nodes)
    network_arc = np.arange(len(arcs))
    single_in = in_count[target] == 1
    last_arc = np.full(T, -1, dtype=np.int64)
    first_in = np.full(n_nodes, -1, dtype=np.int64)
    first_in[head[::-1]] = network_arc[::-1]
    last_arc[single_in] = first_in[target[single_in]]
    klass = target.copy()
    klass[single_in] = tail[last_arc[single_in]]
    matrix = sp.csr_matrix((np.ones(len(arcs)), (tail, head)), shape=(n_nodes, n_nodes))
    _, component = connected_components(matrix, directed=True, connection="weak")
    out_degree = np.bincount(tail, minlength=n_nodes)
    has_arcs = (out_degree[endpoint_index] > 0) & (in_count[target] > 0)
    network_layer = np.concatenate([layer, layer[endpoint_index]]) if split else layer
    return Network(name, n_nodes, arcs, tail, head, indptr, endpoint_index.copy(), target, klass,
                 last_arc, component, network_layer, ga.capacity[arcs], has_arcs)


@dataclass
class Networks:
    """The networks of a fabric and which endpoints can use each."""

    ga: GraphArrays
    endpoint_index: np.ndarray
    networks: list[Network | None]

    @classmethod
    def of(cls, fab: Fabric, ga: GraphArrays | None = None) -> Networks:
        """Build the scale-up, scale-out and whole-fabric networks of ``fab``."""
        ga = ga or GraphArrays.from_fabric(fab)
        eps = np.array([ga.index[e] for e in fab.endpoints], dtype=np.int64)
        shape = FabricShape.of(fab, ga)
        layer = np.maximum(shape.layer, 0)  # a node without a layer sits with the GPUs
        up = shape.scale_up
        networks: list[Network | None] = [
            build_network(NETWORK_NAMES[0], ga, fab, up, eps, True, layer) if up.any() else None,
            build_network(NETWORK_NAMES[1], ga, fab, ~up, eps, True, layer) if (~up).any()
            else None,
            build_network(NETWORK_NAMES[2], ga, fab, np.ones(ga.n_arcs, dtype=bool), eps, False,
                        layer),
        ]
        return cls(ga, eps, networks)

    def assign(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The network number (index into :data:`NETWORK_NAMES`) of each pair of endpoint
        positions, or -1 when no network connects it."""
        out = np.full(len(src), -1, dtype=np.int64)
        for p, network in enumerate(self.networks):
            if network is None:
                continue
            todo = out < 0
            if not todo.any():
                break
            idx = np.flatnonzero(todo)
            out[idx[network.reaches(src[idx], dst[idx])]] = p
        return out


#: Their names of a release ago, kept for a release.
Plane, Planes, PLANE_NAMES = Network, Networks, NETWORK_NAMES
