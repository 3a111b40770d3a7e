"""Single failures seen by a serving deployment: per failure orbit, the output tokens per
second the fabric's replicas still serve, and what the deployment does.

A serving deployment is the fabric tiled with replicas of one :class:`ServingPlan` (as
:func:`~fabricopt.serving_estimate` and :func:`~fabricopt.serving_capacity` place them:
along the fabric's GPUs in order, a disaggregated plan pairing each prefill replica with
the next, decode, one). Unlike a training job, a lost replica does not stop the others: the
load balancer sends its requests elsewhere. The rules (``docs/goodput.md#serving``):

* A failure that takes a GPU (a GPU, a server) takes the replica holding it out. So does a
  failure that leaves a GPU without the side of the fabric its replica talks over: without
  any network port when the replica (with its disaggregated partner) spans several servers,
  without any scale-up link when the replica has another GPU in its server. A replica whose
  traffic stays in one server keeps serving when its GPUs lose the network.
* A lost replica is rebuilt on a spare server when there are enough (the idle servers by
  default: full capacity once its weights are reloaded); else the deployment serves on with
  the replicas left (a disaggregated deployment re-splits them between prefill and decode);
  with none left, it waits for the repair.
* Every other failure leaves every replica running on the failed fabric: its
  communication phases (tensor, pipeline and expert parallel, the KV-cache transfer) are
  found there, with one solve per failure orbit, and the analytic steady state
  (:func:`~fabricopt.workload.serving_capacity.throughput`) gives its tokens per second,
  TPOT and TTFT at full load. A phase's time is that of every replica's traffic at once, so
  the slowest replica sets it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .._checks import check_bool, check_choice, check_int, fail
from ..catalog import Catalog
from ..errors import FabricOptError, InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..failures.orbits import Pattern
from .job_failures import (
    INTERRUPTING,
    SAME_STEP,
    _Attachment,
    _check_kinds,
    _check_tier_filter,
    _LazyKeys,
    _tier,
    _units,
)
from .reliability import server_of
from .serving_capacity import Throughput, _check_fits, throughput
from .serving_replica import Replica, ServingJob, replica


@dataclass(frozen=True)
class ServingFailureOrbit:
    """One orbit of single failures and what a serving deployment does with one in place.

    ``action`` is one of :data:`~fabricopt.workload.job_failures.ACTIONS` ("drop replica":
    it serves on without them; "stop": no replica left). ``replicas_lost`` counts the
    replicas taken out (before a spare replaces them), ``servers_lost`` the servers of the
    GPUs that took them. ``tokens_per_s`` is the output tokens per second served with the
    failure in place (after the spare swap); ``tpot_s`` and ``ttft_s`` the analytic steady
    state's time per output token and time to first token at full load (infinite when the
    deployment stops).
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
    replicas_left: int
    tokens_per_s: float
    tpot_s: float
    ttft_s: float
    note: str
    seconds: float

    @property
    def interrupts(self) -> bool:
        """Whether some replica stops (its requests in flight are lost and retried)."""
        return self.action in INTERRUPTING


