"""TVM auto-scheduler API parity (issue 12, items 1 and 5): PreloadMeasuredStates and
``init_search_callbacks`` (a re-run reuses a log only when asked, and says so),
``load_best_record`` returning ``(MeasureInput, MeasureResult)`` with a replayable State,
and parameters TVM accepts that must work or raise (``print_mode``, ``layout_rewrite``).

Measurements are faked (a builder that builds nothing, a runner whose cost is a hash of
the state), so the tests are fast and deterministic.
"""
import importlib
import json
import subprocess
import sys

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import pytest
from autosched_helpers import SMALL_SEARCH, Fine

import autosched as auto
import compiler
from autosched import catalog  # noqa: F401  (registers the built-in workloads)
from autosched.tuning import preload
from compiler import te
from records import MeasureInputRecord, Record, load_records, save_records
from records import load_best_record as load_best_raw

KEY_ARGS = (16, 16, 16)




def make_task():
    return auto.SearchTask(func="steps_test_matmul", args=KEY_ARGS)


def options(log, trials=4, verbose=0):
    fine = Fine()
    return auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=4,
                              verbose=verbose, builder=fine, runner=fine,
                              measure_callbacks=[auto.RecordToFile(str(log))])


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "mm.json"
    task = make_task()
    task.tune(options(path, trials=8), auto.SketchPolicy(task, params=SMALL_SEARCH,
                                                         seed=0, verbose=0))
    assert len(list(load_records(path))) == 8
    return path


def steps_of(path) -> list:
    return [r.input.steps for r in load_records(path)]


# ------------------------------------------------------------ PreloadMeasuredStates
def test_task_tune_does_not_preload_by_itself_and_says_how_to_resume(log, capsys):
    task = make_task()
    stats = task.tune(options(log, verbose=1), auto.SketchPolicy(task, params=SMALL_SEARCH,
                                                                 seed=0, verbose=0))
    assert stats.preloaded == 0
    hints = [line for line in capsys.readouterr().out.splitlines() if "exists" in line]
    assert len(hints) == 1
    assert f"init_search_callbacks=[auto.PreloadMeasuredStates({str(log)!r})]" in hints[0]
    # verbose=0: silent
    task.tune(options(log, verbose=0), auto.SketchPolicy(task, params=SMALL_SEARCH,
                                                         seed=1, verbose=0))
    assert "exists" not in capsys.readouterr().out


def test_preload_callback_resumes_without_measuring_a_state_twice(log, capsys):
    task = make_task()
    before = steps_of(log)
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=1,
                               init_search_callbacks=[auto.PreloadMeasuredStates(log)])
    assert policy.preloaded == 8 and len(policy.measured_keys) == 8
    assert f"SearchPolicy: Loaded 8 measured states of {task.workload_key}" in \
        capsys.readouterr().out
    stats = task.tune(options(log, verbose=1), policy)
    assert stats.preloaded == 8 and stats.trials == 4
    assert "exists" not in capsys.readouterr().out       # it was asked: no hint
    after = steps_of(log)
    assert len(after) == 12 and len(set(after)) == 12 and after[:8] == before


def test_a_policy_that_already_has_the_states_gets_no_hint(log, capsys):
    task = make_task()
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0)
    assert preload(policy, str(log)) == 8
    task.tune(options(log, verbose=1), policy)
    assert "exists" not in capsys.readouterr().out
    assert len(set(steps_of(log))) == 12


def test_preload_of_a_missing_log_loads_nothing(tmp_path):
    policy = auto.SketchPolicy(make_task(), params=SMALL_SEARCH, verbose=0, init_search_callbacks=[
        auto.PreloadMeasuredStates(tmp_path / "absent.json")])
    assert policy.preloaded == 0 and not policy.measured_keys


def test_preload_loads_only_the_policys_task(log):
    other = auto.SearchTask(func="steps_test_matmul", args=(8, 8, 8))
    policy = auto.SketchPolicy(other, params=SMALL_SEARCH, verbose=0,
                               init_search_callbacks=[auto.PreloadMeasuredStates(log)])
    assert policy.preloaded == 0


def test_init_search_callbacks_are_checked():
    task = make_task()
    with pytest.raises(TypeError, match=r"init_search_callbacks\[1\]=3: expected a "
                                        r"SearchCallback"):
        auto.SketchPolicy(task, params=SMALL_SEARCH,
                          init_search_callbacks=[auto.PreloadMeasuredStates("x"), 3])
    with pytest.raises(TypeError, match="init_search_callbacks=.*expected a list"):
        auto.SketchPolicy(task, params=SMALL_SEARCH,
                          init_search_callbacks=auto.PreloadMeasuredStates("x"))
    with pytest.raises(TypeError, match=r"PreloadMeasuredStates filename=3: expected a path"):
        auto.PreloadMeasuredStates(3)


