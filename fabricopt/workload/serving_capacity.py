r"""How many requests per second a fabric serves within latency targets, on which plan, at
what cost per token (``docs/serving.md#capacity-within-targets``).

Three layers, the first analytic, the second simulated:

* :func:`throughput`: the steady state of a replica at full load, in closed form. Colocated,
  a step decodes ``d`` requests and prefills ``c = d P / D`` prompt tokens (``P`` the
  prompt, ``D = output - 1`` the decode steps of a request: what flows in flows out) within
  the budget ``d + c <= chunk`` and ``d <= batch``; a replica serves ``d / (D T(d, c))``
  requests per second. Disaggregated, a prefill replica serves ``chunk / (P T(0, chunk))``,
  a decode replica ``batch / (D T(batch, 0))``, and :func:`balance` splits the replicas so
  that both sides carry the same rate.
* :func:`simulate_serving`: requests under load (:mod:`.serving_load`): TTFT and TPOT
  percentiles and goodput, every replica of the fabric stepping at once.
* :func:`serving_capacity`: for each plan (replica shape, expert parallelism, colocated or
  disaggregated, batch and chunk), the analytic rate within the targets ranks the plans;
  the best are then simulated, and the request rate found by bisection where the
  ``percentile`` of TTFT and of TPOT meet their targets. Cost per million output tokens by
  :func:`~fabricopt.workload.cost.token_cost`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._checks import as_rng, check_choice, check_int, check_positive, did_you_mean
from ..catalog import Catalog
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from .cost import token_cost
from .hardware import PRECISIONS, pick_gpu
from .models import ModelConfig, model
from .serving_load import LENGTHS, Requests, poisson_requests, read_trace, run_engines
from .serving_replica import Replica, ServingPlan, replica
from .serving_targets import TARGET_SPARE, Fastest, target_below_floor
from .step import _levels

#: Percentiles every load result reports.
PERCENTILES = (50, 90, 99)
#: Share of requests (the first to arrive) left out of the percentiles: the warm-up of an
#: empty system.
WARMUP = 0.1
#: Bisection rounds of the rate search, after a first try at :data:`FLOOR` of its ceiling
#: (:data:`CEILING` times the analytic rate): the rate is then found within about 2 %.
SEARCH_ROUNDS = 5
FLOOR = 0.3
#: The rate search's ceiling over the analytic rate: the analytic steady state (at full load,
#: the mean lengths) is the most a plan sustains; above it a queue grows without end, whatever
#: the percentiles of a finite run.
CEILING = 1.0
#: Plans simulated after the analytic ranking, best first; one whose analytic rate (the
#: search's ceiling) is below a rate already found is not.
SIMULATED_PLANS = 3
#: Largest continuous batch tried (engines cap their batch near this).
MAX_BATCH = 1024
CHUNKS = (512, 1024, 2048, 4096, 8192)
#: Most replicas one rate search simulates (a sample of the fabric's, see ``_sample``).
SAMPLE_REPLICAS = 8
#: Most requests one simulation of the rate search draws.
MAX_REQUESTS = 20_000
#: Most requests a simulation takes, and most tokens in a request's prompt or output.
MAX_SIMULATED = 10_000_000
MAX_CONTEXT = 10_000_000


@dataclass
class Throughput:
    """The analytic steady state of a plan: requests per second of the fabric, and the step
    times at that load (s); for a disaggregated plan, its prefill and decode replicas."""

    rate: float
    tpot_s: float
    ttft_s: float
    prefill_replicas: int
    decode_replicas: int
    decode_batch: float


def _prefill_seconds(r: Replica, prompt: int, chunk: int, lower: bool = False) -> float:
    """Seconds to prefill one prompt alone, in chunks."""
    full, rest = divmod(prompt, chunk)
    sizes = [chunk] * full + ([rest] if rest else [])
    c = np.array(sizes, float)
    before = np.concatenate([[0.0], np.cumsum(c)[:-1]])
    t = r.step_seconds(np.zeros_like(c), c, np.zeros_like(c), c * (c / 2 + before),
                       lower=lower)
    return float(t.sum())


def balance(mu_prefill: float, mu_decode: float, units: int) -> tuple[int, int]:
    """Prefill and decode replicas out of ``units`` that serve the most requests:
    ``max min(n_p mu_p, n_d mu_d)`` over whole counts, at least one each.

    >>> balance(2.0, 1.0, 9)     # 3 prefill x 2 = 6 = 6 decode x 1
    (3, 6)
    """
    best = (1, units - 1)
    for n_p in range(1, units):
        if min(n_p * mu_prefill, (units - n_p) * mu_decode) > min(
                best[0] * mu_prefill, best[1] * mu_decode):
            best = (n_p, units - n_p)
    return best


def throughput(r: Replica, prompt: int, output: int) -> Throughput:
    """The analytic steady state of ``r`` (see the module docstring)."""
    p = r.plan
    steps = max(output - 1, 0)
    ttft = _prefill_seconds(r, prompt, p.chunk)
    if p.disaggregated:
        t_p = float(r.step_seconds(0.0, p.chunk, 0.0, p.chunk * p.chunk / 2))
        mu_p = p.chunk / (prompt * t_p)
        kv = p.batch * (prompt + output / 2)
        t_d = float(r.step_seconds(p.batch, 0.0, kv, 0.0)) if steps else 0.0
        mu_d = p.batch / (steps * t_d) if steps else math.inf
        units = r.replicas
        if p.prefill_share is not None:
            n_p = min(max(1, round(units * p.prefill_share)), units - 1)
            split = (n_p, units - n_p)
        else:
            split = balance(mu_p, mu_d, units) if steps else (units - 1, 1)
        rate = min(split[0] * mu_p, split[1] * mu_d)
        ttft += r.kv_transfer_seconds(prompt)
        return Throughput(rate, t_d, ttft, split[0], split[1], p.batch)
    if not steps:
        t = float(r.step_seconds(0.0, p.chunk, 0.0, p.chunk * p.chunk / 2))
        return Throughput(r.replicas * p.chunk / (prompt * t), 0.0, ttft, 0, r.replicas, 0)
    d = min(float(p.batch), p.chunk * steps / (steps + prompt))
    c = d * prompt / steps
    kv = d * (prompt + output / 2)
    t = float(r.step_seconds(d, c, kv, c * prompt / 2))
    return Throughput(r.replicas * d / (steps * t), t, ttft, 0, r.replicas, d)


@dataclass
class ServingLoad:
    """Requests served under load (:func:`simulate_serving`): latencies at the
    :data:`PERCENTILES` (s), goodput (requests per second meeting both targets, as DistServe
    defines it), attainment (their share), output tokens per second."""

    rate: float
    requests: int
    ttft_s: dict[int, float]
    tpot_s: dict[int, float]
    goodput: float
    attainment: float
    tokens_per_s: float
    prefill_replicas: int
    decode_replicas: int
    ttft_all_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    tpot_all_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    def percentile(self, q: float) -> tuple[float, float]:
        """(TTFT, TPOT) at percentile ``q`` (0 to 100) of the requests after the warm-up."""
        if isinstance(q, bool) or not isinstance(q, int | float) or not 0 <= q <= 100:
            raise InvalidParameterError(f"ServingLoad.percentile(): q must be a percentile "
                                        f"from 0 to 100 (99 for p99), got {q!r}")
        return (float(np.percentile(self.ttft_all_s, q)),
                float(np.percentile(self.tpot_all_s, q)) if self.tpot_all_s.size else 0.0)


def _simulate(r: Replica, req: Requests, engines: tuple[int, int], ttft_target: float,
              tpot_target: float, rate: float) -> ServingLoad:
    p = r.plan
    n = len(req)
    prompt, out = req.prompt_tokens, req.output_tokens
    steps = np.maximum(out - 1, 0)
    idx = np.arange(n)

    def step(d: np.ndarray, c: np.ndarray, kv: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        return r.step_seconds(d, c, kv, pairs)

    n_p, n_d = engines
    if p.disaggregated:
        first, _ = run_engines(req.arrival_s, prompt, prompt, np.zeros(n, np.int64),
                               idx % n_p, n_p, p.batch, p.chunk, step)
        transfer = np.array([r.kv_transfer_seconds(float(x)) for x in np.unique(prompt)])
        moved = first + transfer[np.searchsorted(np.unique(prompt), prompt)]
        last = first.copy()
        go = steps > 0
        if go.any():
            k = np.flatnonzero(go)
            _, end = run_engines(moved[k], prompt[k], prompt[k], steps[k],
                                 np.arange(k.size) % n_d, n_d, p.batch, p.batch, step,
                                 prefill=False)
            last[k] = end
    else:
        first, last = run_engines(req.arrival_s, prompt, prompt, steps, idx % n_d, n_d,
                                  p.batch, p.chunk, step)
    keep = idx >= int(WARMUP * n)
    ttft = (first - req.arrival_s)[keep]
    multi = keep & (out > 1)
    tpot = ((last - first) / np.maximum(out - 1, 1))[multi]
    ok_t = (first - req.arrival_s) <= ttft_target
    ok_p = np.where(out > 1, (last - first) / np.maximum(out - 1, 1) <= tpot_target, True)
    met = (ok_t & ok_p)[keep]
    span = float(last.max() - req.arrival_s[0]) or 1.0
    kept = req.arrival_s[keep]
    done = last[keep]
    # The kept requests' rate is the slower of their arrivals and their completions: past
    # saturation they arrive far faster than they are served (1,000/s offered, 8.5/s done).
    window = max(float(kept[-1] - kept[0]), float(done.max() - done.min())) \
        if kept.size > 1 else span
    return ServingLoad(rate, n, {q: float(np.percentile(ttft, q)) for q in PERCENTILES},
                       {q: float(np.percentile(tpot, q)) if tpot.size else 0.0
                        for q in PERCENTILES},
                       float(met.sum() / (window or span)), float(met.mean()),
                       float(out.sum() / span), n_p, n_d, ttft, tpot)


def _engines(r: Replica, prompt: int, output: int) -> tuple[int, int]:
    if r.plan.disaggregated:
        th = throughput(r, prompt, output)
        return th.prefill_replicas, th.decode_replicas
    return 0, r.replicas


def _check_model(func: str, name: str | ModelConfig) -> ModelConfig:
    try:
        return model(name)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{func}(): model_name: {exc}") from None


def _check_target(func: str, name: str, value: object) -> float:
    """A latency target: a number > 0 (``inf``: no target)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidParameterError(f"{func}(): {name} must be a number of seconds > 0 (inf: "
                                    f"no target), got {value!r}")
    return float(value)


