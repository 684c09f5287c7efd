"""The ``tune`` command imports xgboost early and without scikit-learn when it will
train the cost model and runs no user code (``cli.import_xgboost_early``); a
``module:function`` workload, the random model and one-round runs leave the import alone.

Each case runs in a fresh interpreter: the test process has imported xgboost already.
"""
import subprocess
import sys

import pytest

_PROBE = """
import sys
from autosched.cli import import_xgboost_early, parse_args
did = import_xgboost_early(parse_args({argv!r}))
print(did, "xgboost" in sys.modules, "sklearn" in sys.modules)
"""


def probe(argv) -> str:
    out = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv)],
                         capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.split("\n")[-2]


@pytest.mark.parametrize("argv, expected", [
    (["--trials", "200"], "True True False"),
    (["--network", "resnet-18", "--trials", "200"], "True True False"),
    (["mymodule:fn", "--args", "8", "--trials", "200"], "False False False"),
    (["--trials", "200", "--model", "random"], "False False False"),
    (["--trials", "64"], "False False False"),
])
def test_tune_imports_xgboost_lean_only_when_it_will_train_and_runs_no_user_code(
        argv, expected):
    assert probe(argv) == expected


def test_a_lean_xgboost_trains_the_cost_model():
    """What the command then does with it: train on records and predict."""
    code = """
import sys
from autosched.search.islands import import_modules
import_modules(("xgboost",))
import autosched as auto
from autosched import catalog
from autosched.cost_model import XGBModel
task = auto.SearchTask(func="matmul", args=(64, 64, 64))
states = auto.SketchPolicy(task, seed=0, verbose=0).sample_initial_population(40)
model = XGBModel(seed=0, prior=None)
res = [auto.MeasureResult([1e-3 * (1 + k % 7)], 0, "", 0.1, 1.0) for k in range(40)]
model.update([auto.MeasureInput(task, s) for s in states], res)
model.train()
scores = model.predict(task, states)
print(len(scores), model.booster is not None, "sklearn" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split("\n")[-2] == "40 True False"