def test_a_custom_search_callback_runs_once_at_creation():
    seen = []

    class Spy(auto.SearchCallback):
        def callback(self, policy):
            seen.append(policy)

    policy = auto.SketchPolicy(make_task(), params=SMALL_SEARCH,
                                         verbose=0, init_search_callbacks=[Spy()])
    assert seen == [policy]
    with pytest.raises(NotImplementedError, match="SearchCallback.callback"):
        auto.SketchPolicy(make_task(), params=SMALL_SEARCH,
                                    init_search_callbacks=[auto.SearchCallback()])


# ------------------------------------------------------------ load_best_record
def test_load_best_record_returns_tvm_measure_input_and_result(log):
    task = make_task()
    inp, res = auto.load_best_record(str(log), task.workload_key)
    raw = load_best_raw(log, task.workload_key)
    assert isinstance(inp, auto.MeasureInput) and isinstance(res, auto.MeasureResult)
    assert inp.task.workload_key == task.workload_key and str(inp.task.target) == raw.target
    assert inp.task.hardware_params.to_list() == list(raw.input.hardware_params)
    assert isinstance(inp.state, auto.State)
    assert _thaw([s.to_record() for s in inp.state.transform_steps]) == \
        _thaw(raw.input.steps)
    assert res.costs == list(raw.result.costs) and res.error_no == 0 and res.error_msg == ""
    assert res.all_cost == raw.result.all_cost and res.timestamp == raw.result.timestamp
    # replayable: the state applies and is the one apply_best uses
    sch, tensors = inp.task.compute_dag.apply_steps_from_state(inp.state)
    assert len(tensors) == 3
    assert str(inp.state) == str(auto.tuning.best_state(task, str(log))[0])
    # a target filter: same kind matches, another kind does not
    assert auto.load_best_record(str(log), task.workload_key, "llvm")[1].costs == res.costs
    assert auto.load_best_record(str(log), task.workload_key, "cuda") == (None, None)


def _thaw(x):
    return [_thaw(v) for v in x] if isinstance(x, (list, tuple)) else x


def test_load_best_record_without_a_valid_record_is_none_none(log, tmp_path):
    assert auto.load_best_record(str(log), json.dumps(["steps_test_matmul", 1, 2, 3])) == \
        (None, None)
    failed = [Record(r.input, r.result.__class__((1e10,), 4, 0.1, 1.0))
              for r in load_records(log)]
    bad = tmp_path / "failed.json"
    save_records(bad, failed)
    assert auto.load_best_record(str(bad), make_task().workload_key) == (None, None)


def test_load_best_record_of_an_unknown_workload_raises_its_workload_error(log, tmp_path):
    good = next(iter(load_records(log)))
    key = json.dumps(["no_such_workload", 1])
    path = tmp_path / "unknown.json"
    save_records(path, [Record(MeasureInputRecord(key, good.target, good.input.hardware_params,
                                                  steps=good.input.steps), good.result)])
    with pytest.raises(auto.WorkloadError, match="unknown workload 'no_such_workload'"):
        auto.load_best_record(str(path), key)


def test_load_best_record_skips_a_cheaper_record_that_does_not_replay(log, tmp_path):
    task = make_task()
    good = load_best_raw(log, task.workload_key)
    stale = Record(MeasureInputRecord(good.workload_key, good.target,
                                      good.input.hardware_params,
                                      steps=(("SP", 99, 0, 8, (2,), 1),)),
                   good.result.__class__((1e-9,), 0, 0.1, 1.0))
    path = tmp_path / "stale.json"
    save_records(path, [stale, good])
    with pytest.warns(UserWarning, match="no longer applies"):
        inp, res = auto.load_best_record(str(path), task.workload_key)
    assert res.costs == list(good.result.costs)
    save_records(path, [stale], append=False)
    with pytest.raises(auto.AutoSchedError, match="none of the 1 valid records"), \
            pytest.warns(UserWarning):
        auto.load_best_record(str(path), task.workload_key)


def test_search_task_and_load_best_record_accept_a_registered_dag_key(log, tmp_path):
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    key = auto.register_workload_tensors(json.dumps(["0123456789abcdef", [16, 16], [16, 16]]),
                                         [A, B, C])
    task = auto.SearchTask(workload_key=key)
    assert task.workload_key == key and len(task.compute_dag.tensors) == 3
    good = load_best_raw(log, make_task().workload_key)
    path = tmp_path / "dag.json"
    save_records(path, [Record(MeasureInputRecord(key, good.target, good.input.hardware_params,
                                                  steps=good.input.steps), good.result)])
    inp, res = auto.load_best_record(str(path), key)
    assert inp.task.workload_key == key and res.costs == list(good.result.costs)
    inp.task.compute_dag.apply_steps_from_state(inp.state)


