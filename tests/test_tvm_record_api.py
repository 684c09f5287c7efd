"""TVM's log API for offline analysis (issue 12, item 5): ``RecordReader``,
``load_records`` / ``save_records`` as (MeasureInput, MeasureResult) pairs,
``recover_measure_input``, the ``auto_scheduler.feature`` functions, and TVM target
strings with options this compiler does not model (``-link-params=0``).

Logs are written from sampled states with made-up costs: nothing is built or timed.
"""
import json
import subprocess
import sys
import warnings

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import numpy as np
import pytest

import autosched as auto
import compiler
from autosched import feature
from autosched.cost_model import XGBModel
from autosched.errors import WorkloadError
from autosched.features.extract import FeatureExtractor
from autosched.measure_record import LoggedMeasureInput, LoggedTask
from autosched.validate import validate_log
from compiler.errors import BuildError
from compiler.target import parse_target_lenient

TVM_TARGET = "llvm -keys=cpu -link-params=0 -mcpu=znver4 -num-cores=2"


def sampled(task, n, seed=0):
    return auto.SketchPolicy(task, seed=seed, verbose=0).sample_initial_population(n)


def results_for(costs):
    return [auto.MeasureResult([c], 0, "", 0.5, 1.0) if c else
            auto.MeasureResult([], 4, "runtime error", 0.5, 1.0) for c in costs]


@pytest.fixture
def two_task_log(tmp_path):
    """A log of two tasks, 6 and 3 records (one failure), and what made it."""
    small = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    tall = auto.SearchTask(func="steps_test_matmul", args=(32, 16, 16))
    inputs = [auto.MeasureInput(small, s) for s in sampled(small, 6)] + \
        [auto.MeasureInput(tall, s) for s in sampled(tall, 3)]
    costs = [2e-3, 1e-3, 4e-3, None, 1e-3 * 1.25, 8e-3, 3e-3, 6e-3, 1.5e-3]
    results = results_for(costs)
    path = tmp_path / "two.json"
    auto.save_records(path, inputs, results)
    return path, inputs, results


def test_read_lines_gives_the_pairs_saved_with_their_states_and_costs(two_task_log):
    path, inputs, results = two_task_log
    got_in, got_res = auto.RecordReader(path).read_lines()
    assert len(got_in) == len(got_res) == 9
    for a, b, ra, rb in zip(got_in, inputs, got_res, results):
        assert isinstance(a, LoggedMeasureInput) and isinstance(a.task, LoggedTask)
        assert a.task.workload_key == b.task.workload_key
        assert str(a.state) == str(b.state)
        assert ra.error_no == rb.error_no and ra.costs == rb.costs
    # one task object (and one DAG) per task of the log
    assert got_in[0].task is got_in[5].task and got_in[0].task is not got_in[6].task
    assert got_in[0].task.compute_dag is got_in[1].task.compute_dag
    some, _ = auto.RecordReader(path).read_lines(max_lines=3, skip_lines=2)
    assert [str(i.state) for i in some] == [str(i.state) for i in inputs[2:5]]
    with pytest.raises(ValueError, match="skip_lines=-1 must not be negative"):
        auto.RecordReader(path).read_lines(skip_lines=-1)


def test_load_records_iterates_pairs_as_tvm_scripts_unpack_them(two_task_log):
    path, inputs, _ = two_task_log
    pairs = list(auto.load_records(path))
    assert len(pairs) == 9
    keys = [inp.task.workload_key for inp, _ in pairs]
    assert keys == [i.task.workload_key for i in inputs]
    best = min((res.costs[0], str(inp.state)) for inp, res in pairs if res.error_no == 0)
    assert best == (1e-3, str(inputs[1].state))
    # TVM's script shape: the same names through the tvm alias
    assert compiler.auto_scheduler.load_records is auto.load_records
    assert compiler.auto_scheduler.RecordReader is auto.RecordReader


def test_save_records_copies_logged_pairs_without_replaying_them(two_task_log, tmp_path):
    path, _, _ = two_task_log
    inputs, results = auto.RecordReader(path).read_lines()
    fast = [(i, r) for i, r in zip(inputs, results) if r.error_no == 0 and r.costs[0] < 3e-3]
    out = tmp_path / "fast.json"
    auto.save_records(out, [i for i, _ in fast], [r for _, r in fast])
    src = [json.loads(line) for line in open(path)]
    dst = [json.loads(line) for line in open(out)]
    assert [d["i"] for d in dst] == [s["i"] for s in src if s["r"][1] == 0
                                    and s["r"][0][0] < 3e-3]
    with pytest.raises(ValueError, match="2 inputs but 1 results"):
        auto.save_records(out, inputs[:2], results[:1])


