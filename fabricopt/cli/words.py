"""How the ``fabricopt`` command line reads what a user types: targets (a generator and its
``key=value`` parameters, or a file), traffic forms, collective names, sizes and lists of names.

Every word that is not understood is named, with a suggestion where a near name exists, before
any work starts.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import math
import os
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._checks import did_you_mean, near_file, parse_bytes, parse_count, parse_seconds
from ..collectives import COLLECTIVES
from ..errors import FabricOptError, InvalidParameterError
from ..fabric import PLAUSIBLE_GBPS, Fabric
from ..generators import GENERATORS, check_call, make
from ..io.design_files import load_design
from ..io.graph_files import read_graphml, read_json
from ..study.compare import Comparison
from ..traffic import traffic_named
from .docstrings import parameter_docs

__all__ = ["EXIT_CODES", "FORMATS", "check_finite", "check_seconds", "check_targets",
           "generator_help",
           "load_fabric", "load_targets", "make_traffic", "names_arg", "parse_assignments",
           "parse_collectives", "parse_value", "print_rows", "progress_arg", "seconds_arg",
           "signed_values", "size_arg", "split_targets", "targets_arg"]


def parse_value(text: str) -> Any:
    """Read a command-line value as a Python literal when it is one, else keep the string.

    >>> parse_value("8"), parse_value("0.5"), parse_value("[5,4,4,5]"), parse_value("ndr")
    (8, 0.5, [5, 4, 4, 5], 'ndr')
    >>> parse_value("true"), parse_value("None")
    (True, None)
    """
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_assignments(items: Sequence[str]) -> dict[str, Any]:
    """Turn ``["k=8", "link_gbps=400"]`` into ``{"k": 8, "link_gbps": 400}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise FabricOptError(f"expected key=value, got {item!r}")
        if key in out:  # the last would win silently: say which of the two was meant
            raise FabricOptError(f"{key!r} is given twice ({key}={out[key]!r} and {item}); "
                                 "give each parameter once")
        out[key] = parse_value(value)
    return out


def _is_assignment(word: str) -> bool:
    key, sep, _ = word.partition("=")
    return bool(sep) and key.isidentifier()