# ------------------------------------------------------------ accepted parameters
def test_print_best_modes(log):
    task = make_task()
    assert task.print_best(str(log), print_mode="schedule") == task.print_best(str(log))
    with pytest.raises(ValueError, match=r"print_mode='cuda': CUDA is not supported"):
        task.print_best(str(log), print_mode="cuda")
    with pytest.raises(ValueError, match=r"print_mode='python': expected one of 'schedule'"):
        task.print_best(str(log), print_mode="python")


def test_apply_steps_from_state_layout_rewrite(log):
    """Every LayoutRewriteOption value is accepted (the rewrite itself is tested in
    test_layout_rewrite.py); this workload has no layout-free weight, so none changes it."""
    inp, _ = auto.load_best_record(str(log), make_task().workload_key)
    dag = inp.task.compute_dag
    for option in (False, 0, True, 1, 2, auto.LayoutRewriteOption.INSERT_TRANSFORM_STAGE):
        sch, tensors = dag.apply_steps_from_state(inp.state, layout_rewrite=option)
        assert [t.op for t in tensors] == [t.op for t in dag.tensors]
    with pytest.raises(auto.AutoSchedError, match=r"layout_rewrite=7: expected a "
                                                  "LayoutRewriteOption"):
        dag.apply_steps_from_state(inp.state, layout_rewrite=7)


def test_reachable_as_compiler_auto_scheduler():
    """TVM scripts write ``tvm.auto_scheduler.SearchTask`` after ``import tvm``."""
    assert compiler.auto_scheduler is auto
    assert sys.modules["compiler.auto_scheduler"] is auto
    assert compiler.auto_scheduler.SearchTask is auto.SearchTask


# ------------------------------------------------------------------ EmptyPolicy
def test_empty_policy_measures_the_initial_state_every_round(tmp_path, log):
    task = make_task()
    out = tmp_path / "empty.json"
    policy = auto.EmptyPolicy(task, init_search_callbacks=[auto.PreloadMeasuredStates(log)])
    assert policy.preloaded == 8 and policy.search_task is task
    stats = task.tune(options(out, trials=3), policy)
    assert stats.trials == 3
    recs = list(load_records(out))
    assert len(recs) == 3 and all(r.input.steps == () for r in recs)
    with pytest.raises(TypeError, match="EmptyPolicy has no sketch rules"):
        auto.EmptyPolicy(task, init_search_callbacks=[auto.PreloadCustomSketchRule(
            lambda p, s, i: 0, lambda p, s, i: [])])


# ------------------------------------------------------------------ submodule alias
_SUBMODULES = """
import sys
import compiler as tvm
import autosched
from compiler.auto_scheduler.loop_state import State
from compiler.auto_scheduler.errors import WorkloadError
import compiler.auto_scheduler.measure.runner as runner
import compiler.auto_scheduler.workload as wl
real = {name: sys.modules["autosched." + name] for name in
        ("loop_state", "errors", "measure.runner", "workload")}
print(State is real["loop_state"].State, WorkloadError is real["errors"].WorkloadError,
      runner is real["measure.runner"], wl is real["workload"])
try:
    import compiler.auto_scheduler.no_such_module
except ModuleNotFoundError as err:
    print(err.name)
"""


def test_tvm_submodule_imports_give_this_packages_modules_not_copies():
    """``from tvm.auto_scheduler.X import Y`` after ``import compiler as tvm``: one module
    (a copy would have its own workload registry and exception classes)."""
    out = subprocess.run([sys.executable, "-c", _SUBMODULES], capture_output=True,
                         text=True, timeout=120, check=True).stdout.split("\n")
    assert out[:2] == ["True True True True", "compiler.auto_scheduler.no_such_module"]


# TVM's module path -> names TVM scripts import from it
_TVM_MODULES = {
    "search_task": ("SearchTask", "TuningOptions", "HardwareParams",
                    "register_task_input_buffer", "get_task_input_buffer",
                    "register_task_input_check_func", "create_task", "auto_schedule"),
    "search_policy": ("SketchPolicy", "EmptyPolicy", "SearchCallback",
                      "PreloadMeasuredStates", "PreloadCustomSketchRule"),
    "dispatcher": ("DispatchContext", "ApplyHistoryBest", "ApplyHistoryBestOrSample"),
    "workload_registry": ("register_workload", "make_workload_key",
                          "workload_key_to_tensors", "register_workload_tensors"),
}


@pytest.mark.parametrize("module", sorted(_TVM_MODULES))
def test_tvm_module_paths_name_the_same_objects(module):
    """``from tvm.auto_scheduler.search_task import SearchTask`` and the like: TVM's
    module paths exist, as attributes and as imports, and give this package's objects."""
    mod = importlib.import_module(f"compiler.auto_scheduler.{module}")
    assert getattr(auto, module) is mod
    for name in _TVM_MODULES[module]:
        obj = getattr(mod, name)
        assert obj is getattr(auto, name, obj) and obj is getattr(
            importlib.import_module(obj.__module__), obj.__name__)
    assert set(mod.__all__) == set(_TVM_MODULES[module])
