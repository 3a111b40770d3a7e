"""Polishing is spent only where the solver's own point leaves the bracket open."""

import numpy as np
import pytest

import fabricopt as fo
import fabricopt.flow.certificate as certificate
from fabricopt.flow.backends import solve_lp
from fabricopt.flow.certificate import EXACT_RTOL, certify

pytest.importorskip("highspy")


def _solve(fab):
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    # Interior point without crossover: a point off the constraints by its tolerances.
    sol = solve_lp(model.lp, "highspy", solver="ipm", run_crossover="off")
    return model, sol


def _counting(monkeypatch):
    calls = []
    real = certificate.polished

    def counted(model, sol):
        calls.append(1)
        return real(model, sol)

    monkeypatch.setattr(certificate, "polished", counted)
    return calls


def test_a_point_that_closes_the_bracket_is_not_polished(monkeypatch):
    # fat_tree(4) all-to-all at 1 Gb/s per pair: 16 hosts on 400G links, non-blocking, so each
    # host's link binds: 15 x theta = 400, theta = 80/3. Interior point lands within 1e-6 of
    # it on its own.
    model, sol = _solve(fo.fat_tree(4))
    calls = _counting(monkeypatch)
    c = certify(model, sol)
    assert c.upper - c.lower <= EXACT_RTOL * c.upper
    assert c.lower <= 80 / 3 * (1 + 1e-9) and 80 / 3 <= c.upper * (1 + 1e-9)
    assert calls == []


def test_a_point_off_its_constraints_is_polished_and_stays_a_proof(monkeypatch):
    # The same point with a conservation error of 1e-4 on every column: charged as residual,
    # it opens the bracket, so the point is polished; either way lower <= theta* <= upper.
    model, sol = _solve(fo.fat_tree(4))
    sol.x = sol.x * (1 + 1e-4 * np.sin(np.arange(len(sol.x))))
    calls = _counting(monkeypatch)
    c = certify(model, sol)
    assert calls == [1]
    assert c.lower <= 80 / 3 * (1 + 1e-9) <= c.upper * (1 + 1e-9)


def test_a_solve_the_clock_stopped_is_not_polished(monkeypatch):
    # The point of the test above (off its constraints by 1e-4, which opens the bracket) as
    # the solver's answer when its time limit stopped it: polishing would only run the
    # clock on (1 s of LSQR past a 5 s limit on a failed superpod(1)), so it is skipped.
    # The answer is still a proof: lower <= 80/3 <= upper, status "time_limit".
    import fabricopt.flow.plan as api

    _, sol = _solve(fo.fat_tree(4))
    sol.x = sol.x * (1 + 1e-4 * np.sin(np.arange(len(sol.x))))

    def stopped(lp, backend, time_limit, **options):
        sol.status = "time_limit"
        return sol

    monkeypatch.setattr(api, "solve_lp", stopped)
    calls = _counting(monkeypatch)
    fab = fo.fat_tree(4)
    r = fo.max_concurrent_flow(fab, method="lp", time_limit=60)
    assert r.status == "time_limit" and calls == []
    assert r.lower <= 80 / 3 * (1 + 1e-9) <= r.upper * (1 + 1e-9)
    assert fo.check_certificate(fab, r).ok
    # Stopped by a work limit instead (no clock), the same point is polished.
    sol.status = "iteration_limit"
    monkeypatch.setattr(api, "solve_lp", lambda lp, backend, time_limit, **o: sol)
    fo.max_concurrent_flow(fab, method="lp", work_limit=10, backend="highspy")
    assert calls == [1]