def split_targets(words: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Group command-line words into targets, each with the ``key=value`` words after it.

    >>> split_targets(["ring", "n=8", "a.toml", "fat_tree", "k=4"])
    [('ring', ['n=8']), ('a.toml', []), ('fat_tree', ['k=4'])]
    """
    groups: list[tuple[str, list[str]]] = []
    for word in words:
        if _is_assignment(word):
            if not groups:
                raise FabricOptError(f"{word!r} comes before any generator or design file; "
                                     "write the target first: TARGET key=value ...")
            groups[-1][1].append(word)
        else:
            groups.append((word, []))
    if not groups:
        raise FabricOptError("no target: give a generator name or a design file")
    return groups


def load_fabric(target: str, assignments: Sequence[str]) -> list[Fabric]:
    """The fabric(s) a command names: a generator with parameters, or a design file."""
    params = parse_assignments(assignments)
    if target in GENERATORS:
        try:
            check_call(target, params, caller=target)
        except InvalidParameterError as exc:  # the command line's own words
            raise FabricOptError(f"{str(exc).replace(f'{target}(): ', f'{target}: ', 1)}"
                                 f" (given as key=value; see: fabricopt show {target} --help)"
                                 ) from None
        return [make(target, params)]
    if target.endswith(".toml"):
        loaded = load_design(target, **params)
        return loaded if isinstance(loaded, list) else [loaded]
    if target.endswith((".json", ".graphml")):
        if params:  # a saved fabric is built already: there is nothing to pass
            raise FabricOptError(f"{target}: a saved fabric takes no key=value parameters, "
                                 f"got {' '.join(assignments)}")
        return [read_json(target) if target.endswith(".json") else read_graphml(target)]
    if Path(target).is_dir():  # a folder is a batch: compare reads those, one at a time here
        files = sorted(f.name for f in Path(target).glob("*.toml"))
        example = f" (e.g. {Path(target) / files[0]})" if files else ""
        raise FabricOptError(f"{target!r} is a folder: this command reads one fabric; give "
                             f"one of its design files{example}, or run fabricopt compare "
                             f"{target} for them all")
    nearby = near_file(target) if os.sep in target or "." in target else ""
    if nearby:  # a file name with a typo, its extension's too (.tml for .toml)
        raise FabricOptError(f"no such design or fabric file {target!r}{nearby}")
    raise FabricOptError(f"unknown generator or fabric file {target!r}"
                         f"{did_you_mean(target, GENERATORS)}: give a generator ("
                         + ", ".join(sorted(GENERATORS)) + "), a .toml design file, or a "
                         ".json or .graphml fabric file")


def load_targets(words: Sequence[str]) -> list[Fabric]:
    """Every fabric that ``TARGET [key=value ...] [TARGET ...]`` names, in order."""
    groups = split_targets(words)
    check_targets(groups)
    return [fab for target, assignments in groups for fab in load_fabric(target, assignments)]


def _is_target(word: str) -> bool:
    return word in GENERATORS or word.endswith((".toml", ".json", ".graphml")) \
        or os.path.exists(word)


def check_targets(groups: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Name a word that is neither a target nor ``key=value`` before anything is built: a
    parameter written without ``=`` (``ring 8``, ``ring n``) is told how to write it.

    >>> try:
    ...     check_targets([("ring", []), ("8", [])])
    ... except FabricOptError as exc:
    ...     print(str(exc).split("; ")[0], "...", str(exc)[-19:])
    '8' after ring is not a generator or a fabric file ... (did you mean n=8?)
    """
    for (before, assigned), (word, _) in zip(groups, groups[1:], strict=False):
        if _is_target(word) or before not in GENERATORS:
            continue
        names = [n for n, p in inspect.signature(GENERATORS[before]).parameters.items()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        required = [n for n in names
                    if inspect.signature(GENERATORS[before]).parameters[n].default
                    is inspect.Parameter.empty]
        given = {a.partition("=")[0] for a in assigned}
        missing = [n for n in required if n not in given]
        if word in names:
            hint = f" (did you mean {word}=VALUE?)"
        elif did_you_mean(word, GENERATORS):
            hint = did_you_mean(word, GENERATORS)
        elif missing:
            hint = f" (did you mean {missing[0]}={word}?)"
        else:
            hint = ""
        raise FabricOptError(f"{word!r} after {before} is not a generator or a fabric file; "
                             f"parameters are written key=value: {before} takes "
                             + ", ".join(names) + hint)


def generator_help(name: str) -> str:
    """A generator's parameters with defaults and meaning, from its signature and docstring.

    >>> generator_help("ring").splitlines()[4:7]
    ['parameters:', '  n  (required)', '  link_gbps=1.0']
    """
    func = GENERATORS[name]
    doc = inspect.getdoc(func) or ""
    lines = [f"{name}: {doc.splitlines()[0] if doc else ''}", "",
             f"usage: fabricopt show {name} [key=value ...]", "", "parameters:"]
    docs = parameter_docs(func)
    for pname, p in inspect.signature(func).parameters.items():
        if p.kind is p.VAR_POSITIONAL:
            continue
        kind, text = docs.get(pname, ("", ""))
        if p.kind is p.VAR_KEYWORD:
            head = f"  {pname}=...  (more key=value options)"
        elif p.default is inspect.Parameter.empty:
            head = f"  {pname}  (required{', ' + kind if kind else ''})"
        else:
            head = f"  {pname}={p.default!r}" + (f"  ({kind})" if kind else "")
        lines.append(head)
        if text:
            lines += textwrap.wrap(text.replace("``", "`"), width=92,
                                   initial_indent="      ", subsequent_indent="      ")
    return "\n".join(lines)


def make_traffic(fab: Fabric, spec: str) -> Any:
    """Traffic named on the command line: ``all-to-all``, ``permutation[:SEED]`` or
    ``longest-matching`` (:func:`~fabricopt.traffic.traffic_named`)."""
    return traffic_named(fab, spec, "--traffic")


def parse_collectives(text: str) -> list[str]:
    """``--collective`` words: names separated by commas, or ``all``.

    >>> parse_collectives("all_reduce,all_gather")
    ['all_reduce', 'all_gather']
    """
    if text.strip() == "all":
        return list(COLLECTIVES)
    names = [w.strip().replace("-", "_") for w in text.split(",") if w.strip()]
    for name in names:
        if name not in COLLECTIVES:
            raise FabricOptError(f"--collective: {name!r} is not a collective"
                                 f"{did_you_mean(name, COLLECTIVES)}; collectives: "
                                 + ", ".join(COLLECTIVES) + ", or all")
    if not names:
        raise FabricOptError("--collective: give at least one of " + ", ".join(COLLECTIVES))
    return names


def names_arg(flag: str, text: str, known: Any) -> list[str]:
    """Comma-separated names, each one of ``known`` (with a suggestion when it is not)."""
    names = [w.strip() for w in text.split(",") if w.strip()]
    for name in names:
        if name not in known:
            raise FabricOptError(f"{flag}: {name!r} is not one of " + ", ".join(known)
                                 + did_you_mean(name, known))
    if not names:
        raise FabricOptError(f"{flag}: give at least one of " + ", ".join(known))
    return names


def size_arg(text: str) -> float:
    try:
        return parse_bytes("fabricopt", "size", text)
    except ValueError as exc:
        if "> 0" in str(exc) or text.strip().startswith("-"):  # reads, but is not positive
            raise argparse.ArgumentTypeError(
                f"a size must be > 0 (e.g. 1GiB, 512MB or 1e9); got {text!r}") from None
        if "small b is bits" in str(exc):
            raise argparse.ArgumentTypeError(
                f"a size is in bytes: write a capital B (GB, GiB, kB); a small b is bits; got "
                f"{text!r}") from None
        raise argparse.ArgumentTypeError(
            f"must be a size in bytes with an optional unit (B, kB, MB, GB, TB, KiB, MiB, "
            f"GiB, TiB), e.g. 1GiB, 512MB or 1e9; got {text!r}") from None


def tokens_arg(text: str) -> int:
    """A token count flag (``--seq-len``, ``--prompt-len``): a whole number, or one with a
    binary unit (``8Ki`` = 8,192); ``8k`` is refused as ambiguous (8,000 or 8,192), naming
    both (:func:`~fabricopt._checks.parse_count`).

    >>> tokens_arg("8192"), tokens_arg("8Ki"), tokens_arg("128Ki")
    (8192, 8192, 131072)
    """
    try:
        return parse_count("fabricopt", "tokens", text)
    except InvalidParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(" must be ", 1)[1]) from None


def seconds_arg(text: str) -> float:
    """A duration flag (``--time-limit``, ``--ttft``): seconds, or a number with a unit
    (``2min``, ``500ms``). A plain number is passed on as given, to be checked with the
    others (:func:`check_seconds`: a negative or infinite one is refused, naming the flag).

    >>> seconds_arg("60"), seconds_arg("2min"), seconds_arg("500ms")
    (60.0, 120.0, 0.5)
    """
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_seconds("fabricopt", "time", text)
    except InvalidParameterError:
        if text.strip().startswith("-"):  # a number with a unit, but not > 0
            raise argparse.ArgumentTypeError(
                f"a duration must be > 0 (e.g. 60, 2s or 500ms); got {text!r}") from None
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration > 0: give seconds, or a number with a unit (s, ms, "
            "us, min), e.g. 60, 2s or 500ms") from None


def target_seconds_arg(most_plain: float, typical: str) -> Callable[[str], float]:
    """A latency target flag (``--tpot``, ``--ttft``): as :func:`seconds_arg`, but a plain
    number above ``most_plain`` seconds is refused asking for a unit, since it is far above
    any such target (``--tpot 50`` meant 50 ms; ``50s`` with its unit is taken as written).

    >>> tpot = target_seconds_arg(10, "tens of ms")
    >>> tpot("0.05"), tpot("50ms"), tpot("50s")
    (0.05, 0.05, 50.0)
    >>> tpot("50")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 50 s is far above any such target (tens of ms); give a ...
    """
    def parse(text: str) -> float:
        value = seconds_arg(text)
        plain = text.strip().lstrip("+").replace(".", "", 1).isdigit()
        if plain and value > most_plain:
            raise argparse.ArgumentTypeError(
                f"{text.strip()} s is far above any such target ({typical}); give a unit: "
                f"{text.strip()}ms, or {text.strip()}s if meant")
        return value
    parse.reads = seconds_arg  # type: ignore[attr-defined]  # a duration, as the others
    return parse


def signed_values(sub: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv`` with a signed value glued to its flag (``--message-bytes -1GiB`` becomes
    ``--message-bytes=-1GiB``), so the flag's own check says what is wrong with it: argparse
    reads a word that starts with ``-`` and is not a plain number as another flag, and said
    only "expected one argument". Long flags that take one value, abbreviated or not.

    >>> sub = argparse.ArgumentParser()
    >>> _ = sub.add_argument("--message-bytes")
    >>> signed_values(sub, ["x", "--message-bytes", "-1GiB", "--mess", "-.5MB", "--x", "-1s"])
    ['x', '--message-bytes=-1GiB', '--mess=-.5MB', '--x', '-1s']
    >>> signed_values(sub, ["--message-bytes", "-inf", "--message-bytes", "--x"])
    ['--message-bytes=-inf', '--message-bytes', '--x']
    """
    takes_one = [o for a in sub._actions if a.nargs is None and a.option_strings
                 for o in a.option_strings if o.startswith("--")]
    out: list[str] = []
    words = iter(argv)
    for word in words:
        flags = [o for o in takes_one if o.startswith(word)] if word.startswith("--") else []
        if word in takes_one or len(flags) == 1:
            value = next(words, None)
            if value is not None and len(value) > 1 and value[0] == "-" and (
                    value[1].isdigit() or value[1] == "."
                    or value[1:].lower().startswith(("inf", "nan"))):
                out.append(f"{word}={value}")
                continue
            out += [word] if value is None else [word, value]
            continue
        out.append(word)
    return out


def check_seconds(args: argparse.Namespace) -> None:
    """A ``--time-limit`` that is not a finite number > 0, refused as the flag's own error
    in one line (not as the solver's, which names a function the user never typed)."""
    value = getattr(args, "time_limit", None)
    if value is not None and not (math.isfinite(value) and value > 0):
        raise FabricOptError(f"--time-limit: must be a number of seconds > 0 (e.g. 60 or "
                             f"0.5); got {value:g}")


def check_finite(fab: Fabric, figures: Mapping[str, Any], given: str = "") -> None:
    """Refuse to print a figure of ``fab`` that is infinite or not a number: the first such
    of ``figures`` (name -> value; None is skipped) is named with the reason, which is the
    fabric's link capacities when they lie outside :data:`~fabricopt.fabric.PLAUSIBLE_GBPS`,
    else the numbers ``given`` (the options that feed the figure).

    >>> import fabricopt as fo
    >>> check_finite(fo.ring(4), {"theta": 0.5})
    >>> check_finite(fo.ring(4), {"busbw_GBps": math.inf}, "--message-bytes 1e300")
    Traceback (most recent call last):
    fabricopt.errors.FabricOptError: ring(4): busbw_GBps is inf, no figure to print: it ...
    """
    bad = [(k, v) for k, v in figures.items() if isinstance(v, int | float)
           and not isinstance(v, bool) and not math.isfinite(v)]
    if not bad:
        return
    name, value = bad[0]
    caps = [d.get("capacity") for _, _, d in fab.graph.edges(data=True)]
    caps = [float(c) for c in caps if isinstance(c, int | float)]
    low, high = PLAUSIBLE_GBPS
    if caps and (min(caps) < low or max(caps) > high):
        why = (f"the fabric's links carry {min(caps):.3g} to {max(caps):.3g} Gb/s, outside "
               f"the plausible {low:g} to {high:g} Gb/s (capacities are in Gb/s per "
               "direction: bit/s given by mistake?)")
    else:
        why = "it overflows a float from the numbers given" + (f" ({given})" if given else "")
    raise FabricOptError(f"{fab.name}: {name} is {value}, no figure to print: {why}")


# -- what several subcommands share ----------------------------------------------------------
FORMATS = ("table", "csv", "markdown", "json")
EXIT_CODES = ("exit codes: 0 success (a certified bracket that every stage left open is "
              "an answer); 1 a result was not proven, a bracket was left open when the time "
              "limit or a search's work cap stopped it, or a design failed; "
              "2 bad input (usage); 74 standard output could not be written; 130 interrupted")


def targets_arg(parser: argparse.ArgumentParser) -> None:
    """The TARGET arguments every subcommand that reads fabrics takes."""
    parser.add_argument("targets", nargs="+", metavar="TARGET [key=value ...]",
                        help="generator names, design files (.toml) or saved fabrics (.json, "
                        ".graphml), each followed by its parameters as key=value; several may "
                        "follow each other")


def print_rows(rows: list[dict[str, Any]], fmt: str) -> None:
    """Rows printed as csv, json or a markdown table (``fmt``)."""
    table = Comparison(rows)
    if fmt == "csv":
        print(table.to_csv(), end="")
    elif fmt == "json":
        print(table.to_json())
    else:
        print(table.to_markdown())


def progress_arg(parser: argparse.ArgumentParser, shows: str) -> None:
    """``--progress/--no-progress``: a status line of what ``shows`` names (default: when
    stderr is a terminal)."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help=f"{shows} (default: when stderr is a terminal)")
