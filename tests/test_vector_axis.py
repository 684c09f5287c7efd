"""The vector-axis variant of multi-level tiling (``sketch_rules.vector_axis``).

When the last spatial axis of a tiled cache stage cannot fill the target's vectors (a
conv2d's 56-wide rows on 16 float lanes) and another spatial axis can, with every read
contiguous or constant along it once the weights are rewritten, the tiling rules add a
sketch whose innermost tile of that axis is the last loop, the one vectorized.
"""
import random

import numpy as np
import pytest
from test_layout_rewrite import _conv_ref

import autosched as auto
import compiler
from autosched import catalog
from autosched.layout_rewrite import LayoutRewriteOption as L
from autosched.search.init_rules import sample_state
from autosched.search.sketch_rules import generate_sketches, task_sketch_options, vector_axis

AVX512, AVX2 = "llvm -mcpu=skylake-avx512", "llvm -mcpu=haswell"


@pytest.mark.parametrize("func,args,target,rewrite,expected", [
    # 10-wide rows, 16 output channels: the channels on 16 and on 8 lanes
    (catalog.conv2d_nchw, (1, 8, 10, 10, 16, 3, 3), AVX512, None, 1),
    (catalog.conv2d_nchw, (1, 8, 10, 10, 16, 3, 3), AVX2, None, 1),
    # rows that fill the vectors: Ansor's sketches alone
    (catalog.conv2d_nchw, (1, 8, 16, 16, 16, 3, 3), AVX512, None, None),
    (catalog.conv2d_nchw, (1, 8, 16, 16, 16, 3, 3), AVX2, None, None),
    # without the layout rewrite the weight would be read with a stride along the channels
    (catalog.conv2d_nchw, (1, 8, 10, 10, 16, 3, 3), AVX512, L.NO_REWRITE, None),
    # no channel count that fills a vector
    (catalog.conv2d_nchw, (1, 8, 10, 10, 12, 3, 3), AVX512, None, None),
    # matmul with 56 columns: A is read with a stride along the rows
    (catalog.matmul, (64, 56, 64), AVX512, None, None),
])
def test_vector_axis(func, args, target, rewrite, expected):
    task = auto.SearchTask(func=func, args=args, target=target, layout_rewrite_option=rewrite)
    state = task.compute_dag.init_state()
    opts = task_sketch_options(task)
    sid = len(state.stages) - 1
    assert vector_axis(state, sid, opts["vector_bytes"], opts["rewrite_layout"]) == expected
    n_ansor = len(generate_sketches(state, 2))
    n_here = len(generate_sketches(state, 2, **opts))
    # the variant goes with the cache-write sketches (two fusion levels), not with the
    # stage written in place
    assert n_here == n_ansor + (2 if expected is not None else 0)


def _variant_states(task, n, seed):
    """Sampled states of the variant sketches: their cache stage's last loop is the
    innermost tile of the output channels."""
    opts = task_sketch_options(task)
    sketches = generate_sketches(task.compute_dag.init_state(), 2, **opts)
    variants = [s for s in sketches if _last_loop(s).startswith("o_c.")]
    assert len(variants) == 2
    rng, out = random.Random(seed), []
    while len(out) < n:
        try:
            out.append(sample_state(rng.choice(variants), rng, 2))
        except auto.InvalidStepError:
            continue
    return out


def _last_loop(state) -> str:
    cache = [st for st in state.stages if st.op.name.endswith(".local")]
    return cache[0].iters[-1].name if cache else ""


def test_variant_states_vectorize_the_channels_and_match_numpy():
    # a shape on the host's own lanes: rows two wider than a vector, channels one vector
    lanes = compiler.target.host_target().vector_lanes(32)
    task = auto.SearchTask(func=catalog.conv2d_nchw, args=(1, 4, lanes + 2, lanes + 2,
                                                           lanes, 3, 3), target="llvm")
    dag = task.compute_dag
    rng = np.random.default_rng(3)
    data = [rng.standard_normal([int(s.value) for s in t.shape]).astype("float32")
            for t in dag.tensors[:-1]]
    expected = _conv_ref(*data, 1)
    vectorized = 0
    for state in _variant_states(task, 6, seed=5):
        assert _last_loop(state).startswith("o_c.")
        vectorized += f"vectorize {_last_loop(state)}" in str(state)
        for option in (L.REWRITE_FOR_PRE_TRANSFORMED, L.INSERT_TRANSFORM_STAGE):
            sch, args = dag.apply_steps_from_state(state, layout_rewrite=option)
            ins = list(data)
            if option == L.REWRITE_FOR_PRE_TRANSFORMED:
                for tr in dag.layout_transforms(state):
                    ins[tr.arg_index] = tr.apply(ins[tr.arg_index])
            out = np.zeros(expected.shape, "float32")
            compiler.build(sch, args, "llvm")(*ins, out)
            np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    assert vectorized >= 3
