"""Tuned kernels against TVM MetaSchedule, side by side in one run on the same machine.

    python3 scripts/bench_vs_tvm.py [--trials 200] [--workloads conv2d dense_bias_relu]
        [--seed 0] [--tvm-python /work/tvmvenv/bin/python] [--json results/bench_vs_tvm.json]

Per workload (conv2d (1,64,56,56)x(64,64,3,3) pad 1, dense+bias+ReLU 128x768x3072), first
MetaSchedule, then ours, never both at once:

1. MetaSchedule runs in TVM's own interpreter (``apache-tvm==0.27.0.post1`` with
   ``apache-tvm-ffi==0.1.14.post1``, ``xgboost-cpu``, ``psutil``, ``cloudpickle`` in a
   separate virtual environment, never a dependency of the package): a subprocess runs
   ``scripts/_metaschedule_worker.py``, which tunes ``--trials`` trials, checks and times the
   best schedule and prints one JSON line.  This process never imports tvm.
2. Ours: ``SearchTask`` of the built-in workload tuned for ``--trials`` trials (XGBModel,
   SketchPolicy), then the best record rebuilt as it was measured (``cli._best_kernel``:
   weights pre-transformed by the layout rewrite), checked against numpy and timed.

Both sides time with ``time_evaluator`` (median of ``--repeat`` repeats of at least
``--number`` runs and ``--min-repeat-ms``) on ``--num-cores`` threads, and time the same numpy
probe (relu(X @ W.T + B) at 128x768x3072) in their own process.  The table gives both
latencies, the speed ratio ours/MetaSchedule (MetaSchedule ms / ours ms), the same ratio
normalized by each process's numpy probe and each side's tuning seconds.

3. Side by side: the two tuned kernels are then timed again in ``--side-by-side`` rounds,
   each in a fresh process of its own side (MetaSchedule's loaded from the library its
   worker exported, ours rebuilt from the log), alternating which side goes first.  The
   rounds give the ratio of the two sides' medians: the tuning processes time their
   kernels minutes apart, and this machine's speed drifts by up to a quarter between
   them, which the numpy probes (themselves noisy) correct only roughly.
4. Paired: one long-lived timing process per side, asked in turn for ``--pairs`` pairs
   of timings (``_paired_timing.py``).  The two figures of a pair are a fraction of a
   second apart, while a slow spell of this shared host lasts seconds and can cover one
   side's whole fresh-process round; the verdict reads the median of the per-pair
   ratios (else the side-by-side ratio, else the tuning processes').

``--reuse RESULTS`` times the kernels of an earlier run's JSON again (steps 3 and 4
only), e.g. after a change to the timing.  Writes JSON.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
WORKER = HERE / "_metaschedule_worker.py"
DEFAULT_TVM_PYTHON = "/work/tvmvenv/bin/python"
SKIPPED = "skipped"
GOAL = 1.5   # the issue's bar: ours at least 1.5x as fast as MetaSchedule at equal trials
# name -> (our built-in workload, its args)
SPECS = {"conv2d": ("conv2d_nchw", (1, 64, 56, 56, 64, 3, 3, 1, 1)),
         "dense_bias_relu": ("dense_bias_relu", (128, 768, 3072))}


def _load_script(path: pathlib.Path):
    """A sibling script as a module (they are not a package)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# the worker module (numpy references, FLOPS, numpy probe), loaded without importing tvm
