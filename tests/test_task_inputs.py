"""TVM's task inputs: ``SearchTask(task_inputs={name: array})`` measures candidates with
that data for the named placeholders instead of random inputs (a gather's indices), the
names go into the records, and bad inputs are errors naming the placeholder.

The end-to-end check: a reference kernel that gathers in reverse order without reading
the indices; a candidate gathering through the indices matches it only when the runner
really fed the task's reversed indices to the worker.
"""
import numpy as np
import pytest

import autosched as auto
import compiler
from autosched import task_inputs as TI
from autosched.measure.builder import LocalBuilder
from autosched.measure.runner import LocalRunner, _arguments
from compiler import te
from records import load_records

N = 64


@auto.register_workload("task_inputs_gather", override=True)
def gather(n):
    data = te.placeholder((n,), name="data")
    idx = te.placeholder((n,), name="idx", dtype="int32")
    out = te.compute((n,), lambda i: data[idx[i]] * 2.0, name="out")
    return [data, idx, out]


def reversed_reference(task):
    """A kernel with the workload's parameters that reads data in reverse order."""
    data = te.placeholder((N,), name="data")
    idx = te.placeholder((N,), name="idx", dtype="int32")
    out = te.compute((N,), lambda i: data[N - 1 - i] * 2.0
                     + 0.0 * idx[i].astype("float32"), name="out")
    func = compiler.lower(te.create_schedule(out.op), [data, idx, out], name="reference")
    obj, metas, _ir = compiler.build_object(func, task.target)
    return obj, metas


REVERSED = np.arange(N - 1, -1, -1, dtype="int32")


def make_task(**kw):
    return auto.SearchTask(func="task_inputs_gather", args=(N,),
                           layout_rewrite_option=auto.LayoutRewriteOption.NO_REWRITE, **kw)


def measure(task, states):
    inputs = [auto.MeasureInput(task, s) for s in states]
    builder = LocalBuilder(n_parallel=1)
    with LocalRunner(check_correctness=True, reference_func=reversed_reference,
                     cutoff=None) as runner:
        try:
            return runner.run(inputs, builder.build(inputs))
        finally:
            builder.close()


def test_candidates_are_measured_with_the_task_inputs():
    task = make_task(task_inputs={"idx": REVERSED}, task_inputs_overwrite=True)
    assert task.task_input_names == ("idx",)
    states = auto.SketchPolicy(task, seed=0, verbose=0).sample_initial_population(3)
    results = measure(task, states + [task.compute_dag.init_state()])
    assert len(results) >= 2
    assert [r.error_no for r in results] == [0] * len(results), [r.error_msg for r in results]
    # the same candidates on random indices gather something else
    plain = make_task()
    wrong = measure(plain, [task.compute_dag.init_state()])
    assert wrong[0].error_no == int(auto.measure.MeasureErrorNo.WRONG_ANSWER)


def test_data_that_no_longer_fits_is_a_measurement_error_naming_the_input():
    task = make_task(task_inputs={"idx": REVERSED}, task_inputs_overwrite=True)
    TI.register_task_input_buffer(task.workload_key, "idx", REVERSED[:8], overwrite=True)
    try:
        with pytest.warns(UserWarning, match="the reference kernel of .* failed"):
            res = measure(task, [task.compute_dag.init_state()])[0]
    finally:
        TI.register_task_input_buffer(task.workload_key, "idx", REVERSED, overwrite=True)
    assert res.error_no == int(auto.measure.MeasureErrorNo.RUNTIME_DEVICE)
    assert "task input 'idx' is (8,) int32, but the candidate's parameter 'idx' is (64,) " \
        "int32" in res.error_msg


def test_the_worker_places_the_file_in_the_named_argument(tmp_path):
    task = make_task(task_inputs={"idx": REVERSED}, task_inputs_overwrite=True)
    fixed = TI.files_for(task, str(tmp_path), {})
    assert [(k, name) for k, name, _ in fixed] == [(1, "idx")]
    _obj, metas = reversed_reference(task)
    arrays = _arguments(metas[0], 0, fixed)
    np.testing.assert_array_equal(arrays[1], REVERSED)
    plain = _arguments(metas[0], 0, ())
    assert plain[1].max() < 8                 # random indices, as before


