"""Command line of the ``records`` package: ``python3 -m records <command> ...``.

Commands: ``summary``, ``distill`` (alias ``best``), ``curve`` (CSV, PNG, HTML; see
``records.cli_curve``), ``compare``, ``validate``.
Invariants:
- results go to stdout as aligned plain-text tables (or CSV for ``curve``); warnings about
  skipped log lines and errors go to stderr, each naming the file and line;
- exit codes: 0 success, 1 the data is bad or missing (``validate`` found bad lines,
  ``curve`` found nothing to draw), 2 usage or I/O error;
- every command reads each log once, as a stream: memory grows with the number of
  workloads (and of best-so-far improvements), never with the number of records, so a
  log of millions of lines is summarized in constant memory.
"""
import argparse
import os
import sys

from records.analysis import best_records, compare, geometric_mean, scan
from records.cli_common import flops_table, ms, read, summary_table, task_table
from records.cli_curve import add_curve_parser
from records.errors import RecordError
from records.io import RecordReader, save_records
from records.table import format_table


def cmd_summary(args) -> int:
    tasks = task_table(args.log, args.tasks_json)
    flops = flops_table(args.flops_json, tasks)
    headers, rows, align, footer = summary_table(scan(read(args.log)), flops, tasks)
    print(format_table(headers, rows, align=align))
    if footer:
        print(footer)
    return 0


def _counting(records, counter: list):
    for record in records:
        counter[0] += 1
        yield record


def cmd_distill(args) -> int:
    seen = [0]
    best = best_records(_counting(read(args.log), seen), top=args.top)
    written = save_records(args.output, best, append=False)
    keys = {r.workload_key for r in best}
    print(f"{args.output}: wrote {written} best records ({len(keys)} workloads) "
          f"out of {seen[0]} records in {args.log}")
    return 0


def _trial(value) -> str:
    return "-" if value is None else str(value)


def cmd_compare(args) -> int:
    rows, ratios = [], []
    for c in compare(read(args.log_a), read(args.log_b)):
        ratio = "-" if c.speedup is None else f"{c.speedup:.3f}"
        if c.speedup is not None:
            ratios.append(c.speedup)
        rows.append([c.workload_key, c.trials_a, c.trials_b, ms(c.best_a), ms(c.best_b),
                     ratio, _trial(c.a_reaches_b), _trial(c.b_reaches_a)])
    print(f"A: {args.log_a}\nB: {args.log_b}")
    headers = ["workload", "trials A", "trials B", "best A (ms)", "best B (ms)", "A/B",
               "A reaches best B at", "B reaches best A at"]
    print(format_table(headers, rows, align="lrrrrrrr"))
    mean = geometric_mean(ratios)
    if mean is not None:
        print(f"geometric mean of A/B over {len(ratios)} workloads in both: {mean:.3f} "
              "(above 1: B found faster schedules)")
    return 0


def cmd_validate(args) -> int:
    bad = [0]

    def report(err):
        bad[0] += 1
        print(err)

    good = failed = 0
    for record in RecordReader(args.log, on_error=report):
        good += 1
        failed += not record.is_valid
    # A failed measurement is a well-formed line: it counts as OK, not as bad.
    print(f"{args.log}: {good} records OK ({failed} failed measurements), "
          f"{bad[0]} bad lines")
    return 1 if bad[0] else 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected an integer >= 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="records",
                                     description="Inspect auto-scheduler tuning logs.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("summary", help="per-workload trials, errors, best cost and GFLOPS")
    p.add_argument("log")
    p.add_argument("--flops-json", metavar="FILE",
                   help="JSON object mapping workload keys to flop counts")
    p.add_argument("--tasks-json", metavar="FILE",
                   help="tasks of a network log: key -> {name, flops, weight} (default: "
                        "LOG.tasks.json when it exists, as tune --network writes it)")
    p.set_defaults(func=cmd_summary)
    p = sub.add_parser("distill", aliases=["best"],
                       help="keep the best records per workload and target (TVM's distill)")
    p.add_argument("log")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    p.add_argument("--top", type=_positive_int, default=1, metavar="K",
                   help="records kept per workload and target, best first (default 1)")
    p.set_defaults(func=cmd_distill)
    add_curve_parser(sub)
    p = sub.add_parser("compare", help="per workload: best of each log, ratio, and the "
                                       "trials each log needed to reach the other's best")
    p.add_argument("log_a")
    p.add_argument("log_b")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("validate", help="check every line; exit 1 if any is bad")
    p.add_argument("log")
    p.set_defaults(func=cmd_validate)
    return parser


def main(argv=None) -> int:
    """Run the CLI; returns the exit code (see the module invariants)."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:               # e.g. ``records curve LOG | head``: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (RecordError, OSError) as err:
        print(f"records {args.command}: error: {err}", file=sys.stderr)
        return 2
