"""The loops of a batch of stores as padded numpy arrays: the per-row half of the features.

Role: ``LoopBatch(jobs)`` takes the (nest, shapes, is_output) jobs of many States (one
job per store) and computes, for all rows at once, what ``extract`` needs besides the
buffer analysis: the kept loops (extent > 1, as lowering drops the others) right-aligned
in ``L`` columns with their spans and steps, the loops' product ``p``, the annotation
block (feature group 2: vectorize, unroll, parallel) and the tail (group 6), plus each
row's op-static arrays gathered from its ``BodyInfo``.

Why arrays: a search round featurizes ~10^4 States; the per-row Python this replaces was
a quarter of featurizing.  Only building the padded inputs loops over rows (one list
append per loop), the rest is a few dozen numpy operations per batch.

Invariants: the results equal the scalar rules they vectorize, bit for bit (the tests
compare them with a direct transcription): every product is of integer extents exactly
representable in float64; a row's kept loops keep their order (outermost first); the
unroll emulation is ``compiler.passes.unroll``'s, innermost own loop first: vectorized
loops are skipped, an explicitly unrolled loop is always taken, a plain loop while the
depth is at most ``MAX_UNROLL_DEPTH`` and extent x steps so far stays within the stage's
``auto_unroll_max_step``, and the first loop that fails ends the run.
"""
from __future__ import annotations

import functools
from itertools import chain
from math import prod

import numpy as np

from compiler.passes.unroll import MAX_UNROLL_DEPTH

from .. import state as S
from .body import row_major_strides

N_POS = 8                   # annotation position codes (nest.POS_*)
ANN_BLOCK = 3 + N_POS       # per annotation: num, prod, len, position one-hot
N_TAIL = 8


