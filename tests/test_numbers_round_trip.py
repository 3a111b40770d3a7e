"""Every writer/reader pair keeps numbers numeric: a number written is read back as a number
of the same value, whatever its Python or numpy type.

numpy numbers reach the files easily (``fab.graph[u][v]["links"] = np.int64(2)`` after a
computation, a capacity from a numpy array): they were written as the strings ``"2"`` and
``"np.float32(400.0)"``, and the fabric read back was invalid. Checked on random values of
every numpy integer and float type (hypothesis).
"""

from __future__ import annotations

import numbers
import tomllib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fabricopt as fo
from fabricopt._toml import dumps_toml
from fabricopt.io.graph_files import from_json_data, to_json_data

INT_TYPES = [int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
             np.uint64]
FLOAT_TYPES = [float, np.float16, np.float32, np.float64]


@st.composite
def numbers_of_any_type(draw, minimum: int = 1, maximum: int = 100):
    """A number from ``minimum`` to ``maximum`` (fits every type above), as a Python int or
    float or as one of numpy's integer and float types."""
    if draw(st.booleans()):
        return draw(st.sampled_from(INT_TYPES))(draw(st.integers(minimum, maximum)))
    kind = draw(st.sampled_from(FLOAT_TYPES))
    return kind(draw(st.floats(minimum, maximum, allow_nan=False, allow_infinity=False)))


def _same_number(back, written) -> bool:
    """``back`` is a plain number (not text, not a bool) equal to ``written``'s value."""
    return (isinstance(back, numbers.Real) and not isinstance(back, bool)
            and float(back) == float(written))


def _numpy_fabric(links, capacity, extra, param) -> fo.Fabric:
    """A ring whose link counts, capacities, an extra attribute and a parameter are the given
    (possibly numpy) numbers, set after building as a computation would."""
    fab = fo.ring(4)
    for _, _, d in fab.graph.edges(data=True):
        d["links"], d["capacity"], d["weight"] = links, capacity, extra
    fab.graph.nodes["n0"]["layer"] = extra
    fab.params["scale"] = param
    return fab


def _check_read_back(back: fo.Fabric, links, capacity, extra, param) -> None:
    assert back.problems() == []  # was: links must be a whole number, got '1'
    for _, _, d in back.graph.edges(data=True):
        assert _same_number(d["links"], links), d
        assert _same_number(d["capacity"], capacity), d
        assert _same_number(d["weight"], extra), d
    assert _same_number(back.graph.nodes["n0"]["layer"], extra)
    assert _same_number(back.params["scale"], param)


WHOLE = numbers_of_any_type(1, 1).filter(lambda x: float(x).is_integer())
ROUND_TRIP = dict(links=WHOLE, capacity=numbers_of_any_type(), extra=numbers_of_any_type(0),
                  param=numbers_of_any_type(0))


@pytest.mark.parametrize(("write", "read", "suffix"), [
    (fo.write_json, fo.read_json, ".json"), (fo.write_graphml, fo.read_graphml, ".graphml")])
@settings(max_examples=25, deadline=None)
@given(**ROUND_TRIP)
def test_fabric_files_keep_numbers_numeric(tmp_path_factory, write, read, suffix, links,
                                           capacity, extra, param):
    path = tmp_path_factory.mktemp("files") / f"fab{suffix}"
    write(_numpy_fabric(links, capacity, extra, param), path)
    _check_read_back(read(path), links, capacity, extra, param)


@settings(max_examples=25, deadline=None)
@given(**ROUND_TRIP)
def test_json_data_keeps_numbers_numeric(links, capacity, extra, param):
    data = to_json_data(_numpy_fabric(links, capacity, extra, param))
    _check_read_back(from_json_data(data), links, capacity, extra, param)


@settings(max_examples=50, deadline=None)
@given(value=numbers_of_any_type(0), values=st.lists(numbers_of_any_type(0), max_size=3))
def test_design_files_keep_numbers_numeric(value, values):
    # dumps_toml wrote np.float64(1.5) as 'np.float64(1.5)' (numpy 2's repr) and refused
    # np.int64: the design file optimize writes could not be read back.
    back = tomllib.loads(dumps_toml({"family": "ring", "params": {"n": value, "sizes": values},
                                     "scale": value}))
    assert _same_number(back["params"]["n"], value) and _same_number(back["scale"], value)
    assert all(_same_number(b, v) for b, v in zip(back["params"]["sizes"], values, strict=True))
