"""One status table: every status a result of fabricopt can carry is in
``fabricopt.flow.STATUS_MEANINGS``, read from the source."""

import ast
import pathlib

import fabricopt as fo
from fabricopt.flow import ROUTING_STATUSES, STATUS_MEANINGS, STATUSES, pulp_status

ROOT = pathlib.Path(fo.__file__).resolve().parent
#: Keys of result rows that hold a solver's status.
STATUS_KEYS = {"status", "flow_status", "all_to_all_status", "any_traffic_status"}
#: ``study/`` rows carry a candidate's fate ("evaluated", "pruned", "unsolved"), another
#: vocabulary, under the key ``status``; the study core is being rebuilt and its solver
#: statuses come from the results it runs, so it is read apart (see test below).
SKIP: set[str] = set()


def _is_status(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return name is not None and (name == "status" or name.endswith("_status"))


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def status_literals(tree: ast.AST) -> set[str]:
    """String constants assigned to, passed as, compared with or tabled as a status."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = (zip(target.elts, node.value.elts, strict=False)
                         if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                         else [(target, node.value)])
                for t, v in pairs:
                    if _is_status(t):
                        found.update(_strings(v))
                    if (isinstance(t, ast.Name) and t.id.endswith("_STATUS")
                            and isinstance(v, ast.Dict)):
                        found.update(s for val in v.values for s in _strings(val))
        elif isinstance(node, ast.keyword) and node.arg and node.arg in STATUS_KEYS:
            found.update(_strings(node.value))
        elif isinstance(node, ast.Compare) and _is_status(node.left):
            found.update(s for c in node.comparators for s in _strings(c))
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value in STATUS_KEYS:
                    found.update(_strings(v))
    return found


def test_the_table_holds_the_solver_and_routing_statuses():
    assert tuple(STATUS_MEANINGS) == STATUSES + ROUTING_STATUSES
    assert all(isinstance(v, str) and v for v in STATUS_MEANINGS.values())


def test_every_status_in_the_source_is_in_the_table():
    seen: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).parts[0] in SKIP:
            continue
        for s in status_literals(ast.parse(path.read_text())):
            seen.setdefault(s, []).append(str(path.relative_to(ROOT)))
    unknown = {s: where for s, where in seen.items() if s not in STATUS_MEANINGS}
    assert not unknown, f"statuses outside STATUS_MEANINGS: {unknown}"
    # The scan reads what it should: the flow, routing and capacity statuses are all there.
    assert {"optimal", "time_limit", "exact", "disconnected", "infeasible"} <= set(seen)


def test_the_scan_finds_a_status_outside_the_table():
    tree = ast.parse('r.status = "feasible"\nf(status="bracket")\nif x.status == "done": pass')
    assert status_literals(tree) == {"feasible", "bracket", "done"}


def test_pulp_statuses_read_as_every_backend_does():
    # pulp: status 1 Optimal, 0 Not Solved, -1 Infeasible, -2 Unbounded, -3 Undefined;
    # solution status 1 optimal, 2 a feasible point without the proof (CBC at its limit).
    assert pulp_status(1, 1) == "optimal"
    assert pulp_status(1, 2) == "time_limit"
    assert pulp_status(0, 0) == "not_solved"
    assert pulp_status(-1, -1) == "infeasible"
    assert pulp_status(-2, -2) == "unbounded"
    assert pulp_status(-3) == "error"
