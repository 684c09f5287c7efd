"""A corpus of malformed log lines: each is skipped with its line number, none raises
anything but a RecordError, and none changes which record is best (issue 17).

Most bad lines below claim a cost far below the real best (0.002 s), so a reader that
let one through would pick it; the last good line of each workload is its best.
"""
import json
import tracemalloc

import pytest
from autosched_helpers import task_of

from autosched import tuning
from autosched.steps.serialize import decode_steps
from records import (
    MAX_LINE_BYTES,
    MeasureInputRecord,
    MeasureResultRecord,
    Record,
    RecordError,
    RecordFieldError,
    RecordReader,
    RecordSyntaxError,
    RecordWriter,
    TruncatedLineError,
    best_records,
    load_best_record,
    summarize,
)
from records.cli import main

KEY, OTHER = '["matmul", 64, 64, 64]', '["conv2d", 1, 64]'
TARGET = "llvm -mcpu=znver3"


def rec(cost, key=KEY, steps=(("SP", 2, 0, 64, (8, 8), 1), ("AN", 2, 0, 3)), error_no=0):
    inp = MeasureInputRecord(key, TARGET, [2, 64, 64, 0, 0, 0, 0, 0], steps=steps)
    costs = [1e10] if error_no else [cost]
    return Record(inp, MeasureResultRecord(costs, error_no, 0.5, 1700000000.0))


CHEAP = rec(1e-9).to_json()          # a line that would be best if it were let through


def cheap_with(path, value) -> str:
    """CHEAP with the JSON value at ``path`` replaced (given as JSON text when a str)."""
    obj = json.loads(CHEAP)
    node = obj
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = "@@"
    return json.dumps(obj).replace('"@@"', value if isinstance(value, str) else
                                   json.dumps(value))


def deep(depth: int) -> str:
    return CHEAP.replace('"r": [[1e-09]', '"r": [' + "[" * depth + "1e-09" + "]" * depth)


