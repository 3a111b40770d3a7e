"""Single failures seen by a training job: per failure orbit, the job's step and tokens per
second with the failure in place, and what the job must do.

The fabric-level N-1 table (:func:`fabricopt.failures.single_failures`) speaks of uniform
all-to-all; a running job sees a failure otherwise. A failure that takes one of its GPUs, or
leaves one without any network port or without any scale-up link, stops the job at its next
collective (NCCL does not move a rank's connections to another port): the job restarts from
its last checkpoint, on a spare server, or without the data-parallel replicas that used the
lost servers, or it waits for the repair. A failure that leaves every GPU of the job attached
(a spine, a leaf-to-spine link, one plane's leaf on a dual-plane fabric, an NVSwitch chip,
one NVLink) leaves it running degraded, at the step :func:`~fabricopt.training_step` finds on
the failed fabric (certified lower bound and expected). ``docs/goodput.md`` states every rule.

One solve per orbit, as in the fabric-level table: failures the fabric's symmetry maps onto
each other share a key (:class:`~fabricopt.failures.orbits.FailureSymmetry`), refined
by what each failure does to the job (GPUs cut off, servers and replicas lost), which is
found exactly for every member without a solve.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._checks import check_bool, check_choice, check_int, fail
from .._gc import paused_gc
from ..catalog import Catalog
from ..errors import FabricOptError, InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..failures.orbits import FailureSymmetry, Pattern
from ..failures.risk_groups import risk_groups
from ..failures.single import criticality as _fabric_criticality
from ..failures.single import single_failures as _fabric_single_failures
from ..tiers import is_scale_up
from .plan import TrainingJob
from .reliability import server_of
from .serving_replica import ServingJob
from .step import TrainingStep, training_step

#: Failure kinds a job can be asked about: one physical network link, one network switch,
#: one scale-up (NVLink) link, one scale-up switch chip, one GPU's NIC (every network port
#: of the GPU), one GPU, one server (its GPUs), one shared-risk group.
JOB_KINDS = ("links", "switches", "nvlinks", "nvswitches", "nics", "gpus", "servers", "groups")
#: Every kind but risk groups: what ``kind="all"`` asks.
ALL_KINDS = JOB_KINDS[:-1]
#: What the job does, mildest first.
ACTIONS = ("unaffected", "run degraded", "swap in a spare", "drop replica", "stop")
#: The actions that stop the job and restart it (an interruption).
INTERRUPTING = ("swap in a spare", "drop replica", "stop")
UNIT_NAMES = {"links": "network link", "switches": "network switch", "nvlinks": "NVLink",
              "nvswitches": "NVSwitch chip", "nics": "NIC", "gpus": "GPU",
              "servers": "server", "groups": "risk group"}
#: Relative difference under which a failed fabric's step counts as the intact one.
SAME_STEP = 1e-9
#: Unaffected orbits printed one per line up to this many; more are one summary line.
SHOWN_UNAFFECTED = 5


@dataclass(frozen=True)
class JobFailureOrbit:
    """One orbit of single failures and what a job does with one of them in place.

    ``multiplicity`` counts the failures the row stands for (physical links for links).
    ``action`` is one of :data:`ACTIONS`; ``interrupts`` says the job stops and restarts.
    ``gpus_cut`` counts the job's GPUs lost or left without a port, ``servers_lost`` and
    ``replicas_lost`` what the restart leaves out. ``step_s`` (expected) and ``step_s_lower``
    (certified: no schedule of the plan is faster) are the step after the failure (after the
    restart when it interrupts; infinite when the job stops); ``tokens_per_s`` the expected
    throughput then and ``tokens_per_s_upper`` the certified ceiling.
    """

    representative: str
    members: tuple[Any, ...]
    multiplicity: int
    kind: str
    tier: str | None
    action: str
    gpus_cut: int
    servers_lost: int
    replicas_lost: int
    step_s: float
    step_s_lower: float
    tokens_per_s: float
    tokens_per_s_upper: float
    note: str
    seconds: float

    @property
    def interrupts(self) -> bool:
        return self.action in INTERRUPTING


@dataclass
class JobFailureTable:
    """What :func:`job_failures` returns: one row per orbit and failure kind.

    ``intact_*`` is the job on the intact fabric; ``spares`` the spare servers a restart can
    take; ``share`` of a row is its tokens per second over the intact ones.
    """

    fabric_name: str
    job: TrainingJob
    kinds: tuple[str, ...]
    intact_step_s: float
    intact_step_s_lower: float
    intact_tokens_per_s: float
    spares: int
    symmetry: str
    order: str = "fabric"
    rows: list[JobFailureOrbit] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def solves(self) -> int:
        """Failed fabrics solved (one per orbit that leaves the job running)."""
        return sum(1 for r in self.rows if r.action in ("run degraded", "unaffected")
                   and not r.note.startswith("not solved"))

    @property
    def units(self) -> int:
        return sum(r.multiplicity for r in self.rows)

    def share(self, row: JobFailureOrbit) -> float:
        """The row's tokens per second over the intact job's."""
        if not isinstance(row, JobFailureOrbit):
            raise fail("JobFailureTable.share", "row", "a JobFailureOrbit (one of .rows)", row)
        return row.tokens_per_s / self.intact_tokens_per_s

    @property
    def worst(self) -> JobFailureOrbit | None:
        """The orbit that leaves the job the least throughput."""
        return min(self.rows, key=lambda r: (r.tokens_per_s, -r.multiplicity), default=None)

    def by_kind(self) -> dict[str, dict[str, float]]:
        """Per kind: units, the share of them that interrupt the job, and the mean share of
        throughput kept (over units) when the failure is in place."""
        out: dict[str, dict[str, float]] = {}
        for kind in self.kinds:
            rows = [r for r in self.rows if r.kind == kind]
            units = sum(r.multiplicity for r in rows)
            if not units:
                out[kind] = {"units": 0, "interrupting": 0.0, "kept": 1.0}
                continue
            out[kind] = {
                "units": units,
                "interrupting": sum(r.multiplicity for r in rows if r.interrupts) / units,
                "kept": sum(r.multiplicity * self.share(r) for r in rows) / units}
        return out

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per row (members as their count), with its share of the intact job."""
        out = []
        for r in self.rows:
            rec = asdict(r)
            rec["members"] = len(r.members)
            rec["interrupts"] = r.interrupts
            rec["share"] = self.share(r)
            out.append(rec)
        return out

    def __str__(self) -> str:
        lines = [f"job failures     {self.job.describe()} on {self.fabric_name}: "
                 f"{self.units} single failures in {len(self.rows)} orbits "
                 f"({', '.join(self.kinds)}), {self.solves} solves, {self.seconds:.1f} s",
                 f"intact           step {self.intact_step_s:.4g} s (>= "
                 f"{self.intact_step_s_lower:.4g} s), {self.intact_tokens_per_s:,.0f} tokens/s"
                 f"; {self.spares} spare servers",
                 f"symmetry         {self.symmetry}",
                 f"{'orbit':<36}{'count':>7}  {'action':<16}{'step s':>10}  {'tokens/s':>8}"]
        # Failures the job does not feel (often most of them: links of idle servers) are one
        # line once there are more than a few; the rows keep every orbit.
        calm = [r for r in self.rows if r.action == "unaffected"]
        shown = self.rows if len(calm) <= SHOWN_UNAFFECTED else [
            r for r in self.rows if r.action != "unaffected"]
        for r in shown:
            step = "-" if not math.isfinite(r.step_s) else f"{r.step_s:.4g}"
            lines.append(f"{r.representative[:35]:<36}{r.multiplicity:>7}  {r.action:<16}"
                         f"{step:>10}  {100 * self.share(r):>7.1f}%")
        if shown is not self.rows:
            step = max(r.step_s for r in calm)
            kept = min(self.share(r) for r in calm)
            lines.append(f"{f'({len(calm)} orbits)':<36}{sum(r.multiplicity for r in calm):>7}"
                         f"  {'unaffected':<16}{step:>10.4g}  {100 * kept:>7.1f}%")
        return "\n".join(lines)


