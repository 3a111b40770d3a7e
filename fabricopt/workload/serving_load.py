r"""Requests under load: arrivals, lengths, and a simulation of continuous batching
(``docs/serving.md#load``).

Requests arrive as a Poisson process at a rate, or from a trace (CSV: arrival time, prompt
tokens, output tokens), with prompt and output lengths fixed or drawn from a distribution.
A dispatcher hands them to the replicas in turn (round robin). Each replica runs the engine
loop of continuous batching with chunked prefill, simulated step by step for every replica
at once (numpy arrays over replicas and batch slots, so a step of all replicas is a few
array operations):

1. admit arrived requests, in order, into free slots (at most ``batch`` in a replica);
2. the step's token budget ``chunk`` goes first to the decoding requests (one token each),
   the rest to the prompts waiting, in arrival order (a prompt may take several steps);
3. the step lasts :meth:`~fabricopt.workload.serving_replica.Replica.step_seconds` of what it
   holds; a request whose prompt completes gets its first token at the end of the step, then
   one token per step until its last, when its slot frees.

Disaggregated serving runs the same loop twice: prefill replicas (one token out per
request), then, after the KV cache's transfer, decode replicas (no prompt to process).
Time to first token is first token less arrival; time per output token is the time from
first to last token over the tokens after the first (the definitions of DistServe).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._checks import as_rng, check_choice, check_int, check_positive
from ..errors import InvalidParameterError

#: Length distributions a request generator draws from (each with the mean asked).
LENGTHS = ("fixed", "exponential", "lognormal")
#: Spread (sigma of the log) of the lognormal lengths: prompts and answers of chat traces
#: spread over about a decade.
LOGNORMAL_SIGMA = 1.0
_NS = 1_000_000_000
_ROW = np.int64(1) << 47       # nanoseconds per row of the flattened arrival search (39 h)
_TOKROW = np.int64(1) << 40    # tokens per row of the flattened prompt search


@dataclass(frozen=True)
class Requests:
    """Requests to serve: arrival (s, sorted), prompt and output tokens (arrays)."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @property
    def duration_s(self) -> float:
        """Time from the first arrival to the last."""
        return float(self.arrival_s[-1] - self.arrival_s[0]) if len(self) > 1 else 0.0


def _lengths(func: str, name: str, mean: int, dist: str, n: int, rng: np.random.Generator,
             ) -> np.ndarray:
    if dist == "fixed":
        return np.full(n, mean, dtype=np.int64)
    if dist == "exponential":
        x = rng.exponential(mean, n)
    else:  # lognormal with the asked mean: mu = log(mean) - sigma^2 / 2
        x = rng.lognormal(np.log(mean) - LOGNORMAL_SIGMA ** 2 / 2, LOGNORMAL_SIGMA, n)
    return np.maximum(1, np.rint(x)).astype(np.int64)


def poisson_requests(rate: float, count: int, prompt_len: int, output_len: int, *,
                     lengths: str = "fixed", seed: int | np.random.Generator | None = 0,
                     ) -> Requests:
    """``count`` requests arriving as a Poisson process of ``rate`` per second.

    Parameters
    ----------
    rate : float
        Requests per second, > 0.
    count : int
        How many, >= 1.
    prompt_len, output_len : int
        Mean prompt and output tokens, >= 1.
    lengths : str
        ``"fixed"`` (every request the mean), ``"exponential"`` or ``"lognormal"``
        (sigma :data:`LOGNORMAL_SIGMA`), rounded, at least 1.
    seed : int, Generator or None

    Examples
    --------
    >>> r = poisson_requests(10.0, 1000, 512, 128, seed=1)
    >>> len(r), int(r.prompt_tokens[0]), round(1000 / r.duration_s)   # about 10 per second
    (1000, 512, 10)
    """
    func = "poisson_requests"
    rate = check_positive(func, "rate", rate)
    count = check_int(func, "count", count, minimum=1)
    prompt_len = check_int(func, "prompt_len", prompt_len, minimum=1)
    output_len = check_int(func, "output_len", output_len, minimum=1)
    check_choice(func, "lengths", lengths, LENGTHS)
    rng = as_rng(seed, func)
    arrival = np.cumsum(rng.exponential(1.0 / rate, count))
    return Requests(arrival, _lengths(func, "prompt_len", prompt_len, lengths, count, rng),
                    _lengths(func, "output_len", output_len, lengths, count, rng))


