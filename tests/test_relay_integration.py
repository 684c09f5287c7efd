"""Graph-level tuning glue: extract_tasks and ApplyHistoryBest as relay.build's provider.

The records here are made by sampling states from the tasks' own sketches (no timing),
so the tests check the dispatch itself: a tuned schedule is used (the kernel's TIR
differs from the default one) and still computes what the interpreter computes;
missing, stale and foreign-target records fall back, counted, without an exception.
"""
import importlib
import json
import logging
import os
import random
import subprocess
import sys
import tempfile

import autosched_helpers  # noqa: F401 - registers the steps_test_* workloads
import numpy as np
import pytest

import autosched as auto
import compiler
from autosched import catalog
from autosched import dispatch as D
from autosched.cost_model.base import CostModelError
from autosched.default_state import default_state
from autosched.defaults import measure_default_costs
from autosched.relay_integration import write_task_table
from autosched.search.init_rules import sample_state
from autosched.search.sketch_rules import generate_sketches
from autosched.steps import serialize
from autosched.tuning import best_state, matching_records
from compiler import relay
from compiler.contrib import graph_executor
from compiler.relay import testing
from compiler.relay.transform.alter_op_layout import dense_pack_width
from records import Record, save_records

# the modules (``autosched.default_state`` is also the name of a function)
defaults_mod = importlib.import_module("autosched.defaults")
default_state_mod = importlib.import_module("autosched.default_state")

USE_AUTO = {"relay.backend.use_auto_scheduler": True}


def small_net(size=10):
    """conv2d+bias+relu -> global pool -> dense+bias: two tunable groups.  At the default
    size the conv's width (10) does not fill AVX2/AVX-512 vectors, so AlterOpLayout packs
    its weight ("OIHW{v}o"); a multiple of 16 keeps it OIHW (layout-rewrite tests)."""
    rng = np.random.default_rng(3)
    data = relay.var("data", shape=(1, 8, size, size))
    w = relay.const(rng.standard_normal((16, 8, 3, 3)).astype("float32"))
    b = relay.const(rng.standard_normal(16).astype("float32"))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(data, w, padding=(1, 1)), b))
    y = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y))
    wd = relay.const(rng.standard_normal((10, 16)).astype("float32"))
    out = relay.nn.dense(y, wd)
    return relay.IRModule.from_expr(relay.Function(relay.analysis.free_vars(out), out))


def sampled_record(task, cost=1e-4, seed=0, target=None) -> Record:
    rng = random.Random(seed)
    sketches = generate_sketches(task.compute_dag.init_state(), task.hardware_params.num_cores)
    for _ in range(50):
        try:
            state = sample_state(rng.choice(sketches), rng, task.hardware_params.num_cores)
            break
        except auto.InvalidStepError:
            continue
    inp = auto.MeasureInput(task, state)
    res = auto.MeasureResult([cost], 0, "", 0.1, 1.0)
    rec = serialize.encode_record(inp, res)
    if target is not None:
        rec = Record(rec.input.__class__(rec.input.workload_key, target,
                                         rec.input.hardware_params, steps=rec.input.steps),
                     rec.result)
    return rec


def stale_twin(good: Record) -> Record:
    """A cheaper record of the same workload whose step names a stage that does not exist."""
    return Record(good.input.__class__(good.input.workload_key, good.input.target,
                                       good.input.hardware_params,
                                       steps=(("SP", 99, 0, 8, (2,), 1),)),
                  good.result.__class__((1e-5,), 0, 0.1, 1.0))


def build(mod, params=None, ctx=None):
    with compiler.transform.PassContext(opt_level=3, config=USE_AUTO):
        if ctx is None:
            return relay.build(mod, "llvm", params=params)
        with ctx:
            return relay.build(mod, "llvm", params=params)


def run(lib, x):
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    m.set_input("data", x)
    m.run()
    return m.get_output(0).numpy()


def interp(mod, x, params=None):
    return relay.create_executor("debug", mod=mod, params=params).evaluate()(data=x).numpy()