@dataclass
class ServingFailureTable:
    """What ``single_failures(fab, job=ServingJob(...))`` returns: one row per orbit and kind.

    ``intact_*`` is the deployment on the intact fabric, ``replicas`` its replicas, ``spares``
    the spare servers; ``share`` of a row is its tokens per second over the intact ones.
    """

    fabric_name: str
    job: ServingJob
    kinds: tuple[str, ...]
    replicas: int
    intact_tokens_per_s: float
    intact_tpot_s: float
    intact_ttft_s: float
    spares: int
    symmetry: str
    order: str = "fabric"
    rows: list[ServingFailureOrbit] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def units(self) -> int:
        return sum(r.multiplicity for r in self.rows)

    def share(self, row: ServingFailureOrbit) -> float:
        """The row's tokens per second over the intact deployment's."""
        if not isinstance(row, ServingFailureOrbit):
            raise fail("ServingFailureTable.share", "row", "a ServingFailureOrbit (one of "
                       ".rows)", row)
        return row.tokens_per_s / self.intact_tokens_per_s

    @property
    def worst(self) -> ServingFailureOrbit | None:
        """The orbit that leaves the deployment the least throughput."""
        return min(self.rows, key=lambda r: (r.tokens_per_s, -r.multiplicity), default=None)

    def by_kind(self) -> dict[str, dict[str, float]]:
        """Per kind: units, the share of them that take a replica out, and the mean share of
        throughput kept (over units) with the failure in place."""
        out: dict[str, dict[str, float]] = {}
        for kind in self.kinds:
            rows = [r for r in self.rows if r.kind == kind]
            units = sum(r.multiplicity for r in rows) or 1
            out[kind] = {"units": sum(r.multiplicity for r in rows),
                         "interrupting": sum(r.multiplicity for r in rows if r.interrupts)
                         / units,
                         "kept": sum(r.multiplicity * self.share(r) for r in rows) / units
                         if rows else 1.0}
        return out

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per row (members as their count), with its share of the intact rate."""
        return [{**asdict(r), "members": len(r.members), "interrupts": r.interrupts,
                 "share": self.share(r)} for r in self.rows]

    def __str__(self) -> str:
        lines = [f"serving failures {self.job.describe()} on {self.fabric_name}: "
                 f"{self.units} single failures in {len(self.rows)} orbits "
                 f"({', '.join(self.kinds)}), {self.seconds:.1f} s",
                 f"intact           {self.replicas} replicas, {self.intact_tokens_per_s:,.0f} "
                 f"tokens/s, TPOT {self.intact_tpot_s * 1e3:.3g} ms, TTFT "
                 f"{self.intact_ttft_s:.3g} s; {self.spares} spare servers",
                 f"symmetry         {self.symmetry}",
                 f"{'orbit':<36}{'count':>7}  {'action':<16}{'replicas':>9}  {'tokens/s':>8}"]
        for r in self.rows:
            lines.append(f"{r.representative[:35]:<36}{r.multiplicity:>7}  {r.action:<16}"
                         f"{r.replicas_left:>9}  {100 * self.share(r):>7.1f}%")
        return "\n".join(lines)


def _gone(fab: Fabric, pattern: Pattern, pair: frozenset, far: Hashable) -> bool:
    """Whether ``pattern`` takes the port or link ``pair`` (towards ``far``) away."""
    if pair & pattern.switches or far in pattern.switches:
        return True
    n = pattern.links.get(pair)
    if n is None:
        return False
    u, v = tuple(pair)
    return n == 0 or n >= int(fab.graph[u][v].get("links", 1))


class _Deployment:
    """The replicas on the intact fabric: their GPUs and servers, which side of the fabric
    each talks over, the spares."""

    def __init__(self, fab: Fabric, r: Replica, spares: int | None) -> None:
        per, plan = r.plan.gpus, r.plan
        gpus = fab.endpoints[:r.replicas * per]
        self.replica_of = {e: i // per for i, e in enumerate(gpus)}
        self.server = {e: server_of(fab, e) for e in fab.endpoints}
        members = [gpus[i * per:(i + 1) * per] for i in range(r.replicas)]
        self.needs_net, self.needs_up = [], []
        for i, own in enumerate(members):
            partner = i ^ 1 if plan.disaggregated and (i ^ 1) < r.replicas else i
            servers = [self.server[e] for e in own]
            talk = {self.server[e] for e in own + members[partner]}
            self.needs_net.append(len(talk) > 1)
            self.needs_up.append(len(servers) > len(set(servers)))
        used = {self.server[e] for e in gpus}
        self.spares = len(set(self.server.values())) - len(used) if spares is None else spares
        self.r = r

    def outcome(self, fab: Fabric, attach: _Attachment, unit: Any
                ) -> tuple[str, int, int, int]:
        """(action, GPUs cut, servers lost, replicas lost) of one failure."""
        taking: set[Hashable] = {e for e in unit.gpus if e in self.replica_of}
        if unit.pattern is not None:
            for e in attach.cut_off(unit.pattern):
                i = self.replica_of.get(e)
                if i is None:
                    continue
                net = attach.net[e] and all(_gone(fab, unit.pattern, p, w)
                                            for p, w in attach.net[e])
                up = attach.up[e] and all(_gone(fab, unit.pattern, p, w)
                                          for p, w in attach.up[e])
                if (net and self.needs_net[i]) or (up and self.needs_up[i]):
                    taking.add(e)
        if not taking:
            return "unaffected", 0, 0, 0
        lost = {self.replica_of[e] for e in taking}
        servers = {self.server[e] for e in taking}
        if self.spares >= len(servers):
            return "swap in a spare", len(taking), len(servers), len(lost)
        if len(lost) < self.r.replicas:
            return "drop replica", len(taking), len(servers), len(lost)
        return "stop", len(taking), len(servers), len(lost)


def _steady(r: Replica, job: ServingJob) -> Throughput:
    return throughput(r, job.prompt_len, job.output_len)


def serving_failures(fab: Fabric, job: ServingJob, kind: str | Sequence[str] = "all",
                     tiers: str | Sequence[str] | None = None, *, spares: int | None = None,
                     symmetry: bool = True, catalog: Catalog | None = None,
                     order: str = "fabric", solve: bool = True,
                     _func: str = "single_failures") -> ServingFailureTable:
    """Every single failure of the given kinds, as a serving deployment sees it (the rules
    are in the module docstring); reached as ``fo.single_failures(fab, kind, job=job)``.

    Parameters are those of :func:`~fabricopt.workload.job_failures.job_failures` (no
    placement: the replicas tile the fabric in its GPU order).

    Examples
    --------
    Llama 3 70B in FP8 on tensor-parallel 8 replicas, one per DGX H100 of a 4-server
    rail-optimized pod. A lost server takes its replica out and the other 3 serve on; with a
    spare server, the replica is rebuilt there.

    >>> import fabricopt as fo
    >>> pod = fo.cluster(scale_up=fo.dgx_h100(), nodes=4, scale_out="rail_optimized",
    ...                  nic_gbps=400, leaf_radix=16)
    >>> job = ServingJob("llama3-70b", fo.ServingPlan(tp=8, batch=64, precision="fp8"))
    >>> t = fo.single_failures(pod, kind="servers", job=job)
    >>> [(r.action, r.replicas_left) for r in t.rows]
    [('drop replica', 3)]
    >>> round(t.share(t.rows[0]), 4)  # 3 of 4 replicas, each serving the same rate
    0.75
    >>> fo.single_failures(pod, kind="servers", job=job, spares=1).rows[0].action
    'swap in a spare'
    """
    func = _func
    start = time.perf_counter()
    check_fabric(func, fab)
    if not isinstance(job, ServingJob):
        raise fail(func, "job", "a ServingJob", type(job).__name__)
    kinds = _check_kinds(func, kind)
    tier_set = _check_tier_filter(func, fab, tiers)
    if spares is not None:
        check_int(func, "spares", spares, minimum=0)
    symmetry = check_bool(func, "symmetry", symmetry)
    solve = check_bool(func, "solve", solve)
    check_choice(func, "order", order, ("fabric", "lost"))
    m = job.config
    try:
        r = replica(fab, m, job.plan, gpu=job.gpu, catalog=catalog, func=func)
        _check_fits(func, r, job.prompt_len + job.output_len)
    except FabricOptError as exc:  # the plan's own checks, said as the function called
        raise type(exc)(str(exc).replace("serving_estimate(): ", f"{func}(): ", 1)) from None
    intact = _steady(r, job)
    view = _Deployment(fab, r, spares)
    fills = r.replicas * job.plan.gpus == len(fab.endpoints)
    keys = _LazyKeys(fab, symmetry and fills)
    attach = _Attachment(fab)
    table = ServingFailureTable(fab.name, job, kinds, r.replicas,
                                intact.rate * job.output_len, intact.tpot_s, intact.ttft_s,
                                view.spares, "", order)
    for k in kinds:
        orbits: dict[Hashable, dict[str, Any]] = {}
        for unit in _units(fab, k, tier_set, attach):
            outcome = view.outcome(fab, attach, unit)
            running = outcome[0] == "unaffected" and unit.pattern is not None
            key = ((keys.key(unit.pattern) if running and solve else None), outcome)
            o = orbits.setdefault(key, {"unit": unit, "members": [], "count": 0,
                                        "outcome": outcome, "solve": running and solve})
            o["members"].append(unit.member)
            o["count"] += unit.weight
        for o in orbits.values():
            table.rows.append(_row(fab, k, o, job, r, intact, catalog, func))
    table.symmetry = (keys.symmetry_note if keys.use_symmetry or keys._keys is None else
                      "not used (replicas leave GPUs idle or symmetry=False): equal "
                      "failures only")
    if order == "lost":
        table.rows.sort(key=lambda x: (x.tokens_per_s, x.representative))
    table.seconds = time.perf_counter() - start
    return table


def _row(fab: Fabric, kind: str, orbit: dict[str, Any], job: ServingJob, r: Replica,
         intact: Throughput, catalog: Catalog | None, func: str) -> ServingFailureOrbit:
    t0 = time.perf_counter()
    unit = orbit["unit"]
    action, cut, servers, lost = orbit["outcome"]
    left, now, note = r.replicas, intact, ""
    if orbit["solve"]:
        links, switches = unit.pattern.removal(fab)
        try:
            failed = replica(fab.without(links=links, switches=switches), job.config,
                             job.plan, gpu=job.gpu, catalog=catalog, func=func)
        except InvalidParameterError as exc:
            # No path left for some phase's traffic: no replica serves until the repair.
            action, note = "stop", str(exc)
        else:
            now = _steady(failed, job)
            if any(abs(a - b) > SAME_STEP * b for a, b in (
                    (now.rate, intact.rate), (now.tpot_s, intact.tpot_s),
                    (now.ttft_s, intact.ttft_s))):
                action = "run degraded"
    elif action == "swap in a spare":
        note = "its replicas are rebuilt on spare servers: full capacity"
    elif action == "drop replica":
        left = r.replicas - lost
        now = _steady(replace(r, replicas=left), job)
        note = f"serves on {left} of {r.replicas} replicas"
    elif action == "stop":
        note = "every replica lost and no spare left: waits for the repair"
    if action == "stop":
        left, tokens, tpot, ttft = 0, 0.0, math.inf, math.inf
    else:
        tokens, tpot, ttft = now.rate * job.output_len, now.tpot_s, now.ttft_s
    return ServingFailureOrbit(unit.label, tuple(orbit["members"]), orbit["count"], kind,
                               _tier(fab, unit.pattern), action, cut, servers, lost, left,
                               tokens, tpot, ttft, note, time.perf_counter() - t0)


__all__ = ["ServingFailureOrbit", "ServingFailureTable", "ServingJob", "serving_failures"]
