"""Make the README's example tuning curve from a synthetic network log.

    python3 scripts/curve_example.py                      # docs/curve_example.png
    python3 scripts/curve_example.py --html /tmp/c.html   # also the HTML page

The log is made up but shaped like a real one (``tune --network`` on four tasks with the
gradient task scheduler): each task's cost falls quickly then levels off, with noise and
a few failed measurements; the task table ``LOG.tasks.json`` gives names, flop counts
and weights. The PNG is drawn by ``python3 -m records curve`` itself (needs matplotlib,
the ``[plot]`` extra).
"""
import argparse
import json
import math
import os
import pathlib
import random
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from records import (  # noqa: E402
    ErrorNo,
    MeasureInputRecord,
    MeasureResultRecord,
    Record,
    save_records,
)

TARGET = "llvm -keys=cpu -mcpu=znver3 -num-cores=2"
HW = [2, 32, 64, 0, 0, 0, 0, 0]
# name, flops, weight, cost of the first schedules (s), best reachable cost (s), trials
TASKS = [
    ("fused_nn_conv2d_add_nn_relu", 2 * 118e6, 4, 0.030, 0.0042, 260),
    ("fused_nn_conv2d_add_nn_relu_1", 2 * 231e6, 3, 0.060, 0.0065, 220),
    ("fused_nn_conv2d_add", 2 * 12.8e6, 2, 0.004, 0.0006, 120),
    ("fused_nn_dense_add", 2 * 0.51e6, 1, 0.0009, 0.00005, 60),
]


def _key(name: str) -> str:
    return json.dumps([name, [1, 64, 56, 56]])


def _record(rng: random.Random, task, trial: int) -> Record:
    name, _, _, start, floor, _ = task
    steps = [["SP", 2, 0, 56, [rng.choice([1, 2, 4, 7, 8])], 1], ["AN", 2, 0, 3]]
    inp = MeasureInputRecord(_key(name), TARGET, HW, steps=steps)
    if rng.random() < 0.04:
        return Record(inp, MeasureResultRecord([1e10], ErrorNo.RUN_TIMEOUT, 1.0,
                                               1.7e9 + trial))
    level = floor + (start - floor) * math.exp(-trial / 40)
    cost = level * math.exp(abs(rng.gauss(0, 0.35)))
    return Record(inp, MeasureResultRecord([cost], 0, 0.5, 1.7e9 + trial))


def make_log(path: pathlib.Path, seed: int = 3) -> None:
    """Write the synthetic log (tasks interleaved as a task scheduler does) and its
    task table beside it."""
    rng = random.Random(seed)
    done = [0] * len(TASKS)
    records = []
    while any(d < t[5] for d, t in zip(done, TASKS)):
        index = rng.choices(range(len(TASKS)), weights=[t[5] - d for d, t in
                                                          zip(done, TASKS)])[0]
        for _ in range(min(8, TASKS[index][5] - done[index])):
            done[index] += 1
            records.append(_record(rng, TASKS[index], done[index]))
    save_records(path, records, append=False)
    table = {_key(name): {"name": name, "flops": flops, "weight": weight}
             for name, flops, weight, *_ in TASKS}
    pathlib.Path(str(path) + ".tasks.json").write_text(json.dumps(table, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--png", default=str(ROOT / "docs" / "curve_example.png"))
    parser.add_argument("--html", help="also write the HTML page here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = pathlib.Path(tmp) / "resnet_like.json"
        make_log(log)
        extra = ["--html", args.html] if args.html else []
        cmd = [sys.executable, "-m", "records", "curve", str(log), "--png", args.png,
               "--title", "records curve: a synthetic 4-task network log", *extra]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    raise SystemExit(main())