# ---------------------------------------------------------------- extraction
def test_extract_mlp_tasks_and_weights():
    mod, params = testing.mlp.get_workload(batch_size=1)
    tasks, weights = auto.extract_tasks(mod, params, "llvm")
    assert len(tasks) == 3 and weights == [1, 1, 1]
    # AlterOpLayout packs the 128- and 64-unit weights by blocks of nr units (two vectors);
    # 10 units fill no vector, so that layer stays a plain dense
    assert [t.desc for t in tasks] == ["fused_nn_contrib_dense_pack_nn_bias_add_nn_relu"] * 2 \
        + ["fused_nn_dense_nn_bias_add"]
    nr = 2 * compiler.topi.x86.utils.vector_lanes("float32")
    key = json.loads(tasks[0].workload_key)
    assert len(key[0]) == 16 and key[1:] == [[1, 784], [128 // nr, 784, nr], [128], [1, 128]]
    # the epilogue is part of the task's DAG
    assert "T_relu" in str(tasks[0].compute_dag) or "max(" in str(tasks[0].compute_dag)
    # registered: a task can be made from the key alone
    again = auto.SearchTask(workload_key=tasks[1].workload_key, target="llvm")
    assert str(again.compute_dag) == str(tasks[1].compute_dag)


def test_extract_resnet18_dedupes_identical_groups():
    mod, params = testing.resnet.get_workload(num_layers=18, batch_size=1)
    tasks, weights = auto.extract_tasks(mod, params, "llvm")
    # 20 convolutions and one dense; repeated blocks share a task
    assert len(tasks) == 16 and sum(weights) == 21
    assert sorted(weights, reverse=True)[:5] == [2, 2, 2, 2, 2]
    assert len({t.workload_key for t in tasks}) == 16
    # the dense (1000 units) is packed when a vector (8 lanes on AVX2, 16 on AVX-512)
    # divides 1000, as TVM's x86 AlterOpLayout does (alter_op_layout.dense_pack_width)
    dense = "fused_nn_contrib_dense_pack" if dense_pack_width(1000) else "fused_nn_dense"
    assert [t.desc.startswith("fused_nn_conv2d") for t in tasks].count(True) == 15
    assert [t.desc.startswith(dense) for t in tasks].count(True) == 1


def test_include_simple_tasks_adds_untunable_groups():
    tasks, _ = auto.extract_tasks(small_net(), None, "llvm")
    more, _ = auto.extract_tasks(small_net(), None, "llvm", include_simple_tasks=True)
    assert len(tasks) == 2 and len(more) > len(tasks)


def test_workload_keys_are_stable_across_processes():
    tasks, _ = auto.extract_tasks(testing.mlp.get_workload(batch_size=1)[0], None, "llvm")
    code = ("import autosched as a; from compiler.relay import testing as t; "
            "print([x.workload_key for x in a.extract_tasks(t.mlp.get_workload(batch_size=1)[0],"
            " None, 'llvm')[0]])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == str([t.workload_key for t in tasks])


def test_extract_rejects_non_modules():
    with pytest.raises(auto.AutoSchedError, match="expected an IRModule or a relay Function"):
        auto.extract_tasks("resnet", None, "llvm")


# ---------------------------------------------------------------- dispatch
@pytest.fixture(scope="module")
def net():
    mod = small_net()
    tasks, _ = auto.extract_tasks(mod, None, "llvm")
    x = np.random.default_rng(0).standard_normal((1, 8, 10, 10)).astype("float32")
    return mod, tasks, x, interp(mod, x)


def test_dispatch_uses_the_tuned_schedule(net, tmp_path):
    mod, tasks, x, expected = net
    log = tmp_path / "net.json"
    save_records(log, [sampled_record(t, seed=k) for k, t in enumerate(tasks)])
    default = build(mod)
    with auto.ApplyHistoryBest(str(log)) as ctx:
        assert auto.DispatchContext.current is ctx
        tuned = build(mod)
    assert auto.DispatchContext.current is None
    assert tuned.stats["tuned_groups"] == 2 and tuned.stats["fallback_groups"] == 0
    assert ctx.hits == 2
    tuned_keys = {key for key, was_tuned in tuned.kernel_keys.values() if was_tuned}
    assert tuned_keys == {t.workload_key for t in tasks}
    for name, (_key, was_tuned) in tuned.kernel_keys.items():
        if was_tuned:
            assert str(tuned.lowered_funcs[name]) != str(default.lowered_funcs[name])
    np.testing.assert_allclose(run(tuned, x), expected, rtol=1e-4, atol=1e-4)


def test_missing_records_fall_back_and_are_counted(net, tmp_path, caplog):
    mod, tasks, x, expected = net
    log = tmp_path / "one.json"
    save_records(log, [sampled_record(tasks[0])])
    with caplog.at_level(logging.WARNING, logger="compiler.relay"):
        lib = build(mod, ctx=auto.ApplyHistoryBest(str(log)))
    assert lib.stats["tuned_groups"] == 1 and lib.stats["fallback_groups"] == 1
    assert ("Cannot find tuned schedules (or the default schedule is faster) for 1 of 2 "
            "tunable groups") in caplog.text
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-4)


def test_stale_record_falls_back_to_the_next_one(net, tmp_path):
    mod, tasks, x, expected = net
    good = sampled_record(tasks[0], cost=2e-4)
    stale = stale_twin(good)
    log = tmp_path / "stale.json"
    save_records(log, [good, stale])
    ctx = auto.ApplyHistoryBest(str(log))
    with pytest.warns(UserWarning, match="no longer applies"):
        lib = build(mod, ctx=ctx)
    assert ctx.stale == 1 and lib.stats["tuned_groups"] == 1
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-4)
    # only the stale record: the group falls back, no exception
    save_records(log, [stale], append=False)
    with pytest.warns(UserWarning, match="no longer applies"):
        lib = build(mod, ctx=auto.ApplyHistoryBest(str(log)))
    assert lib.stats["tuned_groups"] == 0 and lib.stats["fallback_groups"] == 2


def test_nested_contexts_innermost_first(net, tmp_path):
    mod, tasks, x, expected = net
    outer_log, inner_log = tmp_path / "outer.json", tmp_path / "inner.json"
    save_records(outer_log, [sampled_record(t, seed=1) for t in tasks])
    save_records(inner_log, [sampled_record(tasks[1], seed=5)])
    outer, inner = auto.ApplyHistoryBest(str(outer_log)), auto.ApplyHistoryBest(str(inner_log))
    with outer:
        lib = build(mod, ctx=inner)
        assert auto.DispatchContext.current is outer
    assert inner.hits == 1 and outer.hits == 1     # the outer one served only the other group
    assert lib.stats["tuned_groups"] == 2
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-4)


