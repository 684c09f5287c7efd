"""``tune`` for whole models: tune the MLP briefly, build with the log, resume, errors.

Also: a tuning script written as TVM's tutorials are (``task.tune`` at module level, no
``if __name__ == "__main__":`` guard) runs, because workers never import ``__main__``.
"""
import json
import re
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from autosched import cli, cli_network
from records import load_records


def test_tune_network_then_resume_then_build_only(tmp_path, capsys):
    log = tmp_path / "mlp.json"
    argv = ["--network", "mlp", "--trials", "6", "--per-round", "2", "--log", str(log),
            "--quiet"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    first = list(load_records(log))
    assert len({r.workload_key for r in first}) == 3        # every task had a round
    # 6 trials (two per task: the default's state and a tuned one), each valid one run
    # twice as it enters its task's best four (--confirm 4); then per task its valid
    # states re-timed three times (TuningOptions.retime_rounds), when it has two of them
    # to compare; a tuned state that then leads the default's is timed with it 8 more
    # times (confirm_rounds): both have 2 + 3 + 8 records
    per_state = Counter((r.workload_key, r.input.steps) for r in first)
    retimed = {k for k, n in per_state.items() if n >= 3}
    valid = {(r.workload_key, r.input.steps) for r in first if r.result.error_no == 0}
    comparable = {k for k in valid if sum(v[0] == k[0] for v in valid) >= 2}
    errors = [(r.workload_key[:20], r.result.error_no, r.result.costs) for r in first
              if r.result.error_no]
    assert retimed == comparable, errors
    assert sorted({per_state[k] for k in retimed}) in ([5], [13], [5, 13])
    confirmed = Counter(k[0] for k in retimed if per_state[k] == 13)
    assert all(n == 2 for n in confirmed.values())          # a tuned state and the default
    assert all(per_state[k] == 2 for k in valid - retimed)
    assert len(first) == 6 + sum(per_state[k] - 1 for k in valid)
    assert len(retimed) >= 2, errors
    # each of the 3 kernels uses its record or, when that is slower, its default schedule
    built = re.search(r"Built with .*: (\d+) tuned kernels, (\d+) default", out)
    assert built and int(built[1]) + int(built[2]) == 3
    assert "Measured end-to-end" in out
    table = json.loads((tmp_path / "mlp.json.tasks.json").read_text())
    assert sorted(e["weight"] for e in table.values()) == [1, 1, 1]
    # resume: the same command adds new trials and measures no state twice
    assert cli.main(argv + ["--retime", "0", "--confirm", "0"]) == 0
    again = list(load_records(log))
    assert len(again) == len(first) + 6
    steps = [(r.workload_key, r.input.steps) for r in again[len(first):]]
    assert len(set(steps)) == 6 and not set(steps) & set(per_state)
    capsys.readouterr()
    # --trials 0: just build with the log and report
    assert cli.main(["--network", "mlp", "--trials", "0", "--log", str(log), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"Built with .*: \d+ tuned kernels", out)
    assert len(list(load_records(log))) == len(again)
    # the task table carries the default schedules' costs the build compared against
    table = json.loads((tmp_path / "mlp.json.tasks.json").read_text())
    assert all(e["default_cost"] > 0 for e in table.values())


def test_end_to_end_latencies_are_timed_in_alternation(capsys):
    calls = []

    def timer(name, secs):
        def run():
            calls.append(name)
            return secs
        return run

    got = cli_network._print_end_to_end(timer("d", 2e-3), timer("t", 1e-3), tuned_groups=2)
    assert got == 1e-3
    # per round each build runs twice (the first call warms it up), default first
    assert calls == ["d", "d", "t", "t"] * cli_network.E2E_ROUNDS
    out = capsys.readouterr().out
    assert ("Measured end-to-end (interleaved, median of 5 rounds): default schedules "
            "2.000 ms, tuned 1.000 ms -> 2.00x") in out
    assert "Warning" not in out


def test_a_tuned_build_slower_than_the_default_is_flagged(capsys):
    cli_network._print_end_to_end(lambda: 1.0e-3, lambda: 1.37e-3, tuned_groups=2)
    out = capsys.readouterr().out
    assert "-> 0.73x" in out
    assert ("Warning: the build with the log ran slower than the default build (0.73x). "
            "Its kernels won per-task timings that this run does not reproduce.") in out
    assert "tune such a model with --no-cache-flush, or build it without the log." in out
    # within the noise margin: no warning
    cli_network._print_end_to_end(lambda: 1.0e-3, lambda: 1.02e-3, tuned_groups=2)
    assert "Warning" not in capsys.readouterr().out


def test_a_build_without_tuned_kernels_is_not_compared_with_itself(capsys):
    calls = []

    def default():
        calls.append("d")
        return 1.5e-3

    def tuned():        # the same program: never timed, no ratio claimed
        raise AssertionError("timed the default build twice")

    assert cli_network._print_end_to_end(default, tuned, tuned_groups=0) == 1.5e-3
    assert calls == ["d"] * cli_network.E2E_ROUNDS
    out = capsys.readouterr().out
    assert out.strip() == ("Measured end-to-end: 1.500 ms; the build with the log is the "
                           "default build (it uses no tuned kernel)")


def test_tune_network_errors(tmp_path, capsys):
    assert cli.main(["--network", "alexnet", "--trials", "1"]) == 2
    assert "unknown network 'alexnet'" in capsys.readouterr().err
    assert cli.main(["missing.onnx", "--trials", "1"]) == 2
    assert "ONNX file 'missing.onnx' does not exist" in capsys.readouterr().err
    assert cli.main(["--network", "mlp", "--shape", "data", "--trials", "0"]) == 2
    assert "--shape 'data': expected NAME:D1,D2,..." in capsys.readouterr().err


def test_tutorial_style_script_needs_no_main_guard(tmp_path):
    script = tmp_path / "tutorial.py"
    log = tmp_path / "mm.json"
    script.write_text(textwrap.dedent(f"""
        import autosched as auto
        from compiler import te

        @auto.register_workload
        def tiny_matmul(n):
            A = te.placeholder((n, n), name="A")
            B = te.placeholder((n, n), name="B")
            k = te.reduce_axis((0, n), name="k")
            C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
            return [A, B, C]

        print("module body ran", flush=True)
        task = auto.SearchTask(func=tiny_matmul, args=(32,), target="llvm")
        task.tune(auto.TuningOptions(num_measure_trials=4, num_measures_per_round=4,
                                     verbose=0,
                                     measure_callbacks=[auto.RecordToFile({str(log)!r})]))
        sch, args = task.apply_best({str(log)!r})
        print("tuned", flush=True)
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the body ran once: workers did not re-run the user's script
    assert proc.stdout.count("module body ran") == 1 and "tuned" in proc.stdout
    assert len(list(load_records(log))) == 4


@pytest.mark.slow
def test_tune_onnx_file(tmp_path, capsys):
    onnx_models = pytest.importorskip("compiler.relay.testing.onnx_models")
    model, _inputs = onnx_models.MODELS["mlp"]()
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model.SerializeToString())
    log = tmp_path / "m.json"
    assert cli.main([str(path), "--trials", "4", "--per-round", "2", "--log", str(log),
                     "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "onnxruntime (2 threads)" in out


def test_bad_log_paths_fail_before_any_work(tmp_path, capsys):
    assert cli.main(["--trials", "4", "--log", str(tmp_path)]) == 2
    assert "is a directory; expected a file path" in capsys.readouterr().err
    missing = tmp_path / "no" / "such" / "dir" / "log.json"
    assert cli.main(["--network", "mlp", "--trials", "4", "--log", str(missing)]) == 2
    assert "does not exist" in capsys.readouterr().err