def read_trace(path: str | os.PathLike[str]) -> Requests:
    """Requests from a CSV trace: a header naming ``arrival_s``, ``prompt_tokens`` and
    ``output_tokens`` (other columns ignored), one request a row; sorted by arrival.

    Raises
    ------
    InvalidParameterError
        A missing file or column, or a row whose value is not a number of the right kind
        (the row and column are named).
    """
    func = "read_trace"
    need = ("arrival_s", "prompt_tokens", "output_tokens")
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            missing = [c for c in need if c not in header]
            if missing:
                raise InvalidParameterError(
                    f"{func}(): {os.fspath(path)} lacks column(s) {', '.join(missing)}; a trace "
                    f"has a header with {', '.join(need)} (found {', '.join(header) or 'none'})")
            rows = list(reader)
    except OSError as exc:
        raise InvalidParameterError(f"{func}(): cannot read trace {os.fspath(path)!r}: "
                                    f"{exc.strerror or exc}") from None
    if not rows:
        raise InvalidParameterError(f"{func}(): {os.fspath(path)} holds no request")
    out = {c: np.empty(len(rows)) for c in need}
    for i, row in enumerate(rows, start=2):
        for c in need:
            try:
                x = float(row[c])
            except (TypeError, ValueError):
                x = float("nan")
            whole = c != "arrival_s"
            if not np.isfinite(x) or x < (1 if whole else 0) or (whole and x != int(x)):
                rule = "a whole number >= 1" if whole else "a time in seconds >= 0"
                raise InvalidParameterError(f"{func}(): {os.fspath(path)} line {i}, column {c}: "
                                            f"must be {rule}, got {row[c]!r}")
            out[c][i - 2] = x
    order = np.argsort(out["arrival_s"], kind="stable")
    return Requests(out["arrival_s"][order], out["prompt_tokens"][order].astype(np.int64),
                    out["output_tokens"][order].astype(np.int64))


StepFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def run_engines(arrival: np.ndarray, prompt: np.ndarray, context: np.ndarray,
                decode_steps: np.ndarray, engine: np.ndarray, engines: int, batch: int,
                chunk: int, step: StepFn, *, prefill: bool = True,
                ) -> tuple[np.ndarray, np.ndarray]:
    """Simulate ``engines`` replicas at once (see the module docstring).

    Request ``i`` arrives at ``arrival[i]`` at engine ``engine[i]`` with ``prompt[i]``
    tokens to prefill (when ``prefill``; else none) and ``context[i]`` cached tokens once
    prefilled, then takes ``decode_steps[i]`` decode steps. Returns (time its prefill ends,
    time its last token is out), seconds.
    """
    n = arrival.size
    order = np.lexsort((np.arange(n), arrival, engine))
    per = np.bincount(engine, minlength=engines)
    width = int(per.max()) + 1 if n else 1
    pos = np.arange(n) - np.repeat(np.cumsum(per) - per, per)
    rows = np.arange(engines)
    ids = np.full((engines, width), -1, dtype=np.int64)
    ids[engine[order], pos] = order
    arr_ns = np.full((engines, width), _ROW - 1, dtype=np.int64)
    arr_ns[engine[order], pos] = np.rint(arrival[order] * _NS).astype(np.int64)
    flat_arr = (arr_ns + rows[:, None] * _ROW).ravel()
    need = prompt if prefill else np.zeros_like(prompt)
    tokens = np.zeros((engines, width), dtype=np.int64)
    tokens[engine[order], pos] = need[order]
    cum = np.where(ids >= 0, np.cumsum(tokens, 1), _TOKROW - 1)  # pads sort last
    flat_cum = (cum + rows[:, None] * _TOKROW).ravel()

    slot_req = np.full((engines, batch), -1, dtype=np.int64)
    slot_first = np.full((engines, batch), np.iinfo(np.int64).max // 2, dtype=np.int64)
    slot_last = np.full((engines, batch), -1, dtype=np.int64)
    slot_ctx = np.zeros((engines, batch))
    admitted = np.zeros(engines, dtype=np.int64)
    finished = np.zeros(engines, dtype=np.int64)
    done_pf = np.zeros(engines, dtype=np.int64)
    cursor = np.zeros(engines, dtype=np.int64)
    steps = np.zeros(engines, dtype=np.int64)
    clock = np.where(per > 0, arr_ns[:, 0] / _NS, 0.0)
    first = np.full(n, np.nan)
    last = np.full(n, np.nan)
    where_slot = np.full(n, -1, dtype=np.int64)
    live = per > 0
    while live.any():
        # 1. admit arrived requests into free slots, in order
        clock_ns = np.minimum(np.rint(clock * _NS).astype(np.int64), _ROW - 2)
        arrived = np.searchsorted(flat_arr, clock_ns + rows * _ROW, "right") - rows * width
        take = np.minimum(batch - (admitted - finished), np.maximum(arrived - admitted, 0))
        if take.any():
            free = slot_req < 0
            rank = np.cumsum(free, 1) - 1
            r, j = np.nonzero(free & (rank < take[:, None]))
            new = ids[r, admitted[r] + rank[r, j]]
            slot_req[r, j] = new
            where_slot[new] = r * batch + j
            slot_ctx[r, j] = context[new]
            admitted += take
            if not prefill:  # nothing to prefill: decoding starts this step
                slot_first[r, j] = steps[r] - 1
                slot_last[r, j] = steps[r] - 1 + decode_steps[new]
        # 2. the step: decode one token for each decoding request, prefill with the rest
        dec = (slot_first < steps[:, None]) & (steps[:, None] <= slot_last)
        d = dec.sum(1)
        kv = np.where(dec, slot_ctx + (steps[:, None] - slot_first), 0.0).sum(1)
        queued_end = np.where(admitted > 0, cum[rows, np.maximum(admitted - 1, 0)], 0)
        c = np.minimum(np.maximum(queued_end - cursor, 0), np.maximum(chunk - d, 0))
        # (query, key) pairs of the chunk's causal attention: the tokens of the prompt under
        # way already cached, and half the chunk itself
        begun = cursor - np.where(done_pf > 0, cum[rows, np.maximum(done_pf - 1, 0)], 0)
        pairs = c * (c / 2.0 + begun)
        busy = (d > 0) | (c > 0)
        idle = live & ~busy
        if idle.any():  # jump to the next arrival
            nxt = arr_ns[rows, np.minimum(admitted, width - 1)] / _NS
            clock = np.where(idle & (admitted < per), np.maximum(clock, nxt), clock)
            live = live & ~(idle & (admitted >= per) & (admitted == finished))
        if not busy.any():
            continue
        t = np.where(busy, step(d, c, kv, pairs), 0.0)
        clock = clock + t
        cursor = cursor + c
        # 3. prompts done: first token at the end of this step
        now_done = np.minimum(np.searchsorted(flat_cum, cursor + rows * _TOKROW, "right")
                              - rows * width, admitted)
        now_done = np.maximum(now_done, done_pf)
        k = now_done - done_pf
        if prefill and k.any():
            rr = np.repeat(rows, k)
            cc = np.repeat(done_pf, k) + (np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k))
            got = ids[rr, cc]
            first[got] = clock[rr]
            s = where_slot[got]
            slot_first.ravel()[s] = steps[rr]
            slot_last.ravel()[s] = steps[rr] + decode_steps[got]
        done_pf = now_done
        # a slot's last step (only busy replicas hold slots: an idle one has none)
        over = slot_last == steps[:, None]
        out = over.sum(1)
        if out.any():
            finished += out
            r, j = np.nonzero(over)
            last[slot_req[r, j]] = clock[r]
            slot_req[r, j] = -1
            slot_first[r, j] = np.iinfo(np.int64).max // 2
            slot_last[r, j] = -1
        steps = steps + busy
        live = live & ~((admitted >= per) & (admitted == finished))
    return first, last


__all__ = ["LENGTHS", "Requests", "poisson_requests", "read_trace", "run_engines"]