class LoopBatch:
    """Padded loop and op arrays of a batch of jobs (see the module docstring)."""

    def __init__(self, jobs):
        nests = [n for n, _, _ in jobs]
        self.N = N = len(nests)
        self._group_ops(nests)
        self._raw_loops(nests)
        kept = self.E > 1
        self.n_kept = kept.sum(axis=1)
        self.L = max(int(self.n_kept.max(initial=0)), 1)
        self.p = self.E.prod(axis=1)
        self.ann = np.zeros((N, 3 * ANN_BLOCK))
        self._annotations(kept)
        self.tail = np.zeros((N, N_TAIL))
        self._tail(jobs, nests, kept)
        self._aligned(nests, kept)
        self._static()
        self._attached_shapes(jobs)

    # ------------------------------------------------------------------ inputs
    def _group_ops(self, nests) -> None:
        """``infos``: the distinct BodyInfos; ``gid``: each row's index into them."""
        index: dict = {}
        infos: list = []
        gid = []
        for n in nests:
            info = n.info
            g = index.get(id(info))
            if g is None:
                g = index[id(info)] = len(infos)
                infos.append(info)
            gid.append(g)
        self.infos, self.gid = infos, np.array(gid, dtype=np.int64)

    def _raw_loops(self, nests) -> None:
        """Every loop of every nest, left-aligned: E (extent, 1 as padding), ANN, POS,
        OWN (not one of the enclosing stages' loops) and ``valid``, the cells holding a
        loop."""
        lens = [len(n.ext) for n in nests]
        W = max(lens + [1])
        self.lens = np.array(lens, dtype=np.int64)
        total = int(self.lens.sum())
        # the loops' cells, row-major: the order of the nests' loops chained
        self.valid = np.arange(W)[None, :] < self.lens[:, None]
        self.E = np.ones((self.N, W))
        self.ANN = np.zeros((self.N, W), dtype=np.int64)
        self.POS = np.zeros((self.N, W), dtype=np.int64)
        self.E[self.valid] = np.fromiter(chain.from_iterable(n.ext for n in nests),
                                         np.float64, total)
        self.ANN[self.valid] = np.fromiter(chain.from_iterable(n.ann for n in nests),
                                           np.int64, total)
        self.POS[self.valid] = np.fromiter(chain.from_iterable(n.pos for n in nests),
                                           np.int64, total)
        n_outer = np.array([n.n_outer for n in nests], dtype=np.int64)
        self.OWN = np.arange(W)[None, :] >= n_outer[:, None]
        self.max_unroll = np.array([n.max_unroll for n in nests], dtype=np.float64)

    # ------------------------------------------------------------------ group 2
    def _annotations(self, kept) -> None:
        own = kept & self.OWN
        self._block(0, own & (self.ANN == S.ANN_VECTORIZE))
        self._block(ANN_BLOCK, self._unrolled(own))
        self._block(2 * ANN_BLOCK, kept & (self.ANN == S.ANN_PARALLEL))

    def _unrolled(self, own):
        """Mask of the own loops unrolled explicitly or by auto_unroll_max_step."""
        ann, E = self.ANN, self.E
        scan = own & (ann != S.ANN_VECTORIZE)          # the loops the emulation visits
        # innermost first: flip, then exclusive running depth and extent product
        f_scan, f_E, f_ann = scan[:, ::-1], E[:, ::-1], ann[:, ::-1]
        depth = np.cumsum(f_scan, axis=1) - f_scan
        factors = np.where(f_scan, f_E, 1.0)
        steps = np.cumprod(factors, axis=1) / factors
        ok = (f_ann == S.ANN_UNROLL) | ((f_ann == S.ANN_NONE) & (depth <= MAX_UNROLL_DEPTH)
                                        & (f_E * steps <= self.max_unroll[:, None]))
        failed = np.cumsum(f_scan & ~ok, axis=1) > 0   # at or after the first failure
        return (f_scan & ~failed)[:, ::-1]

    def _block(self, base: int, mask) -> None:
        """One annotation's columns: count, product and extent of the innermost such
        loop, and its position one-hot (position "none" when there is none)."""
        rows = np.arange(self.N)
        has = mask.any(axis=1)
        inner = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)
        self.ann[:, base] = mask.sum(axis=1)
        self.ann[:, base + 1] = np.where(has, np.where(mask, self.E, 1.0).prod(axis=1), 0.0)
        self.ann[:, base + 2] = np.where(has, self.E[rows, inner], 0.0)
        self.ann[rows, base + 3 + np.where(has, self.POS[rows, inner], 0)] = 1.0

    # ------------------------------------------------------------------ group 6
    def _tail(self, jobs, nests, kept) -> None:
        """alloc_size, alloc_prod, alloc_outer_prod, alloc_inner_prod (intermediate
        buffers only), then the loops' product, their number, auto_unroll_max_step and
        the product of the loops around the first parallel loop (0 without one)."""
        E, p = self.E, self.p
        outer = np.where(self.OWN, 1.0, E).prod(axis=1)
        inter = np.array([not is_output for _, _, is_output in jobs])
        elems = np.array([float(prod(n.root_ext[:n.info.n_spatial])) for n in nests])
        out_bytes = np.array([n.info.out_bytes for n in nests], dtype=np.float64)
        t = self.tail
        t[:, 0] = np.where(inter, elems * out_bytes, 0.0)
        t[:, 1] = np.where(inter, elems * outer, 0.0)
        t[:, 2] = np.where(inter, outer, 0.0)
        t[:, 3] = np.where(inter, p / outer, 0.0)
        t[:, 4], t[:, 5], t[:, 6] = p, self.n_kept, self.max_unroll
        par = kept & (self.ANN == S.ANN_PARALLEL)
        first = np.argmax(par, axis=1)
        before = np.arange(E.shape[1])[None, :] < first[:, None]
        t[:, 7] = np.where(par.any(axis=1), np.where(before, E, 1.0).prod(axis=1), 0.0)

    # ------------------------------------------------------------------ kept loops
    def _aligned(self, nests, kept) -> None:
        """Kept loops right-aligned in L columns (padding: extent 1, not real), with the
        span and step of every root axis (R: the most root axes of any op)."""
        N, L = self.N, self.L
        R = max(info.n_root for info in self.infos) if self.infos else 1
        self.ext = np.ones((N, L))
        self.real = np.zeros((N, L), dtype=bool)
        self.span, self.step = np.zeros((N, L, R)), np.zeros((N, L, R))
        rows, cols = np.nonzero(kept)
        rank = (np.cumsum(kept, axis=1) - 1)[rows, cols]
        dest = L - self.n_kept[rows] + rank
        self.ext[rows, dest] = self.E[rows, cols]
        self.real[rows, dest] = True
        # the nests' (loops, R_op) span/step arrays, chained per distinct R_op: their
        # rows are the group's loops in row-major order, as are (rows, dest) of the
        # kept ones
        flat_kept = kept[self.valid]
        by_roots: dict = {}
        for n in nests:
            by_roots.setdefault(n.info.n_root, []).append(n)
        if len(by_roots) > 1:
            loop_roots = np.repeat(np.array([n.info.n_root for n in nests]), self.lens)
            kept_roots = loop_roots[flat_kept]
        for r_op, group in by_roots.items():
            if len(by_roots) > 1:
                take, at = flat_kept[loop_roots == r_op], kept_roots == r_op
                g_rows, g_dest = rows[at], dest[at]
            else:
                take, g_rows, g_dest = flat_kept, rows, dest
            self.span[g_rows, g_dest, :r_op] = np.concatenate([n.span for n in group])[take]
            self.step[g_rows, g_dest, :r_op] = np.concatenate([n.step for n in group])[take]

    # ------------------------------------------------------------------ per op
    def _static(self) -> None:
        """The op-static arrays, filled once per op and gathered for every row."""
        infos = self.infos
        G, R = len(infos), self.span.shape[2]
        D = max([len(info.shape) for info in infos] + [1])
        B = max([len(info.accesses) for info in infos] + [1])
        A = np.zeros((G, D, R))
        shape, spread, strides = np.ones((G, D)), np.zeros((G, D)), np.zeros((G, D))
        member = np.zeros((G, D, B))
        eb, nt = np.ones((G, B)), np.zeros((G, B))
        kind, last = np.full((G, B), -1), np.zeros((G, B), dtype=int)
        for g, info in enumerate(infos):
            d, b = len(info.shape), len(info.accesses)
            A[g, :d, :info.n_root] = info.A
            shape[g, :d], strides[g, :d], spread[g, :d] = info.shape, info.strides, \
                info.spread
            member[g, :d, :b] = info.member
            eb[g, :b], nt[g, :b] = info.elem_bytes, info.n_tuples
            kind[g, :b], last[g, :b] = info.kind, info.last_dim
        gid = self.gid
        self.A, self.shape, self.spread, self.strides = A[gid], shape[gid], spread[gid], \
            strides[gid]
        self.member, self.eb, self.nt = member[gid], eb[gid], nt[gid]
        self.kind, self.last = kind[gid], last[gid]

    def _attached_shapes(self, jobs) -> None:
        """Rows reading an attached stage's buffer see its bound-shrunk shape (written
        in one assignment per number of dimensions).

        Why by index: a batch has a few hundred distinct bound-shrunk shapes for
        thousands of rows, so each distinct shape is converted to an array once and
        the rows gather theirs (6.8 against 8.0 us a state on conv2d's batches, where
        every row converted its own lists)."""
        by_len: dict = {}       # number of dims -> (rows, their entry, distinct entries)
        index: dict = {}        # id of a memoized (shape, strides) -> its position
        for i, (nest, shapes, _) in enumerate(jobs):
            info = nest.info
            if shapes and not shapes.keys().isdisjoint(info.access_keys):
                entry = _shape_and_strides(
                    tuple(map(shapes.get, info.access_keys, info.access_shapes)))
                rows, at, distinct = by_len.setdefault(len(entry[0]), ([], [], []))
                k = index.get(id(entry))
                if k is None:
                    k = index[id(entry)] = len(distinct)
                    distinct.append(entry)
                rows.append(i)
                at.append(k)
        for n, (rows, at, distinct) in by_len.items():
            table = np.array(distinct, dtype=np.float64)        # (distinct, 2, n)
            pick = table[np.array(at, dtype=np.int64)]
            self.shape[rows, :n] = pick[:, 0]
            self.strides[rows, :n] = pick[:, 1]


@functools.lru_cache(maxsize=4096)
def _shape_and_strides(shapes: tuple) -> tuple:
    """(all dimensions, their row-major strides) of the accessed buffers' ``shapes``,
    concatenated; memoized (a search round sees a few hundred distinct bound-shrunk
    shapes), so the shared lists are read-only."""
    shape: list = []
    strides: list = []
    for sh in shapes:
        shape.extend(sh)
        strides.extend(row_major_strides(sh))
    return shape, strides
