"""Per-store program features for the learned cost model (Ansor's per-store features).

Role: ``FeatureExtractor.featurize(state)`` turns a State into a float32 matrix with one
row per buffer store of the program it lowers to -- one per computed (non-inlined)
stage, in stage order -- and ``FEATURE_NAMES`` columns.  ``FEATURE_NAMES`` is the single
source of truth: the row length, the log-scaled columns and ``FEATURE_VERSION`` (a
revision number plus a hash of the names) all derive from it.

Groups (per row):
1. compute: Ansor's 16 op counts (float/int mad, add/sub, mul, div/mod, compare, math
   and other calls, bool, select) per innermost iteration times the loops' product;
2. vectorize / unroll / parallel: number, product and innermost length of such loops and
   the innermost one's position (spatial/reduce, inner/middle/outer, mixed; one-hot).
   Unrolled loops include those ``auto_unroll_max_step`` unrolls (emulated like
   ``compiler.passes.unroll``: innermost first while extent x steps <= max step,
   vectorized loops count as one step);
3. the top ``N_BUFFERS`` buffers (the output, then reads by tensor size): access type,
   bytes, unique bytes, cache lines, unique lines, reuse type (loop / serial / none),
   reuse distance in iterations and bytes, reuse count, the four "/ reuse count"
   ratios and the innermost loop's stride in elements;
4. the arithmetic-intensity curve: log2(flops / bytes touched) sampled at 10 points of
   log2(flops) going from the innermost loop outwards;
5. allocation (intermediate buffers): bytes, and loop products outside/inside it;
6. outer scope: product and number of loops, auto_unroll_max_step, and (not in Ansor)
   ``parallel_launches``: how many times the parallel loop is entered (the product of
   the loops around it; a parallel loop under serial loops pays a fork/join each time).

Approximations (documented; see ``feature_nest`` for the loop model): features come from
the State's loop structure, not from the lowered TIR: loops of extent 1 are dropped as
lowering does; a touched region is a box whose side along a buffer dimension is
``sum |coef| * span + 1`` over the loops inside a level (overlapping windows, e.g. conv,
are exact; gathers are overestimated); a loop "changes" an access when it moves any of
its dimensions; the reduction's init store is not a separate row; index arithmetic is
counted from the te expressions, not from the flattened indices.  All count-like values
are log-scaled with ``slog(x) = sign(x) * log2(1 + |x|)``; one-hot columns and the
intensity curve (already a log) are kept as they are.

Invariants: featurization is deterministic and pure (the same State always gives the
same bytes, whatever else is in its batch and whatever the memos hold); results are
memoized per (DAG, printed State) in a bounded LRU, and so is the row of every store
outside any compute_at, per what decides it (``_store_key``).
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .. import state as S
from ..errors import AutoSchedError
from .body import COUNT_NAMES
from .loops import LoopBatch
from .nest import build_nests

N_BUFFERS = 5
CURVE_POINTS = 10
POS_NAMES = ("none", "inner_spatial", "middle_spatial", "outer_spatial", "inner_reduce",
             "middle_reduce", "outer_reduce", "mixed")
ANN_GROUPS = ("vec", "unroll", "parallel")
BUFFER_FIELDS = ("acc_read", "acc_write", "acc_readwrite", "bytes", "unique_bytes", "lines",
                 "unique_lines", "reuse_loop", "reuse_serial", "reuse_none", "reuse_dis_iter",
                 "reuse_dis_bytes", "reuse_ct", "bytes_d_reuse_ct", "unique_bytes_d_reuse_ct",
                 "lines_d_reuse_ct", "unique_lines_d_reuse_ct", "stride")
TAIL_NAMES = ("alloc_size", "alloc_prod", "alloc_outer_prod", "alloc_inner_prod",
              "outer_prod", "num_loops", "auto_unroll_max_step", "parallel_launches")
_REVISION = 1


def _feature_names() -> tuple:
    names = list(COUNT_NAMES)
    for g in ANN_GROUPS:
        names += [f"{g}_num", f"{g}_prod", f"{g}_len"] + [f"{g}_pos_{p}" for p in POS_NAMES]
    for b in range(N_BUFFERS):
        names += [f"buf{b}_{f}" for f in BUFFER_FIELDS]
    names += [f"arith_intensity_{i}" for i in range(CURVE_POINTS)]
    return tuple(names + list(TAIL_NAMES))


FEATURE_NAMES = _feature_names()
FEATURE_VERSION = (f"{_REVISION}-"
                   f"{hashlib.sha1(' '.join(FEATURE_NAMES).encode()).hexdigest()[:10]}")
_COL = {n: k for k, n in enumerate(FEATURE_NAMES)}
_ONE_HOT_FIELDS = ("acc_read", "acc_write", "acc_readwrite", "reuse_loop", "reuse_serial",
                   "reuse_none")


def _is_raw(name: str) -> bool:
    """One-hot columns and the intensity curve are not log-scaled."""
    field = name.split("_", 1)[1] if name.startswith("buf") else name
    return "_pos_" in name or field in _ONE_HOT_FIELDS or name.startswith("arith_intensity")


_RAW = np.array([_is_raw(n) for n in FEATURE_NAMES])
_LOG = ~_RAW
_BUF0 = _COL["buf0_acc_read"]
_NBF = len(BUFFER_FIELDS)
_BF = {n: k for k, n in enumerate(BUFFER_FIELDS)}
_BYTES, _UBYTES, _LINES, _ULINES = (_BF[n] for n in ("bytes", "unique_bytes", "lines",
                                                    "unique_lines"))
_CURVE0 = _COL["arith_intensity_0"]
_TAIL0 = _COL[TAIL_NAMES[0]]


class FeatureError(AutoSchedError):
    """A State cannot be featurized (e.g. a sketch whose split lengths are unknown)."""


@dataclass(frozen=True)
class FeatureConfig:
    cache_line_bytes: int = 64
    cache_size: int = 8192        # memoized states (LRU)


def slog(x):
    """Shifted, signed log: ``sign(x) * log2(1 + |x|)`` (0 stays 0)."""
    return np.sign(x) * np.log2(1.0 + np.abs(x))


_VEC0, _UNROLL0, _PAR0 = (_COL[f"{g}_num"] for g in ANN_GROUPS)
_ANN_END = _PAR0 + 3 + len(POS_NAMES)     # groups 2 are contiguous: vec, unroll, parallel
_N_COUNTS = len(COUNT_NAMES)


def _last_true(mask):
    """Index of the last True along axis 1 (shape (N, L, B)) and whether there is one."""
    L = mask.shape[1]
    return L - 1 - np.argmax(mask[:, ::-1], axis=1), mask.any(axis=1)


def _take(arr, idx):
    """arr (N, K, B) at per-(row, buffer) level idx (N, B)."""
    return np.take_along_axis(arr, idx[:, None, :], axis=1)[:, 0, :]


def _buffer_features(bt, line_bytes):
    """(features (N, B, fields), bytes touched per level (N, L+1))."""
    N, L = bt.ext.shape
    g_span = bt.span @ np.abs(bt.A).transpose(0, 2, 1)              # (N, L, D)
    # spans summed from each level inwards: a reversed cumsum along the middle axis,
    # written as one add per level, which took a fifth less time on conv2d's batches
    # (the sums are of integers, so exact either way)
    cum = np.zeros((N, L + 1, g_span.shape[2]))
    for lv in range(L - 1, -1, -1):
        np.add(cum[:, lv + 1], g_span[:, lv], out=cum[:, lv])
    reg = np.minimum(cum + bt.spread[:, None] + 1.0, np.maximum(bt.shape, 1.0)[:, None])
    touched = np.rint(np.exp(np.log(reg) @ bt.member))                # (N, L+1, B)
    moves = (g_span @ bt.member) > 0
    stride = (np.abs(bt.step @ bt.A.transpose(0, 2, 1)) * bt.strides[:, None]) @ bt.member
    level_bytes = np.einsum("nkb,nb->nk", touched, bt.eb * (bt.kind >= 0))
    suffix = np.concatenate([np.cumprod(bt.ext[:, ::-1], axis=1)[:, ::-1],
                             np.ones((N, 1))], axis=1)
    prod_all = suffix[:, :1]
    f = np.zeros((N, bt.eb.shape[1], _NBF))
    for k, name in enumerate(("acc_read", "acc_write", "acc_readwrite")):
        f[..., _BF[name]] = bt.kind == k
    f[..., _BYTES] = prod_all * bt.eb * bt.nt
    f[..., _UBYTES] = touched[:, 0] * bt.eb
    real = bt.real[:, :, None]
    i_mv, has_mv = _last_true(moves & real)          # innermost loop moving the access
    per_line = np.minimum(1.0, _take(stride, i_mv) * bt.eb / line_bytes)
    runs = prod_all / _take(suffix[:, :, None].repeat(moves.shape[2], 2), i_mv + 1)
    f[..., _LINES] = np.where(has_mv, np.maximum(1.0, runs * per_line), 1.0)
    f[..., _BF["stride"]] = np.where(has_mv & (i_mv == L - 1), stride[:, L - 1], 0.0)
    side = np.take_along_axis(reg[:, 0], bt.last, axis=1)
    f[..., _ULINES] = np.maximum(1.0, f[..., _UBYTES] / np.minimum(
        np.maximum(side * bt.eb, bt.eb), line_bytes))
    _reuse(f, bt, moves, real, suffix, level_bytes)
    f[bt.kind < 0] = 0.0
    return f, level_bytes, suffix


def _reuse(f, bt, moves, real, suffix, level_bytes) -> None:
    """Reuse type, distance and count per buffer, scanning loops from the innermost:
    the first loop that does not move the access gives loop reuse (its count runs to the
    next moving loop); a buffer read through several index tuples and not reused by a
    loop has serial reuse."""
    N, L, B = moves.shape
    j0, loop = _last_true(~moves & real)
    before = np.arange(L)[None, :, None] < j0[:, None, :]
    j1, has_j1 = _last_true(moves & real & before)
    j1 = np.where(has_j1, j1, -1)
    suf = suffix[:, :, None].repeat(B, 2)
    lb = level_bytes[:, :, None].repeat(B, 2)
    serial = ~loop & (bt.nt > 1)
    f[..., _BF["reuse_loop"]], f[..., _BF["reuse_serial"]] = loop, serial
    f[..., _BF["reuse_none"]] = ~loop & ~serial & (bt.kind >= 0)
    f[..., _BF["reuse_dis_iter"]] = np.where(loop, _take(suf, j0 + 1),
                                             np.where(serial, 1.0, 0.0))
    f[..., _BF["reuse_dis_bytes"]] = np.where(loop, _take(lb, j0 + 1),
                                              np.where(serial, level_bytes[:, -1:], 0.0))
    ct = np.where(loop, _take(suf, j1 + 1) / _take(suf, j0 + 1),
                  np.where(serial, bt.nt - 1.0, 0.0))
    f[..., _BF["reuse_ct"]] = ct
    base = f[..., [_BYTES, _UBYTES, _LINES, _ULINES]]
    ratios = [_BF[n] for n in ("bytes_d_reuse_ct", "unique_bytes_d_reuse_ct",
                               "lines_d_reuse_ct", "unique_lines_d_reuse_ct")]
    f[..., ratios] = np.where((ct > 0.5)[..., None], base / np.maximum(ct, 0.5)[..., None],
                              base * 2.0)


def _curves(out, ops, suffix, level_bytes) -> None:
    """Group 4 for all rows at once: piecewise-linear interpolation of
    y = log2(flops / bytes) against x = log2(flops), levels innermost first; ``ops``:
    each row's ops per iteration (``BodyInfo.curve_ops``)."""
    ok = ops > 0
    if not ok.any():
        return
    x = np.log2(np.where(ok, ops, 1.0)[:, None] * suffix[:, ::-1])
    y = x - np.log2(np.maximum(level_bytes[:, ::-1], 1.0))
    xs = x[:, -1:] * (np.arange(1, CURVE_POINTS + 1) / CURVE_POINTS)[None]
    k = (x[:, None, :] < xs[:, :, None] - 1e-9).sum(axis=2)           # first x >= target
    k = np.minimum(k, x.shape[1] - 1)
    k0 = np.maximum(k - 1, 0)
    x0, x1 = np.take_along_axis(x, k0, 1), np.take_along_axis(x, k, 1)
    y0, y1 = np.take_along_axis(y, k0, 1), np.take_along_axis(y, k, 1)
    w = np.where(x1 > x0, (xs - x0) / np.where(x1 > x0, x1 - x0, 1.0), 1.0)
    out[:, _CURVE0:_CURVE0 + CURVE_POINTS] = np.where(ok[:, None], y0 + w * (y1 - y0), 0.0)