def test_an_unregistered_workload_reads_and_copies_but_its_state_names_it(tmp_path):
    line = {"i": [['["no_such_workload", 8]', "llvm -keys=cpu -mcpu=znver4", [2, 64, 64, 0, 0,
                                                                            0, 0, 0], "",
                   0, []], [[], [["SP", 2, 0, 8, [4], 1]]]],
            "r": [[1e-3], 0, 0.1, 1.0], "v": "v0.6"}
    path = tmp_path / "other.json"
    path.write_text(json.dumps(line) + "\n")
    (inp, res), = list(auto.load_records(path))
    assert inp.task.workload_key == '["no_such_workload", 8]' and res.costs == [1e-3]
    with pytest.raises(WorkloadError, match="no_such_workload"):
        inp.state  # noqa: B018
    with pytest.raises(WorkloadError, match="no_such_workload"):
        auto.recover_measure_input(inp)
    out = tmp_path / "copy.json"
    auto.save_records(out, [inp], [res])
    assert json.loads(out.read_text())["i"] == line["i"]
    with pytest.warns(UserWarning, match="1 of 1 pairs left out"):
        f, tp, ids = feature.get_per_store_features_from_measure_pairs([inp], [res])
    assert len(f) == len(tp) == len(ids) == 0
    with pytest.raises(WorkloadError, match="no_such_workload"):
        feature.get_per_store_features_from_file(path, 0)


def test_recover_measure_input_rebuilds_the_dag_and_on_request_the_state(two_task_log):
    path, inputs, _ = two_task_log
    logged = auto.RecordReader(path).read_lines()[0][0]
    assert auto.recover_measure_input(logged) is logged
    full = auto.recover_measure_input(logged, rebuild_state=True)
    assert isinstance(full, auto.MeasureInput) and str(full.state) == str(inputs[0].state)
    assert auto.recover_measure_input(full) is full
    with pytest.raises(TypeError, match="expected a MeasureInput, got str"):
        auto.recover_measure_input("x")
    # TVM's spelling, through the measure package, also after ``import compiler as tvm``
    assert auto.measure.recover_measure_input is auto.recover_measure_input
    assert compiler.auto_scheduler.measure.recover_measure_input is auto.recover_measure_input
    assert auto.measure.RPCRunner is auto.RPCRunner


# ------------------------------------------------------------------ feature module
def test_features_from_pairs_are_the_cost_models_rows_with_tvms_throughputs(two_task_log):
    path, inputs, results = two_task_log
    f, tp, ids = feature.get_per_store_features_from_measure_pairs(inputs, results)
    assert f.dtype == object and f.shape == (9,)
    ex = FeatureExtractor()
    for rows, inp in zip(f, inputs):
        assert rows.dtype == np.float32 and rows.shape[1] == feature.DEFAULT_FEATURE_VEC_LEN
        np.testing.assert_array_equal(rows, ex.featurize(inp.state))
        assert rows.flags.writeable            # the caller's own copy
    assert ids.tolist() == [0] * 6 + [1] * 3
    np.testing.assert_allclose(tp, [0.5, 1.0, 0.25, 0.0, 0.8, 0.125, 0.5, 0.25, 1.0])
    # the same from the file, and from the states
    f2, tp2, ids2 = feature.get_per_store_features_from_file(path, 0)
    np.testing.assert_allclose(tp2, tp)
    assert ids2.tolist() == ids.tolist()
    for a, b in zip(f, f2):
        np.testing.assert_array_equal(a, b)
    f3 = feature.get_per_store_features_from_states([i.state for i in inputs[:6]],
                                                    inputs[0].task)
    for a, b in zip(f[:6], f3):
        np.testing.assert_array_equal(a, b)
    f4, tp4, _ = feature.get_per_store_features_from_file(path, 4)
    assert len(f4) == 4 and tp4.tolist() == [0.5, 1.0, 0.25, 0.0]


def test_skipped_states_get_a_zero_row_and_fewer_buffers_drop_columns(two_task_log):
    _, inputs, results = two_task_log
    full, _, _ = feature.get_per_store_features_from_measure_pairs(inputs, results)
    f, _, _ = feature.get_per_store_features_from_measure_pairs(
        inputs, results, skip_first_n_feature_extraction=2, max_n_bufs=2)
    names = feature.get_per_store_feature_names(2)
    assert len(names) == f[2].shape[1] == feature.DEFAULT_FEATURE_VEC_LEN - 3 * 18
    assert "buf1_bytes" in names and "buf2_bytes" not in names
    assert names[-1] == feature.get_per_store_feature_names()[-1]
    np.testing.assert_array_equal(f[0], np.zeros((1, len(names)), np.float32))
    all_names = feature.get_per_store_feature_names()
    cols = [all_names.index(n) for n in names]
    np.testing.assert_array_equal(f[3], full[3][:, cols])
    with pytest.raises(ValueError, match=r"max_n_bufs=6: expected an integer from 0 to 5"):
        feature.get_per_store_feature_names(6)


