"""The package's layering, read from its source: no import cycle between modules, and no
module imports from a layer above its own (the data model and numerics below, the batch,
drawing and command-line layers on top)."""

import ast
import pathlib

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fabricopt"

#: What each part of the package may not import, with the reason.
FORBIDDEN = {
    "fabricopt.flow": ("fabricopt.cost", "fabricopt.collectives", "fabricopt.bisection",
                       "fabricopt.generators", "fabricopt.specs", "fabricopt.compare",
                       "fabricopt.draw", "fabricopt.cli"),
    "fabricopt.generators": ("fabricopt.flow", "fabricopt.cost", "fabricopt.collectives",
                             "fabricopt.bisection", "fabricopt.compare", "fabricopt.draw",
                             "fabricopt.cli"),
    "fabricopt.cost": ("fabricopt.flow", "fabricopt.collectives", "fabricopt.compare",
                       "fabricopt.draw", "fabricopt.cli"),
    "fabricopt.collectives": ("fabricopt.cost",),
    "fabricopt.graph_arrays": ("fabricopt.flow",),
    "fabricopt.traffic": ("fabricopt.flow",),
    "fabricopt.cuts": ("fabricopt.flow",),
}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: pathlib.Path, top_level_only: bool) -> set[str]:
    """Modules of the package that ``path`` imports (relative imports, resolved)."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            out.add(".".join(base + ([node.module] if node.module else [])))
    return out


MODULES = sorted(ROOT.rglob("*.py"))


def test_no_import_cycle_between_modules():
    graph = nx.DiGraph()
    for path in MODULES:
        for target in imports(path, top_level_only=True):
            graph.add_edge(module_name(path), target)
    assert list(nx.simple_cycles(graph)) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_import_from_a_layer_above(path):
    mod = module_name(path)
    rules = [bad for part, bad in FORBIDDEN.items() if mod == part or mod.startswith(part + ".")]
    found = imports(path, top_level_only=False)
    wrong = sorted(t for t in found for bad in rules for b in bad
                   if t == b or t.startswith(b + "."))
    assert wrong == [], f"{mod} imports {wrong} from a layer above it"
