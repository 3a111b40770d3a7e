"""The package's floors, read from its source.

Every module belongs to a floor: the root's data model and private utilities at the bottom, a
folder per floor above it, the command line on top. A floor imports only from the floors it is
allowed to (an allow-list, not a deny-list), lazy imports inside functions included; no two
modules import each other at load time; and no private name (``_x``) is imported from another
floor. ``docs/architecture.md`` draws the same floors: its floor table is the allow-list
below, and its map names every module.
"""

import ast
import pathlib
import re

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fabricopt"
ARCHITECTURE = ROOT.parent / "docs" / "architecture.md"
#: The most modules the package root may hold: the data model and private utilities.
ROOT_MODULES_AT_MOST = 15

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
    "failures": _ENGINE | {"routing", "analysis"},
    "collectives": _ENGINE | {"routing", "analysis", "failures"},
    "workload": _ENGINE | {"routing", "analysis", "failures", "collectives", "cost"},
    "study": _ENGINE | {"io", "routing", "analysis", "failures", "collectives", "workload",
                        "cost"},
    "plot": _ENGINE | {"io", "routing", "analysis", "failures", "collectives", "workload",
                       "cost", "study"},
}
ALLOWED["top"] = set(ALLOWED) | {"top"}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def floor_of(mod: str) -> str:
    if mod in TOP or mod.startswith("fabricopt.cli."):
        return "top"
    parts = mod.split(".")
    if len(parts) == 2 and not (ROOT / parts[1]).is_dir():
        return "root"
    return parts[1]


def package_of(mod: str) -> str:
    """The floor's folder a module lives in (``fabricopt`` for the root): a floor's
    sub-folders (``flow/approx/``) are its own package."""
    folder = mod if (ROOT.parent / mod.replace(".", "/")).is_dir() else mod.rsplit(".", 1)[0]
    return ".".join(folder.split(".")[:2])


