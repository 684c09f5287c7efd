"""The ``tune`` command imports xgboost early and without scikit-learn when it will
train the cost model and runs no user code (``cli.import_xgboost_early``); a
``module:function`` workload, the random model and one-round runs leave the import alone,
unless the one round resumes a log (it trains on the preloaded records).

Each case runs in a fresh interpreter: the test process has imported xgboost already.
"""
import subprocess
import sys

import pytest

_PROBE = """
import sys
from autosched.cli import import_xgboost_early, parse_args
did = import_xgboost_early(parse_args({argv!r}), resuming={resuming!r})
print(did, "xgboost" in sys.modules, "sklearn" in sys.modules)
"""


def probe(argv, resuming=False) -> str:
    out = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv, resuming=resuming)],
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


@pytest.mark.parametrize("argv, expected", [
    (["--trials", "64"], "True True False"),
    (["--trials", "64", "--model", "random"], "False False False"),
    (["mymodule:fn", "--args", "8", "--trials", "64"], "False False False"),
])
def test_a_resumed_one_round_run_imports_xgboost_lean_too(argv, expected):
    assert probe(argv, resuming=True) == expected


def test_a_second_run_of_the_readme_command_finds_xgboost_imported_before_tuning(
        tmp_path, monkeypatch):
    """main() decides ``resuming`` from the log: a non-empty log is resumed."""
    from autosched import cli
    seen = []
    monkeypatch.setattr(cli, "import_xgboost_early",
                        lambda ns, resuming=False: seen.append(resuming) or False)
    monkeypatch.setattr(cli.SearchTask, "tune", lambda *a, **k: (_ for _ in ()).throw(
        KeyboardInterrupt()))
    log = tmp_path / "m.json"
    for content in ("", "# a comment line: the log exists and is not empty\n"):
        log.write_text(content)
        assert cli.main(["--trials", "4", "--log", str(log), "--quiet"]) == 130
    assert seen == [False, True]


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
