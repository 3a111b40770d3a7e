"""Read the Parameters section of a numpydoc docstring, for help texts built from code."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any


def parameter_docs(func: Callable[..., Any]) -> dict[str, tuple[str, str]]:
    """``{name: (type, description)}`` from the Parameters section of ``func``'s docstring.

    A line ``a, b : int`` documents both names; descriptions are joined into one line.

    >>> def f(n, link_gbps=1.0):
    ...     '''Doc.
    ...
    ...     Parameters
    ...     ----------
    ...     n : int
    ...         Nodes, >= 2.
    ...     link_gbps : float
    ...         Capacity per link
    ...         and direction.
    ...     '''
    >>> parameter_docs(f)
    {'n': ('int', 'Nodes, >= 2.'), 'link_gbps': ('float', 'Capacity per link and direction.')}
    """
    doc = inspect.getdoc(func) or ""
    lines = doc.splitlines()
    out: dict[str, tuple[str, str]] = {}
    try:
        start = next(i for i in range(len(lines) - 1)
                     if lines[i].strip() == "Parameters" and set(lines[i + 1].strip()) == {"-"})
    except StopIteration:
        return out
    names: list[str] = []
    kind = ""
    text: list[str] = []

    def flush() -> None:
        for name in names:
            out[name] = (kind, " ".join(text))

    i = start + 2
    while i < len(lines):
        line = lines[i]
        if line.strip() and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"} \
                and not line.startswith(" "):
            break  # the next section
        if line and not line.startswith(" "):
            flush()
            head, _, kind = line.partition(" : ")
            names = [n.strip().lstrip("*") for n in head.split(",")]
            kind = kind.strip()
            text = []
        elif line.strip():
            text.append(textwrap.dedent(line).strip())
        i += 1
    flush()
    return out
