"""Tuning stops cleanly when every measurement fails (TVM's max_continuous_error), with a
message that says what keeps failing, and the failed batches stay in the log."""
import errno
import os

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import pytest
from autosched_helpers import Fine

import autosched as auto
from autosched import validate
from autosched.measure.measurer import BuildResult, MeasureErrorNo, MeasureResult
from records import MeasureInputRecord, Record, load_records, save_records
from records import io as records_io


class Broken:
    """A builder whose every build fails and a runner that passes the failures on."""
    n_parallel = 1

    def build(self, inputs, verbose=0):
        return [BuildResult.failed(MeasureErrorNo.COMPILE_HOST, "LLVM ERROR: no target\n"
                                   "more lines") for _ in inputs]

    def run(self, inputs, build_results, verbose=0):
        return [MeasureResult.failed(b.error_no, b.error_msg) for b in build_results]


def options(log, budget=64):
    broken = Broken()
    return auto.TuningOptions(num_measure_trials=budget, num_measures_per_round=4, verbose=0,
                              builder=broken, runner=broken, max_continuous_error=6,
                              measure_callbacks=[auto.RecordToFile(str(log))])


def test_task_tune_stops_after_max_continuous_error(tmp_path):
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    log = tmp_path / "t.json"
    with pytest.warns(UserWarning, match="tuning stopped"):
        stats = task.tune(options(log))
    assert stats.stop_reason.startswith("8 measurements failed in a row "
                                        "(max_continuous_error=6): COMPILE_HOST x8")
    assert stats.stop_reason.endswith("the last one: LLVM ERROR: no target")
    assert len(list(load_records(log))) == 8          # two rounds of 4, both logged


def test_task_scheduler_stops_after_max_continuous_error(tmp_path):
    tasks = [auto.SearchTask(func="steps_test_matmul", args=(n, n, n)) for n in (16, 24)]
    ts = auto.TaskScheduler(tasks, callbacks=[])
    with pytest.warns(UserWarning, match="tuning stopped"):
        ts.tune(options(tmp_path / "n.json"), search_policy="sketch.random")
    assert "failed in a row (max_continuous_error=6): COMPILE_HOST" in ts.stop_reason
    assert ts.ct < 64


def test_max_continuous_error_is_validated():
    with pytest.raises(ValueError, match="max_continuous_error"):
        auto.TuningOptions(max_continuous_error=0)




def test_a_full_disk_stops_tuning_with_the_log_whole(tmp_path, monkeypatch):
    log = tmp_path / "full.json"
    real, calls = records_io._write_all, []

    def disk_fills_up(fd, data):
        calls.append(len(data))
        if len(calls) > 5:                 # half a line, then ENOSPC
            os.write(fd, data[:len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(records_io, "_write_all", disk_fills_up)
    fine = Fine()
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    opts = auto.TuningOptions(num_measure_trials=64, num_measures_per_round=4, verbose=0,
                              builder=fine, runner=fine,
                              measure_callbacks=[auto.RecordToFile(str(log))])
    with pytest.warns(UserWarning, match="tuning stopped"):
        stats = task.tune(opts)
    assert "could not write: OSError" in stats.stop_reason
    assert "No space left on device" in stats.stop_reason
    assert len(list(load_records(log, strict=True))) == 5      # the torn line was cut


def test_validate_replays_every_record(tmp_path, capsys):
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    log = tmp_path / "v.json"
    fine = Fine()
    task.tune(auto.TuningOptions(num_measure_trials=4, num_measures_per_round=4, verbose=0,
                                 builder=fine, runner=fine,
                                 measure_callbacks=[auto.RecordToFile(str(log))]))
    assert validate.main([str(log)]) == 0
    assert capsys.readouterr().out.strip() == "every record replays"
    good = list(load_records(log))[0]
    stale = Record(MeasureInputRecord(good.workload_key, good.target,
                                      good.input.hardware_params,
                                      steps=(("SP", 99, 0, 8, (2,), 1),)), good.result)
    unknown = Record(MeasureInputRecord('["no_such_workload", 1]', good.target,
                                        good.input.hardware_params), good.result)
    save_records(log, [stale, unknown])
    assert validate.main([str(log)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{log}:5: steps do not replay on {good.workload_key}")
    assert out[1].startswith(f"{log}:6: workload [\"no_such_workload\", 1] is unknown here")
    assert out[-1] == "2 record(s) do not replay"
    assert validate.main([str(tmp_path / "missing.json")]) == 2