def _typing_only(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` block (its imports are read by type checkers only)."""
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: pathlib.Path, top_level_only: bool) -> set[tuple[str, tuple[str, ...]]]:
    """(module, imported names) for each import of the package that ``path`` makes; with
    ``top_level_only``, those made at load time and those under ``if TYPE_CHECKING:`` (a
    cycle through type-only imports is still a cycle to a reader and a type checker)."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    nodes = ([n for top in tree.body
              for n in ([top, *ast.walk(top)] if _typing_only(top) else [top])]
             if top_level_only else list(ast.walk(tree)))
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
    # A floor is the first folder under the package; its sub-folders belong to it.
    folders = {p.relative_to(ROOT).parts[0] for p in MODULES if p.parent != ROOT} - {"cli"}
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


def test_a_type_only_import_counts_for_cycles():
    # An import under ``if TYPE_CHECKING:`` is an edge of the import graph; one inside a
    # function is not (it runs later, and the lazy-import rule below governs it).
    module = ROOT / "flow" / "bounds_first" / "tor_routing.py"
    assert "TYPE_CHECKING" in module.read_text()
    assert ("fabricopt.flow.approx", ("CoreGraph",)) in imports(module, True)
    lazy = ROOT / "flow" / "two_phase" / "result.py"
    assert not any(t.endswith(".check") for t, _ in imports(lazy, True))


def test_a_floor_above_is_caught():
    # The rule must be able to fail: the flow engine may not import the batch layer.
    assert "study" not in ALLOWED["flow"] and floor_of("fabricopt.study.compare") == "study"
    assert floor_of("fabricopt.fabric") == "root" and floor_of("fabricopt.cli") == "top"
    # A sub-folder stays its floor, and shares its floor's private names.
    assert floor_of("fabricopt.flow.approx.colgen") == "flow"
    assert package_of("fabricopt.flow.approx.colgen") == package_of("fabricopt.flow.api")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_lazy_imports_only_where_a_cycle_demands_one(path):
    # An import of the package inside a function is allowed only to break an import cycle,
    # and the comment just above it says so ("cycle"); type-only imports are exempt.
    lines = path.read_text().split("\n")
    tree = ast.parse("\n".join(lines))
    top = {id(n) for n in tree.body}
    typing_only = {id(n) for node in tree.body if _typing_only(node) for n in ast.walk(node)}
    unexplained = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.ImportFrom) and node.level and id(node) not in top
                and id(node) not in typing_only):
            above = "\n".join(lines[max(node.lineno - 4, 0):node.lineno - 1]).lower()
            if "cycle" not in above:
                unexplained.append(f"line {node.lineno}: from {'.' * node.level}"
                                   f"{node.module or ''}")
    assert unexplained == [], f"{module_name(path)}: lazy imports without a cycle: {unexplained}"


def test_the_root_is_the_data_model_and_private_utilities():
    root = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(root) <= ROOT_MODULES_AT_MOST, \
        f"{len(root)} root modules (at most {ROOT_MODULES_AT_MOST}): {root}"


def _map_rows() -> list[tuple[str, str]]:
    """(section folder, first cell) of every row of the maintainer's map: the tables under
    each ``###`` heading, whose heading names the folder (``Root`` for the package root)."""
    text = ARCHITECTURE.read_text()
    body = text.split("## A maintainer's map", 1)[1].split("\n## ", 1)[0]
    rows, folder = [], None
    for line in body.splitlines():
        if line.startswith("### "):
            named = re.search(r"`([\w/]+/)`", line)
            folder = named.group(1) if named else ""
        elif line.startswith("| `") and folder is not None:
            rows.append((folder, line.split("|")[1]))
    return rows


def mapped_modules() -> set[str]:
    """The module paths (relative to the package) the map names: ``a.py`` in a section's
    folder, and ``sub/`` (``a.py``, ``b.py``) for the modules of a sub-folder."""
    out = set()
    for folder, cell in _map_rows():
        for sub, inner in re.findall(r"`([\w]+/)`\s*\(([^)]*)\)", cell):
            out.update(folder + sub + name for name in re.findall(r"`([\w.]+\.py)`", inner))
        cell = re.sub(r"`[\w]+/`\s*\([^)]*\)", "", cell)
        out.update(folder + name for name in re.findall(r"`([\w.]+\.py)`", cell))
    return out


def test_every_module_is_in_the_map():
    # A folder's __init__.py gathers its floor's public names (named in the map where it
    # does more).
    every = {str(p.relative_to(ROOT)) for p in MODULES}
    mapped = mapped_modules()
    missing = {m for m in every - mapped if not m.endswith("__init__.py")}
    assert sorted(missing) == [], "modules missing from docs/architecture.md's map"
    assert sorted(mapped - every) == [], "docs/architecture.md's map names no such module"


def floor_table() -> dict[str, set[str]]:
    """The floor table of ``docs/architecture.md``: floor -> the floors it may import."""
    text = ARCHITECTURE.read_text()
    table = text.split("| floor | folder |", 1)[1].split("\n\n", 1)[0]
    out = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.split("|")[1:-1]]
        folder, may = cells[1], cells[3]
        name = ("root" if folder.startswith("root") else "top" if folder.startswith("`cli/`")
                else re.match(r"`(\w+)/`", folder).group(1))
        out[name] = (set() if may == "nothing" else set(ALLOWED) | {"top"}
                     if may == "everything" else {w.strip() for w in may.split(",")})
    return out


def test_the_floor_table_is_the_allow_list():
    assert floor_table() == ALLOWED


def test_the_documentation_checks_can_fail():
    # A module the map does not name, and a floor table that differs, must be caught.
    assert "no_such_module.py" not in mapped_modules()
    assert "fabric.py" in mapped_modules() and "cli/words.py" in mapped_modules()
    assert floor_table()["flow"] != ALLOWED["study"]