def _check_load(func: str, requests: int, prompt_len: int, output_len: int, lengths: str,
                seed: object, catalog: object) -> np.random.Generator:
    """Check the arguments every load shares; the seed's generator."""
    check_int(func, "requests", requests, minimum=100, maximum=MAX_SIMULATED)
    check_int(func, "prompt_len", prompt_len, minimum=1, maximum=MAX_CONTEXT)
    check_int(func, "output_len", output_len, minimum=1, maximum=MAX_CONTEXT)
    check_choice(func, "lengths", lengths, LENGTHS)
    if catalog is not None and not isinstance(catalog, Catalog):
        raise InvalidParameterError(f"{func}(): catalog must be None or a Catalog, got "
                                    f"{catalog!r}")
    return as_rng(seed, func)


def simulate_serving(fab: Fabric, model_name: str | ModelConfig, plan: ServingPlan, *,
                     rate: float | None = None, requests: int = 2000,
                     trace: str | os.PathLike[str] | Requests | None = None,
                     prompt_len: int = 2048, output_len: int = 256, lengths: str = "fixed",
                     ttft_s: float = math.inf, tpot_s: float = math.inf,
                     seed: int | np.random.Generator | None = 0,
                     gpu: str | None = None, catalog: Catalog | None = None) -> ServingLoad:
    """Serve ``requests`` Poisson arrivals at ``rate`` per second (or a ``trace``) on every
    replica of ``fab`` and report TTFT and TPOT percentiles and goodput.

    Parameters
    ----------
    fab : Fabric
    model_name : str or ModelConfig
    plan : ServingPlan
        The replica's shape, batch, chunk and precision; its replicas fill the fabric.
    rate : float
        Requests per second offered to the whole fabric (not with ``trace``).
    requests : int
        How many Poisson arrivals.
    trace : path, Requests or None
        A CSV trace (:func:`~fabricopt.workload.serving_load.read_trace`) instead.
    prompt_len, output_len : int
        Mean lengths of Poisson requests, drawn by ``lengths`` (``"fixed"``,
        ``"exponential"``, ``"lognormal"``).
    ttft_s, tpot_s : float
        The targets goodput and attainment count against.
    seed : int
    gpu, catalog
        As :func:`~fabricopt.serving_estimate`.

    Returns
    -------
    ServingLoad

    Examples
    --------
    >>> import fabricopt as fo
    >>> plan = ServingPlan(tp=8, batch=32, precision="fp8")
    >>> s = simulate_serving(fo.dgx_h100(), "llama3-70b", plan, rate=1.0, requests=200,
    ...                      prompt_len=512, output_len=32)
    >>> s.ttft_s[50] < 0.2 and s.tpot_s[50] < 0.05        # light load: about one step each
    True
    """
    func = "simulate_serving"
    check_fabric(func, fab)
    m = _check_model(func, model_name)
    if not isinstance(plan, ServingPlan):
        raise InvalidParameterError(f"{func}(): plan must be a ServingPlan, got {plan!r}")
    rng = _check_load(func, requests, prompt_len, output_len, lengths, seed, catalog)
    ttft_s = _check_target(func, "ttft_s", ttft_s)
    tpot_s = _check_target(func, "tpot_s", tpot_s)
    if trace is None:
        if rate is None:
            raise InvalidParameterError(f"{func}(): give rate (requests per second) or trace")
        rate = check_positive(func, "rate", rate)
        req = poisson_requests(rate, requests, prompt_len, output_len, lengths=lengths,
                               seed=rng)
    else:
        if rate is not None:
            raise InvalidParameterError(f"{func}(): give rate or trace, not both")
        if isinstance(trace, Requests):
            req = trace
        elif isinstance(trace, (str, os.PathLike)) and os.fspath(trace):
            try:
                req = read_trace(trace)
            except InvalidParameterError as exc:
                raise InvalidParameterError(
                    f"{func}(): trace: {str(exc).split(': ', 1)[-1]}") from None
        else:
            raise InvalidParameterError(f"{func}(): trace must be None, a CSV file's path or "
                                        f"Requests, got {trace!r}")
        rate = len(req) / (req.duration_s or 1.0)
    if float(req.arrival_s[-1]) > 100_000:
        raise InvalidParameterError(f"{func}(): the arrivals span {req.arrival_s[-1]:,.0f} s "
                                    f"(rate={rate!r}, {len(req):,} requests); at most "
                                    "100,000 s (about a day) is simulated")
    r = replica(fab, m, plan, gpu=gpu, catalog=catalog, func=func)
    context = int(req.prompt_tokens.max() + req.output_tokens.max())
    _check_fits(func, r, context, "the longest request's prompt_len + output_len")
    engines = _engines(r, int(req.prompt_tokens.mean()), int(req.output_tokens.mean()))
    return _simulate(r, req, engines, ttft_s, tpot_s, rate)