def test_records_of_a_compatible_target_apply(net):
    _mod, tasks, _x, _expected = net
    tvm_style = sampled_record(tasks[0], target="llvm -keys=cpu -num-cores=8")
    foreign = sampled_record(tasks[1], target="llvm -keys=cpu -mcpu=not-this-cpu")
    ctx = auto.ApplyHistoryBest([tvm_style, foreign])
    assert len(ctx.candidates("llvm", tasks[0].workload_key)) == 1
    assert ctx.candidates("llvm", tasks[1].workload_key) == []
    assert auto.ApplyHistoryBest([tvm_style], include_compatible=False).candidates(
        "llvm", tasks[0].workload_key) == []


def test_without_the_pass_config_providers_are_ignored(net, tmp_path):
    mod, tasks, _x, _expected = net
    log = tmp_path / "net.json"
    save_records(log, [sampled_record(t) for t in tasks])
    with auto.ApplyHistoryBest(str(log)) as ctx:
        with compiler.transform.PassContext(opt_level=3):
            lib = relay.build(mod, "llvm")
    assert ctx.queries == 0 and lib.stats["tuned_groups"] == 0


# ---------------------------------------------------------------- the default floor
def test_default_schedules_are_measured_by_the_runner(net):
    _mod, tasks, _x, _expected = net
    with auto.LocalRunner() as runner:
        costs = measure_default_costs(tasks, runner)
    assert all(0 < c < 1 for c in costs)
    # built-in workloads have topi's schedule as their default, by function name
    assert "matmul" in catalog.BUILTIN
    builtin = auto.SearchTask(func="matmul", args=(16, 16, 16), target="llvm")
    # a task without a registered default gets no floor
    plain = auto.SearchTask(workload_key='["steps_test_rowsum", 8, 8]', target="llvm")
    with auto.LocalRunner() as runner:
        got = measure_default_costs([builtin, plain], runner)
    assert 0 < got[0] < 1 and got[1] == float("inf")