_SCALE_UP: dict[tuple[Any, Any], bool] = {}


def _up(arc: dict[str, Any]) -> bool:
    """Whether an arc is scale-up, asked once per (tier, tech) pair (a 16K fabric has half
    a million arcs and a handful of pairs)."""
    key = (arc.get("tier"), arc.get("tech"))
    found = _SCALE_UP.get(key)
    if found is None:
        found = _SCALE_UP[key] = is_scale_up(*key)
    return found


@dataclass(frozen=True)
class _Unit:
    """One single failure: its label, member, weight, the pattern it removes from the fabric
    (None for GPUs and servers, which stay in the graph), and the GPUs it takes."""

    label: str
    member: Any
    weight: int
    pattern: Pattern | None
    gpus: frozenset = frozenset()


class _Attachment:
    """Each GPU's network ports and scale-up links, read once: what a failure cuts off."""

    def __init__(self, fab: Fabric) -> None:
        g = fab.graph
        adj, nodes = g.adj, g.nodes
        self.fab = fab
        self.net: dict[Hashable, list[tuple[frozenset, Hashable]]] = {}
        self.up: dict[Hashable, list[tuple[frozenset, Hashable]]] = {}
        # Physical links of each GPU's network ports and scale-up links (without NIC nodes,
        # a single failed link cuts a GPU off exactly when it holds all of one of them).
        self.links: dict[Hashable, tuple[int, int]] = {}
        self.nic_nodes = False
        for e in fab.endpoints:
            net, up = [], []
            net_links = up_links = 0
            for w, d in adj[e].items():
                if _up(d):
                    up.append((frozenset((e, w)), w))
                    up_links += int(d.get("links", 1))
                elif nodes[w].get("role") == "nic":
                    # A NIC node: the GPU's ports are the NIC's links into the network.
                    net += [(frozenset((w, x)), x) for x in adj[w] if x != e]
                    net.append((frozenset((e, w)), w))
                    self.nic_nodes = True
                else:
                    net.append((frozenset((e, w)), w))
                    net_links += int(d.get("links", 1))
            self.net[e], self.up[e] = net, up
            self.links[e] = (net_links, up_links)
        self.near: dict[Hashable, set[Hashable]] = {}
        for e in fab.endpoints:
            for pair, far in self.net[e] + self.up[e]:
                for w in pair | {far}:
                    self.near.setdefault(w, set()).add(e)
        self.bundles = _all_bundles(fab)

    def cut_off(self, pattern: Pattern) -> frozenset:
        """GPUs ``pattern`` leaves without any network port or without any scale-up link
        (of those that had some)."""
        g = self.fab.graph
        if not pattern.switches and len(pattern.links) == 1 and not self.nic_nodes:
            return self._one_link(pattern)
        touched: set[Hashable] = set()
        for w in pattern.switches:
            touched |= self.near.get(w, set())
        for pair in pattern.links:
            # A link is a port or scale-up link only of the GPUs both of its ends serve.
            u, v = tuple(pair)
            touched |= self.near.get(u, set()) & self.near.get(v, set())

        def gone(pair: frozenset, far: Hashable) -> bool:
            if pair & pattern.switches or far in pattern.switches:
                return True
            n = pattern.links.get(pair)
            if n is None:
                return False
            u, v = tuple(pair)
            return n == 0 or n >= int(g[u][v].get("links", 1))

        out = set()
        for e in touched:
            for ports in (self.net[e], self.up[e]):
                if ports and all(gone(pair, far) for pair, far in ports):
                    out.add(e)
        return frozenset(out)


    def _one_link(self, pattern: Pattern) -> frozenset:
        """:meth:`cut_off` of one failed bundle (some of its links): a GPU at one end loses
        that side when the links failed are all the links of its ports, or of its scale-up
        links, and the bundle is one of them."""
        ((pair, n),) = pattern.links.items()
        u, v = tuple(pair)
        lost = n or int(self.fab.graph[u][v].get("links", 1))
        out = set()
        for e in (u, v):
            if e not in self.links:
                continue
            far = v if e == u else u
            net_links, up_links = self.links[e]
            side = (up_links if any(w == far for _, w in self.up[e]) else net_links)
            if lost >= side:
                out.add(e)
        return frozenset(out)


