"""LoopState: TVM's Python ``auto_scheduler.loop_state.State`` methods over our State.

``ComputeDAG.get_init_state()`` returns one.  Each method makes the transform step, applies
it (``apply_step``, so it is recorded and replays) and returns what TVM's returns: the new
iterators of a split, the fused iterator, the new stage's tensor-like key of a cache
stage.  Stages are named by a te Tensor, an Operation, a stage name or an id, and
iterators by an ``Iterator`` of the stage (``state[C].iters[0]``) or its index.

``State(state_object, dag)`` is TVM's constructor spelling (custom sketch rules wrap
the state they are given with it), and ``state_object`` / ``stage_ops`` are TVM's
attributes.

Invariants: a LoopState is a State (every function taking a State takes it), its copies
stay LoopStates, and a method that does not apply raises InvalidStepError leaving the
state unchanged (the step is applied to a copy first).
"""
from __future__ import annotations

from .errors import InvalidStepError
from .state import ANN_PARALLEL, ANN_UNROLL, ANN_VECTORIZE
from .state import State as _State
from .steps import registry as R


def State(state_object, dag=None) -> LoopState:  # noqa: N802 - TVM's class name
    """TVM's ``loop_state.State(state_object, dag)``: a LoopState copy of
    ``state_object`` (any State; ``dag``, when given, must be the state's own
    ComputeDAG).  Custom sketch rules written for TVM wrap their state this way."""
    if not isinstance(state_object, _State):
        raise TypeError(f"loop_state.State: expected a State, got "
                        f"{type(state_object).__name__}")
    if dag is not None and dag is not state_object.dag:
        raise InvalidStepError("loop_state.State: the state belongs to another ComputeDAG "
                               "than the one given")
    return LoopState.of(state_object)


class LoopState(_State):
    """A State with TVM's loop-state methods (split, fuse, reorder, compute_at, ...)."""
    __slots__ = ()

    @classmethod
    def of(cls, state: _State) -> LoopState:
        return cls(state.dag, state.stages, state.attach_map, state.transform_steps,
                   state.concrete, state.dataflow_key)

    def copy(self) -> LoopState:
        return LoopState.of(self)

    def __getitem__(self, stage):
        return self.stages[self.stage_id(stage)]

    @property
    def stage_ops(self) -> list:
        """The op of every stage, in stage order (TVM's ``State.stage_ops``)."""
        return [st.op for st in self.stages]

    @property
    def state_object(self) -> LoopState:
        """The state itself: TVM scripts return ``state.state_object`` where a state is
        expected, and here a state is its own object."""
        return self

    # ------------------------------------------------------------------ helpers
    def _iter_id(self, sid: int, it) -> int:
        if isinstance(it, int):
            return it
        iters = self.stages[sid].iters
        for k, x in enumerate(iters):
            if x is it:
                return k
        for k, x in enumerate(iters):
            if x == it:
                return k
        raise InvalidStepError(f"iterator {it!r} is not an iterator of stage "
                               f"{self.stages[sid].name}; its iterators are "
                               f"{[x.name for x in iters]}")

    def _do(self, step):
        """Apply ``step`` (all or nothing) and return its result."""
        trial = self.copy()
        res = R.apply_step(trial, step)
        self.stages, self.attach_map = trial.stages, trial.attach_map
        self.transform_steps = trial.transform_steps
        self.dataflow_key = trial.dataflow_key
        self.invalidate()
        return res

    def _new_iters(self, sid: int, ids) -> list:
        return [self.stages[sid].iters[k] for k in ids]

    # ------------------------------------------------------------------ loop steps
    def split(self, stage, iterator, lengths, inner_to_outer: bool = True) -> list:
        sid = self.stage_id(stage)
        iid = self._iter_id(sid, iterator)
        ext = self.stages[sid].iters[iid].extent
        ids = self._do(R.SplitStep(sid, iid, ext, tuple(lengths), inner_to_outer))
        return self._new_iters(sid, ids)

    def follow_split(self, stage, iterator, src_step_id: int, n_split: int) -> list:
        sid = self.stage_id(stage)
        ids = self._do(R.FollowSplitStep(sid, self._iter_id(sid, iterator), src_step_id,
                                         n_split))
        return self._new_iters(sid, ids)

    def follow_fused_split(self, stage, iterator, src_step_ids, level: int,
                           factor_or_nparts: bool) -> list:
        sid = self.stage_id(stage)
        ids = self._do(R.FollowFusedSplitStep(sid, self._iter_id(sid, iterator),
                                              tuple(src_step_ids), level, factor_or_nparts))
        return self._new_iters(sid, ids)

    def fuse(self, stage, iters):
        sid = self.stage_id(stage)
        k = self._do(R.FuseStep(sid, tuple(self._iter_id(sid, it) for it in iters)))
        return self.stages[sid].iters[k]

    def reorder(self, stage, order) -> None:
        sid = self.stage_id(stage)
        self._do(R.ReorderStep(sid, tuple(self._iter_id(sid, it) for it in order)))

    def _annotate(self, stage, iterator, ann):
        sid = self.stage_id(stage)
        iid = self._iter_id(sid, iterator)
        self._do(R.AnnotationStep(sid, iid, ann))
        return self.stages[sid].iters[iid]

    def parallel(self, stage, iterator):
        return self._annotate(stage, iterator, ANN_PARALLEL)

    def vectorize(self, stage, iterator):
        return self._annotate(stage, iterator, ANN_VECTORIZE)

    def unroll(self, stage, iterator, max_unroll=None):
        if max_unroll is not None:
            raise InvalidStepError(f"unroll(max_unroll={max_unroll!r}): a per-loop unroll "
                                   "limit is not supported; use pragma(stage, iterator, "
                                   "'auto_unroll_max_step$N') for a limit")
        return self._annotate(stage, iterator, ANN_UNROLL)

    def pragma(self, stage, iterator, pragma_type: str) -> None:
        sid = self.stage_id(stage)
        self._do(R.PragmaStep(sid, self._iter_id(sid, iterator), pragma_type))

    def storage_align(self, stage, iterator, factor: int, offset: int) -> None:
        sid = self.stage_id(stage)
        self._do(R.StorageAlignStep(sid, self._iter_id(sid, iterator), factor, offset))

    # ------------------------------------------------------------------ compute location
    def compute_at(self, stage, target_stage, target_iter) -> None:
        sid, tid = self.stage_id(stage), self.stage_id(target_stage)
        self._do(R.ComputeAtStep(sid, tid, self._iter_id(tid, target_iter)))

    def compute_inline(self, stage) -> None:
        self._do(R.ComputeInlineStep(self.stage_id(stage)))

    def compute_root(self, stage) -> None:
        self._do(R.ComputeRootStep(self.stage_id(stage)))

    # ------------------------------------------------------------------ dataflow
    def cache_read(self, stage, scope_name: str, reader_stages):
        """The new cache stage's op (use it to name the stage in later calls)."""
        sid = self.stage_id(stage)
        readers = tuple(self.stage_id(r) for r in reader_stages)
        new = self._do(R.CacheReadStep(sid, scope_name, readers))
        return self.stages[new].op

    def cache_write(self, stage, scope_name: str):
        new = self._do(R.CacheWriteStep(self.stage_id(stage), scope_name))
        return self.stages[new].op

    def rfactor(self, stage, iterator, factor_iter_id: int):
        sid = self.stage_id(stage)
        new = self._do(R.RfactorStep(sid, self._iter_id(sid, iterator), factor_iter_id))
        return self.stages[new].op
