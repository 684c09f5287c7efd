"""Log reading and writing: whole lines, torn/malformed lines, strict mode, best record."""
import json
import os
import warnings

import pytest

from records import (
    FAILURE_COST,
    MeasureInputRecord,
    MeasureResultRecord,
    Record,
    RecordError,
    RecordFieldError,
    RecordReader,
    RecordSyntaxError,
    RecordWarning,
    RecordWriter,
    TruncatedLineError,
    load_best_record,
    load_records,
    save_records,
    target_matches,
)

KEY = '["matmul", 64, 64, 64]'


def rec(cost, error_no=0, key=KEY, target="llvm -mcpu=znver4", ts=1.0):
    inp = MeasureInputRecord(key, target, [2, 64, 64, 0, 0, 0, 0, 0],
                             steps=[["SP", 2, 0, 64, [8, 8], 1], ["AN", 2, 0, 3]])
    costs = [FAILURE_COST] if error_no else [cost, cost]
    return Record(inp, MeasureResultRecord(costs, error_no, 0.25, ts))


def write_lines(path, *lines, tail="\n"):
    path.write_text("\n".join(lines) + tail)


def test_writer_appends_whole_lines_across_instances(tmp_path):
    log = tmp_path / "log.json"
    records = [rec(0.001 * (i + 1), ts=float(i)) for i in range(5)]
    with RecordWriter(log) as w:
        w.write(records[0])
        w.write(records[1])
    with RecordWriter(log, fsync=True) as w:
        assert w.write_many(records[2:4]) == 2
    save_records(log, [records[4]])
    text = log.read_text()
    assert text.endswith("\n") and text.count("\n") == 5
    assert text.splitlines() == [r.to_json() for r in records]
    assert list(load_records(log)) == records


def test_two_open_writers_interleave_whole_lines(tmp_path):
    log = tmp_path / "log.json"
    a, b = RecordWriter(log), RecordWriter(log, compact=True)
    for i in range(3):
        a.write(rec(0.1, ts=float(i)))
        b.write(rec(0.2, ts=float(i)))
    a.close()
    b.close()
    lines = log.read_text().splitlines()
    assert lines[0] == rec(0.1, ts=0.0).to_json()
    assert lines[1] == rec(0.2, ts=0.0).to_json(compact=True)
    assert [r.mean_cost for r in load_records(log, strict=True)] == [0.1, 0.2] * 3


def test_writer_rejects_non_records_and_closed_use(tmp_path):
    log = tmp_path / "log.json"
    w = RecordWriter(log)
    with pytest.raises(TypeError, match="item 0 to write is a tuple, expected records.Record"):
        w.write((1, 2))
    w.close()
    assert w.closed
    with pytest.raises(RecordError, match=f"{log}: write to a closed RecordWriter"):
        w.write(rec(0.1))
    assert log.read_text() == ""


def test_torn_last_line_is_skipped_with_a_warning(tmp_path):
    log = tmp_path / "log.json"
    good = [rec(0.002), rec(0.001)]
    write_lines(log, good[0].to_json(), good[1].to_json(), good[0].to_json()[:57], tail="")
    with pytest.warns(RecordWarning) as caught:
        got = list(load_records(log))
    assert got == good
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"{log}:3: truncated last line" in message
    with pytest.raises(TruncatedLineError) as info:
        list(load_records(log, strict=True))
    assert info.value.lineno == 3 and info.value.path == str(log)


def test_new_writer_terminates_a_torn_line_so_no_record_is_lost(tmp_path):
    log = tmp_path / "log.json"
    write_lines(log, rec(0.002).to_json(), '{"i": [["tor', tail="")
    with RecordWriter(log) as w:
        w.write(rec(0.001))
    errors = []
    got = list(RecordReader(log, on_error=errors.append))
    assert got == [rec(0.002), rec(0.001)]
    assert [(e.lineno, type(e)) for e in errors] == [(2, RecordSyntaxError)]


def test_malformed_middle_line_is_skipped_and_reading_continues(tmp_path):
    log = tmp_path / "log.json"
    bad_field = json.loads(rec(0.5).to_json())
    bad_field["r"][1] = 12
    write_lines(log, rec(0.003).to_json(), "{not json", "", "   ", json.dumps(bad_field),
                rec(0.002).to_json())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = list(load_records(log))
    assert got == [rec(0.003), rec(0.002)]
    messages = [str(w.message) for w in caught]
    assert all(w.category is RecordWarning for w in caught)
    assert len(messages) == 2  # the blank lines 3 and 4 are skipped silently
    assert f"{log}:2: invalid JSON" in messages[0]
    assert f"{log}:5: error_no (r[1]): got 12, expected an integer in 0..8" in messages[1]


