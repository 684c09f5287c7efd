"""The State's transform steps as data (TVM's 14 steps) and their record bridge.

``registry`` decodes records and applies steps, ``loop`` and ``compute`` define the step
classes, ``printing`` names things in printed Python, ``serialize`` converts tuning data
to and from ``records``.  This package re-exports the registry.
"""
from .registry import (
                       STEP_CLASSES,
                       AnnotationStep,
                       CacheReadStep,
                       CacheWriteStep,
                       ComputeAtStep,
                       ComputeInlineStep,
                       ComputeRootStep,
                       FollowFusedSplitStep,
                       FollowSplitStep,
                       FuseStep,
                       PragmaStep,
                       ReorderStep,
                       RfactorStep,
                       SplitStep,
                       StorageAlignStep,
                       apply_step,
                       apply_to_schedule,
                       check_state,
                       step_from_record,
)

__all__ = ["STEP_CLASSES", "apply_step", "apply_to_schedule", "check_state",
           "step_from_record", "AnnotationStep", "FuseStep", "PragmaStep", "ReorderStep",
           "SplitStep", "FollowSplitStep", "FollowFusedSplitStep", "StorageAlignStep",
           "ComputeAtStep", "ComputeInlineStep", "ComputeRootStep", "CacheReadStep",
           "CacheWriteStep", "RfactorStep"]