def test_records_slower_than_the_default_are_not_used(net, tmp_path, caplog):
    mod, tasks, x, expected = net
    log = tmp_path / "net.json"
    save_records(log, [sampled_record(t, cost=1e-3) for t in tasks])
    # the default of task 0 is faster than its record, task 1's is slower
    write_task_table(tasks, [1, 1], str(log) + ".tasks.json", [1e-4, 1e-2])
    ctx = auto.ApplyHistoryBest(str(log))
    assert ctx.default_costs == {tasks[0].workload_key: 1e-4, tasks[1].workload_key: 1e-2}
    with caplog.at_level(logging.INFO, logger="autosched"):
        lib = build(mod, ctx=ctx)
    assert lib.stats["tuned_groups"] == 1 and ctx.default_faster == 1
    assert ("1 groups used a record; 1 kept their default schedule because it is faster"
            in caplog.text)
    tuned = {key for key, was_tuned in lib.kernel_keys.values() if was_tuned}
    assert tuned == {tasks[1].workload_key}
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-4)
    # default_floor=False uses every record
    lib = build(mod, ctx=auto.ApplyHistoryBest(str(log), default_floor=False))
    assert lib.stats["tuned_groups"] == 2
    table = json.loads((tmp_path / "net.json.tasks.json").read_text())
    assert table[tasks[0].workload_key]["default_cost"] == 1e-4


def test_apply_best_and_resume_accept_a_tvm_style_target(net, tmp_path):
    _mod, tasks, _x, _expected = net
    log = tmp_path / "tvm.json"
    save_records(log, [sampled_record(tasks[0], target="llvm -keys=cpu -num-cores=8")])
    sch, args = tasks[0].apply_best(str(log))
    assert len(args) == len(tasks[0].compute_dag.tensors)
    assert len(matching_records(str(log), tasks[0])) == 1


def test_apply_best_skips_a_cheaper_record_that_does_not_replay(net, tmp_path):
    _mod, tasks, _x, _expected = net
    good = sampled_record(tasks[0], cost=2e-4)
    stale = stale_twin(good)
    log = tmp_path / "stale.json"
    save_records(log, [good, stale])
    with pytest.warns(UserWarning, match="no longer applies"):
        state, rec = best_state(tasks[0], str(log))
    assert rec.mean_cost == pytest.approx(2e-4)
    save_records(log, [stale], append=False)
    with pytest.raises(auto.AutoSchedError, match=r"\(1 valid ones do not replay\)"), \
            pytest.warns(UserWarning):
        best_state(tasks[0], str(log))


def state_record(task, state, cost) -> Record:
    return serialize.encode_record(auto.MeasureInput(task, state),
                                   auto.MeasureResult([cost], 0, "", 0.1, 1.0))