def test_registry_keeps_the_first_data_unless_overwritten_and_reads_saved_files(
        tmp_path, monkeypatch):
    monkeypatch.setattr(TI, "DEFAULT_DIRECTORY", str(tmp_path))
    key = '["registry_test", 1]'
    first = TI.register_task_input_buffer(key, "x", np.ones(3, "float32"), save_to_file=True)
    kept = TI.register_task_input_buffer(key, "x", np.zeros(3, "float32"))
    assert kept is first and not kept.flags.writeable
    assert len(list(tmp_path.glob("*_x.npy"))) == 1
    TI._TABLE.pop(key)                        # a new process: only the file is left
    np.testing.assert_array_equal(TI.get_task_input_buffer(key, "x"), np.ones(3))
    with pytest.raises(TI.TaskInputError, match="task input 'y' of .* is not registered"):
        TI.get_task_input_buffer(key, "y")


def test_tvms_list_form_takes_names_registered_under_default(tmp_path, monkeypatch):
    """TVM's ``SearchTask(..., task_inputs=[names])``: the data were registered before,
    under the task's workload key or under ``"default"`` (where TVM's relay analysis
    puts sparse weights), and are measured with as the dict form's."""
    monkeypatch.setattr(TI, "DEFAULT_DIRECTORY", str(tmp_path))
    monkeypatch.setitem(TI._TABLE, "default", {})
    TI.register_task_input_buffer("default", "idx", REVERSED)
    task = make_task(task_inputs=["idx"])
    assert task.task_input_names == ("idx",)
    results = measure(task, [task.compute_dag.init_state()])
    assert [r.error_no for r in results] == [0], [r.error_msg for r in results]
    with pytest.raises(TI.TaskInputError, match=r"task input 'index' of .* is not registered "
                                                r"in this process \(under its workload key "
                                                r"or 'default'\)"):
        make_task(task_inputs=["index"])


@pytest.mark.parametrize("inputs, message", [
    ({"index": REVERSED}, r"task input 'index': no argument of the task has that name "
                          r"\(named: \['data', 'idx'\]\)"),
    ({"idx": REVERSED[:4]}, r"task input 'idx': data \(4,\) int32, but the placeholder is "
                            r"\(64,\) int32"),
    ({"idx": REVERSED.astype("int64")}, r"data \(64,\) int64, but the placeholder is "
                                        r"\(64,\) int32"),
    ({"idx": [1, 2]}, r"task input 'idx': expected a numpy array or an NDArray, got list"),
])
def test_bad_task_inputs_are_refused_when_the_task_is_made(inputs, message):
    with pytest.raises(TI.TaskInputError, match=message):
        make_task(task_inputs=inputs, task_inputs_overwrite=True)


def test_records_name_the_task_inputs(tmp_path):
    task = make_task(task_inputs={"idx": compiler.nd.array(REVERSED)},
                     task_inputs_overwrite=True)
    log = tmp_path / "g.json"
    state = task.compute_dag.init_state()
    auto.save_records(log, [auto.MeasureInput(task, state)],
                      [auto.MeasureResult([1e-3], 0, "", 0.1, 1.0)])
    rec, = list(load_records(log))
    assert rec.input.task_input_names == ("idx",)
    inp, _ = next(auto.load_records(log))
    assert inp.task.task_input_names == ("idx",)


@auto.register_workload("task_inputs_unnamed", override=True)
def unnamed(n):
    data = te.placeholder((n,))                       # both named "placeholder"
    idx = te.placeholder((n,), dtype="int32")
    out = te.compute((n,), lambda i: data[idx[i]], name="out")
    return [data, idx, out]


def test_a_check_function_names_arguments_that_share_a_placeholder_name():
    def make():
        return auto.SearchTask(func="task_inputs_unnamed", args=(N,),
                               task_inputs={"gather_idx": REVERSED},
                               task_inputs_overwrite=True)
    with pytest.raises(TI.TaskInputError, match=r"'gather_idx': no argument of the task "
                                                r"has that name \(named: \[\]\)"):
        make()

    @TI.register_task_input_check_func
    def int_placeholders(args):
        return {t: "gather_idx" for t in args[:-1] if t.dtype == "int32"}
    try:
        task = make()
        assert TI.input_positions(task.compute_dag.tensors) == {"gather_idx": [1]}
        with pytest.raises(TI.TaskInputError, match="'int_placeholders' is already registered"):
            TI.register_task_input_check_func(int_placeholders)
    finally:
        TI._CHECK_FUNCS.pop("int_placeholders")
