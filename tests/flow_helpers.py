"""Shared checks for throughput results: every solve in the suite goes through these."""

import fabricopt as fo


def certified(fab, result, traffic=None, exact=True):
    """Re-check a result's certificate on the fabric and return it.

    lower <= upper always; the stored flow re-proves lower (conservation and capacities
    recomputed from the fabric) and the stored lengths re-prove upper (distance bound with one
    Dijkstra per endpoint, no reductions). Exact solves must close the bracket to 1e-6.
    """
    assert result.lower <= result.upper
    check = fo.check_certificate(fab, result, traffic)
    assert check.lower_ok, (check, result.lower)
    assert check.upper_ok, (check, result.upper)
    if exact:
        assert result.status == "optimal", result.message
        assert result.exact
        assert result.upper - result.lower <= 1e-6 * result.upper
        assert result.lower <= result.theta <= result.upper
    return result
