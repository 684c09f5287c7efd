"""Tuning curves (``records.curves``), their drawing (``records.plot``) and the commands
``records curve``, ``distill --top`` and ``compare`` built on one streaming pass."""
import csv
import io
import json
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from records import (
    ErrorNo,
    MeasureInputRecord,
    MeasureResultRecord,
    Record,
    RecordError,
    best_records,
    compare,
    load_records,
    network_series,
    save_records,
    scan,
    task_series,
)
from records.cli import main
from records.curves import pick_metric, use_log_scale
from records.plot import nice_ticks, render_svg

ROOT = pathlib.Path(__file__).resolve().parents[1]
MM, CONV = '["matmul", 64, 64, 64]', '["conv2d", 1, 64]'
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def rec(key, cost, error_no=0):
    inp = MeasureInputRecord(key, "llvm", [2, 64, 64, 0, 0, 0, 0, 0], steps=[["CI", 1]])
    return Record(inp, MeasureResultRecord([1e10] if error_no else [cost], error_no, 1.0, 0))


# log trial:  1        2         3          4                  5          6         7
LOG = [rec(MM, 0.004), rec(CONV, 0.02), rec(MM, 0.005), rec(MM, 0, ErrorNo.RUN_TIMEOUT),
       rec(MM, 0.002), rec(CONV, 0.01), rec(MM, 0.003)]
TASKS = {MM: {"name": "dense", "flops": 2e6, "weight": 2},
         CONV: {"name": "conv <1>", "flops": 4e6, "weight": 1}}


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "a.json"
    save_records(path, LOG)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_scan_keeps_improvements_only():
    history = scan(LOG)
    assert history.records == 7 and list(history.workloads) == [MM, CONV]
    mm = history.workloads[MM]
    assert mm.improvements == [(1, 1, 0.004), (4, 5, 0.002)]   # (trial, log trial, cost)
    assert (mm.trials, mm.best_cost, mm.best_trial) == (5, 0.002, 4)
    assert mm.trials_to_reach(0.0045) == 1 and mm.trials_to_reach(0.001) is None


def test_task_series_steps_and_units():
    dense, conv = task_series(scan(LOG), tasks=TASKS, flops={MM: 2e6, CONV: 4e6})
    assert (dense.label, dense.points, dense.trials, dense.flops) == (
        "dense", ((1, 0.004), (4, 0.002)), 5, 2e6)
    assert dense.values("latency") == ((1, 4.0), (4, 2.0))
    assert dense.values("gflops") == ((1, pytest.approx(0.5)), (4, pytest.approx(1.0)))
    assert dense.steps("latency") == [(1, 4.0), (4, 4.0), (4, 2.0), (5, 2.0)]
    assert conv.steps("latency") == [(1, 20.0), (2, 20.0), (2, 10.0)]
    (only,) = task_series(scan(LOG), workload=CONV)
    assert (only.label, only.flops) == (CONV, None)
    with pytest.raises(RecordError, match="curve '.*' has no flop count, expected one"):
        only.values("gflops")
    with pytest.raises(RecordError, match="curve metric 'speed' is unknown, expected one "
                                          "of gflops, latency"):
        only.values("speed")


def test_network_series_starts_when_every_task_has_a_best():
    s = network_series(scan(LOG), "net", tasks=TASKS, flops={MM: 2e6, CONV: 4e6})
    # weights: dense x2, conv x1; conv's first valid record is log trial 2
    assert s.points == ((2, 2 * 0.004 + 0.02), (5, 2 * 0.002 + 0.02),
                        (6, 2 * 0.002 + 0.01))
    assert (s.trials, s.flops) == (7, 2 * 2e6 + 4e6)
    plain = network_series(scan(LOG), "net")               # no table: weight 1 each
    assert plain.points[-1] == (6, 0.012) and plain.flops is None
    table = dict(TASKS, **{'["absent"]': {"weight": 1}})   # a task never tuned
    assert network_series(scan(LOG), "net", tasks=table).points == ()
    with pytest.raises(RecordError, match=r"weight of task '\[\"conv2d\", 1, 64\]' in the "
                                          "task table: got -1, expected a number > 0"):
        network_series(scan(LOG), "net", tasks={CONV: {"weight": -1}})