@pytest.mark.parametrize("tuned_costs, tuned_used", [
    ((0.99e-3, 1.01e-3, 1.0e-3), False),    # within PREFER_MARGIN: the default stays
    ((0.5e-3, 1.3e-3, 1.2e-3), False),      # one lucky figure, slower by retimed_cost
    ((0.8e-3, 0.85e-3, 0.82e-3), True),     # measurably faster side by side
])
def test_dispatch_ranks_retimed_states_beside_the_default_state(net, tmp_path, tuned_costs,
                                                                 tuned_used):
    """A log re-timed at the end of tuning holds 3 records of the default's own state
    and of the best tuned state: the build uses the tuned one only when its retimed_cost is
    ``PREFER_MARGIN`` faster, else the group keeps its default schedule (counted)."""
    mod, tasks, x, expected = net
    task = tasks[0]
    dflt = default_state(task)
    assert dflt is not None
    tuned = sampled_record(task)
    recs = [state_record(task, dflt, c) for c in (1.0e-3, 1.02e-3, 0.98e-3)]
    for c in tuned_costs:
        recs.append(Record(tuned.input, tuned.result.__class__((c,), 0, 0.1, 1.0)))
    log = tmp_path / "retimed.json"
    save_records(log, recs)
    ctx = auto.ApplyHistoryBest(str(log))
    lib = build(mod, ctx=ctx)
    assert lib.stats["tuned_groups"] == int(tuned_used)
    assert ctx.default_faster == int(not tuned_used)
    # apply_best picks by the same rule
    state, _ = best_state(task, str(log))
    assert (str(state) == str(dflt)) is (not tuned_used)
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-4)


def test_dispatch_recognizes_the_default_state_in_a_fresh_process(net, tmp_path,
                                                                    monkeypatch):
    """A build in a process that never extracted the tasks (no default schedule
    registered for the group's key) still recognizes the default's own records: the
    build tells the log its default schedule, so a tuned state within
    ``PREFER_MARGIN`` of it does not replace it."""
    mod, tasks, x, expected = net
    task = tasks[0]
    dflt = default_state(task)
    tuned = sampled_record(task)
    recs = [state_record(task, dflt, c) for c in (1.0e-3, 1.02e-3, 0.98e-3)]
    recs += [Record(tuned.input, tuned.result.__class__((c,), 0, 0.1, 1.0))
             for c in (0.99e-3, 1.01e-3, 0.995e-3)]
    log = tmp_path / "fresh.json"
    save_records(log, recs)
    # what a fresh process has: no registered default for the key, nothing cached
    monkeypatch.setattr(defaults_mod, "_DEFAULTS", {})
    monkeypatch.setattr(default_state_mod, "_CACHE", {})
    assert default_state(task) is None
    monkeypatch.setattr(default_state_mod, "_CACHE", {})
    ctx = auto.ApplyHistoryBest(str(log))
    lib = build(mod, ctx=ctx)
    assert lib.stats["tuned_groups"] == 0
    assert ctx.default_faster == 1
    assert task.workload_key in defaults_mod._DEFAULTS
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-4)


def test_dispatch_memory_is_bounded_per_workload(net):
    """Thousands of records of one key keep the re-timed state and the cheapest few."""
    _mod, tasks, _x, _expected = net
    base = sampled_record(tasks[0])
    inp_cls, res_cls = base.input.__class__, base.result.__class__
    recs = [Record(inp_cls(base.input.workload_key, base.input.target,
                           base.input.hardware_params, steps=(("SP", 0, 0, 8, (k,), 1),)),
                   res_cls((1e-3 + k * 1e-7,), 0, 0.1, 1.0)) for k in range(1, 600)]
    retimed = [Record(base.input, res_cls((c,), 0, 0.1, 1.0)) for c in (2e-3, 2e-3, 2e-3)]
    ctx = auto.ApplyHistoryBest(retimed + recs)
    groups = ctx._groups[base.input.workload_key]
    assert len(groups) <= D._MAX_STATES
    assert repr(base.input.steps) in groups             # the re-timed state survives
    assert repr(recs[0].input.steps) in groups          # and the cheapest other
    assert ctx.candidates("llvm", base.input.workload_key)[0].input.steps == base.input.steps


# ---------------------------------------------------------------- ApplyHistoryBestOrSample
# The net's groups with a reduction (TVM's "complex op"): the conv and the dense, which
# are its tasks, and the global pooling.

