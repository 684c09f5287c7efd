"""scripts/search_anatomy.py: a small generation's per-state costs and group counts, its
loop shapes, its table and JSON, and the refusal of a population it cannot evolve."""
import json

import pytest
from script_helpers import load_script

from autosched import SearchTask


@pytest.fixture(scope="module")
def anatomy():
    return load_script("search_anatomy")


@pytest.fixture(scope="module")
def small(anatomy):
    return anatomy.anatomy("matmul", (64, 64, 64), population=48)


def test_a_small_generation_is_costed_per_state_and_counted(small, anatomy):
    assert small["args"] == [64, 64, 64] and small["population"] == 48
    assert 0 < small["distinct"] <= small["children"] <= 48
    assert set(small["us_per_state"]) == set(anatomy.COSTS)
    assert all(v > 0 for v in small["us_per_state"].values())
    # a structure fixes every stage's loops and attach point: shapes group structures
    assert 1 <= small["loop_shapes"] <= small["structures"] <= small["distinct"]
    assert small["states_per_structure"] == pytest.approx(
        small["distinct"] / small["structures"])
    assert small["states_per_loop_shape"] == pytest.approx(
        small["distinct"] / small["loop_shapes"])


def test_the_counts_repeat_for_the_same_seed(small, anatomy):
    again = anatomy.anatomy("matmul", (64, 64, 64), population=48)
    for key in ("children", "distinct", "structures", "loop_shapes"):
        assert again[key] == small[key]


def test_loop_shape_is_the_attach_points_and_loops_per_stage(anatomy):
    task = SearchTask(func="matmul", args=(64, 64, 64), target="llvm")
    state = task.compute_dag.init_state()
    # matmul's initial state: A, B and C; C has i, j and k, nothing is attached
    assert anatomy.loop_shape(state) == ((), (0, 0, 3))


def test_main_prints_the_table_and_writes_json(anatomy, tmp_path, capsys):
    out = tmp_path / "a.json"
    anatomy.main(["--workloads", "matmul:64", "--population", "32", "--json", str(out)])
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:3] == ["workload", "states", "make"]
    assert text.splitlines()[1].split()[0] == "matmul:64"
    doc = json.loads(out.read_text())
    assert doc["population"] == 32 and set(doc["workloads"]) == {"matmul:64"}


def test_a_population_it_cannot_evolve_is_refused(anatomy):
    with pytest.raises(SystemExit, match="--population must be >= 2"):
        anatomy.main(["--population", "1"])
