"""The project's documentation resolves: every ``docs/*.md`` page (and ``#section``) that code,
tests, design files or the README point at exists, links between the pages resolve, and nothing
points at derivation or hardware notes that are not in the repository."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg"}

# Pages the project promises (docs/index.md maps them).
PAGES = ["index", "throughput", "bounds-first", "two-phase", "bisection", "collectives",
         "hardware", "design-files", "errors", "routing", "worst-case", "optimize",
         "architecture", "workload"]

# A docs page, with an optional section anchor: docs/throughput.md#the-symmetric-method.
DOC_REF = re.compile(r"docs/([\w-]+\.md)(#[\w-]+)?")
# Built from parts so that this file does not match itself.
OUTSIDE_REF = re.compile(r"(?<![\w/.-])" + "reference" + r"/[\w./-]+")
BARE_NOTE = re.compile(r"(?<![\w/.-])(?:bounds|hardware)" + r"\.md")


def project_files():
    """Source, tests, benchmarks, design files, docs and the README (this file excluded)."""
    found = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for folder in ("fabricopt", "tests", "benchmarks", "topologies", "docs"):
        found += [p for p in sorted((ROOT / folder).rglob("*"))
                  if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    return [p for p in found if p.exists() and p != Path(__file__).resolve()]


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to -."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Anchors of the headings of ``page`` (lines in fenced code blocks are not headings)."""
    out, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            out.add(slug(line.lstrip("#")))
    return out


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("name", PAGES)
def test_promised_pages_exist_and_are_mapped(name):
    page = DOCS / f"{name}.md"
    assert page.is_file(), f"docs/{name}.md is missing"
    assert page.read_text(encoding="utf-8").startswith("# ")
    if name != "index":
        assert f"({name}.md)" in (DOCS / "index.md").read_text(encoding="utf-8")


def test_slug_follows_github():
    # Colons, commas and parentheses go, spaces become hyphens, hyphens stay.
    assert slug(" Lower bound: a feasible flow, scaled by its worst overload") == \
        "lower-bound-a-feasible-flow-scaled-by-its-worst-overload"
    assert slug("NVL576 (announced, not shipped)") == "nvl576-announced-not-shipped"
    assert slug("From the all-to-all throughput") == "from-the-all-to-all-throughput"


def test_every_docs_reference_resolves():
    refs = 0
    broken = []
    for path in project_files():
        text = path.read_text(encoding="utf-8")
        for m in DOC_REF.finditer(text):
            refs += 1
            page = DOCS / m.group(1)
            if not page.is_file():
                broken.append(f"{rel(path)}: {m.group(0)} (no such page)")
            elif m.group(2) and m.group(2)[1:] not in anchors(page):
                broken.append(f"{rel(path)}: {m.group(0)} (no such section)")
    assert not broken, "\n".join(broken)
    # The package, tests and design files do point at the docs (the check is not vacuous).
    assert refs >= 20


def test_links_between_pages_resolve():
    broken = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([\w-]+\.md)?(#[\w-]+)?\)", text):
            goal = DOCS / target if target else page
            if not goal.is_file():
                broken.append(f"{rel(page)}: {target} (no such page)")
            elif anchor and anchor[1:] not in anchors(goal):
                broken.append(f"{rel(page)}: {target}{anchor} (no such section)")
    assert not broken, "\n".join(broken)


def stale_references(text: str, where: str) -> list[str]:
    """Mentions of notes that are not in the repository: ``reference/...`` paths that do not
    exist, and derivation or hardware notes named without their ``docs/`` folder (outside
    ``docs/`` itself)."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for m in OUTSIDE_REF.finditer(line):
            if not (ROOT / m.group(0).rstrip(".")).exists():
                out.append(f"{where}:{number}: {m.group(0)}")
        if not where.startswith("docs/"):  # pages in docs/ link to each other by bare name
            out += [f"{where}:{number}: {m.group(0)}" for m in BARE_NOTE.finditer(line)]
    return out


def test_stale_reference_detector():
    # The detector fires on what it looks for, and not on docs/ paths or URLs.
    note = "reference" + "/" + "bounds" + ".md"
    text = (f"see {note}\nsee hardware" + ".md 2.2\nsee docs/hardware.md#dgx-superpod\n"
            "https://example.com/" + "reference" + "/x\n")
    assert stale_references(text, "probe") == [f"probe:1: {note}",
                                                "probe:2: hardware" + ".md"]


@pytest.mark.parametrize("path", project_files(), ids=rel)
def test_no_reference_to_notes_outside_the_repository(path):
    assert not stale_references(path.read_text(encoding="utf-8"), rel(path))


# -- docstring cross-references -------------------------------------------------------------
#: A Sphinx role in a docstring: :func:`~fabricopt.x.y`, :class:`Fabric`, :mod:`.layout`, ...
XREF = re.compile(r":(func|class|mod|attr|meth|data|exc|obj):`~?\.?([\w.]+)`")


def instance_attributes(cls: type) -> set[str]:
    """Names a class sets on ``self`` in its methods (instance attributes are not on the
    class, yet ``:attr:`Fabric.removed``` names a real one)."""
    import ast
    import inspect

    names = set()
    for klass in getattr(cls, "__mro__", ()):
        try:
            tree = ast.parse(inspect.getsource(klass).lstrip())
        except (OSError, TypeError, SyntaxError):
            continue
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                  and isinstance(n.ctx, ast.Store) and getattr(n.value, "id", "") == "self"}
        for k in getattr(klass, "__annotations__", {}):
            names.add(k)
    return names


def resolve(dotted: str) -> bool:
    """True when ``dotted`` names a module, or an object reached from one by attributes."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        rest = parts[i:]
        for j, name in enumerate(rest):
            if hasattr(obj, name):
                obj = getattr(obj, name)
            else:
                return j == len(rest) - 1 and isinstance(obj, type) and \
                    name in instance_attributes(obj)
        return True
    return False


def docstring_references():
    """``(where, role, target, candidates)`` of every cross-reference in the package: a name
    is looked up as written, in its module, its enclosing class, its package, the package
    root and the builtins (Sphinx's search order, near to far)."""
    import ast

    out = []
    for path in sorted((ROOT / "fabricopt").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module if parts[-1] == "__init__" else module.rsplit(".", 1)[0]
        text = path.read_text(encoding="utf-8")
        classes = [(c.lineno, c.end_lineno, c.name) for c in ast.walk(ast.parse(text))
                   if isinstance(c, ast.ClassDef)]
        for m in XREF.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            target = m.group(2)
            inner = [f"{module}.{name}.{target}" for lo, hi, name in classes
                     if lo <= line <= hi]
            candidates = [target, f"{module}.{target}", *inner, f"{package}.{target}",
                          f"fabricopt.{target}", f"builtins.{target}"]
            out.append((f"{rel(path)}:{line}", m.group(1), target, candidates))
    return out


def test_every_docstring_cross_reference_resolves():
    refs = docstring_references()
    broken = [f"{where}: :{role}:`{target}`" for where, role, target, candidates in refs
              if not any(resolve(c) for c in candidates)]
    assert not broken, "\n".join(broken)
    assert len(refs) > 300  # the package does cross-reference (the check is not vacuous)


def test_the_resolver_refuses_what_is_not_there():
    assert resolve("fabricopt.flow.lp.STATUSES") and resolve("fabricopt.Fabric.without")
    assert resolve("fabricopt.Fabric.removed")  # set in __init__, not on the class
    assert not resolve("fabricopt.flow.certify.certify")  # no module flow.certify
    assert not resolve("fabricopt.rank_order") and not resolve("fabricopt.Fabric.nothing")