def _check_fits(func: str, r: Replica, context: int,
                what: str = "prompt_len + output_len") -> None:
    """Refuse a batch whose KV cache does not fit, naming the largest that does."""
    p = r.plan
    if r.memory_bytes(p.batch, context) <= r.gpu.hbm_gb * 1e9:
        return
    most = r.max_batch(context)
    held = r.memory_bytes(p.batch, context) / 1e9
    hint = (f"the largest batch that fits is {most}" if most else
            "the weights alone do not fit: more tp, ep or pp, or a smaller precision")
    raise InvalidParameterError(
        f"{func}(): {r.model.name} at tp={p.tp}, ep={p.ep}{f', pp={p.pp}' if p.pp > 1 else ''}"
        f" does not fit in the {r.gpu.hbm_gb:g} GB of a {r.gpu.key} GPU: weights "
        f"{r.weight_bytes / 1e9:,.1f} GB + KV cache "
        f"{p.batch / p.ep * context * r.kv_bytes_per_token / 1e9:,.4g} GB (batch={p.batch} "
        f"x {context:,} tokens of {what}, {p.kv} values) + activations "
        f"{r.activation_bytes / 1e9:,.2g} GB (chunk={p.chunk}) + runtime 3 GB = "
        f"{held:,.1f} GB; {hint}")


