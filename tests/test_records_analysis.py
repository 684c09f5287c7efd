"""Offline analysis: summaries, distillation, curves, comparison, tables, error objects."""
import pickle

import pytest

from records import (
    ErrorNo,
    MeasureInputRecord,
    MeasureResultRecord,
    Record,
    RecordError,
    RecordFieldError,
    best_records,
    compare,
    curve,
    flops_of,
    save_records,
    summarize,
)
from records.analysis import error_names
from records.table import format_table

MM, CONV = '["matmul", 64, 64, 64]', '["conv2d", 1, 64]'


def rec(key, cost, error_no=0, target="llvm"):
    inp = MeasureInputRecord(key, target, [2, 64, 64, 0, 0, 0, 0, 0])
    return Record(inp, MeasureResultRecord([1e10] if error_no else [cost], error_no, 1.0, 0))


LOG = [
    rec(MM, 0.004), rec(MM, 0, ErrorNo.RUN_TIMEOUT), rec(CONV, 0, ErrorNo.COMPILE_HOST),
    rec(MM, 0.002), rec(CONV, 0.010), rec(MM, 0.003), rec(MM, 0.002),
    rec(MM, 0, ErrorNo.RUN_TIMEOUT), rec(MM, 0.001, target="llvm -mcpu=skylake"),
]


def test_summarize_counts_trials_errors_and_best():
    mm, conv = summarize(LOG, flops={MM: 2 * 64 ** 3})
    assert (mm.workload_key, mm.trials, mm.error_count, mm.valid_count) == (MM, 7, 2, 5)
    assert mm.errors == ((ErrorNo.RUN_TIMEOUT, 2),)
    assert mm.targets == ("llvm", "llvm -mcpu=skylake")
    assert mm.best_cost == 0.001 and mm.best_trial == 7
    assert mm.best_gflops == pytest.approx(2 * 64 ** 3 / 0.001 / 1e9)
    assert (conv.trials, conv.best_cost, conv.best_trial, conv.best_gflops) == (2, 0.010, 2, None)
    assert error_names(conv) == "COMPILE_HOST:1"


def test_summary_best_trial_is_first_time_best_was_reached():
    log = [rec(MM, 0.5), rec(MM, 0.2), rec(MM, 0.2), rec(MM, 0.3)]
    (s,) = summarize(log, flops=lambda key: 1e9)
    assert (s.best_cost, s.best_trial, s.best_gflops) == (0.2, 2, pytest.approx(5.0))


def test_summary_of_all_failed_workload_has_no_best():
    (s,) = summarize([rec(MM, 0, 4), rec(MM, 0, 5)])
    assert (s.best_cost, s.best_trial, s.best_gflops, s.error_count) == (None, None, None, 2)


def test_bad_flop_counts_are_errors():
    with pytest.raises(RecordError, match=r"flop count of workload '\[\"matmul\".*got -3, "
                                          "expected a positive finite number"):
        summarize(LOG, flops={MM: -3})
    assert flops_of({}, MM) is None and flops_of(None, MM) is None
    assert flops_of(lambda key: 7, MM) == 7.0


def test_best_records_distills_per_workload_and_target():
    best = best_records(LOG + [rec('["failed"]', 0, 8)])
    assert [(r.workload_key, r.target, r.mean_cost) for r in best] == [
        (MM, "llvm", 0.002), (CONV, "llvm", 0.010), (MM, "llvm -mcpu=skylake", 0.001)]
    assert best[0] is LOG[3]  # the earliest of the tied 0.002 records


def test_curve_is_best_so_far_per_trial():
    assert curve(LOG, MM) == [(1, 0.004), (2, 0.004), (3, 0.002), (4, 0.002), (5, 0.002),
                              (6, 0.002), (7, 0.001)]
    assert curve([rec(CONV, 0, 1), rec(CONV, 0.3)], CONV) == [(1, None), (2, 0.3)]
    assert curve(LOG, '["absent"]') == []


def test_compare_two_logs_from_paths(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_records(a, [rec(MM, 0.004), rec(CONV, 0.010)])
    save_records(b, [rec(MM, 0.001), rec(MM, 0.002), rec('["new"]', 0.5)])
    rows = compare(a, b)
    assert [(c.workload_key, c.trials_a, c.trials_b, c.best_a, c.best_b) for c in rows] == [
        (MM, 1, 2, 0.004, 0.001), (CONV, 1, 0, 0.010, None), ('["new"]', 0, 1, None, 0.5)]
    assert rows[0].speedup == pytest.approx(4.0) and rows[1].speedup is None


def test_format_table_aligns_columns():
    text = format_table(["name", "n"], [["a", 1], ["long-name", 22]], align="lr")
    assert text.splitlines() == ["name        n", "---------  --", "a           1",
                                 "long-name  22"]
    with pytest.raises(ValueError, match="table row 1 has 1 cells, expected 2"):
        format_table(["a", "b"], [[1, 2], [3]])


def test_errors_pickle_with_their_fields():
    err = RecordFieldError("error_no (r[1])", 9, "an integer in 0..8").at("log.json", 4)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is RecordFieldError
    assert (back.field, back.value, back.lineno, str(back)) == (
        "error_no (r[1])", 9, 4, "log.json:4: error_no (r[1]): got 9, expected an integer in 0..8")
    assert err.at(None, None).args == ("error_no (r[1]): got 9, expected an integer in 0..8",)