shared = _load_script(WORKER)
peak = _load_script(HERE / "bench_peak.py")
pairing = _load_script(HERE / "_paired_timing.py")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=200, help="measurement trials per side")
    p.add_argument("--workloads", nargs="+", default=list(SPECS), choices=list(SPECS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tvm-python", default=DEFAULT_TVM_PYTHON,
                   help="python of the virtual environment with apache-tvm 0.27")
    p.add_argument("--json", default="results/bench_vs_tvm.json")
    p.add_argument("--work-dir", default=None,
                   help="logs and databases of both sides (default: a new temp dir)")
    p.add_argument("--num-cores", type=int, default=None,
                   help="threads of both sides (default: our host target's num_cores)")
    p.add_argument("--per-iter", type=int, default=64, help="MetaSchedule num_trials_per_iter")
    p.add_argument("--retime-k", type=int, default=4, metavar="K",
                   help="ours: end as `tune` does, re-timing the best K states and the "
                        "default's twice more (not trials); 0: the plain minimum")
    p.add_argument("--confirm-k", type=int, default=4, metavar="K",
                   help="ours: measure a candidate entering the best K twice, as `tune` "
                        "does; 0: off")
    p.add_argument("--number", type=int, default=10, help="runs per timing repeat (minimum)")
    p.add_argument("--repeat", type=int, default=10, help="timing repeats (median taken)")
    p.add_argument("--min-repeat-ms", type=int, default=50)
    p.add_argument("--tvm-timeout", type=float, default=None,
                   help="seconds before the MetaSchedule worker is killed (default: none)")
    p.add_argument("--skip-tvm", action="store_true", help="run our side only")
    p.add_argument("--skip-ours", action="store_true", help="run MetaSchedule only")
    p.add_argument("--side-by-side", type=int, default=5, metavar="ROUNDS",
                   help="rounds of timing both tuned kernels in fresh processes, "
                        "alternating (0: none)")
    p.add_argument("--pairs", type=int, default=10,
                   help="pairs of timings of both tuned kernels, each side in one "
                        "long-lived process, alternating (0: none)")
    p.add_argument("--reuse", default=None, metavar="RESULTS",
                   help="time the kernels of an earlier run's JSON again (side by side "
                        "and paired only; no tuning)")
    p.add_argument("--time-ours", default=None, metavar="LOG", help=argparse.SUPPRESS)
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ns = p.parse_args(argv)
    if ns.trials < 1:
        p.error("--trials must be at least 1")
    if ns.side_by_side < 0:
        p.error("--side-by-side must be at least 0")
    if ns.pairs < 0:
        p.error("--pairs must be at least 0")
    return ns


def host_cpu() -> str:
    import llvmlite.binding as llvm
    return llvm.get_host_cpu_name()


def default_num_cores() -> int:
    from compiler.target import host_target
    return host_target().num_cores


# ---------------------------------------------------------------- MetaSchedule (subprocess)
def worker_command(ns, name: str, mcpu: str, work_dir: str) -> list:
    return [ns.tvm_python, str(WORKER), "--workload", name, "--trials", str(ns.trials),
            "--mcpu", mcpu, "--work-dir", work_dir, "--num-cores", str(ns.num_cores),
            "--per-iter", str(ns.per_iter), "--seed", str(ns.seed), "--number", str(ns.number),
            "--repeat", str(ns.repeat), "--min-repeat-ms", str(ns.min_repeat_ms),
            "--export", os.path.join(work_dir, "kernel.so")]


def parse_worker_output(text: str) -> dict | None:
    """The worker's result: the last stdout line that is a JSON object with a workload."""
    for line in reversed(text.splitlines()):
        obj = pairing.json_object(line)
        if obj is not None and "workload" in obj:
            return obj
    return None


def run_metaschedule(ns, name: str, mcpu: str, work_dir: str) -> dict:
    """Run the worker; its JSON result, or ``{"error": ...}`` (never raises)."""
    if not os.path.isfile(ns.tvm_python):
        return {"error": f"TVM interpreter {ns.tvm_python} not found: create a venv with "
                         "apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1 xgboost-cpu "
                         "psutil cloudpickle and pass --tvm-python"}
    ms_dir = os.path.join(work_dir, f"metaschedule_{name}")
    os.makedirs(ms_dir, exist_ok=True)
    out_path, err_path = os.path.join(ms_dir, "stdout.txt"), os.path.join(ms_dir, "stderr.txt")
    env = dict(os.environ, TVM_NUM_THREADS=str(ns.num_cores))
    try:
        with open(out_path, "w") as out, open(err_path, "w") as err:
            proc = subprocess.run(worker_command(ns, name, mcpu, ms_dir), stdout=out,
                                  stderr=err, env=env, timeout=ns.tvm_timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"MetaSchedule worker killed after {ns.tvm_timeout} s; see {ms_dir}"}
    except OSError as err:
        return {"error": f"cannot run {ns.tvm_python}: {err}"}
    res = parse_worker_output(pathlib.Path(out_path).read_text(errors="replace"))
    if res is None:
        return {"error": f"MetaSchedule worker exited with status {proc.returncode} and no "
                         f"result; see {err_path}"}
    if proc.returncode and "error" not in res:
        res["error"] = f"worker exited with status {proc.returncode}"
    res["log_dir"] = ms_dir
    return res


# ---------------------------------------------------------------- ours (in process)
def our_task(name: str):
    """The SearchTask of a workload of SPECS (the built-in workload, host llvm)."""
    import autosched as auto
    from autosched import catalog  # noqa: F401  (registers the built-in workloads)

    func, args = SPECS[name]
    return auto.SearchTask(func=func, args=args, target="llvm")


def tune_ours(ns, name: str, log: str):
    """(task, TuneStats, wall seconds) of ``--trials`` trials logged to ``log``."""
    import autosched as auto

    task = our_task(name)
    opts = auto.TuningOptions(num_measure_trials=ns.trials, verbose=0,
                              retime_top_k=ns.retime_k, confirm_top_k=ns.confirm_k,
                              measure_callbacks=[auto.RecordToFile(log)])
    policy = auto.SketchPolicy(task, auto.XGBModel(seed=ns.seed), seed=ns.seed, verbose=0)
    t0 = time.perf_counter()
    stats = task.tune(opts, policy)
    return task, stats, time.perf_counter() - t0


def time_ours(ns, name: str, task, log: str) -> dict:
    """Rebuild the best record as it was measured, check it against numpy and time it."""
    return prepare_ours(ns, name, task, log)()


def prepare_ours(ns, name: str, task, log: str):
    """Rebuild the best record as it was measured and check it against numpy; a function
    timing it once (with the check's figures)."""
    from autosched.cli import _best_kernel
    from autosched.tuning import best_state
    from compiler.runtime import as_aligned

    state, _ = best_state(task, log)
    rng = np.random.default_rng(0)
    tensors = task.compute_dag.tensors
    # 64-byte aligned, as TVM's NDArrays (and the arrays our tuner measures with)
    arrays = [as_aligned(rng.uniform(-1, 1, [int(d.value) for d in t.shape]).astype(t.dtype))
              for t in tensors[:-1]]
    expect = (shared.conv2d_ref if name == "conv2d" else shared.dense_ref)(*arrays)
    arrays.append(as_aligned(np.zeros(expect.shape, tensors[-1].dtype)))
    mod, ins = _best_kernel(task, state, arrays)
    mod(*ins)
    rel_err = float(np.abs(ins[-1] - expect).max() / np.abs(expect).max())
    if not rel_err < 1e-4:
        raise AssertionError(f"our best schedule is wrong: rel. error {rel_err:.3g}")
    timer = mod.time_evaluator(number=ns.number, repeat=ns.repeat,
                               min_repeat_ms=ns.min_repeat_ms)
    facts = {"rel_err": rel_err,
             "layout_transforms": len(task.compute_dag.layout_transforms(state))}

    def time_once() -> dict:
        res = timer(*ins)
        return {"best_ms": res.median * 1e3, "repeats_ms": [r * 1e3 for r in res.results],
                **facts}
    return time_once


def run_ours(ns, name: str, work_dir: str) -> dict:
    """Tune, check and time ours; the result, or ``{"error": ...}`` (never raises)."""
    log = os.path.join(work_dir, f"ours_{name}.json")
    try:
        task, stats, tune_s = tune_ours(ns, name, log)
        if stats.best_cost == float("inf"):
            return {"error": f"no valid schedule in {stats.trials} trials; see {log}",
                    "log": log}
        res = {"workload": name, "trials": stats.trials, "tune_seconds": tune_s,
               "errors": stats.errors, "log": log}
        res.update(time_ours(ns, name, task, log))
    except Exception as err:  # noqa: BLE001 - the other side's result must not be lost
        return {"error": f"{type(err).__name__}: {err}", "log": log}
    res["gflops"] = shared.FLOPS[name] / (res["best_ms"] * 1e-3) / 1e9
    res["numpy_ms"] = shared.numpy_probe_ms(ns.repeat)
    return res


# ---------------------------------------------------------------- side by side
def timing_commands(ns, name: str, ms: dict, ours: dict) -> dict:
    """Side -> the command timing its tuned kernel in a fresh process (sides without a
    kernel are left out)."""
    timing = ["--number", str(ns.number), "--repeat", str(ns.repeat),
              "--min-repeat-ms", str(ns.min_repeat_ms)]
    cmds = {}
    if ms.get("kernel") and not ms.get("error"):
        cmds["metaschedule"] = [ns.tvm_python, str(WORKER), "--workload", name,
                                "--num-cores", str(ns.num_cores),
                                "--time-kernel", ms["kernel"], *timing]
    if ours.get("log") and not ours.get("error"):
        cmds["ours"] = [sys.executable, str(pathlib.Path(__file__).resolve()),
                        "--workloads", name, "--time-ours", ours["log"], *timing]
    return cmds


TIMING_TIMEOUT = 600.0    # seconds a side-by-side timing process may take


def time_in_process(cmd: list, env: dict, timeout: float = TIMING_TIMEOUT) -> float:
    """Median ms a timing process reports; raises RuntimeError with its error (or when
    it runs past ``timeout`` seconds)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timing process {cmd[1]} killed after {timeout} s") from None
    res = parse_worker_output(proc.stdout)
    if res is None or res.get("error") or not res.get("best_ms"):
        tail = proc.stderr.strip().splitlines()[-1:]
        why = (res or {}).get("error") or (tail[0] if tail else f"exit status {proc.returncode}")
        raise RuntimeError(f"timing process {cmd[1]} failed: {why}")
    return float(res["best_ms"])


def side_by_side(ns, name: str, ms: dict, ours: dict) -> dict:
    """Both tuned kernels timed ``ns.side_by_side`` rounds, each in a fresh process,
    the side going first alternating by round; {} when a side has no kernel."""
    cmds = timing_commands(ns, name, ms, ours)
    if ns.side_by_side == 0 or len(cmds) < 2:
        return {}
    print(f"[{name}] side by side: {ns.side_by_side} rounds of both kernels in fresh "
          "processes", flush=True)
    env = _timing_env(ns)
    figures: dict = {"metaschedule": [], "ours": []}
    order = ["metaschedule", "ours"]
    try:
        for r in range(ns.side_by_side):
            for side in (order if r % 2 == 0 else order[::-1]):
                figures[side].append(time_in_process(cmds[side], env))
    except RuntimeError as err:
        return {"error": str(err), "metaschedule_ms": figures["metaschedule"],
                "ours_ms": figures["ours"]}
    med = {side: statistics.median(v) for side, v in figures.items()}
    return {"metaschedule_ms": figures["metaschedule"], "ours_ms": figures["ours"],
            "metaschedule_median_ms": med["metaschedule"], "ours_median_ms": med["ours"],
            "ratio": med["metaschedule"] / med["ours"],
            "round_ratios": [a / b for a, b in zip(figures["metaschedule"], figures["ours"])]}


def _timing_env(ns) -> dict:
    return dict(os.environ, TVM_NUM_THREADS=str(ns.num_cores))


def paired_timings(ns, name: str, ms: dict, ours: dict) -> dict:
    """``ns.pairs`` pairs of timings of both tuned kernels, one long-lived process per
    side (``_paired_timing.paired``); {} when a side has no kernel or pairs are off."""
    cmds = timing_commands(ns, name, ms, ours)
    if ns.pairs == 0 or len(cmds) < 2:
        return {}
    print(f"[{name}] paired: {ns.pairs} pairs of timings, one process per side",
          flush=True)
    cmds = {side: [*cmd, "--serve"] for side, cmd in cmds.items()}
    return pairing.paired(cmds, _timing_env(ns), ns.pairs, TIMING_TIMEOUT)


def time_ours_main(ns) -> int:
    """``--time-ours LOG``: rebuild the log's best kernel, check it, time it and print
    one JSON line (a fresh process of the side-by-side rounds); with ``--serve``, one
    line per request instead (the paired timings)."""
    name = ns.workloads[0]
    if ns.serve:
        return shared.serve(lambda: prepare_ours(ns, name, our_task(name), ns.time_ours))
    try:
        out = {"workload": name, **time_ours(ns, name, our_task(name), ns.time_ours)}
    except Exception as err:  # noqa: BLE001 - reported to the driver as JSON
        out = {"workload": name, "error": f"{type(err).__name__}: {err}"}
    print(json.dumps(out), flush=True)
    return 1 if "error" in out else 0


# ---------------------------------------------------------------- comparison and table
def compare(ms: dict, ours: dict, sbs: dict | None = None, pair: dict | None = None) -> dict:
    """Speed ratio ours/MetaSchedule (MetaSchedule ms / ours ms): raw and normalized by
    each process's own numpy probe from the tuning processes, from the side-by-side
    rounds (``side_by_side``) and from the paired timings (``paired_timings``); None
    where a side has no latency."""
    out = {"ratio": None, "normalized_ratio": None,
           "side_by_side_ratio": (sbs or {}).get("ratio"),
           "paired_ratio": (pair or {}).get("ratio")}
    if not (ms.get("best_ms") and ours.get("best_ms")):
        return out
    out["ratio"] = ms["best_ms"] / ours["best_ms"]
    if ms.get("numpy_ms") and ours.get("numpy_ms"):
        out["normalized_ratio"] = (ms["best_ms"] / ms["numpy_ms"]) / \
            (ours["best_ms"] / ours["numpy_ms"])
    return out


def _num(v, fmt: str, width: int, suffix: str = "") -> str:
    if isinstance(v, (int, float)):
        return f"{v:{width}{fmt}}{suffix}"
    return f"{'-':>{width + len(suffix)}}"


def format_row(name: str, row: dict) -> str:
    ms, ours = row["metaschedule"], row["ours"]
    cells = [f"{name:16s}",
             f"{_num(ms.get('best_ms'), '.3f', 7)} {_num(ms.get('gflops'), '.1f', 8)}",
             f"{_num(ours.get('best_ms'), '.3f', 7)} {_num(ours.get('gflops'), '.1f', 8)}",
             _num(row["ratio"], ".2f", 6, "x"),
             _num(row["normalized_ratio"], ".2f", 9, "x"),
             _num(row.get("side_by_side_ratio"), ".2f", 11, "x"),
             _num(row.get("paired_ratio"), ".2f", 5, "x"),
             f"{_num(ms.get('numpy_ms'), '.3f', 7)} / {_num(ours.get('numpy_ms'), '.3f', 6)}",
             f"{_num(ms.get('tune_seconds'), '.0f', 6)} / "
             f"{_num(ours.get('tune_seconds'), '.0f', 6)}"]
    return " | ".join(cells)


def format_table(results: dict) -> str:
    head = (f"{'workload':16s} | {'MetaSchedule':>16s} | {'ours':>16s} | {'ours/MS':>7s} | "
            f"{'normalized':>10s} | {'side by side':>12s} | {'paired':>6s} | "
            f"{'numpy ms MS/ours':>16s} | {'tune s MS/ours':>15s}")
    sub = (f"{'':16s} | {'ms':>7s} {'GFLOPS':>8s} | {'ms':>7s} {'GFLOPS':>8s} | {'':7s} | "
           f"{'':10s} | {'':12s} | {'':6s} | {'':16s} | {'':15s}")
    lines = [head, sub, "-" * len(head)]
    lines += [format_row(name, row) for name, row in results.items()]
    for name, row in results.items():
        for side in ("metaschedule", "ours"):
            err = row[side].get("error")
            if err:
                lines.append(f"{name}: {side} " + (err if err == SKIPPED else f"failed: {err}"))
        for key, label, unit, ratios in (("side_by_side", "side by side", "round",
                                          "round_ratios"),
                                         ("paired", "paired", "pair", "pair_ratios")):
            line = _timing_line(name, row.get(key) or {}, label, unit, ratios)
            if line:
                lines.append(line)
    return "\n".join(lines)


def _timing_line(name: str, res: dict, label: str, unit: str, ratios: str) -> str | None:
    """The table's line on one way both kernels were timed again (side-by-side rounds,
    paired timings), or None when it did not run."""
    if res.get("error"):
        return f"{name}: {label.replace(' ', '-')} timing failed: {res['error']}"
    if not res:
        return None
    r = res[ratios]
    return (f"{name}: {label}, {len(res['ours_ms'])} {unit}s: MetaSchedule "
            f"{_ms_list(res['metaschedule_ms'])}, ours {_ms_list(res['ours_ms'])}; "
            f"per-{unit} ratios {min(r):.2f}-{max(r):.2f}x")


def _ms_list(values) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "] ms"


def _read_figure(row: dict) -> tuple:
    """(figure the verdict reads, its key in ``row``, how it was timed): the paired
    timings' ratio, else the side-by-side rounds', else None."""
    if row.get("paired_ratio") is not None:
        return row["paired_ratio"], "paired", "in paired timings"
    if row.get("side_by_side_ratio") is not None:
        return row["side_by_side_ratio"], "side_by_side", "side by side"
    return None, None, None


def verdicts(results: dict, trials: int, peak_gflops: float | None = None) -> list:
    """One line per workload: the ratio against the goal (the paired or side-by-side
    one when there is one, else the raw and the normalized ratio must both reach it);
    with the measured FMA peak, each side's share of it, and whether the goal is below
    the peak at all."""
    out = []
    for name, row in results.items():
        r, n = row["ratio"], row["normalized_ratio"]
        v, key, how = _read_figure(row)
        if r is None and v is None:
            out.append(f"{name}: no ratio (a side failed or was skipped)")
            continue
        norm = f", normalized {n:.2f}x" if n is not None else ""
        if v is not None:
            met = "met" if v >= GOAL else "NOT met"
            also = [] if r is None else [f"{r:.2f}x as the tuning processes timed them{norm}"]
            if key == "paired" and row.get("side_by_side_ratio") is not None:
                also.append(f"{row['side_by_side_ratio']:.2f}x side by side in fresh processes")
            line = (f"{name}: ours is {v:.2f}x MetaSchedule's speed at {trials} trials, "
                    f"{how} ({'; '.join(also + [f'goal {GOAL}x: {met}'])})")
        else:
            met = "met" if r >= GOAL and (n is None or n >= GOAL) else "NOT met"
            line = (f"{name}: ours is {r:.2f}x MetaSchedule's speed at {trials} trials{norm} "
                    f"(goal {GOAL}x: {met})")
        ms_g, ours_g = row["metaschedule"].get("gflops"), row["ours"].get("gflops")
        if peak_gflops and key:     # the shares of the figures it read
            ms_g, ours_g = (shared.FLOPS[name] / (row[key][k] * 1e-3) / 1e9
                            for k in ("metaschedule_median_ms", "ours_median_ms"))
        if peak_gflops and ms_g and ours_g:
            need = GOAL * ms_g
            line += (f"; of the {peak_gflops:.0f} GFLOPS FMA peak: MetaSchedule "
                     f"{ms_g / peak_gflops:.0%}, ours {ours_g / peak_gflops:.0%}, the goal "
                     f"{need / peak_gflops:.0%}"
                     + (" (above the peak: unreachable)" if need > peak_gflops else ""))
        out.append(line)
    return out


def retime_results(ns, earlier: dict) -> tuple:
    """(results, FMA peak) of ``--reuse``: an earlier run's kernels timed again side by
    side and paired; its tuning figures are kept."""
    fma = peak.measure_peak(threads=ns.num_cores)
    results = {}
    for name in ns.workloads:
        row = earlier.get("results", {}).get(name)
        if row is None:
            raise SystemExit(f"bench_vs_tvm: {ns.reuse} has no results for {name!r}")
        ms, ours = row["metaschedule"], row["ours"]
        sbs = side_by_side(ns, name, ms, ours)
        pair = paired_timings(ns, name, ms, ours)
        results[name] = {"metaschedule": ms, "ours": ours, "side_by_side": sbs,
                         "paired": pair, **compare(ms, ours, sbs, pair)}
    return results, fma


def tune_and_time(ns, mcpu: str) -> tuple:
    """(results, FMA peak, work dir) of a whole run: both sides tuned and timed."""
    work_dir = ns.work_dir or tempfile.mkdtemp(prefix="bench_vs_tvm_")
    os.makedirs(work_dir, exist_ok=True)
    print(f"{ns.trials} trials per side, host cpu {mcpu}, {ns.num_cores} threads, "
          f"work dir {work_dir}", flush=True)
    # before any tuning: nothing else runs on the machine then
    fma = peak.measure_peak(threads=ns.num_cores)
    print(f"measured FMA peak: {fma['gflops']:.1f} GFLOPS on {ns.num_cores} threads",
          flush=True)
    results = {}
    for name in ns.workloads:
        ms = ours = {"error": SKIPPED}
        if not ns.skip_tvm:
            print(f"[{name}] MetaSchedule: {ns.trials} trials ...", flush=True)
            ms = run_metaschedule(ns, name, mcpu, work_dir)
        if not ns.skip_ours:
            print(f"[{name}] ours: {ns.trials} trials ...", flush=True)
            ours = run_ours(ns, name, work_dir)
        sbs = side_by_side(ns, name, ms, ours)
        pair = paired_timings(ns, name, ms, ours)
        results[name] = {"metaschedule": ms, "ours": ours, "side_by_side": sbs,
                         "paired": pair, **compare(ms, ours, sbs, pair)}
    return results, fma, work_dir


def main(argv=None) -> int:
    ns = parse_args(argv)
    ns.num_cores = ns.num_cores or default_num_cores()
    if ns.time_ours:
        return time_ours_main(ns)
    mcpu = host_cpu()
    if ns.reuse:
        with open(ns.reuse) as f:
            earlier = json.load(f)
        ns.trials = earlier.get("config", {}).get("trials", ns.trials)
        results, fma = retime_results(ns, earlier)
        work_dir = earlier.get("config", {}).get("work_dir")
    else:
        results, fma, work_dir = tune_and_time(ns, mcpu)
    print(format_table(results))
    for line in verdicts(results, ns.trials, fma["gflops"]):
        print(line)
    config = {k: v for k, v in vars(ns).items() if k != "json"}
    config.update(mcpu=mcpu, work_dir=work_dir, flops=shared.FLOPS, goal=GOAL, fma_peak=fma)
    os.makedirs(os.path.dirname(ns.json) or ".", exist_ok=True)
    with open(ns.json, "w") as f:
        json.dump({"config": config, "results": results}, f, indent=2)
    print(f"wrote {ns.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
