"""Command line of the ``records`` package: ``python3 -m records <command> ...``.

Commands: ``summary``, ``best`` (distill), ``curve`` (CSV), ``compare``, ``validate``.
Invariants:
- results go to stdout as aligned plain-text tables (or CSV for ``curve``); warnings about
  skipped log lines and errors go to stderr, each naming the file and line;
- exit codes: 0 success, 1 the data is bad or missing (``validate`` found bad lines,
  ``curve`` found no trial of the workload), 2 usage or I/O error;
- ``curve`` writes CSV only: a PNG would need matplotlib, which ``records`` (standard
  library only) does not depend on; plot the CSV with any tool.
"""
import argparse
import csv
import json
import os
import sys

from records.analysis import best_records, compare, curve, error_names, summarize
from records.errors import RecordError, RecordSyntaxError
from records.io import RecordReader, load_records, save_records
from records.table import format_table


def _warn(err: RecordError) -> None:
    print(f"warning: skipped bad line: {err}", file=sys.stderr)


def _read(path):
    """Non-strict lazy reading; skipped lines are reported on stderr."""
    return load_records(path, on_error=_warn)


def _ms(cost) -> str:
    return "-" if cost is None else f"{cost * 1e3:.4f}"


def _load_flops(path) -> dict:
    """A JSON object mapping workload keys to flop counts (checked later, per key)."""
    with open(path, encoding="utf-8") as f:
        try:
            table = json.load(f)
        except json.JSONDecodeError as err:
            raise RecordSyntaxError(f"invalid JSON: {err.msg} at column {err.colno}",
                                    path=path, lineno=err.lineno) from None
    if not isinstance(table, dict):
        raise RecordError(f"got a JSON {type(table).__name__}, expected an object mapping "
                          "workload keys to flop counts", path=path)
    return table


def _task_table(args) -> dict:
    """``key -> {"name", "flops", "weight"}`` from ``--tasks-json`` or the sidecar file
    ``LOG.tasks.json`` that ``tune --network`` writes beside a network log."""
    path = args.tasks_json or args.log + ".tasks.json"
    if not args.tasks_json and not os.path.exists(path):
        return {}
    table = _load_flops(path)
    for key, entry in table.items():
        if not isinstance(entry, dict):
            raise RecordError(f"task entry of {key!r} is {entry!r}, expected an object with "
                              "name, flops and weight", path=path)
    return table


def cmd_summary(args) -> int:
    flops = _load_flops(args.flops_json) if args.flops_json else None
    tasks = _task_table(args)
    if tasks and flops is None:
        flops = {k: e.get("flops") for k, e in tasks.items()}
    rows = []
    total, complete, seen = 0.0, True, set()
    for s in summarize(_read(args.log), flops):
        seen.add(s.workload_key)
        errors = str(s.error_count) + (f" ({error_names(s)})" if s.errors else "")
        gf = s.best_gflops
        row = [s.workload_key, "; ".join(s.targets), s.trials, errors, _ms(s.best_cost),
               "-" if s.best_trial is None else s.best_trial,
               "-" if gf is None else f"{gf:.2f}"]
        if tasks:
            entry = tasks.get(s.workload_key, {})
            weight = entry.get("weight")
            row[0] = entry.get("name", s.workload_key)
            row += ["-" if weight is None else weight,
                    "-" if weight is None or s.best_cost is None else
                    _ms(weight * s.best_cost)]
            if weight is None or s.best_cost is None:
                complete = False
            else:
                total += weight * s.best_cost
        rows.append(row)
    headers = ["workload", "target", "trials", "errors", "best (ms)", "at trial", "GFLOPS"]
    if tasks:
        headers = ["task"] + headers[1:] + ["weight", "weighted (ms)"]
    print(format_table(headers, rows, align="llrlrrrrr" if tasks else "llrlrrr"))
    if tasks:
        complete = complete and set(tasks) <= seen
        estimate = f"{_ms(total)} ms" if complete else "unknown (a task has no valid record)"
        print(f"estimated end-to-end latency (sum of weight x best): {estimate} over "
              f"{len(tasks)} tasks")
    return 0


def _counting(records, counter: list):
    for record in records:
        counter[0] += 1
        yield record


def cmd_best(args) -> int:
    seen = [0]
    best = best_records(_counting(_read(args.log), seen))
    written = save_records(args.output, best, append=False)
    keys = {r.workload_key for r in best}
    print(f"{args.output}: wrote {written} best records ({len(keys)} workloads) "
          f"out of {seen[0]} records in {args.log}")
    return 0


def _write_csv(stream, points) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["trial", "best_so_far_seconds"])
    for trial, best in points:
        writer.writerow([trial, "" if best is None else repr(best)])


def cmd_curve(args) -> int:
    points = curve(_read(args.log), args.workload)
    if not points:
        print(f"records curve: no trial of workload {args.workload!r} in {args.log}",
              file=sys.stderr)
        return 1
    if args.output is None:
        _write_csv(sys.stdout, points)
        return 0
    with open(args.output, "w", encoding="utf-8", newline="") as f:
        _write_csv(f, points)
    print(f"{args.output}: wrote {len(points)} trials as CSV (no PNG: plotting needs "
          "matplotlib, which records does not depend on)")
    return 0


def cmd_compare(args) -> int:
    rows = []
    for c in compare(_read(args.log_a), _read(args.log_b)):
        ratio = "-" if c.speedup is None else f"{c.speedup:.3f}"
        rows.append([c.workload_key, c.trials_a, c.trials_b, _ms(c.best_a), _ms(c.best_b),
                     ratio])
    print(f"A: {args.log_a}\nB: {args.log_b}")
    headers = ["workload", "trials A", "trials B", "best A (ms)", "best B (ms)", "A/B"]
    print(format_table(headers, rows, align="lrrrrr"))
    return 0


def cmd_validate(args) -> int:
    bad = []

    def report(err):
        bad.append(err)
        print(err)

    good = failed = 0
    for record in RecordReader(args.log, on_error=report):
        good += 1
        failed += not record.is_valid
    # A failed measurement is a well-formed line: it counts as OK, not as bad.
    print(f"{args.log}: {good} records OK ({failed} failed measurements), "
          f"{len(bad)} bad lines")
    return 1 if bad else 0


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
    p = sub.add_parser("best", help="distill: keep the best record per workload and target")
    p.add_argument("log")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    p.set_defaults(func=cmd_best)
    p = sub.add_parser("curve", help="best-so-far cost vs trials of one workload, as CSV")
    p.add_argument("log")
    p.add_argument("--workload", required=True, metavar="KEY")
    p.add_argument("-o", "--output", metavar="OUT_CSV", help="default: stdout")
    p.set_defaults(func=cmd_curve)
    p = sub.add_parser("compare", help="best cost per workload in two logs")
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
    except (RecordError, OSError) as err:
        print(f"records {args.command}: error: {err}", file=sys.stderr)
        return 2
