"""The full LP and the approximate method refuse before they allocate what would not fit in
memory, naming the size and the memory; method="auto" answers with what fits.

Memory is made short by replacing :func:`fabricopt.flow.memory.available_memory` (nothing is
allocated), and in a child process under an address-space limit (``RLIMIT_AS``), as a batch
scheduler or ``ulimit -v`` sets it.
"""

import os
import subprocess
import sys
import textwrap

import pytest

import fabricopt as fo
import fabricopt.flow.bounds_first.brackets as brackets
import fabricopt.flow.memory as memory
import fabricopt.flow.plan as api
from fabricopt.flow.formulation import flow_lp_size
from fabricopt.flow.memory import APPROX_BYTES_PER_VARIABLE, LP_BYTES_PER_NONZERO, Memory

JELLY = fo.jellyfish(switches=12, network_ports=4, endpoints_per_switch=2, seed=3)


def _short(monkeypatch, nbytes):
    """Memory for ``nbytes`` only, and a model the API must never build."""
    monkeypatch.setattr(memory, "available_memory", lambda: Memory(nbytes, "a test's budget"))

    def never(*args, **kwargs):
        raise AssertionError("the LP was built before the refusal")

    monkeypatch.setattr(brackets, "build_flow_lp", never)


@pytest.mark.parametrize("fab,traffic", [
    (fo.fat_tree(4), None), (fo.fat_tree(4), "permutation"),
    (fo.cluster(fo.dgx_h100(), nodes=2), None), (JELLY, "longest-matching"),
    (fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2), {("g0", "g1"): 1.0}),
])
@pytest.mark.parametrize("include", [True, False])
def test_the_lp_size_is_counted_without_building_it(fab, traffic, include):
    # Rows, columns and nonzeros as assembled (docstring of flow_lp_size: K m + 1 columns,
    # m + E + K n rows, 3 K m + E + P + K nonzeros), counted from the collapse alone.
    traffic = (fo.all_to_all(fab) if traffic is None else fo.Traffic(traffic)
               if isinstance(traffic, dict) else
               fo.permutation(fab, seed=1) if traffic == "permutation" else
               fo.longest_matching(fab))
    try:
        lp = fo.build_flow_lp(fab, traffic, include).lp
    except fo.TrafficError:  # fabric-only, every pair under one switch
        return
    size = flow_lp_size(fab, traffic, include)
    assert (size.rows, size.columns, size.nonzeros) == (lp.n_rows, lp.n_cols, lp.nnz)
    assert size.bytes == LP_BYTES_PER_NONZERO * lp.nnz
    assert size.approx_bytes == APPROX_BYTES_PER_VARIABLE * (lp.n_cols - 1)


def test_the_lp_is_refused_before_it_is_built(monkeypatch):
    # fat_tree(4): 8 leaves send across 64 core arcs, 36 nodes, 32 endpoint rows, 56
    # aggregated pairs: 8 x 64 + 1 = 513 columns, 64 + 32 + 8 x 36 = 384 rows, 3 x 8 x 64
    # + 32 + 56 + 8 = 1,632 nonzeros, 1,632 x 300 = 489,600 bytes: refused under 0.1 MB.
    _short(monkeypatch, 10**5)
    with pytest.raises(fo.InvalidParameterError) as err:
        fo.max_concurrent_flow(fo.fat_tree(4), method="lp")
    text = str(err.value)
    assert text.startswith("max_concurrent_flow(): method='lp' must fit in the memory")
    assert "384 rows, 513 columns and 1,632 nonzeros" in text
    assert "0.0001 GB (a test's budget)" in text and "method='auto'" in text


def test_the_approximate_method_is_refused_before_its_flows(monkeypatch):
    # JELLY's all-to-all: 12 switches send across 48 core arcs, 12 x 48 = 576 flow
    # variables, 576 x 60 = 34,560 bytes; refused under 10 kB.
    _short(monkeypatch, 10**4)
    with pytest.raises(fo.InvalidParameterError, match=r"method='approx' must fit .* 576 "
                                                       r"variables"):
        fo.max_concurrent_flow(JELLY, method="approx")


