"""The ``records`` command line (summary, distill, curve, compare, validate) and package hygiene."""
import ast
import json
import pathlib
import subprocess
import sys

import pytest
from test_layering import OPTIONAL_EXTRAS

from records import (
    ErrorNo,
    MeasureInputRecord,
    MeasureResultRecord,
    Record,
    load_records,
    save_records,
)
from records.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
MM, CONV = '["matmul", 64, 64, 64]', '["conv2d", 1, 64]'


def rec(key, cost, error_no=0):
    inp = MeasureInputRecord(key, "llvm", [2, 64, 64, 0, 0, 0, 0, 0], steps=[["CI", 1]])
    return Record(inp, MeasureResultRecord([1e10] if error_no else [cost], error_no, 1.0, 0))


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "a.json"
    save_records(path, [rec(MM, 0.004), rec(MM, 0, ErrorNo.RUN_TIMEOUT), rec(CONV, 0.010),
                        rec(MM, 0.002)])
    with open(path, "a") as f:
        f.write("{bad\n")
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_table(capsys, log, tmp_path):
    flops = tmp_path / "flops.json"
    flops.write_text(json.dumps({MM: 2 * 64 ** 3}))
    code, out, err = run(capsys, "summary", log, "--flops-json", flops)
    assert code == 0
    assert out.splitlines() == [
        "workload                target  trials  errors             best (ms)  at trial  GFLOPS",
        "----------------------  ------  ------  -----------------  ---------  --------  ------",
        '["matmul", 64, 64, 64]  llvm         3  1 (RUN_TIMEOUT:1)     2.0000         3    0.26',
        '["conv2d", 1, 64]       llvm         1  0                    10.0000         1       -',
    ]
    assert f"warning: skipped bad line: {log}:5: invalid JSON" in err


def test_summary_groups_a_network_log_by_task(capsys, log, tmp_path):
    sidecar = pathlib.Path(str(log) + ".tasks.json")
    sidecar.write_text(json.dumps({MM: {"name": "fused_nn_dense", "flops": 2 * 64 ** 3,
                                        "weight": 3},
                                   CONV: {"name": "fused_nn_conv2d", "flops": 1e6,
                                          "weight": 2}}))
    code, out, _ = run(capsys, "summary", log)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["task", "target", "trials", "errors", "best", "(ms)", "at",
                                "trial", "GFLOPS", "weight", "weighted", "(ms)"]
    assert lines[2].split()[0] == "fused_nn_dense" and lines[2].split()[-2:] == ["3",
                                                                                 "6.0000"]
    assert lines[3].split()[-2:] == ["2", "20.0000"]
    assert lines[-1] == ("estimated end-to-end latency (sum of weight x best): 26.0000 ms "
                         "over 2 tasks")
    # a task of the table without a valid record: no estimate
    table = json.loads(sidecar.read_text())
    table['["other"]'] = {"name": "fused_nn_dense_1", "flops": 1.0, "weight": 1}
    other = tmp_path / "tasks.json"
    other.write_text(json.dumps(table))
    code, out, _ = run(capsys, "summary", log, "--tasks-json", other)
    assert out.splitlines()[-1].endswith("unknown (a task has no valid record) over 3 tasks")
    other.write_text(json.dumps({MM: 5}))
    code, _, err = run(capsys, "summary", log, "--tasks-json", other)
    assert code == 2 and "task entry of" in err and "expected an object with name" in err


def test_summary_bad_flops_file_exits_2(capsys, log, tmp_path):
    flops = tmp_path / "flops.json"
    flops.write_text("[1, 2]")
    code, out, err = run(capsys, "summary", log, "--flops-json", flops)
    assert code == 2 and out == ""
    assert f"records summary: error: {flops}: got a JSON list, expected an object" in err
    flops.write_text('{"a": 1,\n oops}')
    code, _, err = run(capsys, "summary", log, "--flops-json", flops)
    assert code == 2 and f"{flops}:2: invalid JSON" in err


