"""ONNX's own backend node test cases through ``from_onnx`` + ``relay.build``.

Every case whose operators are all among those issue 10 lists runs here, compared with
ONNX's expected outputs at the case's own tolerances.  Cases listed in
``onnx_expected_failures.txt`` (with the reason) are strict expected failures: one that
starts passing fails the suite until it is removed from the list.
"""
import pathlib

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx_cases import _array, run_case, selected_cases, undefined_elements  # noqa: E402

XFAIL_FILE = pathlib.Path(__file__).parent / "onnx_expected_failures.txt"


def _expected_failures() -> dict:
    out = {}
    for line in XFAIL_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition("  ")
            out[name.strip()] = reason.strip()
    return out


XFAIL = _expected_failures()
CASES = selected_cases()


def _params():
    for name in sorted(CASES):
        marks = [pytest.mark.xfail(strict=True, reason=XFAIL[name])] if name in XFAIL else []
        yield pytest.param(name, marks=marks, id=name)


def test_expected_failure_list_names_real_cases():
    assert set(XFAIL) <= set(CASES), sorted(set(XFAIL) - set(CASES))


@pytest.mark.parametrize("name", list(_params()))
def test_onnx_node_case(name):
    got, expected, rtol, atol = run_case(CASES[name])
    assert len(got) == len(expected)
    undefined = undefined_elements(CASES[name]) or [None] * len(expected)
    for g, e, skip in zip(got, expected, undefined):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        if skip is not None:    # values ONNX leaves undefined: compare the others
            assert (~skip).any(), name
            g, e = g[~skip], e[~skip]
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)


def test_undefined_elements_are_the_out_of_range_casts():
    """The int4 cast case's inputs are -9..15: only -9 and 8..15 are out of int4's range;
    casts to float and from integers have no undefined elements."""
    (mask,) = undefined_elements(CASES["test_cast_FLOAT_to_INT4"])
    x = _array(CASES["test_cast_FLOAT_to_INT4"].data_sets[0][0][0])
    assert np.array_equal(mask, (x < -8) | (x > 7))
    assert mask.sum() == 9
    assert undefined_elements(CASES["test_cast_INT4_to_FLOAT"]) is None
    assert undefined_elements(CASES["test_cast_FLOAT_to_FLOAT16"]) is None