def _none_met(model_name: str, fabric: str, percentile: float, ttft_s: float, tpot_s: float,
              table: list[dict], fastest: Fastest, missed: list[str]) -> ServingCapacity:
    """The answer when no plan meets the targets: rate 0, no plan, ``fastest`` (what the
    targets could ask for) and, in the notes, the plans not simulated and why."""
    return ServingCapacity(model_name, fabric, 0.0, None, *([math.inf] * 6), 0.0, math.inf,
                           percentile, ttft_s, tpot_s, table=table,
                           notes=["no plan meets the targets even at a light load", *missed],
                           fastest=fastest)



def _fastest(replicas: list[Replica], prompt: int, output: int, context: int) -> Fastest:
    """The lowest TPOT and TTFT of ``replicas`` over the batches and chunks the search
    tries (:func:`_tune`), each with its plan; read only when no plan meets the targets."""
    fastest = Fastest()
    for r in replicas:
        for plan, th in _tried(r, prompt, output, context):
            fastest = fastest.seen(plan, th)
    return fastest


@dataclass
class ServingCapacity:
    """What :func:`serving_capacity` returns: the highest request rate within the targets
    (requests per second of the whole fabric), the plan that reaches it, the latency
    percentiles there (s), output tokens per second and their cost, and every plan tried
    (``table``: plan, analytic rate, simulated rate, why it lost)."""

    model: str
    fabric: str
    rate: float
    plan: ServingPlan | None
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    tokens_per_s: float
    usd_per_million_tokens: float
    percentile: float
    ttft_target_s: float
    tpot_target_s: float
    prefill_replicas: int = 0
    decode_replicas: int = 0
    table: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The lowest TPOT and TTFT any plan tried reaches (analytic, s; inf when none fits),
    #: each with its plan: what a target can ask for when none is met.
    fastest: Fastest = field(default_factory=lambda: Fastest())

    def __str__(self) -> str:
        q = f"p{self.percentile * 100:g}"
        if self.plan is None:
            return "\n".join([
                f"{self.model} on {self.fabric}: no plan meets TTFT {q} <= "
                f"{self.ttft_target_s:g} s and TPOT {q} <= {self.tpot_target_s:g} s",
                *self.fastest.lines(self.ttft_target_s, self.tpot_target_s),
                # the first note repeats the headline; the rest name plans not simulated
                *[f"  note: {n}" for n in self.notes[1:]]])
        split = (f", {self.prefill_replicas} prefill : {self.decode_replicas} decode replicas"
                 if self.plan.disaggregated else f", {self.decode_replicas} replicas")
        return "\n".join([
            f"{self.model} on {self.fabric}: {self.rate:,.4g} requests/s within TTFT {q} <= "
            f"{self.ttft_target_s:g} s and TPOT {q} <= {self.tpot_target_s:g} s",
            f"  plan      {self.plan.describe()}{split}",
            f"  TTFT      p50 {self.ttft_p50_s:.3g} s, p90 {self.ttft_p90_s:.3g} s, "
            f"p99 {self.ttft_p99_s:.3g} s",
            f"  TPOT      p50 {self.tpot_p50_s * 1e3:.3g} ms, p90 {self.tpot_p90_s * 1e3:.3g} "
            f"ms, p99 {self.tpot_p99_s * 1e3:.3g} ms",
            f"  output    {self.tokens_per_s:,.0f} tokens/s, "
            f"${self.usd_per_million_tokens:,.3g} per million tokens",
            *[f"  note: {n}" for n in self.notes]])