# ------------------------------------------------------------------ TVM targets
def test_parse_target_lenient_returns_the_options_it_ignored():
    target, ignored = parse_target_lenient(TVM_TARGET + " -libs=cblas")
    assert str(target) == "llvm -keys=cpu -mcpu=znver4 -num-cores=2"
    assert ignored == ("-link-params=0", "-libs=cblas")
    with pytest.raises(BuildError, match="target 'cuda -arch=sm_75': unknown kind 'cuda'"):
        parse_target_lenient("cuda -arch=sm_75")
    with pytest.raises(BuildError, match="-num-cores and -opt-level take integers"):
        parse_target_lenient("llvm -link-params=0 -num-cores=two")


def _retarget(src, dst, target):
    lines = []
    for line in open(src):
        d = json.loads(line)
        d["i"][0][1] = target
        lines.append(json.dumps(d))
    dst.write_text("\n".join(lines) + "\n")


def test_a_log_with_tvm_only_target_options_loads_applies_and_trains(two_task_log, tmp_path):
    path, inputs, _ = two_task_log
    tvm_log = tmp_path / "tvm.json"
    _retarget(path, tvm_log, TVM_TARGET)
    with pytest.warns(UserWarning, match=r"-link-params=0 ignored"):
        pairs = list(auto.load_records(tvm_log))
    assert str(pairs[0][0].task.target) == "llvm -keys=cpu -mcpu=znver4 -num-cores=2"
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # reported once per target string
        list(auto.load_records(tvm_log))
    inp, res = auto.load_best_record(tvm_log, inputs[0].task.workload_key)
    assert res.costs == [1e-3] and str(inp.state) == str(inputs[1].state)
    model = XGBModel(seed=0, prior=None)
    assert model.add_from_file(str(tvm_log)) == 9      # the failure too (label 0)
    assert validate_log(str(tvm_log)) == []


def test_records_of_another_device_are_skipped_with_a_warning(two_task_log, tmp_path):
    path, _, _ = two_task_log
    gpu_log = tmp_path / "gpu.json"
    _retarget(path, gpu_log, "cuda -keys=cuda,gpu -arch=sm_75")
    with pytest.warns(UserWarning, match=r"skipping the records of target 'cuda -keys"):
        assert list(auto.load_records(gpu_log)) == []


def test_apply_history_best_takes_tvm_pairs_as_well_as_paths(two_task_log):
    path, inputs, results = two_task_log
    key, target = inputs[0].task.workload_key, inputs[0].task.target

    def ranked(ctx):
        return [r.input.steps for r in ctx.candidates(target, key)]
    from_path = ranked(auto.ApplyHistoryBest(str(path)))
    assert len(from_path) == 5
    assert ranked(auto.ApplyHistoryBest(auto.load_records(path))) == from_path
    assert ranked(auto.ApplyHistoryBest(list(zip(inputs, results)))) == from_path
    with pytest.raises(TypeError, match=r"expected log paths, Records or \(MeasureInput, "
                                        r"MeasureResult\) pairs, got int"):
        auto.ApplyHistoryBest([3])


def test_distill_record_file_keeps_the_best_per_task_and_merges_the_output(two_task_log,
                                                                             tmp_path):
    """TVM's ``measure_record.distill_record_file`` and its ``--mode distill`` CLI."""
    path, inputs, _ = two_task_log
    out = tmp_path / "best" / "two.best.json"
    assert auto.measure_record.distill_record_file(path, out) == 2
    best = list(auto.load_records(out))
    assert [r.costs[0] for _, r in best] == [1e-3, 1.5e-3]
    assert str(best[0][0].state) == str(inputs[1].state)
    # an existing output is merged: a better record of the first task replaces its best
    better = tmp_path / "better.json"
    auto.save_records(better, [inputs[2]], results_for([5e-4]))
    assert auto.measure_record.distill_record_file(better, out) == 2
    assert sorted(r.costs[0] for _, r in auto.load_records(out)) == [5e-4, 1.5e-3]
    # the command line, as TVM's tip writes it (default output: INPUT.best.json)
    done = subprocess.run([sys.executable, "-m", "autosched.measure_record", "--mode",
                           "distill", "-i", str(path)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and "RuntimeWarning" not in done.stderr
    assert f"extracted 2 best records from {path}" in done.stdout
    assert len(list(auto.load_records(str(path) + ".best.json"))) == 2
    missing = subprocess.run([sys.executable, "-m", "autosched.measure_record", "-i",
                              str(tmp_path / "none.json")], capture_output=True, text=True,
                             timeout=120)
    assert missing.returncode == 1
    assert "distill_record_file: input log" in missing.stderr and "does not exist" in \
        missing.stderr