def _all_bundles(fab: Fabric) -> list[tuple[Hashable, Hashable, int, str, bool]]:
    """Every bundle once: its ends, physical links, tier and whether it is scale-up."""
    adj = fab.graph.adj
    order = {u: i for i, u in enumerate(adj)}
    out = []
    for u, nbrs in adj.items():
        i = order[u]
        for v, d in nbrs.items():
            # A bundle is met first from its end that comes first in the node order (or
            # from its only arc): no set of the 200,000 pairs of a 16K-GPU fabric to keep.
            if i < order[v] or u not in adj[v]:
                out.append((u, v, int(d.get("links", 1)), str(d.get("tier", "link")), _up(d)))
    return out


def _bundles(attach: _Attachment, scale_up: bool, tiers: frozenset[str] | None
             ) -> list[tuple[Hashable, Hashable, int, str]]:
    return [(u, v, n, tier) for u, v, n, tier, up in attach.bundles
            if up == scale_up and (tiers is None or tier in tiers)]


def _units(fab: Fabric, kind: str, tiers: frozenset[str] | None,
           attach: _Attachment) -> list[_Unit]:
    """Every single failure of ``kind`` on ``fab``."""
    g = fab.graph
    if kind in ("links", "nvlinks"):
        return [_Unit(f"{'link' if kind == 'links' else 'NVLink'} {u}-{v}", (u, v), n,
                      Pattern({frozenset((u, v)): 1}, frozenset()))
                for u, v, n, _ in _bundles(attach, kind == "nvlinks", tiers)]
    if kind in ("switches", "nvswitches"):
        out = []
        for w, role in g.nodes(data="role"):
            if role != "switch":
                continue
            arcs = list(g.out_edges(w, data=True))
            up = any(_up(d) for _, _, d in arcs)
            if up != (kind == "nvswitches"):
                continue
            if tiers is not None and not any(str(d.get("tier", "link")) in tiers
                                             for _, _, d in arcs):
                continue
            out.append(_Unit(f"switch {w}", w, 1, Pattern({}, frozenset([w]))))
        return out
    if kind == "nics":
        out = []
        for e in fab.endpoints:
            ports = attach.net[e]
            if not ports:
                continue
            nics = frozenset(w for _, w in ports if g.nodes[w].get("role") == "nic")
            pattern = (Pattern({}, nics) if nics
                       else Pattern({pair: 0 for pair, _ in ports}, frozenset()))
            out.append(_Unit(f"NIC of {e}", e, 1, pattern))
        return out
    if kind == "gpus":
        return [_Unit(f"GPU {e}", e, 1, None, frozenset([e])) for e in fab.endpoints]
    if kind == "servers":
        servers: dict[Hashable, list[Hashable]] = {}
        for e in fab.endpoints:
            servers.setdefault(server_of(fab, e), []).append(e)
        return [_Unit(f"server {s}", s, 1, None, frozenset(gpus))
                for s, gpus in servers.items()]
    return [_Unit(grp.name, grp.name, 1,
                  Pattern({pair: 0 for pair in grp.links}, frozenset(grp.switches)))
            for grp in risk_groups(fab)]