def rows_for(jobs, line_bytes: int = 64) -> np.ndarray:
    """Raw (not log-scaled) rows for (nest, shapes, is_output) jobs, batched."""
    out = np.zeros((len(jobs), len(FEATURE_NAMES)))
    if not jobs:
        return out
    bt = LoopBatch(jobs)
    out[:, _VEC0:_ANN_END] = bt.ann
    out[:, _TAIL0:] = bt.tail
    counts = np.array([info.counts for info in bt.infos])
    out[:, :_N_COUNTS] = counts[bt.gid] * bt.p[:, None]
    f, level_bytes, suffix = _buffer_features(bt, line_bytes)
    nb = min(N_BUFFERS, f.shape[1])
    out[:, _BUF0:_BUF0 + nb * _NBF] = f[:, :nb].reshape(len(jobs), -1)
    ops = np.array([info.curve_ops for info in bt.infos])[bt.gid]
    _curves(out, ops, suffix, level_bytes)
    return out


def state_jobs(state) -> list:
    """(nest, shapes, is_output) for every store of ``state``."""
    if not state.concrete:
        raise FeatureError("cannot featurize a sketch: some split lengths are unknown "
                           "(sample the sketch into a concrete state first)")
    nests = build_nests(state)
    shapes = {}     # (id of op, output index) -> bound-shrunk shape (BodyInfo.access_keys)
    for nest in nests:
        if nest.attached:
            op = nest.info.op
            for k in range(op.num_outputs):
                shapes[(id(op), k)] = tuple(nest.root_ext[:nest.info.n_spatial])
    memo = state.struct_memo()
    consumers = memo.get("consumers")
    if consumers is None:
        consumers = memo["consumers"] = S.stage_consumers(state.stages)
    return [(n, shapes, not consumers[n.sid]) for n in nests]


