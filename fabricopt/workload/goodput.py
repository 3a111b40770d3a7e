r"""Goodput of a training job under failures: interruptions per day, the checkpoint interval,
time lost, time degraded, the effective training time ratio and tokens per day.

Each component kind fails at its annual rate (:class:`~.reliability.FailureRates`); what one
failure does to the job comes from :func:`~.job_failures.job_failures` on the fabric: an
interruption (restart on a spare, without a replica, or a wait for the repair), a stretch
run degraded until the repair, or nothing. With :math:`\lambda` the interruptions per second,
:math:`\delta` the checkpoint write, :math:`\tau` the work between checkpoints, :math:`d` the
detection and :math:`R` the restart (``docs/goodput.md`` derives and sources each):

* Checkpoint interval when none is given, Daly's higher-order estimate (A higher order
  estimate of the optimum checkpoint interval for restart dumps, 2006), which refines Young's
  :math:`\sqrt{2 \delta M}` (A first order approximation to the optimum checkpoint interval,
  1974), :math:`M = 1 / \lambda`:
  :math:`\tau = \sqrt{2 \delta M}\,[1 + \tfrac13 \sqrt{\delta / 2M} + \tfrac19 \delta / 2M]
  - \delta` for :math:`\delta < 2M`, else :math:`M`.
* Time lost per interruption: :math:`d + R + (\tau + \delta) / 2` (half an interval of work
  since the last checkpoint, on average), plus the repair when the job must wait for it.
* Effective training time ratio:
  :math:`\mathrm{ETTR} = (1 - \sum_i \lambda_i L_i) \cdot \tau / (\tau + \delta)`.
* Tokens per day: intact tokens per second x 86,400 x ETTR x
  :math:`(1 - \sum_j \mu_j r_j (1 - s_j))`, for failures :math:`j` that leave the job
  running at a share :math:`s_j` of its throughput (degraded, or short of a replica) for the
  repair time :math:`r_j`, at :math:`\mu_j` per second.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_positive, fail
from ..catalog import Catalog
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from .job_failures import JobFailureTable, job_failures
from .plan import TrainingJob
from .reliability import FailureRates

#: Which job failure kind one failed unit of each component kind is (software stops the job
#: wherever it runs, and takes no unit out of service).
FAILURE_KIND = {"gpu": "gpus", "hbm": "gpus", "nic": "nics", "host": "servers",
                "power_supply": "servers", "switch": "switches", "cable": "links",
                "transceiver": "links", "nvswitch": "nvswitches", "nvlink": "nvlinks",
                "software": None}
#: Defaults (estimates, ``docs/goodput.md``): detecting a failure (a collective's watchdog
#: firing and the scheduler told), restarting (servers swapped, the checkpoint read back,
#: communicators built again at thousands of GPUs) and writing one checkpoint (the pause
#: training takes to hand its state to an asynchronous writer).
#: Where the shipped figures count a kind they give no rate of (its row says so, so a
#: rate of 0 is not read as "never fails").
COUNTED_IN = {"transceiver": "cable", "nvlink": "gpu"}
#: What a unit of a kind is when the table's count could be read otherwise.
UNIT_WORDS = {"transceiver": "one per link end (a twin-port module serves two)"}
DETECTION_S = 120.0
RESTART_S = 600.0
CHECKPOINT_WRITE_S = 60.0
DAY_S = 86400.0


def young_daly_interval(checkpoint_write_s: float, mtbi_s: float) -> float:
    r"""The work between checkpoints that maximises progress: Daly's higher-order estimate.

    :math:`\tau = \sqrt{2 \delta M}\,[1 + \tfrac13 \sqrt{\delta / 2M} + \tfrac19 \delta / 2M]
    - \delta` for :math:`\delta < 2M`, else :math:`M` (Daly, 2006; the first term is Young's,
    1974).

    Examples
    --------
    A minute's checkpoint and an interruption every 3.1 hours (Llama 3's rate): about
    19 minutes of work between checkpoints; Young's first term alone says sqrt(2 x 60 x
    11,160) = 1,157 s.

    >>> round(young_daly_interval(60.0, 11160.0))
    1118
    >>> young_daly_interval(600.0, 200.0)  # a checkpoint longer than two MTBIs: every MTBI
    200.0
    """
    d = check_positive("young_daly_interval", "checkpoint_write_s", checkpoint_write_s)
    m = check_positive("young_daly_interval", "mtbi_s", mtbi_s)
    if d >= 2 * m:
        return m
    x = d / (2 * m)
    return math.sqrt(2 * d * m) * (1 + math.sqrt(x) / 3 + x / 9) - d


@dataclass
class Goodput:
    """What :func:`training_goodput` returns (times in seconds unless named otherwise).

    ``ettr`` is the effective training time ratio (time making new progress over wall time);
    ``goodput`` the expected tokens per day over what the intact job would train in a day
    (degraded stretches counted); ``tokens_per_day_upper`` the same figures with the step's
    certified lower bound in place of the expected step: no faster under these failures.
    ``degraded_h_per_day`` adds up the hours each failure that leaves the job running keeps
    it degraded (or short of replicas) until its repair: stretches that overlap count apart,
    so it can pass 24 on a large job. ``components`` holds one row per component kind: units
    (None for a kind at rate 0, not asked about), failures, interruptions and such hours per
    day, and the figure's source.
    """

    fabric: str
    job: TrainingJob
    interruptions_per_day: float
    mtbi_h: float
    checkpoint_s: float
    checkpoint_write_s: float
    checkpoint_from: str
    detection_s: float
    restart_s: float
    lost_work_s: float
    lost_per_interruption_s: float
    degraded_h_per_day: float
    degraded_share: float
    ettr: float
    tokens_per_day: float
    tokens_per_day_upper: float
    intact_tokens_per_s: float
    components: list[dict[str, Any]] = field(default_factory=list)
    failures: JobFailureTable | None = None

    @property
    def goodput(self) -> float:
        return self.tokens_per_day / (self.intact_tokens_per_s * DAY_S)

    def __str__(self) -> str:
        lines = [f"goodput          {self.job.describe()} on {self.fabric}",
                 f"  interruptions  {self.interruptions_per_day:.3g} per day (one every "
                 f"{self.mtbi_h:.3g} h)",
                 f"  checkpoint     every {self.checkpoint_s:.0f} s of work "
                 f"({self.checkpoint_from}), {self.checkpoint_write_s:.0f} s to write",
                 f"  per interruption  {self.lost_per_interruption_s:.0f} s lost on average "
                 f"(detection {self.detection_s:.0f}, restart {self.restart_s:.0f}, lost work "
                 f"{self.lost_work_s:.0f}, and waits for repairs)",
                 f"  degraded       {self.degraded_h_per_day:.3g} failure-hours per day "
                 f"(overlapping stretches counted apart), {100 * self.degraded_share:.2f} % of "
                 "throughput lost to them",
                 f"  ETTR           {100 * self.ettr:.1f} %",
                 f"  tokens/day     {self.tokens_per_day:.4g} expected (goodput "
                 f"{100 * self.goodput:.1f} %), <= {self.tokens_per_day_upper:.4g} certified "
                 "by the step's lower bound",
                 f"  {'component':<14}{'units':>9}{'fail/day':>10}{'interrupt/day':>15}"
                 f"{'degraded h/day':>16}"]
        for c in self.components:
            units = "-" if c["units"] is None else f"{c['units']:,}"
            lines.append((f"  {c['component']:<14}{units:>9}{c['failures_per_day']:>10.3g}"
                          f"{c['interruptions_per_day']:>15.3g}"
                          f"{c['degraded_h_per_day']:>16.3g}  {_row_note(c)}").rstrip())
        return "\n".join(lines)

    def to_records(self) -> list[dict[str, Any]]:
        """The components table, one dict per component kind."""
        return [dict(c) for c in self.components]


def _row_note(row: dict[str, Any]) -> str:
    """What a reader needs beside a component's row: where a kind at rate 0 is counted, and
    what its unit is when a bill of materials counts it otherwise.

    >>> _row_note({"component": "transceiver", "failures_per_year": 0.0, "units": 4096})
    'counted in cable; units: one per link end (a twin-port module serves two)'
    >>> _row_note({"component": "nvlink", "failures_per_year": 0.0, "units": None})
    'counted in gpu'
    >>> _row_note({"component": "gpu", "failures_per_year": 0.08, "units": 8})
    ''
    """
    kind = row["component"]
    words = []
    if row["failures_per_year"] == 0:
        words.append(f"counted in {COUNTED_IN[kind]}" if kind in COUNTED_IN else
                     "rate 0: not modelled")
    if kind in UNIT_WORDS and row["units"] is not None:
        words.append(f"units: {UNIT_WORDS[kind]}")
    return "; ".join(words)


def _check_rates(func: str, failure_model: Any) -> FailureRates:
    if failure_model is None:
        return FailureRates.default()
    if isinstance(failure_model, FailureRates):
        return failure_model
    raise fail(func, "failure_model", "None (the shipped figures) or a FailureRates "
               "(FailureRates.load(path) reads yours)", type(failure_model).__name__)


def _checkpoint_interval(given: float | None, write: float, interrupt_rate: float,
                         mtbi: float) -> tuple[float, str]:
    """The checkpoint interval (s) and where it comes from: the one given, else Young/Daly's
    for the mean time between unplanned interruptions, else never (no cost or no failure)."""
    if given is not None:
        return given, "given"
    if write > 0 and math.isfinite(mtbi):
        return young_daly_interval(write, 1.0 / interrupt_rate if interrupt_rate
                                   else mtbi), "Young/Daly"
    return math.inf, "never: no checkpoint cost or no failure"


def training_goodput(fab: Fabric, job: TrainingJob, *, failure_model: FailureRates | None = None,
                     checkpoint_s: float | None = None,
                     checkpoint_write_s: float = CHECKPOINT_WRITE_S,
                     restart_s: float = RESTART_S, detection_s: float = DETECTION_S,
                     spares: int | None = None, planned_per_day: float = 0.0,
                     placement: Sequence[Hashable] | None = None,
                     failures: JobFailureTable | None = None, solve: bool = True,
                     catalog: Catalog | None = None) -> Goodput:
    """Interruptions per day, checkpoint interval, time lost and the tokens a job trains per
    day on ``fab`` under the failures of ``failure_model``.

    Parameters
    ----------
    fab : Fabric
    job : TrainingJob
    failure_model : FailureRates, optional
        Annual failure rates per component kind (default the shipped, sourced figures).
    checkpoint_s : float, optional
        Seconds of work between checkpoints; default the interval that maximises progress
        (:func:`young_daly_interval`).
    checkpoint_write_s, restart_s, detection_s : float
        Seconds training pauses per checkpoint, to restart after an interruption, and to
        notice one (defaults: estimates, ``docs/goodput.md``).
    spares : int, optional
        Spare servers a restart can take (default the servers the job leaves idle).
    planned_per_day : float
        Planned interruptions per day (maintenance, changes): each a restart after a fresh
        checkpoint, no work lost.
    placement : sequence of GPU names, optional
        As in :func:`~fabricopt.training_step`.
    failures : JobFailureTable, optional
        :func:`~fabricopt.single_failures` of this fabric and job over every kind, reused
        instead of found again.
    solve : bool
        Solve the step of failures that leave the job running (default); False keeps the
        intact step for them (fast; their slowdown is then not counted).
    catalog : Catalog, optional
        Where the GPU's figures come from.

    Returns
    -------
    Goodput

    Examples
    --------
    Llama 3 8B over one SuperPOD scalable unit (256 H100): the GPUs, hosts and software of
    the shipped figures interrupt it about once every 8 days.

    >>> import fabricopt as fo
    >>> job = fo.TrainingJob("llama3-8b", tp=8, global_batch=256, seq_len=8192)
    >>> g = fo.training_goodput(fo.superpod(1), job)
    >>> round(g.interruptions_per_day, 2), 0.95 < g.ettr < 1
    (0.12, True)
    """
    func = "training_goodput"
    check_fabric(func, fab)
    if not isinstance(job, TrainingJob):
        raise fail(func, "job", "a TrainingJob", type(job).__name__)
    rates = _check_rates(func, failure_model)
    if checkpoint_s is not None:
        checkpoint_s = check_positive(func, "checkpoint_s", checkpoint_s)
    write = check_positive(func, "checkpoint_write_s", checkpoint_write_s, allow_zero=True)
    restart_s = check_positive(func, "restart_s", restart_s, allow_zero=True)
    detection_s = check_positive(func, "detection_s", detection_s, allow_zero=True)
    planned = check_positive(func, "planned_per_day", planned_per_day, allow_zero=True)
    kinds = sorted({FAILURE_KIND.get(r.kind) for r in rates if r.failures_per_year > 0}
                   - {None})
    unknown = [r.kind for r in rates if r.kind not in FAILURE_KIND]
    if unknown:
        raise InvalidParameterError(f"{func}(): failure_model has component kind "
                                    f"{unknown[0]!r}, which no failure kind of a fabric "
                                    f"stands for (kinds: {', '.join(FAILURE_KIND)})")
    if failures is None:
        failures = job_failures(fab, job, kinds or "gpus", placement=placement, spares=spares,
                                catalog=catalog, solve=solve, _func=func)
    elif not isinstance(failures, JobFailureTable) or failures.fabric_name != fab.name \
            or not set(kinds) <= set(failures.kinds):
        raise InvalidParameterError(
            f"{func}(): failures must be the JobFailureTable of this fabric ({fab.name!r}) "
            f"and job over the kinds {', '.join(kinds)}")
    job_gpus = failures.job.gpus
    # Per component kind: failures per second of the rows of its failure kind.
    interrupt_rate = 0.0     # interruptions per second
    wait_rate_s = 0.0        # seconds waited for repairs, per second
    degraded_s = 0.0         # seconds run degraded, per second
    degraded_loss = 0.0      # throughput share lost to degraded stretches
    degraded_loss_upper = 0.0
    components = []
    ceiling = failures.job.tokens_per_step / failures.intact_step_s_lower
    for r in rates:
        kind = FAILURE_KIND[r.kind]
        per_unit = r.per_second
        repair = r.repair_h * 3600.0
        if kind is None:  # software: every GPU of the job, a restart
            units = job_gpus
            i_rate, d_rate = units * per_unit, 0.0
            interrupt_rate += i_rate
        else:
            rows = [row for row in failures.rows if row.kind == kind]
            scale = 2 if r.kind == "transceiver" else 1  # one module at each end of a link
            # A kind at rate 0 was not asked about: its units are not counted (None).
            units = scale * sum(row.multiplicity for row in rows) if rows else None
            i_rate = d_rate = 0.0
            for row in rows:
                mu = scale * row.multiplicity * per_unit
                if row.interrupts:
                    i_rate += mu
                    if row.action == "stop":
                        wait_rate_s += mu * repair
                if row.action in ("run degraded", "drop replica"):
                    d_rate += mu
                    degraded_s += mu * repair
                    degraded_loss += mu * repair * (1 - failures.share(row))
                    degraded_loss_upper += mu * repair * (1 - row.tokens_per_s_upper / ceiling)
            interrupt_rate += i_rate
        components.append({"component": r.kind, "per": r.per, "units": units,
                           "failures_per_day": (units or 0) * per_unit * DAY_S,
                           "interruptions_per_day": i_rate * DAY_S,
                           "degraded_h_per_day": d_rate * repair * DAY_S / 3600.0,
                           "failures_per_year": r.failures_per_year, "repair_h": r.repair_h,
                           "source": r.source, "confidence": r.confidence})
    planned_rate = planned / DAY_S
    total_rate = interrupt_rate + planned_rate
    mtbi = math.inf if total_rate == 0 else 1.0 / total_rate
    tau, origin = _checkpoint_interval(checkpoint_s, write, interrupt_rate, mtbi)
    lost_work = (tau + write) / 2 if math.isfinite(tau) else 0.0
    if interrupt_rate > 0 and not math.isfinite(tau):
        lost_work = 1.0 / interrupt_rate  # never a checkpoint: on average all since the start
    lost_fraction = (interrupt_rate * (detection_s + restart_s + lost_work) + wait_rate_s
                     + planned_rate * restart_s)
    running = max(0.0, 1.0 - lost_fraction)
    checkpointing = tau / (tau + write) if math.isfinite(tau) and tau + write > 0 else 1.0
    ettr = running * checkpointing
    kept = max(0.0, 1.0 - degraded_loss)
    kept_upper = max(0.0, 1.0 - degraded_loss_upper)
    per_interruption = ((lost_fraction - planned_rate * restart_s) / interrupt_rate
                        if interrupt_rate else 0.0)
    return Goodput(fab.name, failures.job, total_rate * DAY_S, mtbi / 3600.0, tau, write, origin,
                   detection_s, restart_s, lost_work, per_interruption, degraded_s * 24.0,
                   degraded_loss, ettr,
                   failures.intact_tokens_per_s * DAY_S * ettr * kept,
                   ceiling * DAY_S * ettr * kept_upper, failures.intact_tokens_per_s,
                   components, failures)


__all__ = ["CHECKPOINT_WRITE_S", "DETECTION_S", "FAILURE_KIND", "RESTART_S", "Goodput",
           "training_goodput", "young_daly_interval"]