def _tier(fab: Fabric, pattern: Pattern | None) -> str | None:
    if pattern is None:
        return None
    g = fab.graph
    tiers = {str(g[u][v].get("tier", "link")) for u, v in (tuple(p) for p in pattern.links)}
    tiers |= {str(d.get("tier", "link")) for w in pattern.switches
              for _, _, d in g.out_edges(w, data=True)}
    return ", ".join(sorted(tiers)) or None


class _LazyKeys:
    """:class:`FailureSymmetry` made when a failure that leaves the job running asks for a
    key (a table of GPUs, NICs and servers solves nothing and needs none)."""

    def __init__(self, fab: Fabric, use_symmetry: bool) -> None:
        self.fab, self.use_symmetry, self._keys = fab, use_symmetry, None
        self.symmetry_note = "not needed: no failure leaves the job running"

    def key(self, pattern: Pattern) -> Hashable:
        if self._keys is None:
            self._keys = FailureSymmetry(self.fab, use_symmetry=self.use_symmetry)
        key = self._keys.key(pattern)
        self.symmetry_note = self._keys.symmetry_note
        return key


class _JobView:
    """The job on the intact fabric: its GPUs, their servers and replicas, the spares."""

    def __init__(self, fab: Fabric, job: TrainingJob, placement: Sequence[Hashable] | None,
                 spares: int | None, intact: TrainingStep) -> None:
        job = self.job = intact.job
        # Ranks in placement order (checked by training_step), tp fastest: the grid's axes
        # are (pp, dp, ep, cp, tp), so a rank's replica is its dp coordinate.
        self.gpus = tuple(fab.endpoints[:job.gpus] if placement is None else placement)
        shape = (job.pp, job.dp_set, job.ep, job.cp, job.tp)
        dp_of_rank = np.unravel_index(np.arange(job.gpus), shape)[1]
        self.replica = {gpu: int(dp_of_rank[r]) for r, gpu in enumerate(self.gpus)}
        self.server = {e: server_of(fab, e) for e in fab.endpoints}
        self.server_gpus: dict[Hashable, list[Hashable]] = {}
        for e, s in self.server.items():
            self.server_gpus.setdefault(s, []).append(e)
        used = {self.server[g] for g in self.gpus}
        self.spares = len(self.server_gpus) - len(used) if spares is None else spares
        self.intact = intact

    def outcome(self, lost: frozenset) -> tuple[str, int, int, int, float]:
        """(action, GPUs cut, servers lost, replicas lost, throughput share) of a failure
        that takes ``lost`` GPUs (of the fabric) out of service."""
        cut = [g for g in lost if g in self.replica]
        if not cut:
            return "unaffected", 0, 0, 0, 1.0
        servers = {self.server[g] for g in cut}
        replicas = {self.replica[g] for s in servers for g in self.server_gpus[s]
                    if g in self.replica}
        dp = self.job.dp_set
        if self.spares >= len(servers):
            return "swap in a spare", len(cut), len(servers), len(replicas), 1.0
        if len(replicas) < dp:
            return ("drop replica", len(cut), len(servers), len(replicas),
                    (dp - len(replicas)) / dp)
        return "stop", len(cut), len(servers), len(replicas), 0.0


