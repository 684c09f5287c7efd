"""Log-analysis benchmark: time and peak memory of the ``records`` commands on big logs.

    python3 scripts/bench_records.py [--sizes 100000 1000000] [--commands summary]
                                     [--others-up-to 100000] [--out results/bench_records.json]

Generates, in a temporary directory, a network-style log of N lines (24 tasks, records
shaped like ``tune --network`` writes them: about 900 bytes and 20 steps each, 3%
failed measurements), so 1M lines is about 0.9 GB. Each command runs as its own
process (``records.cli.main``, output discarded); its wall time, CPU time (``os.wait4``)
and peak resident memory (VmHWM of that process image alone) are measured. The
first command runs at every size; the other commands only up to ``--others-up-to`` lines
(they share the same one-pass reader). The interpreter with ``records.cli`` imported and
nothing run gives the baseline memory. Prints a table and writes JSON.
"""
import argparse
import json
import os
import pathlib
import platform
import random
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TARGET = "llvm -keys=cpu -mcpu=znver3 -num-cores=2"
COMMANDS = ("summary", "validate", "distill", "compare", "curve")


def _steps(rng: random.Random) -> list:
    """20 steps shaped like a tiled conv2d sketch (values vary, the shape does not)."""
    def split(stage, it, extent, parts):
        return ["SP", stage, it, extent, [rng.choice([1, 2, 4, 7, 8]) for _ in range(parts)], 1]
    steps = [["CI", 5]] + [split(3, 4 * k, 112, 3) for k in range(4)]
    steps += [split(3, 16 + 2 * k, 7, 1) for k in range(3)]
    steps += [["RE", 3, list(range(22))]] + [["FSP", 6, 3 * k, k + 1, 2] for k in range(4)]
    steps += [["RE", 6, list(range(12))], ["CA", 3, 6, 7], ["CA", 1, 3, 3],
              ["FU", 6, list(range(8))], ["AN", 6, 0, 3], ["AN", 3, 21, 2], ["AN", 6, 4, 2]]
    return steps


def _input_json(rng: random.Random, task: int) -> str:
    key = json.dumps([f"{task:016x}", [1, 64, 56, 56], [64, 64, 3, 3], [1, 64, 56, 56]])
    return json.dumps([[key, TARGET, [2, 32, 64, 0, 0, 0, 0, 0], "", 0, []],
                       [[], _steps(rng)]])


def generate(path: pathlib.Path, lines: int, seed: int = 0) -> int:
    """Write ``lines`` records; returns the file size in bytes."""
    rng = random.Random(seed)
    variants = [[_input_json(rng, task) for _ in range(8)] for task in range(24)]
    with open(path, "w", encoding="utf-8") as f:
        chunk = []
        for n in range(lines):
            task = rng.randrange(24)
            if rng.random() < 0.03:
                result = f"[[10000000000.0], 7, 10.0, {1.7e9 + n}]"
            else:
                cost = (task + 1) * 1e-4 * (1 + 1000 / (n // 24 + 10)) * rng.uniform(1, 1.5)
                result = f"[[{cost!r}], 0, {rng.uniform(0.3, 2)!r}, {1.7e9 + n}]"
            chunk.append(f'{{"i": {rng.choice(variants[task])}, "r": {result}, '
                         '"v": "v0.6"}\n')
            if len(chunk) == 10_000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
    return path.stat().st_size


# Runs the CLI, then reports the peak RSS of this process image alone: VmHWM of
# /proc/self/status. (``ru_maxrss`` would not do: Linux carries the high-water mark of the
# pre-exec image, a copy of the parent, into the child's ``ru_maxrss``.)
LAUNCH = """
import sys
from records.cli import main
code = main(sys.argv[1:]) if len(sys.argv) > 1 else 0
with open("/proc/self/status") as f:
    hwm = next(line for line in f if line.startswith("VmHWM:"))
sys.stderr.write("VmHWM_KB " + hwm.split()[1] + "\\n")
raise SystemExit(code)
"""


def measure(argv: list) -> dict:
    """Run ``python3 -m records ARGV`` as a child; its wall seconds, CPU seconds and peak
    RSS in MB (its own, see ``LAUNCH``)."""
    argv = [sys.executable, "-c", LAUNCH, *argv]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        err = stderr.read().decode(errors="replace")
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}: {err[-2000:]}")
    peak_kb = int(err.rsplit("VmHWM_KB ", 1)[1].split()[0])
    return {"seconds": round(seconds, 2),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "max_rss_mb": round(peak_kb / 1024, 1)}


def command_argv(command: str, log: pathlib.Path, tmp: pathlib.Path) -> list:
    base = [command]
    if command == "distill":
        return base + [str(log), "-o", str(tmp / "best.json"), "--top", "3"]
    if command == "compare":
        return base + [str(log), str(log)]
    if command == "curve":
        return base + [str(log), "--html", str(tmp / "curves.html")]
    return base + [str(log)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--commands", nargs="+", default=["summary"], choices=COMMANDS)
    parser.add_argument("--others-up-to", type=int, default=100_000)
    parser.add_argument("--out", default=str(ROOT / "results" / "bench_records.json"))
    args = parser.parse_args()
    baseline = measure([])
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_records_") as name:
        tmp = pathlib.Path(name)
        for lines in sorted(args.sizes):
            log = tmp / f"log_{lines}.json"
            start = time.perf_counter()
            size = generate(log, lines)
            print(f"generated {lines} lines, {size / 1e6:.0f} MB in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
            for index, command in enumerate(args.commands):
                if index and lines > args.others_up_to:
                    continue
                m = measure(command_argv(command, log, tmp))
                m.update(command=command, lines=lines, mb=round(size / 1e6),
                         lines_per_second=round(lines / m["seconds"]))
                rows.append(m)
                print(f"  {command:9s} {m['seconds']:8.1f} s  {m['max_rss_mb']:7.1f} MB peak",
                      flush=True)
            log.unlink()
    print()
    print(f"{'command':10s}{'lines':>10s}{'MB':>7s}{'wall s':>9s}{'cpu s':>8s}"
          f"{'lines/s':>10s}{'peak RSS MB':>13s}")
    for r in rows:
        print(f"{r['command']:10s}{r['lines']:>10d}{r['mb']:>7d}{r['seconds']:>9.1f}"
              f"{r['cpu_seconds']:>8.1f}{r['lines_per_second']:>10d}{r['max_rss_mb']:>13.1f}")
    print(f"baseline (the interpreter with records.cli imported): "
          f"{baseline['max_rss_mb']} MB peak RSS")
    result = {"machine": {"python": platform.python_version(), "platform": platform.platform(),
                          "cpus": os.cpu_count()},
              "baseline_records_cli_imported": baseline, "runs": rows}
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