# (name, line (str or bytes, without newline), error class, message fragment)
CORPUS = [
    ("truncated", CHEAP[:70], RecordSyntaxError, "invalid JSON"),
    ("invalid json", "{not json at all", RecordSyntaxError, "invalid JSON"),
    ("json array", "[1, 2, 3]", RecordFieldError, 'exactly the keys "i", "r" and "v"'),
    ("json null", "null", RecordFieldError, "record: got None"),
    ("empty object", "{}", RecordFieldError, "record: got []"),
    ("utf-8 bom", "\ufeff" + CHEAP, RecordSyntaxError, "invalid JSON"),
    ("nul byte", CHEAP[:30] + "\x00" + CHEAP[30:], RecordSyntaxError, "invalid JSON"),
    ("extra key", CHEAP[:-1] + ', "x": 1}', RecordFieldError, 'exactly the keys'),
    ("duplicate r", CHEAP[:-1] + ', "r": [[1e-9], 0, 0.5, 0]}', RecordSyntaxError,
     "key 'r' appears more than once"),
    ("duplicate i", '{"i": 1, ' + CHEAP[1:], RecordSyntaxError,
     "key 'i' appears more than once"),
    ("error_no as string", cheap_with(("r", 1), '"0"'), RecordFieldError, "error_no (r[1])"),
    ("error_no as bool", cheap_with(("r", 1), "false"), RecordFieldError, "error_no (r[1])"),
    ("cost as string", cheap_with(("r", 0), ["0.000001"]), RecordFieldError,
     "costs (r[0])[0]: got '0.000001'"),
    ("costs not a list", cheap_with(("r", 0), 1e-9), RecordFieldError, "costs (r[0])"),
    ("no costs", cheap_with(("r", 0), []), RecordFieldError, "at least one cost"),
    ("workload key as int", cheap_with(("i", 0, 0), 17), RecordFieldError,
     "workload_key (i[0][0])"),
    ("version as int", cheap_with(("v",), 6), RecordFieldError, "version (v)"),
    ("unknown step code", cheap_with(("i", 1, 1, 0), ["XX", 2, 0]), RecordFieldError,
     "steps i[1][1][0][0] (step code): got 'XX', expected one of AN, FU"),
    ("step code not a string", cheap_with(("i", 1, 1, 0), [[1], 2]), RecordFieldError,
     "(step code): got [1]"),
    ("step with a field too many", cheap_with(("i", 1, 1, 1), ["AN", 2, 0, 3, 9]),
     RecordFieldError, "(4 elements, it has 5)"),
    ("split length zero", cheap_with(("i", 1, 1, 0, 4), [8, 0]), RecordFieldError,
     "(SP lengths)[1]: got 0, expected an integer >= 1"),
    ("NaN cost", cheap_with(("r", 0), "[NaN]"), RecordSyntaxError, "non-finite number NaN"),
    ("infinite cost", cheap_with(("r", 0), "[Infinity]"), RecordSyntaxError,
     "non-finite number Infinity"),
    ("minus infinity", cheap_with(("r", 0), "[-Infinity]"), RecordSyntaxError,
     "non-finite number -Infinity"),
    ("overflowing float", cheap_with(("r", 0), "[1e400]"), RecordFieldError,
     "got inf, expected a finite number"),
    ("negative cost", cheap_with(("r", 0), [-0.001]), RecordFieldError,
     "got -0.001, expected a finite number >= 0"),
    ("zero cost", cheap_with(("r", 0), [0]), RecordFieldError,
     "costs (r[0])[0]: got 0, expected a number > 0 when error_no is 0"),
    ("zero float cost", cheap_with(("r", 0), [0.004, 0.0]), RecordFieldError,
     "costs (r[0])[1]: got 0.0, expected a number > 0"),
    ("int beyond 64 bits", cheap_with(("r", 0), [2 ** 64]), RecordFieldError,
     "a finite number"),
    ("hardware param beyond 64 bits", cheap_with(("i", 0, 2, 0), 2 ** 63), RecordFieldError,
     "expected a 64-bit integer"),
    ("4,000-digit integer", cheap_with(("r", 0), [10 ** 4000]), RecordFieldError,
     "a finite number"),
    ("5,000-digit integer", cheap_with(("r", 0), "[1" + "0" * 5000 + "]"), RecordSyntaxError,
     "Exceeds the limit (4300 digits)"),
    ("non-utf-8 bytes", CHEAP.encode().replace(b"matmul", b"mat\xff\xfeul"),
     RecordSyntaxError, "line is not UTF-8 text (byte"),
    ("latin-1 text", "{\"i\": \"caf\xe9\"}".encode("latin-1"), RecordSyntaxError,
     "not UTF-8"),
    ("nested 300 deep", deep(300), RecordFieldError, "costs (r[0])[0]: got [[[["),
    ("nested 100,000 deep", deep(100_000), RecordSyntaxError, "nested too deeply"),
    ("10 MB line", '{"i": [' + "1, " * ((10 << 20) // 3) + '1]}', RecordSyntaxError,
     f"bytes long, expected at most {MAX_LINE_BYTES}"),
]

GOOD = [rec(0.004), rec(0.5, key=OTHER), rec(0.003), rec(0, error_no=7), rec(0.25, key=OTHER),
        rec(1e300), rec(0.002)]


@pytest.fixture(scope="module")
def corpus_log(tmp_path_factory):
    """Good lines, each bad line of CORPUS between them, and a torn last line.

    Returns the path, {bad line number: corpus entry} and the good line numbers."""
    path = tmp_path_factory.mktemp("corpus") / "log.json"
    lines, bad, good = [], {}, []
    goods = iter(GOOD)
    for index, entry in enumerate(CORPUS):
        if index % 5 == 0:
            record = next(goods, None)
            if record is not None:
                lines.append(record.to_json().encode())
                good.append(len(lines))
        line = entry[1]
        lines.append(line if isinstance(line, bytes) else line.encode())
        bad[len(lines)] = entry
    for record in goods:
        lines.append(record.to_json().encode())
        good.append(len(lines))
    lines.append(CHEAP[:50].encode())           # torn write: no newline at the end
    bad[len(lines)] = ("torn last line", None, TruncatedLineError, "truncated last line")
    path.write_bytes(b"\n".join(lines))
    return path, bad, good


def test_every_bad_line_is_skipped_with_its_number_and_reason(corpus_log):
    path, bad, good = corpus_log
    errors = []
    numbered = list(RecordReader(path, on_error=errors.append).numbered())
    assert [lineno for lineno, _ in numbered] == good
    assert [r for _, r in numbered] == GOOD
    assert [e.lineno for e in errors] == sorted(bad)
    for err in errors:
        name, _, cls, fragment = bad[err.lineno]
        assert type(err) is cls, (name, err)
        assert fragment in str(err), (name, str(err))
        assert str(err).startswith(f"{path}:{err.lineno}: "), name


@pytest.mark.parametrize("entry", CORPUS, ids=[e[0] for e in CORPUS])
def test_strict_reading_raises_the_record_error(tmp_path, entry):
    name, line, cls, fragment = entry
    path = tmp_path / "one.json"
    path.write_bytes(rec(0.1).to_json().encode() + b"\n"
                     + (line if isinstance(line, bytes) else line.encode()) + b"\n")
    reader = RecordReader(path, strict=True).numbered()
    assert next(reader)[0] == 1
    with pytest.raises(cls) as info:
        next(reader)
    assert info.value.lineno == 2 and fragment in str(info.value)


def test_bad_lines_never_change_the_best(corpus_log):
    path, _, _ = corpus_log
    quiet = {"on_error": lambda err: None}
    assert load_best_record(path, KEY, **quiet) == rec(0.002)
    assert load_best_record(path, OTHER, **quiet) == rec(0.25, key=OTHER)
    reader = RecordReader(path, **quiet)
    assert best_records(reader) == [rec(0.002), rec(0.25, key=OTHER)]
    mm, conv = summarize(RecordReader(path, **quiet))
    assert (mm.best_cost, mm.best_trial, mm.trials, mm.error_count) == (0.002, 5, 5, 1)
    assert (conv.best_cost, conv.best_trial) == (0.25, 2)


def test_validate_lists_every_bad_line_and_exits_1(corpus_log, capsys):
    path, bad, good = corpus_log
    assert main(["validate", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [int(line.split(":")[1]) for line in lines[:-1]] == sorted(bad)
    for line in lines[:-1]:
        name, _, _, fragment = bad[int(line.split(":")[1])]
        assert line.startswith(f"{path}:") and fragment in line, (name, line)
    assert lines[-1] == (f"{path}: {len(good)} records OK (1 failed measurements), "
                         f"{len(bad)} bad lines")


def test_summary_and_distill_of_the_corpus(corpus_log, capsys, tmp_path):
    path, bad, _ = corpus_log
    assert main(["summary", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err.count("warning: skipped bad line:") == len(bad)
    rows = {line.split("  ")[0].strip(): line.split() for line in out.splitlines()[2:]}
    assert rows[KEY][-3:] == ["2.0000", "5", "-"] and rows[OTHER][-3] == "250.0000"
    best = tmp_path / "best.json"
    assert main(["distill", str(path), "-o", str(best)]) == 0
    assert list(RecordReader(best, strict=True)) == [rec(0.002), rec(0.25, key=OTHER)]


def test_reading_a_10_mb_line_holds_about_one_megabyte(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.write(rec(0.1).to_json().encode() + b"\n")
        f.write(b'{"i": [' + b"1, " * ((10 << 20) // 3) + b"1]}\n")
        f.write(rec(0.05).to_json().encode() + b"\n")
    errors = []
    tracemalloc.start()
    try:
        got = list(RecordReader(path, on_error=errors.append))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == [rec(0.1), rec(0.05)]
    assert [(e.lineno, type(e)) for e in errors] == [(2, RecordSyntaxError)]
    assert str(errors[0]).endswith(f":2: line is {10 * 2 ** 20 + 10} bytes long, expected "
                                   f"at most {MAX_LINE_BYTES} (a record is a few kilobytes)")
    assert peak < 3 * MAX_LINE_BYTES, peak


def test_writer_refuses_a_record_readers_would_skip(tmp_path):
    huge = rec(0.1, steps=[("RE", 2, tuple(range(200)))] * 1200)
    path = tmp_path / "log.json"
    with RecordWriter(path) as writer, pytest.raises(RecordError) as info:
        writer.write(huge)
    assert "with 1200 steps is" in str(info.value)
    assert f"bytes as JSON, expected at most {MAX_LINE_BYTES}" in str(info.value)
    assert path.read_bytes() == b""


def test_deep_nesting_is_a_record_error_at_any_stack_depth():
    def at_depth(levels):
        if levels:
            return at_depth(levels - 1)
        return Record.from_json(deep(50_000))

    for levels in (0, 300, 700):
        with pytest.raises(RecordSyntaxError, match="nested too deeply"):
            at_depth(levels)


def test_error_messages_stay_short_for_huge_or_deep_values():
    for line in (deep(400), cheap_with(("i", 1, 0), list(range(100_000)))):
        with pytest.raises(RecordFieldError) as info:
            Record.from_json(line)
        assert len(str(info.value)) < 200, str(info.value)[:300]


# ------------------------------------------------------------------ the autosched side
def test_accepted_records_decode_into_steps(corpus_log):
    """Every record the reader accepts decodes into autosched steps (the records schema
    is no looser than the decoder); replaying them on a workload is autosched's job."""
    path, _, _ = corpus_log
    for record in RecordReader(path, on_error=lambda err: None):
        decoded = [s.to_record() for s in decode_steps(record)]
        assert decoded == [[list(v) if isinstance(v, tuple) else v for v in step]
                           for step in record.input.steps]


def test_a_record_with_2000_steps_reads_decodes_and_replays(tmp_path):
    """2,000 splits of one loop: a flat JSON line (about 50 KB) that the reader, the step
    decoder and ``autosched.tuning.best_state``/``apply_best`` all take (lowering such a
    2,000-deep loop nest is the compiler's business, not the log's)."""
    task = task_of("matmul")
    steps = [["SP", 2, i, None, [1], 1] for i in range(2000)]
    inp = MeasureInputRecord(task.workload_key, str(task.target),
                             task.hardware_params.to_list(), steps=steps)
    log = tmp_path / "long.json"
    with RecordWriter(log) as writer:
        writer.write(Record(inp, MeasureResultRecord([0.001], 0, 1.0, 0)))
    (record,) = RecordReader(log, strict=True)
    assert len(decode_steps(record)) == 2000
    state, best = tuning.best_state(task, str(log))
    assert len(state.transform_steps) == 2000 and best == record
    sch, args = tuning.apply_best(task, str(log))
    assert len(args) == 3
