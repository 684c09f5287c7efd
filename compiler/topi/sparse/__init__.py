"""Sparse-matrix helpers (TVM's ``topi.sparse``)."""
from . import utils
from .utils import BSRMatrix, random_bsr_matrix

__all__ = ["utils", "BSRMatrix", "random_bsr_matrix"]
