"""features.loops.LoopBatch against a direct scalar transcription of its rules (the
per-row code it replaced), on the nests of sampled and mutated States of several
workloads, bit for bit."""
import random
from math import prod
from types import SimpleNamespace

import numpy as np
import pytest

import autosched as auto
from autosched import catalog
from autosched import state as S
from autosched.features import extract
from autosched.features.extract import state_jobs
from autosched.features.loops import ANN_BLOCK, MAX_UNROLL_DEPTH, N_POS, N_TAIL, LoopBatch
from autosched.search.mutation_rules import MUTATIONS, mutate


def _unrolled(ext, ann, n_outer, max_step):
    out, steps, depth = [], 1, 0
    for l in range(len(ext) - 1, n_outer - 1, -1):
        a = ann[l]
        if a == S.ANN_VECTORIZE:
            continue
        if a == S.ANN_UNROLL or (a == S.ANN_NONE and depth <= MAX_UNROLL_DEPTH
                                 and ext[l] * steps <= max_step):
            out.append(l)
            steps *= ext[l]
            depth += 1
        else:
            break
    return out


def _block(loops, ext, pos):
    row = [0.0] * ANN_BLOCK
    if not loops:
        row[3] = 1.0
        return row
    inner = max(loops)
    row[0], row[1], row[2] = len(loops), prod([ext[l] for l in loops]), ext[inner]
    row[3 + pos[inner]] = 1.0
    return row


def _scalar_row(nest, is_output):
    """(kept extents, kept indices, p, annotation block, tail) of one store."""
    keep = [l for l, e in enumerate(nest.ext) if e > 1]
    ext = [nest.ext[l] for l in keep]
    ann = [nest.ann[l] for l in keep]
    pos = [nest.pos[l] for l in keep]
    n_outer = sum(1 for l in keep if l < nest.n_outer)
    n = len(ext)
    p = float(prod(ext))
    block = (_block([l for l in range(n_outer, n) if ann[l] == S.ANN_VECTORIZE], ext, pos)
             + _block(_unrolled(ext, ann, n_outer, nest.max_unroll), ext, pos)
             + _block([l for l in range(n) if ann[l] == S.ANN_PARALLEL], ext, pos))
    par = [l for l in range(n) if ann[l] == S.ANN_PARALLEL]
    outer = float(prod(ext[:n_outer]))
    tail = [0.0] * 4
    if not is_output:
        elems = float(prod(nest.root_ext[:nest.info.n_spatial]))
        tail = [elems * nest.info.out_bytes, elems * outer, outer, p / outer]
    tail += [p, n, nest.max_unroll, float(prod(ext[:par[0]])) if par else 0.0]
    return ext, keep, p, block, tail


def _jobs(name, n_states=60, seed=0):
    spec = catalog.BUILTIN.get(name)
    args = spec.default_args if spec else (128, 128, 128)
    task = auto.SearchTask(func=name, args=args)
    pop = auto.SketchPolicy(task, seed=seed, verbose=0).sample_initial_population(n_states)
    rng = random.Random(seed)
    kids = [mutate(rng.choice(pop), rng, 2, MUTATIONS) for _ in range(n_states)]
    states = pop + [k for k in kids if k is not None]
    return [j for st in states for j in state_jobs(st)]


@pytest.mark.parametrize("name", ["matmul", "conv2d_nchw", "softmax", "depthwise_conv2d",
                                  "dense_bias_relu"])
def test_loop_batch_equals_the_scalar_rules(name):
    jobs = _jobs(name)
    bt = LoopBatch(jobs)
    assert bt.N == len(jobs)
    for i, (nest, _, is_output) in enumerate(jobs):
        ext, keep, p, block, tail = _scalar_row(nest, is_output)
        assert bt.p[i] == p
        assert bt.ann[i].tolist() == block
        assert bt.tail[i].tolist() == tail
        k = len(ext)
        assert bt.real[i].tolist() == [False] * (bt.L - k) + [True] * k
        assert bt.ext[i, bt.L - k:].tolist() == ext
        R = nest.info.n_root
        assert np.array_equal(bt.span[i, bt.L - k:, :R], nest.span[keep])
        assert np.array_equal(bt.step[i, bt.L - k:, :R], nest.step[keep])
        assert not bt.span[i, :bt.L - k].any() and not bt.span[i, :, R:].any()


def _nest_like(real, ext, ann, max_unroll):
    """A copy of ``real`` (a matmul store's nest) with the given own loops."""
    n, R = len(ext), real.info.n_root
    return SimpleNamespace(info=real.info, ext=ext, ann=ann, pos=[1] * n, n_outer=0,
                           max_unroll=max_unroll, root_ext=real.root_ext,
                           span=np.zeros((n, R)), step=np.zeros((n, R)))


@pytest.mark.parametrize("ann1, max_unroll, unrolled", [
    (S.ANN_NONE, 32, (1, 4.0)),          # 4 taken; 16 would make 64 steps > 32
    (S.ANN_NONE, 128, (3, 128.0)),       # 4, then 16 and 2 (the vectorized 8 skipped)
    (S.ANN_UNROLL, 4, (2, 64.0)),        # an explicit unroll is always taken; 2 is not
    (S.ANN_PARALLEL, 128, (1, 4.0)),     # a parallel loop ends the run
])
def test_unroll_emulation_stops_at_the_first_loop_it_cannot_take(ann1, max_unroll,
                                                                   unrolled):
    real = _jobs("matmul", n_states=1)[0][0]
    ext = [2, 16, 8, 4]
    ann = [S.ANN_NONE, ann1, S.ANN_VECTORIZE, S.ANN_NONE]
    bt = LoopBatch([(_nest_like(real, ext, ann, max_unroll), {}, True)])
    num, total = bt.ann[0, ANN_BLOCK], bt.ann[0, ANN_BLOCK + 1]
    assert (num, total) == unrolled
    assert bt.ann[0, ANN_BLOCK + 2] == 4.0                  # the innermost is 4
    assert bt.ann[0, :3].tolist() == [1.0, 8.0, 8.0]        # one vectorized loop of 8


def test_the_batch_layout_matches_the_feature_names():
    names = extract.FEATURE_NAMES
    vec0, end = names.index("vec_num"), names.index("parallel_pos_mixed") + 1
    assert end - vec0 == 3 * ANN_BLOCK and len(extract.POS_NAMES) == N_POS
    assert names[vec0 + ANN_BLOCK] == "unroll_num" and names[vec0 + 2 * ANN_BLOCK] == \
        "parallel_num"
    assert names[-N_TAIL:] == extract.TAIL_NAMES