def _check_kinds(func: str, kind: Any) -> tuple[str, ...]:
    if isinstance(kind, str):
        if kind == "all":
            return ALL_KINDS
        return (check_choice(func, "kind", kind, JOB_KINDS + ("all",)),)
    if not isinstance(kind, Sequence) or not kind:
        raise fail(func, "kind", "a kind or a list of kinds of " + ", ".join(JOB_KINDS)
                   + ", or 'all'", kind)
    kinds = tuple(check_choice(func, "kind", k, JOB_KINDS) for k in kind)
    if len(set(kinds)) != len(kinds):
        raise fail(func, "kind", "kinds named once each", kind)
    return kinds


def _check_tier_filter(func: str, fab: Fabric, tiers: Any) -> frozenset[str] | None:
    if tiers is None:
        return None
    if isinstance(tiers, str):
        names = [tiers]
    elif isinstance(tiers, list | tuple | set | frozenset) and tiers \
            and all(isinstance(t, str) for t in tiers):
        names = list(tiers)
    else:
        raise fail(func, "tiers", "None, a tier name or a non-empty list of tier names", tiers)
    known = {str(d.get("tier", "link")) for _, _, d in fab.graph.edges(data=True)}
    for t in names:
        if t not in known:
            raise InvalidParameterError(f"{func}(): tiers names {t!r}, not a tier of "
                                        f"{fab.name} (tiers: {', '.join(sorted(known))})")
    return frozenset(names)


