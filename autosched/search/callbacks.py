"""Search callbacks (TVM's ``SearchCallback``) and preloading a log into a policy.

Role: ``SketchPolicy(..., init_search_callbacks=[...])`` runs each callback's
``callback(policy)`` once, when the policy is created.  ``PreloadMeasuredStates(log)``
feeds the log's records of the policy's task to it, as TVM's does: their states are
never measured again, the evolutionary search starts from the best of them and the cost
model learns from them.  ``PreloadCustomSketchRule(meet_condition_func, apply_func)``
adds a user's sketch rule, tried before the built-in ones (``sketch_rules``).

Invariants: only records of the policy's workload key on a compatible target (same kind
and CPU; ``-keys``/``-num-cores`` may differ, as in TVM logs) are loaded; a missing log
loads nothing; a record whose steps no longer replay is skipped; the number loaded is
added to ``policy.preloaded``.
"""
from __future__ import annotations

import os

from records import load_records, target_matches

from ..errors import InvalidStepError
from ..measure.measurer import MeasureInput, MeasureResult
from ..steps import serialize
from .sketch_rules import APPLY, APPLY_AND_SKIP_REST, PASS


def matching_records(log: str, task, mode: str = "compatible") -> list:
    """Records of ``log`` for the task's workload key and a matching target: by default a
    compatible one (same kind and CPU; ``-keys``/``-num-cores`` may differ, as in TVM
    logs), ``mode="exact"`` for the same target string.  Missing log: none."""
    if not log or not os.path.exists(log):
        return []
    target = str(task.target)
    return [r for r in load_records(log)
            if r.input.workload_key == task.workload_key
            and target_matches(r.input.target, target, mode)]


def preload(policy, log: str) -> int:
    """Feed an existing log to the policy; returns how many records were loaded."""
    inputs, results = [], []
    for rec in matching_records(log, policy.task):
        try:
            state = serialize.state_from_record(policy.task, rec)
        except InvalidStepError:
            continue
        inputs.append(MeasureInput(policy.task, state))
        results.append(MeasureResult.from_record(rec.result))
    if inputs:
        policy.record_measured(inputs, results)
    return len(inputs)


class SearchCallback:
    """Called once with the search policy when the policy is created (TVM's name)."""

    def callback(self, policy) -> None:
        raise NotImplementedError(f"{type(self).__name__}.callback(policy) is not "
                                  "implemented; a SearchCallback must define it")


class PreloadMeasuredStates(SearchCallback):
    """Load the measured states of ``filename`` into the policy (resume a search)."""

    def __init__(self, filename):
        if not isinstance(filename, (str, os.PathLike)):
            raise TypeError(f"PreloadMeasuredStates filename={filename!r}: expected a path "
                            "to a tuning log")
        self.filename = os.fspath(filename)

    def callback(self, policy) -> None:
        n = preload(policy, self.filename)
        policy.preloaded = getattr(policy, "preloaded", 0) + n
        if getattr(policy, "verbose", 0) >= 1:
            print(f"SearchPolicy: Loaded {n} measured states of {policy.task.workload_key} "
                  f"from {self.filename}.", flush=True)

    def __repr__(self):
        return f"PreloadMeasuredStates({self.filename!r})"


class PreloadCustomSketchRule(SearchCallback):
    """TVM's custom sketch rule.  At every stage of sketch generation, before the built-in
    rules, ``meet_condition_func(policy, state, stage_id)`` returns ``PASS`` (not
    applicable), ``APPLY`` (apply, then try the next rules) or ``APPLY_AND_SKIP_REST``;
    when applicable, ``apply_func(policy, state, stage_id)`` returns ``[[state,
    next_stage_id], ...]``.  The states given are LoopState copies (TVM's loop-state
    methods: ``split``, ``compute_at``, ...; ``loop_state.State(state, dag)`` and
    ``state.state_object`` work as in TVM).  The sketches are made in the tuner's process
    and sent to search helpers as steps, so the functions never travel."""

    PASS, APPLY, APPLY_AND_SKIP_REST = PASS, APPLY, APPLY_AND_SKIP_REST

    def __init__(self, meet_condition_func, apply_func, rule_name: str = "CustomSketchRule"):
        for what, f in (("meet_condition_func", meet_condition_func),
                        ("apply_func", apply_func)):
            if not callable(f):
                raise TypeError(f"PreloadCustomSketchRule {what}={f!r}: expected a function "
                                "(policy, state, stage_id)")
        if not isinstance(rule_name, str):
            raise TypeError(f"PreloadCustomSketchRule rule_name={rule_name!r}: expected a str")
        self.meet_condition_func, self.apply_func = meet_condition_func, apply_func
        self.rule_name = rule_name

    def callback(self, policy) -> None:
        rules = getattr(policy, "custom_sketch_rules", None)
        if rules is None:
            raise TypeError(f"PreloadCustomSketchRule {self.rule_name!r}: "
                            f"{type(policy).__name__} has no sketch rules (use SketchPolicy)")
        rules.append(self)
        if getattr(policy, "verbose", 0) >= 1:
            print(f'Custom sketch rule "{self.rule_name}" added.', flush=True)

    def __repr__(self):
        return f"PreloadCustomSketchRule({self.rule_name!r})"
