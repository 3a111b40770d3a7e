import sys
from pathlib import Path

# Let test modules import the shared helpers next to them.
sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config):
    config.addinivalue_line("markers", "fast: quick comparisons against brute force")


#: Cases that take seconds each on 2 cores (measured with ``--durations``): marked slow, so
#: ``pytest -m "not slow"`` is a quick pass while the README's plain ``pytest`` (and CI) runs
#: them all. The largest shipped designs (24,576-GPU Meta and 15,360-GPU Alibaba clusters, the
#: 16-SU SuperPOD, the 3-SU sweep) and the largest generator tables dominate.
SLOW_CASES = (
    "io/test_shipped_designs.py::test_design_solves[alibaba-hpn-dual-plane]",
    "io/test_shipped_designs.py::test_design_solves[meta-24k-roce]",
    "io/test_shipped_designs.py::test_design_solves[dgx-h100-superpod-16su]",
    "io/test_shipped_designs.py::test_design_solves[rail-oversubscription-3su-sweep]",
    "io/test_shipped_designs.py::test_design_solves[gb200-nvl72-superpod]",
    "io/test_shipped_designs.py::test_cli_show_summarises[meta-24k-roce]",
    "io/test_shipped_designs.py::test_cli_show_summarises[alibaba-hpn-dual-plane]",
    "io/test_specs.py::test_every_design_file_loads_and_validates[meta-24k-roce.toml]",
    "io/test_specs.py::test_every_design_file_loads_and_validates[alibaba-hpn-dual-plane.toml]",
    "io/test_design_fidelity.py::test_meta_roce_cluster_is_ethernet_only",
    "cost/test_cost.py::test_shipped_designs_have_a_bill_of_materials[meta-24k-roce]",
    "generators/test_generators_cluster.py::test_superpod_matches_nvidia_table[64-512-512-256]",
    "generators/test_generators_cluster.py::test_superpod_matches_nvidia_table[32-256-256-128]",
    "generators/test_generators_scaleout.py::test_fat_tree_64_sizes",
    "study/test_compare.py::test_compare_command_writes_the_report_end_to_end",
)


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if any(item.nodeid.endswith(case) for case in SLOW_CASES):
            item.add_marker(pytest.mark.slow)


def _forget_solved_intact():
    """Each test starts with no intact fabric kept solved (a test that patches the intact
    solve must not get an earlier test's answer)."""
    from fabricopt.failures import intact_flow as failure_reroute

    failure_reroute.FROM_INTACT.solves.clear()


def pytest_runtest_setup(item):
    _forget_solved_intact()
