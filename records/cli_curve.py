"""``records curve``: best-so-far curves of one or more logs, as CSV, PNG or HTML.

Invariants:
- each log is read once (``records.analysis.scan``), whatever the outputs asked for;
- ``--by task`` (the default for one log or with ``--workload``) draws one line per
  workload, against that workload's trials; ``--by log`` (the default for several logs)
  draws one line per log, the estimated latency ``sum(weight x best)`` of its tasks
  against the log's records (see ``records.curves``); ``--workload KEY`` keeps that
  workload only;
- the metric is GFLOPS when every line has a flop count (``--flops-json``, or the task
  table: ``--tasks-json`` or ``LOG.tasks.json``), else latency; ``--metric`` forces one;
- ``--png`` needs matplotlib (extra ``[plot]``), checked before any log is read; ``--html``
  writes one self-contained page (inline SVG, the summary table of each log, no
  JavaScript); without either, CSV goes to ``-o`` or stdout: with ``--workload`` and one
  log, one ``trial,best_so_far_seconds`` row per trial (streamed, as before), otherwise
  ``series,trial,best_so_far_seconds,best_so_far_gflops`` rows at each improvement and at
  each line's last trial (``-o`` also writes that CSV beside a PNG or HTML output);
- a missing flop count under ``--metric gflops`` fails before any file is written;
- exit 1 when there is nothing to draw (no trial of ``--workload``, no valid record).
"""
import csv
import itertools
import os
import sys

from records.analysis import iter_curve, scan
from records.cli_common import flops_table, read, summary_table, task_table
from records.curves import METRICS, axis_label, network_series, pick_metric, task_series
from records.plot import html_table, render_html, render_png, render_svg, require_matplotlib


def add_curve_parser(sub) -> None:
    p = sub.add_parser("curve", help="best-so-far GFLOPS or latency vs trials: CSV, PNG "
                                     "(matplotlib) or a self-contained HTML page")
    p.add_argument("logs", nargs="+", metavar="LOG")
    p.add_argument("--workload", metavar="KEY", help="only this workload")
    p.add_argument("--by", choices=("task", "log"),
                   help="one line per task (default for one log) or per log (default "
                        "for several)")
    p.add_argument("--metric", choices=METRICS,
                   help="default: gflops when flop counts are known, else latency")
    p.add_argument("--flops-json", metavar="FILE",
                   help="JSON object mapping workload keys to flop counts")
    p.add_argument("--tasks-json", metavar="FILE",
                   help="task table key -> {name, flops, weight} for every log (default: "
                        "each LOG.tasks.json when it exists)")
    p.add_argument("--png", metavar="OUT_PNG", help="draw with matplotlib (extra [plot])")
    p.add_argument("--html", metavar="OUT_HTML", help="one page: curves and summary tables")
    p.add_argument("-o", "--output", metavar="OUT_CSV", help="CSV file (default: stdout)")
    p.add_argument("--title", help="plot title (default: the log names)")
    p.set_defaults(func=cmd_curve)


def _legacy_csv(args) -> int:
    """One workload of one log, one row per trial, streamed."""
    log = args.logs[0]
    points = iter_curve(read(log), args.workload)
    first = next(points, None)
    if first is None:
        print(f"records curve: no trial of workload {args.workload!r} in {log}",
              file=sys.stderr)
        return 1
    stream = sys.stdout if args.output is None else \
        open(args.output, "w", encoding="utf-8", newline="")
    try:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(["trial", "best_so_far_seconds"])
        count = 0
        for trial, best in itertools.chain([first], points):
            writer.writerow([trial, "" if best is None else repr(best)])
            count += 1
    finally:
        if stream is not sys.stdout:
            stream.close()
    if args.output is not None:
        print(f"{args.output}: wrote {count} trials as CSV")
    return 0


def _names(logs: list) -> list:
    """Legend names of logs: base names, or whole paths when two base names collide."""
    bases = [os.path.basename(log) for log in logs]
    return bases if len(set(bases)) == len(bases) else list(logs)


def _load(logs: list, args) -> list:
    """``(log, name, history, tasks, flops)`` per log, each read once."""
    out = []
    for log, name in zip(logs, _names(logs)):
        tasks = task_table(log, args.tasks_json)
        out.append((log, name, scan(read(log)), tasks, flops_table(args.flops_json, tasks)))
    return out


def _series(loaded: list, by: str, workload) -> list:
    series: list = []
    for _, name, history, tasks, flops in loaded:
        if by == "log":
            series.append(network_series(history, name, tasks=tasks, flops=flops))
        else:
            prefix = f"{name}: " if len(loaded) > 1 else ""
            series += task_series(history, tasks=tasks, flops=flops, prefix=prefix,
                                  workload=workload)
    return series


def _write_series_csv(stream, series: list) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["series", "trial", "best_so_far_seconds", "best_so_far_gflops"])
    for s in series:
        rows = [(t, c) for t, c in s.points]
        if not rows or rows[-1][0] < s.trials:
            rows.append((s.trials, rows[-1][1] if rows else None))
        for trial, cost in rows:
            gflops = "" if cost is None or s.flops is None else repr(s.flops / cost / 1e9)
            writer.writerow([s.label, trial, "" if cost is None else repr(cost), gflops])


def _html_page(loaded: list, series: list, metric: str, title: str) -> str:
    sections = []
    for log, _, history, tasks, flops in loaded:
        headers, rows, align, footer = summary_table(history, flops, tasks)
        sections.append((f"Summary of {log} ({history.records} records)",
                         html_table(headers, rows, align), footer))
    note = (f"{len(series)} curves of {axis_label(metric)} against trials; written by "
            "python3 -m records curve.")
    return render_html(title=title, svg=render_svg(series, metric=metric, title=title),
                       sections=sections, note=note)


def cmd_curve(args) -> int:
    if args.workload is not None and args.by == "log":
        print("records curve: error: --workload draws one task's lines; it does not go "
              "with --by log", file=sys.stderr)
        return 2
    if args.workload is not None and len(args.logs) == 1 and not (args.png or args.html):
        return _legacy_csv(args)
    if args.png:
        try:
            require_matplotlib()
        except ImportError as err:
            print(f"records curve: error: {err}", file=sys.stderr)
            return 2
    loaded = _load(args.logs, args)
    by = args.by or ("task" if len(args.logs) == 1 or args.workload else "log")
    series = _series(loaded, by, args.workload)
    if not any(s.points for s in series):
        what = f"workload {args.workload!r}" if args.workload else "any workload"
        print(f"records curve: no valid record of {what} in " + ", ".join(args.logs),
              file=sys.stderr)
        return 1
    metric = pick_metric(series, args.metric)
    for s in series:
        s.values(metric)                  # a missing flop count fails before any output
    title = args.title or "Tuning curves: " + ", ".join(name for _, name, *_ in loaded)
    if args.png:
        render_png(series, args.png, metric=metric, title=title)
        print(f"{args.png}: wrote {len(series)} curves of {axis_label(metric)}")
    if args.html:
        page = _html_page(loaded, series, metric, title)
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(page)
        print(f"{args.html}: wrote {len(series)} curves of {axis_label(metric)} and "
              f"{len(loaded)} summary tables")
    if args.output is not None:
        with open(args.output, "w", encoding="utf-8", newline="") as f:
            _write_series_csv(f, series)
        print(f"{args.output}: wrote {len(series)} curves as CSV")
    elif not (args.png or args.html):
        _write_series_csv(sys.stdout, series)
    return 0