def test_metric_choice_and_log_scale():
    with_flops = task_series(scan(LOG), flops={MM: 1.0, CONV: 1.0})
    assert pick_metric(with_flops, None) == "gflops"
    assert pick_metric(task_series(scan(LOG)), None) == "latency"
    assert pick_metric(with_flops, "latency") == "latency"
    assert not use_log_scale(with_flops, "latency")          # 2..20 ms: linear
    wide = task_series(scan(LOG + [rec('["tiny"]', 1e-5)]))
    assert use_log_scale(wide, "latency") and not use_log_scale(with_flops, "gflops")


def test_nice_ticks_cover_the_range():
    assert nice_ticks(0, 66.2) == [0, 20, 40, 60, 80]
    assert nice_ticks(0.5, 3.6) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert nice_ticks(5, 5) == [5, 6, 7, 8, 9, 10]


def test_svg_is_well_formed_with_one_line_per_series():
    series = task_series(scan(LOG), tasks=TASKS)
    svg = render_svg(series, metric="latency", title='a <"title">')
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}polyline")) == 2
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert 'a <"title">' in texts
    assert "dense (2 ms)" in texts and "conv <1> (10 ms)" in texts
    assert "best-so-far latency (ms)" in texts


def test_curve_html_page_is_self_contained(capsys, log, tmp_path):
    pathlib.Path(str(log) + ".tasks.json").write_text(json.dumps(TASKS))
    page = tmp_path / "out.html"
    code, out, _ = run(capsys, "curve", log, "--html", page)
    assert code == 0
    assert out == f"{page}: wrote 2 curves of best-so-far GFLOPS and 1 summary tables\n"
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.count("<polyline") == 2
    assert "<script" not in text and "src=" not in text and "href=" not in text
    assert "conv &lt;1&gt;" in text and "conv <1>" not in text       # escaped
    assert "<th>task</th>" in text and "<td class=\"l\">dense</td>" in text
    assert "estimated end-to-end latency (sum of weight x best): 14.0000 ms" in text
    svg = text[text.index("<svg"):text.index("</svg>") + 6]
    ET.fromstring(svg)