def _candidates(fab: Fabric, m: ModelConfig, precision: str, prompt: int, output: int,
                domain: int) -> list[ServingPlan]:
    """Replica shapes to try: tensor parallelism within a scale-up domain, pipeline stages
    only when nothing fits without, wide expert parallelism for a mixture of experts."""
    n = len(fab.endpoints)
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64, 72) if t <= min(domain, m.heads) and
           not domain % t]
    shapes = [(t, 1, 1) for t in tps]
    if m.is_moe:
        e = 8
        while e <= min(m.experts, n // 2):
            if not m.experts % e:
                shapes.append((1, 1, e))
            e *= 2
    shapes += [(max(tps), pp, 1) for pp in (2, 4, 8) if max(tps) * pp <= n // 2]
    plans = []
    for tp, pp, ep in shapes:
        for dis in (False, True):
            if tp * pp * ep * (2 if dis else 1) <= n:
                plans.append(ServingPlan(tp=tp, pp=pp, ep=ep, batch=1, chunk=2048,
                                         disaggregated=dis, precision=precision))
    return plans


def _tried(r: Replica, prompt: int, output: int, context: int
           ) -> Iterator[tuple[ServingPlan, Throughput]]:
    """Each batch and chunk of ``r``'s shape that fits in HBM, with its analytic steady
    state: what :func:`_tune` chooses from and :func:`_fastest` reads."""
    most = min(r.max_batch(context), MAX_BATCH)
    if most < 1:
        return
    batches = sorted({min(most, 2 ** k) for k in range(0, 11)})
    for chunk in CHUNKS:
        for b in batches:
            if not r.plan.disaggregated and chunk <= b:
                continue
            rr = _with(r, r.plan.with_(batch=b, chunk=chunk))
            if rr.memory_bytes(b, context) > rr.gpu.hbm_gb * 1e9:
                continue  # a larger chunk's activations leave no room for this batch
            yield rr.plan, throughput(rr, prompt, output)


def _tune(r: Replica, prompt: int, output: int, ttft_s: float, tpot_s: float,
          context: int) -> tuple[ServingPlan, Throughput] | None:
    """The batch and chunk of ``r``'s shape with the highest analytic rate whose TPOT at
    full load (with a tenth to spare) and unloaded TTFT meet the targets."""
    best = None
    for plan, th in _tried(r, prompt, output, context):
        if th.tpot_s > TARGET_SPARE * tpot_s or th.ttft_s > TARGET_SPARE * ttft_s:
            continue
        if best is None or th.rate > best[1].rate:
            best = (plan, th)
    return best


def _with(r: Replica, plan: ServingPlan) -> Replica:
    """``r`` on another batch or chunk (the shape, hence the fabric's phases, unchanged)."""
    return replace(r, plan=plan)


def _sample(engines: tuple[int, int]) -> tuple[tuple[int, int], float]:
    """The replicas a rate search simulates, and their share of the fabric's rate.

    Replicas are independent under round robin, so a sample of them at its share of the
    rate stands for the fabric: at most :data:`SAMPLE_REPLICAS`, a disaggregated plan's
    prefill:decode ratio kept exactly when a multiple of its reduced ratio fits, else each
    side rounded down and the rate set by the larger share (the other side then carries a
    little more than its share: the search errs low).

    >>> _sample((0, 128))
    ((0, 8), 0.0625)
    >>> _sample((30, 10))     # 3:1 twice
    ((6, 2), 0.2)
    >>> _sample((55, 9))      # 6 prefill replicas carry 1/9 of the rate, more than 55/9 do
    ((6, 1), 0.1111111111111111)
    """
    n_p, n_d = engines
    if n_p + n_d <= SAMPLE_REPLICAS:
        return engines, 1.0
    if not n_p:
        return (0, SAMPLE_REPLICAS), SAMPLE_REPLICAS / n_d
    g = math.gcd(n_p, n_d)
    unit = (n_p // g, n_d // g)
    k = SAMPLE_REPLICAS // sum(unit)
    if k:
        return (k * unit[0], k * unit[1]), k / g
    scale = (n_p + n_d) / SAMPLE_REPLICAS
    sample = (max(1, int(n_p / scale)), max(1, int(n_d / scale)))
    return sample, max(sample[0] / n_p, sample[1] / n_d)


def _search(r: Replica, prompt: int, output: int, lengths: str, q: float, ttft_s: float,
            tpot_s: float, hi: float, requests: int, seed: np.random.Generator,
            ) -> tuple[float, ServingLoad | None]:
    """Bisection on the rate: the highest whose ``q`` percentiles meet both targets."""
    sample, share = _sample(_engines(r, prompt, output))
    state = int(seed.integers(2**32))
    # Enough requests that arrivals span several lifetimes of a request (its analytic
    # first token and decode at full load): a shorter window never fills the batch.
    th = throughput(r, prompt, output)
    life = th.ttft_s + output * th.tpot_s

    def run(rate: float) -> ServingLoad:
        count = int(min(MAX_REQUESTS, max(requests, 4 * life * rate * share)))
        # the same draws at every rate: a bisection on one sample path
        req = poisson_requests(rate * share, count, prompt, output, lengths=lengths,
                               seed=np.random.default_rng(state))
        return _simulate(r, req, sample, ttft_s, tpot_s, rate)

    def meets(s: ServingLoad) -> bool:
        t, p = s.percentile(q * 100)
        return t <= ttft_s and p <= tpot_s

    lo, best = 0.0, None
    s = run(FLOOR * hi)  # most plans serve a good part of their analytic rate
    if meets(s):
        lo, best = FLOOR * hi, s
    else:
        hi = FLOOR * hi
    for _ in range(SEARCH_ROUNDS):
        mid = (lo + hi) / 2
        s = run(mid)
        if meets(s):
            lo, best = mid, s
        else:
            hi = mid
    return lo, best


def _simulate_best(ranked: list[tuple[Throughput, Replica]], table: list[dict],
                   prompt: int, output: int, lengths: str, percentile: float, ttft_s: float,
                   tpot_s: float, requests: int, rng: np.random.Generator,
                   ) -> tuple[tuple[float, ServingLoad, Replica] | None, list[str]]:
    """The rate search on the best :data:`SIMULATED_PLANS` of ``ranked`` (each row of
    ``table`` given its simulated rate): the best (rate, load, replica) found, and the plans
    not simulated since their latency floor misses a target, with why."""
    best: tuple[float, ServingLoad, Replica] | None = None
    missed: list[str] = []  # plans not simulated: a target below what any load reaches
    for th, r in ranked[:SIMULATED_PLANS]:
        if best is not None and CEILING * th.rate <= best[0]:
            break  # its search could not pass the rate already found
        why = target_below_floor(r, prompt, output, lengths, ttft_s, tpot_s)
        if why:
            missed.append(f"{r.plan.describe()} not simulated: {why}")
            for row in table:
                if row["plan"] == r.plan.describe():
                    row["lost"] = f"not simulated: {why}"
            continue
        rate, load = _search(r, prompt, output, lengths, percentile, ttft_s, tpot_s,
                             CEILING * th.rate, requests, rng)
        for row in table:
            if row["plan"] == r.plan.describe():
                row["rate"] = rate
        if load is not None and (best is None or rate > best[0]):
            best = (rate, load, r)
    return best, missed


def serving_capacity(fab: Fabric, model_name: str | ModelConfig, *, ttft_s: float,
                     tpot_s: float, percentile: float = 0.99, prompt_len: int = 2048,
                     output_len: int = 256, precision: str = "bf16",
                     plan: ServingPlan | None = None, lengths: str = "fixed",
                     requests: int = 1500, seed: int | np.random.Generator | None = 0,
                     gpu: str | None = None,
                     catalog: Catalog | None = None, years: float | None = None,
                     usd_per_kwh: float | None = None,
                     pue: float | None = None) -> ServingCapacity:
    """The highest request rate ``fab`` serves with the ``percentile`` of time to first
    token within ``ttft_s`` and of time per output token within ``tpot_s``, the plan that
    reaches it, and the cost per million output tokens there.

    Parameters
    ----------
    fab : Fabric
        Every GPU serves: the plan's replicas fill it.
    model_name : str or ModelConfig
        A catalogue model (``fo.models``) or a user's.
    ttft_s, tpot_s : float
        Targets, seconds, > 0.
    percentile : float
        In (0, 1): 0.99 is p99.
    prompt_len, output_len : int
        Mean prompt and output tokens of the requests.
    precision : str
        ``"bf16"``, ``"fp8"`` or ``"fp4"`` (Blackwell) for weights, activations and KV cache.
    plan : ServingPlan, optional
        Evaluate only this plan (its precision wins); default: search the plans (tensor
        parallelism within a scale-up domain, pipeline stages when nothing fits without,
        wide expert parallelism for a mixture of experts, colocated or disaggregated, batch
        and chunk).
    lengths : str
        ``"fixed"``, ``"exponential"`` or ``"lognormal"`` lengths around the means.
    requests, seed : int
        Requests per simulation and its seed.
    gpu, catalog
        As :func:`~fabricopt.serving_estimate`.
    years, usd_per_kwh, pue : float, optional
        The cost model of :func:`~fabricopt.token_cost` (None: its defaults).

    Returns
    -------
    ServingCapacity
        ``rate`` 0 and ``plan`` None when no plan meets the targets even unloaded.

    Examples
    --------
    >>> import fabricopt as fo
    >>> c = serving_capacity(fo.dgx_h100(), "llama3-8b", ttft_s=0.5, tpot_s=0.05,
    ...                      prompt_len=512, output_len=32, precision="fp8",
    ...                      plan=ServingPlan(tp=8, batch=64, precision="fp8"), requests=300)
    >>> c.rate > 0 and c.ttft_p99_s <= 0.5 and c.tpot_p99_s <= 0.05
    True
    """
    func = "serving_capacity"
    check_fabric(func, fab)
    m = _check_model(func, model_name)
    ttft_s = check_positive(func, "ttft_s", ttft_s)
    tpot_s = check_positive(func, "tpot_s", tpot_s)
    percentile = check_positive(func, "percentile", percentile)
    if not 0 < percentile < 1:
        raise InvalidParameterError(f"{func}(): percentile must be in (0, 1) (0.99 is p99), "
                                    f"got {percentile!r}")
    prompt_len = check_int(func, "prompt_len", prompt_len, minimum=1)
    output_len = check_int(func, "output_len", output_len, minimum=1)
    check_choice(func, "precision", precision, PRECISIONS)
    rng = _check_load(func, requests, prompt_len, output_len, lengths, seed, catalog)
    if plan is not None and not isinstance(plan, ServingPlan):
        raise InvalidParameterError(f"{func}(): plan must be None or a ServingPlan, got "
                                    f"{plan!r}")
    catalog = catalog or Catalog.default()
    if years is not None:
        check_positive(func, "years", years)
    if usd_per_kwh is not None:
        check_positive(func, "usd_per_kwh", usd_per_kwh, allow_zero=True)
    if pue is not None and check_positive(func, "pue", pue) < 1:
        raise InvalidParameterError(f"{func}(): pue must be >= 1 (a facility draws at least "
                                    f"its IT load), got {pue!r}")
    # The facility figures given; token_cost's own defaults for the rest.
    facility = {k: v for k, v in (("years", years), ("usd_per_kwh", usd_per_kwh),
                                  ("pue", pue)) if v is not None}
    pick_gpu(fab, gpu, catalog, func)
    context = prompt_len + output_len
    table: list[dict] = []
    ranked: list[tuple[Throughput, Replica]] = []
    shapes: list[Replica] = []  # every replica shape that builds, for the fastest it reaches
    if plan is not None:
        r = replica(fab, m, plan, gpu=gpu, catalog=catalog, func=func)
        _check_fits(func, r, context)
        ranked.append((throughput(r, prompt_len, output_len), r))
    else:
        levels = _levels(fab)
        label = levels.levels[1].label[[levels.ga.index[e] for e in fab.endpoints]]
        domain = int(np.bincount(label[label >= 0]).max()) if (label >= 0).any() else 1
        for cand in _candidates(fab, m, precision, prompt_len, output_len, domain):
            row = {"plan": cand.describe(), "analytic_rate": 0.0, "rate": None, "lost": ""}
            table.append(row)
            try:
                r = replica(fab, m, cand, gpu=gpu, catalog=catalog, func=func)
            except InvalidParameterError as exc:
                row["lost"] = str(exc).split(": ", 1)[-1]
                continue
            shapes.append(r)
            tuned = _tune(r, prompt_len, output_len, ttft_s, tpot_s, context)
            if tuned is None:
                row["lost"] = ("does not fit in HBM" if r.max_batch(context) < 1 else
                               "misses the targets even unloaded")
                continue
            row["plan"] = tuned[0].describe()
            row["analytic_rate"] = tuned[1].rate
            ranked.append((tuned[1], _with(r, tuned[0])))
    ranked.sort(key=lambda x: -x[0].rate)
    best, missed = _simulate_best(ranked, table, prompt_len, output_len, lengths, percentile,
                                  ttft_s, tpot_s, requests, rng)
    for row in table:
        if not row["lost"] and best is not None and row["plan"] != best[2].plan.describe():
            row["lost"] = ("a lower rate within the targets" if row["rate"] is not None else
                           "a lower analytic rate: not simulated")
    if best is None:  # the fastest of every shape tried, or the given plan's own floor
        fastest = (_fastest(shapes, prompt_len, output_len, context) if plan is None else
                   Fastest.given(ranked[0][1], prompt_len, output_len, lengths))
        return _none_met(m.name, fab.name, percentile, ttft_s, tpot_s, table, fastest, missed)
    rate, load, r = best
    q = percentile * 100
    ttft = [float(np.percentile(load.ttft_all_s, x)) for x in (50, 90, q)]
    tpot = [float(np.percentile(load.tpot_all_s, x)) if load.tpot_all_s.size else 0.0
            for x in (50, 90, q)]
    tokens = rate * output_len
    try:
        cost = token_cost(fab, tokens, gpu, catalog=catalog, **facility)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{func}(): {str(exc).split(': ', 1)[-1]}") from None
    engines = _engines(r, prompt_len, output_len)
    notes = [f"p{q:g} columns hold the percentile asked"] if percentile != 0.99 else []
    return ServingCapacity(m.name, fab.name, rate, r.plan, ttft[0], ttft[1], ttft[2],
                           tpot[0], tpot[1], tpot[2], tokens, cost.usd_per_million_tokens,
                           percentile, ttft_s, tpot_s, engines[0], engines[1], table,
                           notes + list(cost.notes))


#: What a serving workload (a design file's ``[serving]`` table, ``compare(serving=...)``,
#: ``optimize(serving=...)``) may give: :func:`serving_capacity`'s keywords.
WORKLOAD_KEYS = ("model", "ttft_s", "tpot_s", "percentile", "prompt_len", "output_len",
                 "precision", "lengths", "requests", "seed", "gpu", "plan")


def serving_workload(value: Any, where: str) -> dict[str, Any]:
    """The keywords of :func:`serving_capacity` a serving workload table gives (``model``,
    ``ttft_s`` and ``tpot_s`` required; ``plan`` a table of :class:`ServingPlan` keys),
    checked by name; ``where`` says where the table came from in messages.

    >>> serving_workload({"model": "llama3-70b", "ttft_s": 0.5, "tpot_s": 0.05}, "[serving]")
    {'model_name': 'llama3-70b', 'ttft_s': 0.5, 'tpot_s': 0.05}
    """
    if not isinstance(value, Mapping):
        raise InvalidParameterError(f"{where}: a serving workload is a table of "
                                    f"{', '.join(WORKLOAD_KEYS)}, got {value!r}")
    unknown = [k for k in value if k not in WORKLOAD_KEYS]
    if unknown:
        raise InvalidParameterError(f"{where}: unknown key {unknown[0]!r}"
                                    f"{did_you_mean(str(unknown[0]), WORKLOAD_KEYS)}; keys: "
                                    f"{', '.join(WORKLOAD_KEYS)}")
    missing = [k for k in ("model", "ttft_s", "tpot_s") if k not in value]
    if missing:
        raise InvalidParameterError(f"{where}: a serving workload needs {', '.join(missing)} "
                                    "(the model and the latency targets, seconds)")
    out = {("model_name" if k == "model" else k): v for k, v in value.items()}
    if isinstance(out.get("plan"), Mapping):
        try:
            out["plan"] = ServingPlan(**out["plan"])
        except TypeError as exc:
            raise InvalidParameterError(f"{where}: plan: {exc}") from None
    return out


__all__ = ["PERCENTILES", "WORKLOAD_KEYS", "ServingCapacity", "ServingLoad", "Throughput",
           "balance", "serving_capacity", "serving_workload", "simulate_serving", "throughput"]
