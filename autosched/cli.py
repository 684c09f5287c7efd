"""The ``tune`` console script and its end-of-run summary.

    tune [WORKLOAD] [--args 512 512 512] --trials N --log FILE [--target T] [--seed S]
    tune --network resnet-18 --trials N [--log FILE]     (a whole model: cli_network)
    tune model.onnx --shape data:1,3,224,224 --trials N

WORKLOAD is a built-in name (see ``tune --list``) or ``module:function`` of a user
function returning tensors (it is registered as a workload).  Without a workload it tunes
a small built-in matmul.  A progress line shows trials, best latency/GFLOPS and ETA.
Ctrl-C stops cleanly: every finished measurement is already in the log, and the command
to resume is printed: running the same command again preloads the log's records of the
task (``PreloadMeasuredStates``), so no state is measured twice.  The summary compares
the best schedule with the default schedule (and numpy for matmul/dense) and prints it
as Python.
"""
from __future__ import annotations

import argparse
import importlib
import math
import shlex
import sys
import time

import numpy as np

from compiler import build, te, topi
from compiler.rpc import RPCError
from compiler.rpc.protocol import parse_addr
from compiler.runtime import as_aligned

from . import catalog
from .cli_network import run_network
from .cost_model.base import RandomModel
from .cost_model.xgb_model import XGBModel, prior_from_text
from .default_state import is_default_program
from .errors import AutoSchedError
from .layout_rewrite import LayoutRewriteOption
from .measure.builder import LocalBuilder
from .measure.dask import ClusterError, DaskBuilder, DaskRunner
from .measure.measurer import RecordToFile
from .measure.rpc import RPCRunner
from .measure.runner import LocalRunner
from .network import ZOO
from .ranking import PREFER_MARGIN
from .search.callbacks import PreloadMeasuredStates
from .search.policy import SketchPolicy
from .side_by_side import interleaved, kernel_timer, numpy_timer
from .task import SearchTask
from .tuning import TuningOptions, best_state
from .workload import register_workload

