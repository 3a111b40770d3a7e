"""Sizes a reader can hold in mind: no module over 800 lines and no function over 100 lines of
code (docstring, comments and blank lines not counted), unless a stated reason says why."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fabricopt"
MODULE_LINES = 800
FUNCTION_CODE_LINES = 100

#: Exceptions, each with the reason it stands (empty: none).
LONG_MODULES: dict[str, str] = {}
LONG_FUNCTIONS: dict[str, str] = {}


def code_lines(lines: list[str], node: ast.AST) -> int:
    """Lines of code in a function: not blank, not only a comment, not its docstring."""
    skip: set[int] = set()
    body = getattr(node, "body", [])
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        skip = set(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(1 for i in range(node.lineno, node.end_lineno + 1)
               if i not in skip and lines[i - 1].strip()
               and not lines[i - 1].strip().startswith("#"))


MODULES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_function_sizes(path):
    name = str(path.relative_to(ROOT))
    lines = path.read_text().split("\n")
    if name not in LONG_MODULES:
        assert len(lines) <= MODULE_LINES, f"{name} has {len(lines)} lines"
    long = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = code_lines(lines, node)
            if n > FUNCTION_CODE_LINES and f"{name}:{node.name}" not in LONG_FUNCTIONS:
                long.append(f"{node.name} ({n} lines of code)")
    assert long == [], f"{name}: {long}"


def test_the_count_skips_docstrings_and_comments():
    src = 'def f():\n    """Doc.\n\n    More."""\n    # why\n\n    return 1\n'
    [node] = ast.parse(src).body
    assert code_lines(src.split("\n"), node) == 2  # the def line and the return