def job_failures(fab: Fabric, job: TrainingJob, kind: str | Sequence[str] = "all",
                 tiers: str | Sequence[str] | None = None, *,
                 placement: Sequence[Hashable] | None = None, spares: int | None = None,
                 symmetry: bool = True, catalog: Catalog | None = None,
                 order: str = "fabric", solve: bool = True,
                 _func: str = "job_failures") -> JobFailureTable:
    """Every single failure of the given kinds, as the training job sees it.

    Parameters
    ----------
    fab : Fabric
        The intact fabric.
    job : TrainingJob
    kind : str or list of str
        Any of :data:`JOB_KINDS`, or ``"all"`` (every kind but risk groups).
    tiers : str or list of str, optional
        Only links and switches of these tiers.
    placement : sequence of GPU names, optional
        As in :func:`~fabricopt.training_step`.
    spares : int, optional
        Spare servers a restart can take in place of lost ones; default the servers the job
        leaves idle on this fabric.
    symmetry : bool
        Group failures the fabric's symmetry maps onto each other (default True; used only
        when the job fills the fabric in the default placement, else every failure that
        leaves the job running is solved apart).
    catalog : Catalog, optional
        Where the GPU's figures come from.
    order : {"fabric", "lost"}
        Rows in the fabric's order, or the costliest (least throughput kept) first.
    solve : bool
        Find the step of every failure that leaves the job running on the failed fabric
        (default); False keeps the intact step for them (fast: only the intact step is
        solved; the certified lower bound stays valid, the expected step is optimistic).

    Returns
    -------
    JobFailureTable

    Examples
    --------
    One scalable unit of a SuperPOD (32 DGX H100, one rail-optimized plane) and Llama 3 8B
    over every GPU (tp 8, so 32 data-parallel replicas, one per server). A lost GPU-to-leaf
    link leaves its GPU without a port: the job stops and, with no idle server to swap in,
    restarts without that server's replica. A leaf holds one GPU of every server: every
    replica loses one, so the job waits for the repair. The data-parallel rings stay on their
    rail's leaf, so a spine or one of a leaf's 8 links to it changes nothing.

    >>> import fabricopt as fo
    >>> job = fo.TrainingJob("llama3-8b", tp=8, global_batch=256, seq_len=8192)
    >>> t = job_failures(fo.superpod(1), job, kind=["links", "switches"])
    >>> [(r.tier, r.multiplicity, r.action) for r in t.rows]  # doctest: +NORMALIZE_WHITESPACE
    [('gpu-leaf', 256, 'drop replica'), ('leaf-spine', 256, 'unaffected'),
     ('gpu-leaf, leaf-spine', 8, 'stop'), ('leaf-spine', 4, 'unaffected')]
    >>> r = t.rows[0]
    >>> round(t.share(r), 4)  # 31 / 32 replicas
    0.9688
    """
    func = _func  # the public function the caller called, for its errors
    start = time.perf_counter()
    check_fabric(func, fab)
    if not isinstance(job, TrainingJob):
        raise fail(func, "job", "a TrainingJob", type(job).__name__)
    kinds = _check_kinds(func, kind)
    tier_set = _check_tier_filter(func, fab, tiers)
    if spares is not None:
        check_int(func, "spares", spares, minimum=0)
    symmetry = check_bool(func, "symmetry", symmetry)
    solve = check_bool(func, "solve", solve)
    check_choice(func, "order", order, ("fabric", "lost"))
    try:
        intact = training_step(fab, job, placement, catalog=catalog)
    except FabricOptError as exc:  # the job's own checks, said as the function called
        raise type(exc)(str(exc).replace("training_step(): ", f"{func}(): ", 1)) from None
    view = _JobView(fab, job, placement, spares, intact)
    fills = placement is None and len(view.gpus) == len(fab.endpoints)
    keys = _LazyKeys(fab, symmetry and fills)
    # The walk over every single failure makes a few objects per failure and no cycles:
    # with the collector on, its passes over the fabric's graph took half of the walk of a
    # 16,384-GPU fabric (the solves below run with it on).
    with paused_gc():
        attach = _Attachment(fab)
    table = JobFailureTable(fab.name, intact.job, kinds, intact.step_s, intact.step_s_lower,
                            intact.tokens_per_s, view.spares, "", order)
    for k in kinds:
        orbits: dict[Hashable, dict[str, Any]] = {}
        with paused_gc():
            for unit in _units(fab, k, tier_set, attach):
                lost = unit.gpus | (attach.cut_off(unit.pattern) if unit.pattern
                                    else frozenset())
                outcome = view.outcome(lost)
                running = outcome[0] == "unaffected" and unit.pattern is not None
                # Unsolved (solve=False), every failure that leaves the job running keeps
                # the intact step: one row per kind and outcome says it, no orbit keys.
                key = ((keys.key(unit.pattern) if running and solve else None), outcome[:4])
                o = orbits.setdefault(key, {"unit": unit, "members": [], "count": 0,
                                            "outcome": outcome, "solve": running})
                o["members"].append(unit.member)
                o["count"] += unit.weight
        for o in orbits.values():
            table.rows.append(_row(fab, k, o, view, catalog, solve))
    table.symmetry = (keys.symmetry_note if keys.use_symmetry or keys._keys is None else
                      "not used (the job leaves GPUs idle, a placement was given, or "
                      "symmetry=False): equal failures only")
    if order == "lost":
        table.rows.sort(key=lambda r: (r.tokens_per_s, r.representative))
    table.seconds = time.perf_counter() - start
    return table


