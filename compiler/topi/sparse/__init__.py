"""Sparse-matrix helpers (TVM's ``topi.sparse``)."""
from . import utils
from .utils import BSRMatrix, bsr_from_dense, random_bsr_matrix

__all__ = ["utils", "BSRMatrix", "bsr_from_dense", "random_bsr_matrix"]