def featurize_raw(state, line_bytes: int = 64) -> np.ndarray:
    """Un-memoized rows of ``state`` (float64, before log scaling)."""
    return rows_for(state_jobs(state), line_bytes)


_STORE_MEMO = 16384        # rows of stores outside any compute_at, per extractor


def _store_key(job):
    """What decides the row of a store outside any compute_at, or None for an attached
    store.  Such a store's loops are one memoized ``nest._loop_geometry`` entry (for
    its atoms, body and whole root ranges); the entry's ``span`` array stands for them
    by its identity -- the memo holding the row holds that array too, so the id is
    not reused meanwhile -- and the rest is its annotations, auto-unroll step, the
    bound-shrunk shapes of the attached stages it reads and whether it is an output.

    Why: in a search round about half the stores outside any compute_at repeat one
    seen before (a tile-size mutation of an inner split leaves the outer stage as it
    was), so about a third of a batch's rows need not be computed again."""
    nest, shapes, is_output = job
    if nest.attached:
        return None
    reads = tuple(map(shapes.get, nest.info.access_keys)) if shapes else None
    return (id(nest.span), tuple(nest.ann), nest.max_unroll, reads, is_output)


class FeatureExtractor:
    """Featurizes States with an LRU memo keyed by (DAG, printed loop nest)."""

    def __init__(self, config: FeatureConfig | None = None):
        self.config = config or FeatureConfig()
        self._memo: OrderedDict = OrderedDict()
        self._stores: dict = {}

    def featurize(self, state) -> np.ndarray:
        """float32 matrix (rows, len(FEATURE_NAMES)), log-scaled."""
        return self.featurize_many([state])[0]

    def featurize_many(self, states) -> list:
        """Feature matrices of ``states`` (memo hits reused, misses computed in one batch)."""
        out: list = [None] * len(states)
        todo: list = []
        keys: dict = {}
        for i, st in enumerate(states):
            key = (id(st.dag), str(st))
            hit = self._memo.get(key)
            if hit is not None and hit[0] is st.dag:
                self._memo.move_to_end(key)
                out[i] = hit[1]
            elif key in keys:
                keys[key].append(i)
            else:
                keys[key] = [i]
                todo.append((key, st))
        if todo:
            jobs = [state_jobs(st) for _, st in todo]
            for (key, st), rows in zip(todo, self._rows_of(jobs)):
                rows.flags.writeable = False
                self._remember(key, st.dag, rows)
                for i in keys[key]:
                    out[i] = rows
        return out

    def _rows_of(self, jobs) -> list:
        """Each state's rows (float32, log-scaled) from its jobs: the rows of stores
        outside any compute_at seen before come from ``_stores`` (``_store_key``), the
        others are computed in one batch.  Each state gets a view: of the batch when no
        row was remembered, else of one gather of the batch's and the remembered rows."""
        stores = self._stores
        todo: list = []         # the jobs to compute
        reused: list = []       # the remembered rows taken
        order: list = []        # per row, state by state: its index in todo, or ~index
        bounds: list = [0]      # where each state's rows end in ``order``
        fresh: list = []        # (key, span, index in todo) of computed rows to remember
        for js in jobs:
            for job in js:
                key = _store_key(job)
                hit = None if key is None else stores.get(key)
                if hit is not None and hit[0] is job[0].span:
                    order.append(~len(reused))
                    reused.append(hit[1])
                else:
                    if key is not None:
                        fresh.append((key, job[0].span, len(todo)))
                    order.append(len(todo))
                    todo.append(job)
            bounds.append(len(order))
        raw = rows_for(todo, self.config.cache_line_bytes)
        raw[:, _LOG] = slog(raw[:, _LOG])
        raw = raw.astype(np.float32)
        if len(stores) + len(fresh) > _STORE_MEMO:
            stores.clear()
        for key, span, k in fresh:
            row = raw[k].copy()         # not a view: it would keep the whole batch alive
            row.flags.writeable = False
            stores[key] = (span, row)
        if not reused:
            # every row computed, in state order: each state's rows are a view
            return [raw[a:b] for a, b in zip(bounds, bounds[1:])]
        # one gather of the computed and the remembered rows into state order (a
        # stack per state was a tenth of featurizing); the states get views of it
        src = np.concatenate((raw, np.stack(reused)))
        idx = np.array(order, dtype=np.intp)
        remembered = idx < 0
        idx[remembered] = len(todo) + ~idx[remembered]
        gathered = src[idx]
        return [gathered[a:b] for a, b in zip(bounds, bounds[1:])]

    def _remember(self, key, dag, rows) -> None:
        self._memo[key] = (dag, rows)
        if len(self._memo) > self.config.cache_size:
            self._memo.popitem(last=False)


_DEFAULT = FeatureExtractor()


def featurize(state) -> np.ndarray:
    """Log-scaled float32 feature rows of ``state`` (module-level memo)."""
    return _DEFAULT.featurize(state)