def _row(fab: Fabric, kind: str, orbit: dict[str, Any], view: _JobView,
         catalog: Catalog | None, solve: bool) -> JobFailureOrbit:
    t0 = time.perf_counter()
    unit: _Unit = orbit["unit"]
    action, cut, servers, replicas, share = orbit["outcome"]
    intact = view.intact
    tokens_step = intact.job.tokens_per_step
    step, lower, note = intact.step_s, intact.step_s_lower, ""
    if orbit["solve"] and not solve:
        action = "run degraded"
        note = ("not solved (solve=False): the intact step, an optimistic figure; its "
                "certified bound still holds, a failure only removes capacity")
    elif orbit["solve"]:
        links, switches = unit.pattern.removal(fab)
        with paused_gc():  # a copy of the graph: millions of objects, no garbage
            failed = fab.without(links=links, switches=switches)
        try:
            s = training_step(failed, view.job, view.gpus, catalog=catalog)
        except InvalidParameterError as exc:
            # No path left for some dimension's traffic: the job cannot run until repaired.
            action, share, note = "stop", 0.0, str(exc)
        else:
            step, lower = s.step_s, s.step_s_lower
            if abs(step - intact.step_s) > SAME_STEP * intact.step_s \
                    or abs(lower - intact.step_s_lower) > SAME_STEP * intact.step_s_lower:
                action = "run degraded"
            share = intact.step_s / step
    elif action == "swap in a spare":
        note = "restarts on a spare server: the intact step"
    elif action == "drop replica":
        note = (f"restarts without {replicas} of {intact.job.dp_set} data-parallel replicas "
                "(the same step, fewer tokens per step)")
    elif action == "stop":
        note = "every replica lost a server and no spare is left: waits for the repair"
    if action == "stop":
        step = lower = math.inf
        tokens, upper = 0.0, 0.0
    else:
        tokens = share * intact.tokens_per_s if not orbit["solve"] else tokens_step / step
        kept = share if not orbit["solve"] else 1.0
        upper = kept * tokens_step / lower
    return JobFailureOrbit(unit.label, tuple(orbit["members"]), orbit["count"], kind,
                           _tier(fab, unit.pattern), action, cut, servers, replicas, step,
                           lower, tokens, upper, note, time.perf_counter() - t0)