def test_best_distills_to_a_new_log(capsys, log, tmp_path):
    out_path = tmp_path / "best.json"
    code, out, _ = run(capsys, "best", log, "-o", out_path)
    assert code == 0
    assert out.strip() == (f"{out_path}: wrote 2 best records (2 workloads) out of 4 records "
                           f"in {log}")
    assert [(r.workload_key, r.mean_cost) for r in load_records(out_path)] == [
        (MM, 0.002), (CONV, 0.010)]


def test_curve_csv_to_stdout_and_file(capsys, log, tmp_path):
    code, out, _ = run(capsys, "curve", log, "--workload", MM)
    assert code == 0
    assert out.splitlines() == ["trial,best_so_far_seconds", "1,0.004", "2,0.004", "3,0.002"]
    csv_path = tmp_path / "c.csv"
    code, out, _ = run(capsys, "curve", log, "--workload", MM, "-o", csv_path)
    assert code == 0 and out == f"{csv_path}: wrote 3 trials as CSV\n"
    assert csv_path.read_text() == "trial,best_so_far_seconds\n1,0.004\n2,0.004\n3,0.002\n"
    code, out, err = run(capsys, "curve", log, "--workload", '["nope"]')
    assert code == 1 and out == "" and "no trial of workload '[\"nope\"]'" in err


def test_compare_table(capsys, log, tmp_path):
    other = tmp_path / "b.json"
    save_records(other, [rec(MM, 0.001)])
    code, out, _ = run(capsys, "compare", log, other)
    assert code == 0
    assert out.splitlines()[:2] == [f"A: {log}", f"B: {other}"]
    lines = out.splitlines()
    assert lines[2] == ("workload                trials A  trials B  best A (ms)  best B (ms)  "
                        "  A/B  A reaches best B at  B reaches best A at")
    # A's best (2 ms) is reached by B at its first trial; A never reaches B's 1 ms
    assert [line.split() for line in lines[4:6]] == [
        ['["matmul",', '64,', '64,', '64]', '3', '1', '2.0000', '1.0000', '2.000', '-', '1'],
        ['["conv2d",', '1,', '64]', '1', '0', '10.0000', '-', '-', '-', '-'],
    ]
    assert lines[6] == ("geometric mean of A/B over 1 workloads in both: 2.000 (above 1: "
                        "B found faster schedules)")


def test_validate_exit_codes(capsys, log, tmp_path):
    code, out, _ = run(capsys, "validate", log)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{log}:5: invalid JSON")
    assert lines[1] == f"{log}: 4 records OK (1 failed measurements), 1 bad lines"
    good = tmp_path / "good.json"
    save_records(good, [rec(MM, 0.1)])
    assert run(capsys, "validate", good)[:2] == (0, f"{good}: 1 records OK (0 failed "
                                                    "measurements), 0 bad lines\n")
    code, out, err = run(capsys, "validate", tmp_path / "missing.json")
    assert code == 2 and "records validate: error: [Errno 2] No such file" in err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["best", "log.json"])  # -o is required
    assert info.value.code == 2
    assert "the following arguments are required: -o/--output" in capsys.readouterr().err


def test_python_dash_m_entry_point(log):
    proc = subprocess.run([sys.executable, "-m", "records", "validate", str(log)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert f"{log}: 4 records OK" in proc.stdout


def _imported(node) -> str:
    """Top-level package an import statement names."""
    name = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
    return (name or "").split(".")[0]


def _records_modules():
    return sorted((ROOT / "records").glob("*.py"))


def test_records_modules_follow_house_rules():
    problems = []
    for path in _records_modules():
        text = path.read_text()
        tree = ast.parse(text)
        if not ast.get_docstring(tree):
            problems.append(f"{path.name}: no module docstring")
        if len(text.splitlines()) > 600:
            problems.append(f"{path.name}: over 600 lines")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # an optional extra (matplotlib) is imported only in the function using it
                inner = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))
                         and _imported(n) not in OPTIONAL_EXTRAS]
                if inner:
                    problems.append(f"{path.name}:{inner[0].lineno}: import inside a function")
                if node.end_lineno - node.lineno + 1 > 60:
                    problems.append(f"{path.name}: {node.name} is over 60 lines")
    assert problems == []
    assert len(_records_modules()) >= 10