def test_auto_answers_with_the_bracket_that_fits(monkeypatch):
    # The full LP counts as too large (MAX_AUTO_NONZEROS lowered), so auto would take the
    # approximate method, whose flows do not fit either: the answer is the bracket proven
    # without them (hierarchy cuts, hop lengths), status not_solved, and it contains the
    # exact theta and re-checks.
    monkeypatch.setattr(api, "MAX_AUTO_NONZEROS", 10)
    monkeypatch.setattr(api, "FIND_SYMMETRY_NONZEROS", 10**9)  # no symmetry search
    _short(monkeypatch, 10**3)
    r = fo.max_concurrent_flow(JELLY, bounds_first=False)
    assert r.status == "not_solved" and r.theta is None
    assert "approximate method would need" in r.message
    monkeypatch.undo()
    exact = fo.max_concurrent_flow(JELLY, method="lp")
    assert r.lower <= exact.theta * (1 + 1e-9) and exact.theta <= r.upper * (1 + 1e-9)
    assert fo.check_certificate(JELLY, r).ok


def test_a_built_model_refuses_its_lp(monkeypatch):
    model = fo.build_flow_lp(JELLY, fo.all_to_all(JELLY))
    _short(monkeypatch, 10**3)
    with pytest.raises(fo.InvalidParameterError, match=r"^solve_flow_model\(\): the model's"):
        fo.solve_flow_model(model)
    with pytest.raises(fo.InvalidParameterError, match=r"^FlowModel\.lp\(\): the LP must"):
        model.lp  # noqa: B018


def test_memory_is_not_short_by_default():
    # Without a limit, the memory available is at least what a small solve needs (this
    # machine can run the suite) and says where it comes from.
    m = memory.available_memory()
    assert m is not None and m.bytes > 10**8 and "memory" in m.source
    assert fo.max_concurrent_flow(fo.fat_tree(4), method="lp").exact


def _child(code, limit_gb):
    """Run ``code`` in a fresh interpreter under an address-space limit of ``limit_gb`` GiB;
    its standard output."""
    script = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, ({limit_gb} * 2**30, {limit_gb} * 2**30))
    """) + textwrap.dedent(code)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux",
                    reason="RLIMIT_AS as Linux applies it")
def test_available_memory_reads_the_address_space_limit():
    out = _child("""
        from fabricopt.flow.memory import available_memory
        m = available_memory()
        print(m.bytes, m.source)
    """, 4)
    nbytes, source = out.split(" ", 1)
    # 4 GiB less what the interpreter maps with numpy and scipy loaded: under 4.3e9.
    assert 0 < int(nbytes) < 4 * 2**30 and "address-space limit" in source


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux applies it")
def test_a_4096_gpu_cluster_lp_is_refused_under_10_gb():
    # 512 DGX H100 behind a 3-tier 2:1 Clos whose leaves fill their 42 down ports GPU by GPU
    # (whole_servers=False; whole DGXs take 40): no GPU collapses (each has NVLink bundles and
    # a NIC), so K = 4,096 commodities over all m = 45,412 arcs and n = 6,368 nodes:
    # 4,096 x 45,412 + 1 = 186,007,553 columns, 45,412 + 4,096 x 6,368 = 26,128,740 rows,
    # 3 x 4,096 x 45,412 + 4,096 x 4,095 + 4,096 = 574,799,872 nonzeros. scipy.sparse.kron
    # raised numpy's _ArrayMemoryError under this limit (without one, the kernel killed it).
    out = _child("""
        import fabricopt as fo
        fab = fo.cluster(fo.dgx_h100(), nodes=512, scale_out="clos", tiers=3,
                         oversubscription=2, whole_servers=False)
        try:
            fo.max_concurrent_flow(fab, method="lp")
        except fo.InvalidParameterError as e:
            print(e)
    """, 10)
    assert out.startswith("max_concurrent_flow(): method='lp' must fit in the memory")
    assert "26,128,740 rows, 186,007,553 columns and 574,799,872 nonzeros" in out
    assert "address-space limit" in out and "method='auto'" in out
