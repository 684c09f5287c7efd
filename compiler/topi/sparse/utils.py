"""Block-sparse matrices for tests and tuning, without scipy: random ones (TVM's
``topi.sparse.utils.random_bsr_matrix``) and dense ones converted
(``bsr_from_dense``, scipy's ``bsr_matrix(w, blocksize=...)``).

``BSRMatrix`` holds scipy's BSR layout: ``data`` (blocks, bs_r, bs_c), ``indices`` (the
block column of every block) and ``indptr`` (block row r owns blocks ``indptr[r]`` to
``indptr[r+1] - 1``, by increasing column); ``todense()`` expands it.
"""
from __future__ import annotations

import numpy as np

from ...errors import TEError


class BSRMatrix:
    """A block-sparse matrix in scipy's BSR layout (see the module doc)."""

    def __init__(self, data, indices, indptr, shape):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = tuple(shape)
        self.blocksize = tuple(data.shape[1:])

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    def todense(self) -> np.ndarray:
        bs_r, bs_c = self.blocksize
        out = np.zeros(self.shape, dtype=self.data.dtype)
        for r in range(len(self.indptr) - 1):
            for e in range(self.indptr[r], self.indptr[r + 1]):
                c = self.indices[e]
                out[r * bs_r:(r + 1) * bs_r, c * bs_c:(c + 1) * bs_c] = self.data[e]
        return out

    toarray = todense

    @classmethod
    def from_dense(cls, w, blocksize) -> BSRMatrix:
        """``w`` (2-D) in BSR form: every block holding a nonzero entry is stored, by
        block row and then column, as scipy's ``bsr_matrix(w, blocksize=blocksize)``."""
        w = np.asarray(w)
        bs_r, bs_c = (int(b) for b in blocksize)
        if w.ndim != 2 or bs_r < 1 or bs_c < 1 or w.shape[0] % bs_r or w.shape[1] % bs_c:
            raise TEError(f"bsr_from_dense: a matrix of shape {w.shape} does not divide into "
                          f"blocks of ({bs_r}, {bs_c}); expected a 2-D shape that is a "
                          "multiple of the block")
        rows, cols = w.shape[0] // bs_r, w.shape[1] // bs_c
        blocks = w.reshape(rows, bs_r, cols, bs_c).transpose(0, 2, 1, 3)
        keep = blocks.reshape(rows, cols, -1).any(axis=2)
        block_rows, indices = np.nonzero(keep)       # row-major: by row, then column
        indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int32)
        return cls(np.ascontiguousarray(blocks[block_rows, indices]),
                   indices.astype(np.int32), indptr, w.shape)

    def __repr__(self) -> str:
        return (f"BSRMatrix(shape={self.shape}, blocksize={self.blocksize}, "
                f"blocks={len(self.indices)})")


def bsr_from_dense(w, blocksize) -> BSRMatrix:
    """``BSRMatrix.from_dense``: scipy's ``bsr_matrix(w, blocksize=blocksize)``."""
    return BSRMatrix.from_dense(w, blocksize)


def random_bsr_matrix(m: int, n: int, bs_r: int, bs_c: int, density: float, dtype,
                      seed=None) -> BSRMatrix:
    """An ``m x n`` matrix of ``bs_r x bs_c`` blocks with about ``density`` of its entries
    stored (at least one block), at distinct random positions; uniform [0, 1) values.
    ``seed`` makes it reproducible (TVM's draws from numpy's global generator)."""
    for name, v in (("m", m), ("n", n), ("bs_r", bs_r), ("bs_c", bs_c)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise TEError(f"random_bsr_matrix {name}={v!r}: expected a positive int")
    if m % bs_r or n % bs_c:
        raise TEError(f"random_bsr_matrix: shape ({m}, {n}) is not a multiple of the block "
                      f"({bs_r}, {bs_c})")
    if not 0 < density <= 1:
        raise TEError(f"random_bsr_matrix density={density!r}: expected 0 < density <= 1")
    rng = np.random.default_rng(seed) if seed is not None else np.random.default_rng(
        np.random.randint(0, 2 ** 31))
    rows, cols = m // bs_r, n // bs_c
    n_blocks = min(rows * cols, int(density * m * n) // (bs_r * bs_c) + 1)
    chosen = np.sort(rng.choice(rows * cols, size=n_blocks, replace=False))
    block_rows, indices = np.divmod(chosen, cols)
    indptr = np.zeros(rows + 1, dtype=np.int32)
    np.add.at(indptr, block_rows + 1, 1)
    data = rng.random((n_blocks, bs_r, bs_c)).astype(dtype)
    return BSRMatrix(data, indices.astype(np.int32), np.cumsum(indptr).astype(np.int32),
                     (m, n))