def test_curve_png_with_matplotlib(capsys, log, tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    png = tmp_path / "out.png"
    code, out, _ = run(capsys, "curve", log, "--png", png, "--title", "demo")
    assert code == 0 and out == f"{png}: wrote 2 curves of best-so-far latency (ms)\n"
    assert png.read_bytes()[:8] == PNG_MAGIC
    pixels = imread(png)
    assert pixels.shape[:2] == (450, 800)
    assert len({tuple(p) for p in pixels.reshape(-1, pixels.shape[2])[::97]}) > 10


def test_curve_png_without_matplotlib_names_the_extra(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # import now fails
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    png = tmp_path / "out.png"
    # checked before reading: the missing log is not even opened
    code, out, err = run(capsys, "curve", tmp_path / "missing.json", "--png", png)
    assert code == 2 and out == "" and not png.exists()
    assert err == ("records curve: error: a PNG needs matplotlib, which is not installed: "
                   "pip install 'tensor-autosched[plot]' (or write --html, which needs "
                   "nothing)\n")


def _csv(text: str) -> list:
    return list(csv.reader(io.StringIO(text)))


def test_curve_csv_per_task_and_per_log(capsys, log, tmp_path):
    code, out, _ = run(capsys, "curve", log)
    assert code == 0
    assert _csv(out) == [["series", "trial", "best_so_far_seconds", "best_so_far_gflops"],
                         [MM, "1", "0.004", ""], [MM, "4", "0.002", ""],
                         [MM, "5", "0.002", ""],                   # flat to the last trial
                         [CONV, "1", "0.02", ""], [CONV, "2", "0.01", ""]]
    other = tmp_path / "b.json"
    save_records(other, [rec(MM, 0.001)])
    flops = tmp_path / "flops.json"
    flops.write_text(json.dumps({MM: 2e6, CONV: 4e6}))
    csv_path = tmp_path / "c.csv"
    code, out, _ = run(capsys, "curve", log, other, "--flops-json", flops, "-o", csv_path)
    assert code == 0 and out == f"{csv_path}: wrote 2 curves as CSV\n"
    rows = [(name, int(t), float(c), float(g)) for name, t, c, g in
            _csv(csv_path.read_text())[1:]]
    # one line per log: the sum of the bests (weight 1 without a task table), from the
    # first log trial where both workloads have one; GFLOPS over the 6 MFLOP of both
    assert rows == [("a.json", 2, pytest.approx(0.024), pytest.approx(0.25)),
                    ("a.json", 5, pytest.approx(0.022), pytest.approx(6e-3 / 0.022)),
                    ("a.json", 6, pytest.approx(0.012), pytest.approx(0.5)),
                    ("a.json", 7, pytest.approx(0.012), pytest.approx(0.5)),
                    ("b.json", 1, 0.001, pytest.approx(2.0))]
    code, out, _ = run(capsys, "curve", log, other, "--by", "task", "--workload", MM)
    assert [row[:2] for row in _csv(out)[1:]] == [
        [f"a.json: {MM}", "1"], [f"a.json: {MM}", "4"], [f"a.json: {MM}", "5"],
        [f"b.json: {MM}", "1"]]


def test_curve_exit_1_when_nothing_to_draw(capsys, tmp_path):
    path = tmp_path / "failed.json"
    save_records(path, [rec(MM, 0, ErrorNo.COMPILE_HOST)])
    code, out, err = run(capsys, "curve", path, "--html", tmp_path / "x.html")
    assert code == 1 and out == "" and not (tmp_path / "x.html").exists()
    assert err == f"records curve: no valid record of any workload in {path}\n"


def test_curve_option_errors_write_nothing(capsys, log, tmp_path):
    page = tmp_path / "x.html"
    code, out, err = run(capsys, "curve", log, "--metric", "gflops", "--html", page)
    assert code == 2 and out == "" and not page.exists()
    assert err.startswith("records curve: error: curve '[\"matmul\", 64, 64, 64]' has no "
                          "flop count, expected one for GFLOPS")
    code, _, err = run(capsys, "curve", log, "--by", "log", "--workload", MM)
    assert code == 2 and "--workload draws one task's lines; it does not go with --by log" \
        in err


def test_curve_html_and_csv_together(capsys, log, tmp_path):
    page, table = tmp_path / "x.html", tmp_path / "x.csv"
    code, out, _ = run(capsys, "curve", log, "--html", page, "-o", table)
    assert code == 0 and out.splitlines() == [
        f"{page}: wrote 2 curves of best-so-far latency (ms) and 1 summary tables",
        f"{table}: wrote 2 curves as CSV"]
    assert len(_csv(table.read_text())) == 6 and page.read_text().count("<polyline") == 2


def test_distill_top_k_keeps_the_best_k_per_pair(capsys, log, tmp_path):
    assert [r.mean_cost for r in best_records(LOG, top=2)] == [0.002, 0.003, 0.01, 0.02]
    assert [r.mean_cost for r in best_records(LOG, top=9)] == [0.002, 0.003, 0.004, 0.005,
                                                               0.01, 0.02]
    out_path = tmp_path / "best.json"
    code, out, _ = run(capsys, "distill", log, "-o", out_path, "--top", 2)
    assert code == 0
    assert out == f"{out_path}: wrote 4 best records (2 workloads) out of 7 records in {log}\n"
    assert [r.mean_cost for r in load_records(out_path)] == [0.002, 0.003, 0.01, 0.02]
    code, _, _ = run(capsys, "best", log, "-o", out_path)               # the old name
    assert code == 0 and len(list(load_records(out_path))) == 2
    with pytest.raises(SystemExit) as info:
        main(["distill", str(log), "-o", str(out_path), "--top", "0"])
    assert info.value.code == 2
    assert "argument --top: got '0', expected an integer >= 1" in capsys.readouterr().err
    with pytest.raises(RecordError, match=r"\(top\): got 0, expected an integer >= 1"):
        best_records(LOG, top=0)


def test_compare_trials_to_reach_the_other_best():
    b = [rec(MM, 0.006), rec(MM, 0.0035), rec(MM, 0.001), rec('["new"]', 0.5)]
    mm, conv, new = compare(LOG, b)
    assert (mm.best_a, mm.best_b, mm.a_reaches_b, mm.b_reaches_a) == (0.002, 0.001, None, 3)
    assert mm.speedup == pytest.approx(2.0)
    assert (conv.trials_b, conv.a_reaches_b, conv.b_reaches_a) == (0, None, None)
    assert (new.trials_a, new.best_a, new.best_b) == (0, None, 0.5)
    same = compare(LOG, LOG)[0]
    assert (same.a_reaches_b, same.b_reaches_a) == (4, 4)


def test_importing_the_cli_does_not_load_matplotlib():
    code = "import sys, records.cli; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


def test_readme_example_png_is_there_and_small():
    png = ROOT / "docs" / "curve_example.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert png.stat().st_size < 100_000
    assert "docs/curve_example.png" in (ROOT / "README.md").read_text()