def test_strict_mode_raises_with_line_number(tmp_path):
    log = tmp_path / "log.json"
    write_lines(log, rec(0.003).to_json(), "", '{"i": 1, "r": 2, "v": "v0.6"}')
    reader = RecordReader(log, strict=True)
    numbered = reader.numbered()
    assert next(numbered) == (1, rec(0.003))
    with pytest.raises(RecordFieldError) as info:
        next(numbered)
    err = info.value
    assert (err.path, err.lineno, err.field) == (str(log), 3, "input (i)")
    assert str(err).startswith(f"{log}:3: input (i): got 1, expected a list")


def test_non_utf8_line_is_a_syntax_error(tmp_path):
    log = tmp_path / "log.json"
    log.write_bytes(rec(0.1).to_json().encode() + b"\n\xff\xfe garbage\n")
    with pytest.raises(RecordSyntaxError, match=r":2: line is not UTF-8 text \(byte 0\)"):
        list(load_records(log, strict=True))


def test_reader_is_lazy(tmp_path):
    log = tmp_path / "log.json"
    write_lines(log, rec(0.1).to_json(), "{bad")
    it = load_records(log, strict=True)
    assert next(it) == rec(0.1)  # the bad second line is not read yet
    with pytest.raises(RecordSyntaxError):
        next(it)
    missing = load_records(tmp_path / "missing.json")
    with pytest.raises(FileNotFoundError):
        next(missing)


def test_load_best_record_picks_lowest_valid_cost(tmp_path):
    log = tmp_path / "log.json"
    save_records(log, [
        rec(0.004), rec(0.0, error_no=7), rec(0.002, target="llvm -mcpu=skylake"),
        rec(0.003), rec(0.001, key='["other"]'), rec(0.003, ts=9.0), rec(0.0, error_no=2),
    ])
    best = load_best_record(log, KEY)
    assert best == rec(0.002, target="llvm -mcpu=skylake")
    exact = load_best_record(log, KEY, "llvm   -mcpu=znver4")
    assert exact.mean_cost == pytest.approx(0.003) and exact.result.timestamp == 1.0
    assert load_best_record(log, KEY, "llvm", target_match="kind").mean_cost == 0.002
    assert load_best_record(log, KEY, "llvm") is None
    assert load_best_record(log, '["absent"]') is None
    with pytest.raises(RecordError, match="target match mode 'fuzzy' is unknown"):
        load_best_record(log, KEY, "llvm", target_match="fuzzy")


def test_load_best_record_ignores_all_failed(tmp_path):
    log = tmp_path / "log.json"
    save_records(log, [rec(0.0, error_no=4), rec(0.0, error_no=8)])
    assert load_best_record(log, KEY) is None


def test_save_records_replace_is_atomic(tmp_path):
    log = tmp_path / "log.json"
    save_records(log, [rec(0.1), rec(0.2)])
    assert save_records(log, [rec(0.3)], append=False) == 1
    assert list(load_records(log)) == [rec(0.3)]

    def failing():
        yield rec(0.4)
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        save_records(log, failing(), append=False)
    assert list(load_records(log)) == [rec(0.3)]
    assert sorted(os.listdir(tmp_path)) == ["log.json"]  # no temporary file left


def test_compatible_targets_and_comment_lines(tmp_path):
    assert target_matches("llvm -keys=cpu", "llvm -keys=cpu -mcpu=znver3 -num-cores=2",
                          "compatible")
    assert target_matches("llvm -keys=cpu -mcpu=znver3 -num-cores=8",
                          "llvm -mcpu=znver3 -num-cores=2", "compatible")
    assert not target_matches("llvm -mcpu=skylake", "llvm -mcpu=znver3", "compatible")
    assert not target_matches("cuda -keys=gpu", "llvm", "compatible")
    assert not target_matches("llvm -mattr=+avx2", "llvm -mattr=+avx512f", "compatible")
    log = tmp_path / "tvm.json"
    rec = Record(MeasureInputRecord("k", "llvm -keys=cpu", [2, 32, 64, 0, 0, 0, 0, 0]),
                 MeasureResultRecord([0.5], 0, 1.0, 0))
    log.write_text("# written by TVM\n" + rec.to_json() + "\n  # another comment\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # comments are skipped silently
        assert len(list(load_records(log))) == 1
        assert load_best_record(log, "k", "llvm -mcpu=znver3 -num-cores=2",
                                target_match="compatible").mean_cost == 0.5
        assert load_best_record(log, "k", "llvm -mcpu=znver3 -num-cores=2") is None
