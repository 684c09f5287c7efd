"""The two search-policy helpers TVM's sparse tutorial calls through
``auto_scheduler._ffi_api`` from its custom sketch rule.

``SearchPolicyUtilsGetConsumers(task, state, stage_id)``: the stages reading the stage
(through inlined stages), as a map whose ``items()`` is a list, as TVM's ``Map`` is
(the tutorial reads ``consumers.items()[0][0]``).
``SearchPolicyUtilsIsElementwiseMatch(task, state, stage_id, target_id)``: whether
``target_id`` is the single consumer reading ``stage_id`` elementwise.
"""
from __future__ import annotations

from .search.sketch_rules import consumers_resolved, elementwise_consumer


class _Map(dict):
    """A dict whose ``items()``/``keys()``/``values()`` are lists (TVM's ``Map``)."""

    def items(self):
        return list(super().items())

    def keys(self):
        return list(super().keys())

    def values(self):
        return list(super().values())


def SearchPolicyUtilsGetConsumers(task, state, stage_id: int) -> _Map:  # noqa: N802
    return _Map((c, c) for c in consumers_resolved(state, int(stage_id)))


def SearchPolicyUtilsIsElementwiseMatch(task, state, stage_id: int,  # noqa: N802
                                        target_stage_id: int) -> bool:
    return elementwise_consumer(state, int(stage_id)) == int(target_stage_id)
