"""Random failures seen by a training job: at each failed fraction, the spread of what the job
keeps.

Each trial fails a random ``fraction`` of the links or switches (:func:`~fabricopt.fail_random`)
and asks, with the rules of single failures (:mod:`.job_failures`, ``docs/goodput.md``),
whether the job stops (GPUs cut off: a restart on spares, without the replicas that lost a
server, or a wait) or runs on, and then at what step (:func:`~fabricopt.training_step` on the
failed fabric: certified lower bound and expected).
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._checks import MAX_SOLVES, check_int, fail
from ..catalog import Catalog
from ..errors import FabricOptError, InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..failures.orbits import Pattern
from ..failures.sweep import fail_random
from ..failures.sweep import failure_sweep as _fabric_failure_sweep
from .job_failures import _Attachment, _check_tier_filter, _JobView
from .plan import TrainingJob
from .step import training_step


@dataclass(frozen=True)
class JobFailureTrial:
    """One random draw: how many units failed, what the job does, its step and throughput
    (``share`` of the intact tokens per second; 0 when it stops)."""

    fraction: float
    trial: int
    failed: int
    action: str
    gpus_cut: int
    servers_lost: int
    replicas_lost: int
    step_s: float
    step_s_lower: float
    tokens_per_s: float
    share: float


@dataclass
class JobFailureSweep:
    """What :func:`job_failure_sweep` returns: every trial, and per fraction the mean and
    worst share of throughput kept and the share of draws that stop the job."""

    fabric_name: str
    job: TrainingJob
    kind: str
    seed: Any
    intact_step_s: float
    intact_tokens_per_s: float
    trials: list[JobFailureTrial] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> list[dict[str, float]]:
        """Per fraction: trials, mean and least share kept, share of trials interrupted."""
        out = []
        for f in sorted({t.fraction for t in self.trials}):
            ts = [t for t in self.trials if t.fraction == f]
            out.append({"fraction": f, "trials": len(ts),
                        "mean_share": float(np.mean([t.share for t in ts])),
                        "least_share": min(t.share for t in ts),
                        "interrupted": sum(t.action in ("swap in a spare", "drop replica",
                                                        "stop") for t in ts) / len(ts)})
        return out

    def to_records(self) -> list[dict[str, Any]]:
        return [asdict(t) for t in self.trials]

    def __str__(self) -> str:
        lines = [f"job failure sweep  {self.job.describe()} on {self.fabric_name}: random "
                 f"{self.kind}, {len(self.trials)} trials, seed {self.seed}, "
                 f"{self.seconds:.1f} s",
                 f"{'fraction':>9}  {'trials':>6}  {'mean kept':>9}  {'least':>7}  "
                 f"{'interrupted':>11}"]
        for s in self.summary():
            lines.append(f"{s['fraction']:>9.3g}  {s['trials']:>6}  {100 * s['mean_share']:>8.1f}%"
                         f"  {100 * s['least_share']:>6.1f}%  {100 * s['interrupted']:>10.0f}%")
        return "\n".join(lines)


def job_failure_sweep(fab: Fabric, job: TrainingJob, fractions: Sequence[float], *,
                      trials: int = 10, seed: Any = None, kind: str = "links",
                      tiers: str | Sequence[str] | None = None, spares: int | None = None,
                      placement: Sequence[Hashable] | None = None,
                      catalog: Catalog | None = None,
                      _func: str = "job_failure_sweep") -> JobFailureSweep:
    """``trials`` random failures at each fraction, as the training job sees them.

    Parameters
    ----------
    fab : Fabric
    job : TrainingJob
    fractions : sequence of float
        Shares of the links (or switches) failed, each from 0 to 1.
    trials : int
        Draws per fraction.
    seed : None or int
        Root of the draws (trial ``j`` of fraction ``i`` draws from the ``i * trials + j``-th
        child of a :class:`numpy.random.SeedSequence`); None draws fresh entropy.
    kind : {"links", "switches"}
        As in :func:`~fabricopt.fail_random` (every tier, scale-up links included).
    tiers : str or list of str, optional
        Only units of these tiers.
    spares, placement, catalog
        As in :func:`~fabricopt.job_failures`.

    Returns
    -------
    JobFailureSweep

    Examples
    --------
    Two failed NVLinks of a DGX H100 (of 72 bundles: 3 %) slow a tensor-parallel job; no
    draw stops it (each GPU keeps links to other chips).

    >>> import fabricopt as fo
    >>> job = fo.TrainingJob("llama3-8b", tp=8, global_batch=8, seq_len=8192)
    >>> s = fo.failure_sweep(fo.dgx_h100(), [0.03], trials=3, seed=1, job=job)
    >>> row = s.summary()[0]
    >>> row["interrupted"], 0.8 < row["least_share"] < 1.0
    (0.0, True)
    """
    func = _func  # the public function the caller called, for its errors
    start = time.perf_counter()
    check_fabric(func, fab)
    if not isinstance(job, TrainingJob):
        raise fail(func, "job", "a TrainingJob", type(job).__name__)
    if isinstance(fractions, str) or not isinstance(fractions, Sequence | np.ndarray) \
            or not len(fractions):
        raise fail(func, "fractions", "a non-empty list of numbers from 0 to 1", fractions)
    for f in fractions:
        if isinstance(f, bool) or not isinstance(f, int | float) or not 0 <= f <= 1:
            raise fail(func, "fractions", "numbers from 0 to 1", f)
    check_int(func, "trials", trials, minimum=1)
    if trials * len(fractions) > MAX_SOLVES:  # a training step per trial and fraction
        raise fail(func, "trials", f"at most {MAX_SOLVES:,} trials in all (trials x "
                   f"{len(fractions)} fraction(s))", trials)
    if kind not in ("links", "switches"):
        raise fail(func, "kind", "links or switches (with a job)", kind)
    if spares is not None:
        check_int(func, "spares", spares, minimum=0)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)
                             or seed < 0):
        raise fail(func, "seed", "None or an integer >= 0", seed)
    _check_tier_filter(func, fab, tiers)
    root = np.random.SeedSequence(seed)
    children = root.spawn(len(fractions) * trials)
    try:
        intact = training_step(fab, job, placement, catalog=catalog)
    except FabricOptError as exc:  # the job's own checks, said as the function called
        raise type(exc)(str(exc).replace("training_step(): ", f"{func}(): ", 1)) from None
    view = _JobView(fab, job, placement, spares, intact)
    attach = _Attachment(fab)
    sweep = JobFailureSweep(fab.name, intact.job, kind, root.entropy, intact.step_s,
                            intact.tokens_per_s)
    for i, f in enumerate(fractions):
        for j in range(trials):
            failed = fail_random(fab, float(f), seed=np.random.default_rng(
                children[i * trials + j]), kind=kind, tiers=tiers)
            sweep.trials.append(_trial(failed, float(f), j, view, attach, catalog))
    sweep.seconds = time.perf_counter() - start
    return sweep


def _trial(failed: Fabric, fraction: float, j: int, view: _JobView, attach: _Attachment,
           catalog: Catalog | None) -> JobFailureTrial:
    removed = failed.removed
    pattern = Pattern({frozenset((u, v)): n for u, v, n in removed.links},
                      frozenset(removed.switches))
    action, cut, servers, replicas, share = view.outcome(attach.cut_off(pattern))
    intact = view.intact
    step, lower = intact.step_s, intact.step_s_lower
    count = len(removed.links) + len(removed.switches)
    if action == "unaffected" and count:
        try:
            s = training_step(failed, view.job, view.gpus, catalog=catalog)
        except InvalidParameterError:
            action, share = "stop", 0.0  # some dimension's traffic has no path left
        else:
            step, lower, share = s.step_s, s.step_s_lower, intact.step_s / s.step_s
            action = "run degraded" if share < 1 else "unaffected"
    if action == "stop":
        step = lower = math.inf
    return JobFailureTrial(fraction, j, count, action, cut, servers, replicas, step, lower,
                           share * intact.tokens_per_s, share)


def failure_sweep(fab: Fabric, fractions: Sequence[float], *, job: TrainingJob | None = None,
                  spares: int | None = None, placement: Sequence[Hashable] | None = None,
                  **options: Any) -> Any:
    """Random failures at each fraction: without ``job``, the certified all-to-all theta of
    each trial (:func:`fabricopt.failures.failure_sweep`, whose options it takes); with
    ``job``, what the job keeps (:func:`job_failure_sweep`: ``trials``, ``seed``, ``kind``,
    ``tiers``, ``catalog``).

    Examples
    --------
    >>> import fabricopt as fo
    >>> s = failure_sweep(fo.ring(6), [0.2], trials=2, seed=1)
    >>> len(s.trials)
    2
    """
    if job is None:
        if spares is not None or placement is not None:
            raise InvalidParameterError("failure_sweep(): spares and placement are read only "
                                        "with a job (job=TrainingJob(...))")
        return _fabric_failure_sweep(fab, fractions, **options)
    allowed = {"trials", "seed", "kind", "tiers", "catalog"}
    wrong = sorted(set(options) - allowed)
    if wrong:
        raise InvalidParameterError(f"failure_sweep(): {wrong[0]!r} is not read with a job "
                                    f"(with job=..., options: spares, placement, "
                                    f"{', '.join(sorted(allowed))})")
    return job_failure_sweep(fab, job, fractions, spares=spares, placement=placement,
                             _func="failure_sweep", **options)


__all__ = ["JobFailureSweep", "JobFailureTrial", "failure_sweep", "job_failure_sweep"]
