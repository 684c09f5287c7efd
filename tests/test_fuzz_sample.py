"""The standing schedule fuzz: a 200-state sample of scripts/fuzz_schedules.py.

States from the tuner's rules and from random step sequences over every workload family,
each built in an isolated worker, run and compared with numpy.  Any wrong answer, crash,
hang or refusal of a state the State accepted fails the test with the reproducing case.
"""
import collections

from fuzz_planted import planted_check

from autosched import fuzz
from autosched.fuzz_runner import run_cases

SEED, N = 0, 200


def test_fuzz_sample_has_no_findings():
    outcomes = run_cases(SEED, range(N), jobs=2, timeout=120)
    assert [o.case for o in outcomes] == list(range(N))
    counts = collections.Counter((o.family, o.source) for o in outcomes)
    # every family is exercised from both sources
    assert {f for f, _ in counts} == set(fuzz.FAMILIES)
    assert {s for _, s in counts} == {"search", "steps"}
    bad = [o.to_json() for o in outcomes if o.status != "ok"]
    assert not bad, bad


def test_cases_are_reproducible_from_seed_and_number():
    a = fuzz.make_case(SEED, 37)
    b = fuzz.make_case(SEED, 37)
    assert a[:2] == b[:2] and str(a[2]) == str(b[2])
    assert [s.to_record() for s in a[2].transform_steps] == \
        [s.to_record() for s in b[2].transform_steps]


def test_a_wrong_answer_is_reported_with_its_steps(monkeypatch):
    fam = fuzz.FAMILIES["matmul_odd"]
    monkeypatch.setitem(fuzz.FAMILIES, "matmul_odd",
                        fuzz.Family(fam.workload, fam.args, lambda a, b: a @ b + 1.0))
    case = sorted(fuzz.FAMILIES).index("matmul_odd")
    out = fuzz.check_case(SEED, case)
    assert out.status == "wrong" and out.detail.startswith("max abs error 1")
    assert out.steps == tuple(tuple(s.to_record()) for s in
                              fuzz.make_case(SEED, case)[2].transform_steps)


def test_a_crashing_or_hanging_case_is_a_finding_and_the_run_goes_on():
    outcomes = run_cases(SEED, range(8), jobs=2, timeout=3, check=planted_check)
    status = {o.case: o.status for o in outcomes}
    assert status == {0: "ok", 1: "ok", 2: "ok", 3: "crash", 4: "ok", 5: "hang", 6: "ok",
                      7: "ok"}
    crash = outcomes[3]
    assert "worker died (exit code -11)" in crash.detail
    # a lost case still carries the steps that reproduce it
    assert crash.steps == tuple(tuple(s.to_record()) for s in
                                fuzz.make_case(SEED, 3)[2].transform_steps)