def single_failures(fab: Fabric, kind: str | Sequence[str] = "links",
                    tiers: str | Sequence[str] | None = None, *,
                    job: TrainingJob | ServingJob | None = None,
                    spares: int | None = None, placement: Sequence[Hashable] | None = None,
                    **options: Any) -> Any:
    """The N-1 table: every single failure of a kind, one solve per orbit.

    Without ``job``: uniform all-to-all throughput per failure orbit
    (:func:`fabricopt.failures.single_failures`, whose options ``traffic``, ``method``,
    ``warm_start``, ``symmetry``, ``intact`` it takes). With ``job``: per failure orbit the
    job's step and tokens per second with the failure in place and what the job does
    (:func:`job_failures`, whose options ``symmetry``, ``catalog``, ``order`` and ``solve``
    it takes;
    ``kind`` may then be any of :data:`JOB_KINDS` or ``"all"``). With a serving deployment
    (``job=ServingJob(model, plan)``): per failure orbit the replicas it takes out and the
    output tokens per second the rest serve
    (:func:`~fabricopt.workload.serving_failures.serving_failures`, the same options but
    ``placement``).

    Examples
    --------
    >>> import fabricopt as fo
    >>> [round(r.lost, 3) for r in single_failures(fo.ring(6)).rows]
    [0.5]
    >>> job = fo.TrainingJob("llama3-8b", tp=8, global_batch=64, seq_len=8192)
    >>> t = single_failures(fo.dgx_h100(), kind="nvswitches", job=job)
    >>> [(r.multiplicity, r.action) for r in t.rows]  # chips of 5 and of 4 links per GPU
    [(2, 'run degraded'), (2, 'run degraded')]
    """
    if job is None:
        if spares is not None or placement is not None:
            raise InvalidParameterError("single_failures(): spares and placement are read only "
                                        "with a job (job=TrainingJob(...))")
        return _fabric_single_failures(fab, kind, tiers, **options)
    allowed = {"symmetry", "catalog", "order", "solve", "_func"}
    if not isinstance(job, TrainingJob):
        # cycle: serving_failures builds on this module's failure units
        from .serving_failures import serving_failures
        if not isinstance(job, ServingJob):
            raise fail(options.get("_func", "single_failures"), "job",
                       "a TrainingJob or a ServingJob", type(job).__name__)
        if placement is not None:
            raise InvalidParameterError("single_failures(): placement is not read with a "
                                        "ServingJob (its replicas tile the fabric in order)")
        wrong = sorted(set(options) - allowed)
        if wrong:
            raise InvalidParameterError(f"single_failures(): {wrong[0]!r} is not read with a "
                                        f"job (options: spares, {', '.join(sorted(allowed))})")
        return serving_failures(fab, job, kind, tiers, spares=spares, **options)
    wrong = sorted(set(options) - allowed)
    if wrong:
        raise InvalidParameterError(f"single_failures(): {wrong[0]!r} is not read with a job "
                                    f"(with job=..., options: spares, placement, "
                                    f"{', '.join(sorted(allowed))})")
    options.setdefault("_func", "single_failures")
    return job_failures(fab, job, kind, tiers, spares=spares, placement=placement, **options)


def criticality(fab: Fabric, kind: str | Sequence[str] = "links",
                tiers: str | Sequence[str] | None = None, *,
                job: TrainingJob | ServingJob | None = None,
                spares: int | None = None, placement: Sequence[Hashable] | None = None,
                **options: Any) -> Any:
    """Orbits of single failures, costliest first: by all-to-all throughput lost
    (:func:`fabricopt.failures.criticality`), or with ``job`` (a training job or a serving
    deployment) by the job's tokens per second lost (:func:`single_failures` with
    ``order="lost"``).

    Examples
    --------
    >>> import fabricopt as fo
    >>> job = fo.TrainingJob("llama3-8b", tp=8, global_batch=64, seq_len=8192)
    >>> t = criticality(fo.dgx_h100(), kind=["nvswitches", "gpus"], job=job)
    >>> t.rows[0].action, t.rows[-1].action
    ('stop', 'run degraded')
    """
    if job is None:
        if spares is not None or placement is not None:
            raise InvalidParameterError("criticality(): spares and placement are read only "
                                        "with a job (job=TrainingJob(...))")
        return _fabric_criticality(fab, kind, tiers, **options)
    options.setdefault("order", "lost")
    options.setdefault("_func", "criticality")
    return single_failures(fab, kind, tiers, job=job, spares=spares, placement=placement,
                           **options)


__all__ = ["ACTIONS", "ALL_KINDS", "INTERRUPTING", "JOB_KINDS", "JobFailureOrbit",
           "JobFailureTable", "criticality", "job_failures", "single_failures"]