def test_or_sample_builds_untuned_groups_with_sampled_schedules(net, tmp_path):
    mod, tasks, x, expected = net
    log = tmp_path / "one.json"
    save_records(log, [sampled_record(tasks[0])])
    ctx = auto.ApplyHistoryBestOrSample(str(log))
    lib = build(mod, ctx=ctx)
    # the logged conv as ApplyHistoryBest answers it; the dense and the pooling sampled
    assert ctx.samples == 2 and tasks[1].workload_key in ctx._sampled
    assert tasks[0].workload_key not in ctx._sampled and ctx.log_dir is None
    assert ctx.hits == 3                              # one logged, two sampled
    assert lib.stats["tuned_groups"] == 3 and lib.stats["fallback_groups"] == 0
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-4)
    again = build(mod, ctx=ctx)                       # sampled once per workload
    assert ctx.samples == 2 and again.stats["tuned_groups"] == 3
    # groups without a reduction keep the default schedule unless asked
    relu = relay.nn.relu(relay.var("data", shape=(1, 64)))
    relu_mod = relay.IRModule.from_expr(relay.Function(relay.analysis.free_vars(relu), relu))
    plain = auto.ApplyHistoryBestOrSample([])
    build(relu_mod, ctx=plain)
    every = auto.ApplyHistoryBestOrSample([], sample_simple_workloads=True)
    build(relu_mod, ctx=every)
    assert plain.samples == 0 and every.samples == 1


def test_or_sample_measures_when_asked_and_uses_the_best_measured(net, tmp_path, monkeypatch):
    mod, tasks, x, expected = net
    # the sampled logs are kept for the user (as TVM's); here they go to tmp_path
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ctx = auto.ApplyHistoryBestOrSample([], num_measure=2)
    lib = build(mod, ctx=ctx)
    assert ctx.samples == 3 and {t.workload_key for t in tasks} <= set(ctx.workload_keys)
    assert ctx.log_dir is not None and ctx.log_dir.startswith(str(tmp_path))
    assert sorted(os.listdir(ctx.log_dir)) == [f"sampled_{k}.json" for k in (1, 2, 3)]
    # every sampled group was measured, so its records answer, not an unmeasured sample
    assert all(state is None for state in ctx._sampled.values())
    assert lib.stats["tuned_groups"] == 3
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-4)


def test_or_sample_ranks_samples_with_a_saved_cost_model(net, tmp_path):
    _mod, tasks, _x, _expected = net
    task = tasks[1]
    states = auto.SketchPolicy(task, seed=0, verbose=0).sample_initial_population(40)
    model = auto.XGBModel(seed=0, prior=None)
    model.update([auto.MeasureInput(task, s) for s in states],
                 [auto.MeasureResult([1e-3 * (1 + k % 5)], 0, "", 0.1, 1.0) for k in range(40)])
    model.train()
    path = tmp_path / "model.json"
    model.save(str(path))
    ctx = auto.ApplyHistoryBestOrSample([], cost_model_file=path)
    assert isinstance(ctx.cost_model, auto.XGBModel) and ctx.cost_model.booster is not None
    got = ctx.query(compiler.target.Target("llvm"), task.workload_key,
                    task.compute_dag.tensors)
    assert got is not None and ctx.samples == 1
    with pytest.raises(CostModelError, match="XGBModel.load: cannot read .*missing.json"):
        auto.ApplyHistoryBestOrSample([], cost_model_file=tmp_path / "missing.json")


def test_compute_dag_workload_key_is_the_extracted_tasks_key():
    """TVM's ComputeDAG.workload_key()/hash_key() name an extracted task's DAG as the
    extraction did, and is_auto_scheduler_enabled follows the PassContext."""
    tasks, _ = auto.extract_tasks(small_net(), None, "llvm")
    for task in tasks:
        assert task.compute_dag.workload_key() == task.workload_key
        assert json.loads(task.workload_key)[0] == task.compute_dag.hash_key()
    assert not auto.is_auto_scheduler_enabled()
    with compiler.transform.PassContext(opt_level=3, config=USE_AUTO):
        assert auto.is_auto_scheduler_enabled()

