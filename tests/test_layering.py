"""The package's floors, read from its source.

Every module belongs to a floor: the root's data model and private utilities at the bottom, a
folder per floor above it, the command line on top. A floor imports only from the floors it is
allowed to (an allow-list, not a deny-list), lazy imports inside functions included; no two
modules import each other at load time; and no private name (``_x``) is imported from another
floor. ``docs/architecture.md`` draws the same floors.
"""

import ast
import pathlib

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fabricopt"

#: The modules above every floor: the command line (its folder) and the package face.
TOP = {"fabricopt", "fabricopt.cli", "fabricopt.cli.words", "fabricopt.cli.failures",
       "fabricopt.cli.solve", "fabricopt.__main__"}

_BASE = {"root"}
_ENGINE = _BASE | {"symmetry", "generators", "flow"}
#: What each floor may import besides itself, lowest floors first.
ALLOWED = {
    "root": set(),
    "symmetry": _BASE,
    "generators": _BASE | {"symmetry"},
    "io": _BASE | {"symmetry", "generators", "cost"},
    "flow": _BASE | {"symmetry"},
    "cost": _BASE,
    "routing": _ENGINE,
    "analysis": _ENGINE | {"routing"},
    "collectives": _ENGINE | {"routing", "analysis"},
    "workload": _ENGINE | {"routing", "analysis", "collectives", "cost"},
    "study": _ENGINE | {"io", "routing", "analysis", "collectives", "workload", "cost"},
    "plot": _ENGINE | {"io", "routing", "analysis", "collectives", "workload", "cost", "study"},
}
ALLOWED["top"] = set(ALLOWED) | {"top"}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def floor_of(mod: str) -> str:
    if mod in TOP:
        return "top"
    parts = mod.split(".")
    if len(parts) == 2 and not (ROOT / parts[1]).is_dir():
        return "root"
    return parts[1]


def package_of(mod: str) -> str:
    """The folder a module lives in (``fabricopt`` for the root)."""
    return mod if (ROOT.parent / mod.replace(".", "/")).is_dir() else mod.rsplit(".", 1)[0]


def imports(path: pathlib.Path, top_level_only: bool) -> set[tuple[str, tuple[str, ...]]]:
    """(module, imported names) for each import of the package that ``path`` makes."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            out.add((target, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fabricopt"):
            out.add((node.module, tuple(a.name for a in node.names)))
    return out


MODULES = sorted(ROOT.rglob("*.py"))


def test_every_folder_is_a_known_floor():
    folders = {p.parent.name for p in MODULES if p.parent != ROOT} - {"cli"}  # top, above all
    assert folders <= set(ALLOWED), f"floors without a rule: {sorted(folders - set(ALLOWED))}"


def test_no_import_cycle_between_modules():
    graph = nx.DiGraph()
    for path in MODULES:
        for target, _ in imports(path, top_level_only=True):
            graph.add_edge(module_name(path), target)
    assert list(nx.simple_cycles(graph)) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_only_go_down_the_floors(path):
    mod = module_name(path)
    floor = floor_of(mod)
    allowed = ALLOWED[floor] | {floor}
    wrong = sorted(t for t, _ in imports(path, top_level_only=False)
                   if floor_of(t) not in allowed)
    assert wrong == [], f"{mod} (floor {floor!r}) imports {wrong} from a floor above it"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_private_name_from_another_floor(path):
    mod = module_name(path)
    found = imports(path, top_level_only=False)
    wrong = sorted(f"{t}.{n}" for t, names in found for n in names
                   if n.startswith("_") and not n.startswith("__")
                   and package_of(t) != package_of(mod))
    # A private module of another folder counts too (the root's private utilities,
    # ``_checks``, ``_toml``..., serve the whole package).
    wrong += sorted(t for t, _ in found if package_of(t) != package_of(mod)
                    and package_of(t) != "fabricopt" and t.rsplit(".", 1)[-1].startswith("_"))
    assert wrong == [], f"{mod} imports private names {wrong} from another floor"


def test_a_floor_above_is_caught():
    # The rule must be able to fail: the flow engine may not import the batch layer.
    assert "study" not in ALLOWED["flow"] and floor_of("fabricopt.study.compare") == "study"
    assert floor_of("fabricopt.fabric") == "root" and floor_of("fabricopt.cli") == "top"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_lazy_imports_only_where_a_cycle_demands_one(path):
    # An import of the package inside a function is allowed only to break an import cycle,
    # and the comment just above it says so ("cycle"); type-only imports are exempt.
    lines = path.read_text().split("\n")
    tree = ast.parse("\n".join(lines))
    top = {id(n) for n in tree.body}
    typing_only = {id(n) for node in tree.body if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    unexplained = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.ImportFrom) and node.level and id(node) not in top
                and id(node) not in typing_only):
            above = "\n".join(lines[max(node.lineno - 4, 0):node.lineno - 1]).lower()
            if "cycle" not in above:
                unexplained.append(f"line {node.lineno}: from {'.' * node.level}"
                                   f"{node.module or ''}")
    assert unexplained == [], f"{module_name(path)}: lazy imports without a cycle: {unexplained}"