DEFAULT_WORKLOAD = "matmul"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="tune", description=__doc__.split("\n\n")[0])
    p.add_argument("workload", nargs="?", default=DEFAULT_WORKLOAD,
                   help="built-in workload name or module:function (default: matmul)")
    p.add_argument("--args", nargs="*", default=None, help="workload arguments (ints)")
    p.add_argument("--trials", type=int, default=64, help="measurement budget (new trials)")
    p.add_argument("--log", default=None, help="JSON-lines log (default: <workload>.json)")
    p.add_argument("--target", default="llvm")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-round", type=int, default=64,
                   help="measurements per round (TVM's default, 64)")
    p.add_argument("--retime", type=int, default=4, metavar="K",
                   help="at the end, measure the K best states and the default schedule's "
                        "three more times each and keep the one with the lowest "
                        "second-best figure (0: off)")
    p.add_argument("--confirm", type=int, default=4, metavar="K",
                   help="measure a candidate that enters the K best a second time and "
                        "keep its slower figure (0: off)")
    p.add_argument("--early-stopping", type=int, default=None,
                   help="stop after this many trials without improvement")
    p.add_argument("--runner-number", type=int, default=3)
    p.add_argument("--runner-repeat", type=int, default=1)
    p.add_argument("--min-repeat-ms", type=int, default=0,
                   help="each repeat's calls last at least this long (TVM's default is "
                        "100; 0 here, see the README's scope notes)")
    p.add_argument("--cache-flush", action=argparse.BooleanOptionalAction, default=None,
                   help="flush the CPU caches before each timed call (default: on for "
                        "models, whose weights are cold in a real run, as TVM's network "
                        "tutorials do; off for single operators)")
    p.add_argument("--timeout", type=float, default=10.0, help="run timeout per candidate (s)")
    p.add_argument("--model", choices=("xgb", "random"), default="xgb",
                   help="cost model guiding the search (default: xgb)")
    p.add_argument("--prior", default="builtin", metavar="builtin|none|FILE",
                   help="the xgb model's prior before a task has records: the model "
                        "shipped with the package (default), none (Ansor: the first "
                        "round is random), or a file saved by XGBModel.save")
    p.add_argument("--pretrained", default=None,
                   help="warm the xgb model from an older log (any workloads)")
    p.add_argument("--dask", default=None, metavar="ADDRESS",
                   help="build and measure on a dask.distributed cluster, e.g. "
                        "tcp://host:8786 (workers need --resources measure=1)")
    p.add_argument("--rpc-tracker", default=None, metavar="HOST:PORT",
                   help="measure on RPC servers registered with this tracker (tvmc's "
                        "flag; start them with python -m compiler.exec.rpc_server)")
    p.add_argument("--rpc-key", default=None, metavar="KEY",
                   help="the key the RPC servers registered under (with --rpc-tracker)")
    p.add_argument("--network", default=None,
                   help=f"tune a whole model from the zoo ({', '.join(sorted(ZOO))}); an "
                        ".onnx file is given as the workload")
    p.add_argument("--shape", action="append", default=None, metavar="NAME:D1,D2,...",
                   help="input shape of an ONNX model (repeatable)")
    p.add_argument("--strategy", choices=("gradient", "round-robin"), default="gradient",
                   help="how the TaskScheduler shares trials between a model's tasks")
    p.add_argument("--list", action="store_true", help="list built-in workloads and exit")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def _parse_arg(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def resolve_workload(name: str, args):
    """(function name, args) for a built-in or a ``module:function`` workload."""
    if ":" in name:
        mod, _, fn = name.partition(":")
        try:
            func = getattr(importlib.import_module(mod), fn)
        except (ImportError, AttributeError) as err:
            raise AutoSchedError(f"cannot load workload {name!r}: {err}") from None
        register_workload(fn, func, override=True)
        if args is None:
            raise AutoSchedError(f"workload {name} needs --args")
        return fn, [_parse_arg(a) for a in args]
    entry = catalog.BUILTIN.get(name)
    if entry is None:
        raise AutoSchedError(f"unknown workload {name!r}; built-in workloads: "
                             f"{', '.join(sorted(catalog.BUILTIN))} (or use module:function)")
    return name, [_parse_arg(a) for a in args] if args is not None else list(entry.default_args)


class Progress:
    """One status line, rewritten in place."""

    def __init__(self, task, budget: int, quiet: bool):
        self.task, self.budget, self.quiet = task, budget, quiet
        self.start = time.perf_counter()

    def __call__(self, stats) -> None:
        if self.quiet:
            return
        el = time.perf_counter() - self.start
        done = stats.trials
        eta = el / done * (self.budget - done) if done else 0.0
        best = "-" if stats.best_cost == float("inf") else (
            f"{stats.best_cost * 1e3:.4f} ms, "
            f"{self.task.compute_dag.flop_ct / stats.best_cost / 1e9:.1f} GFLOPS")
        bar = "#" * int(20 * done / max(1, self.budget))
        if math.isfinite(stats.default_cost):
            best += f" (default {stats.default_cost * 1e3:.4f} ms)"
        sys.stderr.write(f"\r[{bar:<20}] {done}/{self.budget} trials | best {best} | "
                         f"errors {stats.errors} | cut off {stats.cut_off} | "
                         f"ETA {eta:5.0f} s ")
        sys.stderr.flush()


def make_model(ns):
    if ns.model == "random":
        return RandomModel(ns.seed)
    model = XGBModel(seed=ns.seed, prior=prior_from_text(ns.prior))
    if ns.pretrained:
        n = model.update_from_file(ns.pretrained)
        if not ns.quiet:
            print(f"Pre-trained the cost model on {n} records of {ns.pretrained}")
    return model


def make_measurers(ns):
    """(builder, runner): local worker processes, a Dask cluster with ``--dask``, or RPC
    servers with ``--rpc-tracker``/``--rpc-key`` (local builds)."""
    flush = ns.cache_flush if ns.cache_flush is not None else _is_model(ns)
    if ns.rpc_tracker or ns.rpc_key:
        if not (ns.rpc_tracker and ns.rpc_key) or ns.dask:
            raise ValueError("--rpc-tracker and --rpc-key go together, and not with --dask")
        try:
            host, port = parse_addr(ns.rpc_tracker, "--rpc-tracker")
        except RPCError as err:
            raise ValueError(str(err)) from None
        return LocalBuilder(), RPCRunner(ns.rpc_key, host, port, timeout=ns.timeout,
                                         number=ns.runner_number, repeat=ns.runner_repeat,
                                         min_repeat_ms=ns.min_repeat_ms,
                                         enable_cpu_cache_flush=flush)
    if ns.dask:
        builder = DaskBuilder(ns.dask)
        runner = DaskRunner(builder.client, timeout=ns.timeout, number=ns.runner_number,
                            repeat=ns.runner_repeat, min_repeat_ms=ns.min_repeat_ms,
                            enable_cpu_cache_flush=flush)
        return builder, runner
    return LocalBuilder(), LocalRunner(timeout=ns.timeout, number=ns.runner_number,
                                       repeat=ns.runner_repeat,
                                       min_repeat_ms=ns.min_repeat_ms,
                                       enable_cpu_cache_flush=flush)


def _is_model(ns) -> bool:
    return bool(ns.network) or ns.workload.endswith(".onnx")


def resume_command(ns, log: str) -> str:
    parts = ["tune", ns.workload]
    if ns.args:
        parts += ["--args", *ns.args]
    parts += ["--trials", str(ns.trials), "--log", log, "--target", ns.target,
              "--seed", str(ns.seed), "--model", ns.model]
    if ns.dask:
        parts += ["--dask", ns.dask]
    if ns.rpc_tracker:
        parts += ["--rpc-tracker", ns.rpc_tracker, "--rpc-key", str(ns.rpc_key)]
    return " ".join(shlex.quote(p) for p in parts)


# ---------------------------------------------------------------- end-of-run summary
def _arrays(tensors, rng):
    """Random 64-byte-aligned arrays: what the tuner measures with, and what a relay build
    (one aligned pool) and ``compiler.nd.array`` give a kernel.  numpy's own arrays are
    often only 16-byte aligned, so every other AVX load of a kernel reading them straight
    splits a cache line; a tuned kernel that reads its inputs directly pays that, a
    default one that packs them into its own buffers does not."""
    return [as_aligned(rng.random([int(d.value) for d in t.shape]).astype(t.dtype))
            for t in tensors]


def default_schedule(name: str, tensors):
    """The built default (topi) schedule of a catalog workload (te's naive one for an
    unknown name)."""
    entry = catalog.BUILTIN.get(name)
    fn = getattr(topi.x86, entry.schedule, None) if entry is not None else None
    s = fn(tensors[-1]) if fn is not None else te.create_schedule(tensors[-1].op)
    return build(s, tensors, name="default")


def _numpy_ref(name: str):
    entry = catalog.BUILTIN.get(name)
    return entry.numpy_ref if entry is not None else None


def _best_kernel(task, state, arrays):
    """(module, its arrays) of the best state, built as it was measured: with a layout
    rewrite its weights are transformed first, as a relay build does once."""
    opt = task.layout_rewrite_option
    sch, tensors = task.compute_dag.apply_steps_from_state(state, opt)
    ins = list(arrays)
    if opt == LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED:
        for tr in task.compute_dag.layout_transforms(state):
            ins[tr.arg_index] = as_aligned(tr.apply(ins[tr.arg_index]))
    return build(sch, tensors, name="best"), ins


def print_summary(task, name, args, log, stats, ns) -> int:
    if stats.best_cost == float("inf"):
        print(f"No valid schedule found in {stats.trials} trials ({stats.errors} errors); "
              f"see {log}")
        return 1
    dag = task.compute_dag
    flops = dag.flop_ct
    state, _ = best_state(task, log)
    tensors = dag.tensors
    arrays = _arrays(tensors, np.random.default_rng(0))
    # the tuned kernel, the default schedule and numpy timed side by side (interleaved
    # rounds): timed one after another right after tuning, their ratio mostly says in
    # which order they ran
    mod, ins = _best_kernel(task, state, arrays)
    timers = {"best": kernel_timer(mod, ins, 20)}
    # the answer may be the default schedule's own state (no tuned state beat it by
    # PREFER_MARGIN): then the two timers would time one program, and their ratio
    # (0.99x, 1.01x) would only be noise
    same = is_default_program(task, state)
    default_error = ""
    try:
        if not same:
            timers["default"] = kernel_timer(default_schedule(name, tensors), arrays, 20)
            timers["default"]()       # a default that fails to build or run fails here
    except Exception as err:  # noqa: BLE001 - the summary must not lose the tuning result
        default_error = f"unavailable ({type(err).__name__}: {err})"
    ref = _numpy_ref(name)
    if ref is not None:
        timers["numpy"] = numpy_timer(ref, arrays[:-1])
    t = interleaved(timers, rounds=5, settle={"best": 0.05, "default": 0.05, "numpy": 0.25})
    best = t["best"]
    if math.isfinite(stats.default_cost) and stats.best_cost >= stats.default_cost:
        print(f"Note: no candidate beat the default schedule ({stats.default_cost * 1e3:.4f} ms "
              "when tuning started); more trials are needed")
    print(f"Best: {best * 1e3:.4f} ms, {flops / best / 1e9:.2f} GFLOPS "
          f"({stats.trials} new trials, {stats.preloaded} from the log, {stats.errors} errors, "
          f"{stats.wall_seconds:.1f} s, search overhead {stats.overhead_share:.0%})")
    if same:
        print(f"vs default schedule: 1.00x (the best is the default schedule's own state: "
              f"no tuned state beat it by {PREFER_MARGIN:.0%})")
    elif default_error:
        print(f"vs default schedule: {default_error}")
    else:
        d = t["default"]
        print(f"vs default schedule: {d * 1e3:.4f} ms -> {d / best:.2f}x")
    if "numpy" in t:
        n = t["numpy"]
        print(f"vs numpy: {n * 1e3:.4f} ms ({flops / n / 1e9:.2f} GFLOPS) -> {n / best:.2f}x")
    print("Best schedule as Python:")
    print(task.compute_dag.print_python_code_from_state(state))
    return 0


def main(argv=None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    if ns.list:
        for name in sorted(catalog.BUILTIN):
            e = catalog.BUILTIN[name]
            print(f"{name:18s} args={list(e.default_args)}  {e.doc}")
        print("networks (--network): " + ", ".join(sorted(ZOO)))
        return 0
    if _is_model(ns):
        return run_network(ns, make_measurers)
    try:
        fname, args = resolve_workload(ns.workload, ns.args)
        task = SearchTask(func=fname, args=args, target=ns.target)
    except (AutoSchedError, ValueError, TypeError) as err:
        print(f"tune: error: {err}", file=sys.stderr)
        return 2
    log = ns.log or f"{fname}.json"
    if not ns.quiet:
        print(f"Tuning {task.workload_key} on {task.target}: {ns.trials} trials, log {log}")
    try:
        recorder = RecordToFile(log)          # checks the log path before any work
        builder, runner = make_measurers(ns)
    except (ClusterError, ImportError, OSError, ValueError) as err:
        print(f"tune: error: {err}", file=sys.stderr)
        return 2
    opts = TuningOptions(
        num_measure_trials=ns.trials, early_stopping=ns.early_stopping,
        num_measures_per_round=ns.per_round, verbose=0, retime_top_k=ns.retime,
        confirm_top_k=ns.confirm,
        builder=builder, measure_callbacks=[recorder], runner=runner,
        progress_callback=Progress(task, ns.trials, ns.quiet))
    try:
        model = make_model(ns)
        # re-running the same command resumes: the log's records are preloaded
        policy = SketchPolicy(task, model, seed=ns.seed, verbose=0,
                              init_search_callbacks=[PreloadMeasuredStates(log)])
        stats = task.tune(opts, policy)
        if getattr(runner, "summary", None) and not ns.quiet:
            print("\n" + runner.summary())
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        print(f"Interrupted. Every finished measurement is in {log}.\nResume with:\n  "
              f"{resume_command(ns, log)}", file=sys.stderr)
        return 130
    if not ns.quiet:
        sys.stderr.write("\n")
    if stats.stop_reason:
        print(f"Tuning stopped early: {stats.stop_reason}")
    return print_summary(task, fname, args, log, stats, ns)


if __name__ == "__main__":
    sys.exit(main())
