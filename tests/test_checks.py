"""The one numeric validator (autosched.checks) and the configs that use it."""
import math

import pytest

import autosched as auto
from autosched.checks import check_number
from autosched.cost_model import XGBParams
from autosched.task import HardwareParams


@pytest.mark.parametrize("value,kw,msg", [
    (0, dict(low=1, integer=True), "x=0: expected an int >= 1"),
    (True, dict(low=0, integer=True), "x=True: expected an int >= 0"),
    (2.5, dict(low=1, integer=True), "x=2.5: expected an int >= 1"),
    (math.nan, dict(low=0), "x=nan: expected a finite number >= 0"),
    (0, dict(low=0, strict=True, unit="seconds"), "x=0: expected a finite number of seconds > 0"),
    (9, dict(low=0, high=8, integer=True), "x=9: expected an int >= 0 and <= 8"),
    ("3", dict(), "x='3': expected a finite number"),
])
def test_check_number_names_the_value_and_the_expectation(value, kw, msg):
    with pytest.raises(ValueError) as err:
        check_number(value, "x", **kw)
    assert str(err.value) == msg


def test_check_number_returns_good_values():
    assert check_number(3, "x", 1, integer=True) == 3
    assert check_number(0.5, "x", 0, high=1) == 0.5


@pytest.mark.parametrize("make,msg", [
    (lambda: auto.SearchParams(eps_greedy=1.5), "SearchParams eps_greedy=1.5: expected a "
                                                "finite number >= 0 and <= 1"),
    (lambda: auto.SearchParams(evolutionary_search_population=0),
     "SearchParams evolutionary_search_population=0: expected an int >= 1"),
    (lambda: XGBParams(max_depth=0), "XGBParams max_depth=0: expected an int >= 1"),
    (lambda: XGBParams(eta=0), "XGBParams eta=0: expected a finite number > 0"),
    (lambda: HardwareParams(0, 32), "HardwareParams num_cores=0: expected an int >= 1"),
    (lambda: auto.TuningOptions(num_measure_trials=-1),
     "TuningOptions num_measure_trials=-1: expected an int >= 0"),
    (lambda: auto.TuningOptions(early_stopping=0),
     "TuningOptions early_stopping=0: expected an int >= 1"),
])
def test_configs_refuse_bad_numbers(make, msg):
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value) == msg


def test_tuning_options_refuse_a_builder_that_cannot_build():
    with pytest.raises(TypeError, match="TuningOptions builder=3: expected 'local' or an "
                                        "object with a build"):
        auto.TuningOptions(builder=3)
