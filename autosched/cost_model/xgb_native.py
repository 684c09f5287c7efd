"""The part of xgboost the cost model uses, called through xgboost's C API with ctypes.

Why: importing the ``xgboost`` package costs 1.2-1.3 s here, 0.9 s of it scikit-learn
and scipy.stats, which xgboost imports for its estimators and the cost model never
uses.  A tuning call that trains in its first round (one that resumes a log, or the
second ``tune`` call of a process) waited for that import before it could search: a
second of search overhead, more than a round's search on small kernels.  The shared
library of the installed ``xgboost-cpu`` wheel loads in ~10 ms, and the model needs a
dozen of its functions.

Role: this module stands in for the ``xgboost`` module where ``boosting.py`` and
``xgb_model.py`` use it: ``DMatrix(X)`` of a float32 matrix, and ``Booster`` with the
methods they call (boosting with given gradients, margins, slicing, attributes,
in-place prediction, saving and loading raw models, pickling).  Each method makes the C
call the xgboost package's method of the same name makes, with the same arguments (its
JSON configurations included), so the boosters and predictions are the package's bit
for bit (the tests train both ways and compare).  ``Booster.to_xgboost()`` gives a user
an ``xgboost.Booster`` (importing the package then).

Invariants: the library is found next to the xgboost package without importing it
(``importlib.util.find_spec``) and loaded once per process, on first use; every call's
status is checked and a failure raises ``XGBoostCallError`` with xgboost's message;
results are copied out of xgboost's buffers (which its next call may reuse); a
``Booster`` pickles as xgboost's serialized booster, as the package's does.
"""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import threading

import numpy as np

from .base import CostModelError

__all__ = ["Booster", "DMatrix", "XGBoostCallError", "library_path"]

_ULONG = ctypes.c_uint64          # xgboost's bst_ulong
_LIB: list = []
_LOCK = threading.Lock()


class XGBoostCallError(CostModelError):
    """A call into xgboost's C API failed (the message is xgboost's)."""


def library_path() -> str:
    """The installed xgboost package's shared library (found without importing it)."""
    spec = importlib.util.find_spec("xgboost")
    dirs = list(spec.submodule_search_locations or ()) if spec is not None else []
    for d in dirs:
        path = os.path.join(d, "lib", "libxgboost.so")
        if os.path.isfile(path):
            return path
    raise XGBoostCallError("xgboost's shared library (xgboost/lib/libxgboost.so) was not "
                           f"found in {dirs or 'any installed xgboost package'}; install "
                           "xgboost-cpu")


def _lib() -> ctypes.CDLL:
    if not _LIB:
        with _LOCK:
            if not _LIB:
                lib = ctypes.cdll.LoadLibrary(library_path())
                lib.XGBGetLastError.restype = ctypes.c_char_p
                _LIB.append(lib)
    return _LIB[0]


def _call(name: str, *args) -> None:
    lib = _lib()
    if getattr(lib, name)(*args) != 0:
        raise XGBoostCallError(f"xgboost {name}: {lib.XGBGetLastError().decode()}")


def _jargs(**kwargs) -> bytes:
    """JSON arguments, encoded as the package encodes them (``make_jcargs``)."""
    return json.dumps(kwargs).encode()


def _interface(arr: np.ndarray) -> bytes:
    """The array interface JSON of ``arr`` (the package's ``array_interface``)."""
    return json.dumps(arr.__array_interface__).encode()


def _buffer(cptr, length: int) -> bytearray:
    out = bytearray(length)
    ctypes.memmove((ctypes.c_char * length).from_buffer(out), cptr, length)
    return out


def _prediction(shape, dims, preds) -> np.ndarray:
    dims_ = tuple(int(shape[i]) for i in range(dims.value))
    n = int(np.prod(dims_)) if dims_ else 0
    out = np.empty(dims_, dtype=np.float32)
    if n:
        ctypes.memmove(out.ctypes.data, preds, n * 4)
    return out


class DMatrix:
    """A DMatrix of a 2-D numeric array, NaN as missing (the package's ``DMatrix(X)``)."""

    def __init__(self, data, feature_names=None):
        if feature_names is not None:
            raise XGBoostCallError("DMatrix: feature names are not supported here")
        data = np.asarray(data)
        if data.ndim != 2:
            raise XGBoostCallError(f"DMatrix: expected a 2-D array, got shape {data.shape}")
        self._data = data                 # the C side may refer to it while it lives
        self.handle: ctypes.c_void_p | None = ctypes.c_void_p()
        _call("XGDMatrixCreateFromDense", _interface(data),
              _jargs(missing=float("nan"), nthread=-1, data_split_mode=0),
              ctypes.byref(self.handle))

    def num_row(self) -> int:
        out = _ULONG()
        _call("XGDMatrixNumRow", self.handle, ctypes.byref(out))
        return int(out.value)

    def __del__(self):
        if getattr(self, "handle", None) is not None and _LIB:
            _lib().XGDMatrixFree(self.handle)
            self.handle = None


class Booster:
    """The methods of ``xgboost.Booster`` the cost model calls (see the module
    docstring)."""

    def __init__(self, params=None, cache=(), model_file=None):
        self._create(cache)
        if isinstance(model_file, Booster):
            self._unserialize(model_file._serialize())
        elif isinstance(model_file, (bytes, bytearray)):
            self.load_model(model_file)
        elif model_file is not None:
            raise XGBoostCallError(f"Booster: model_file must be a Booster or raw bytes, "
                                   f"got {type(model_file).__name__}")
        # as the package's constructor: every booster validates its parameters
        self.set_param({**(params or {}), "validate_parameters": True})

    def _create(self, cache=()) -> None:
        dmats = (ctypes.c_void_p * max(1, len(cache)))(*[d.handle for d in cache])
        self.handle: ctypes.c_void_p | None = ctypes.c_void_p()
        _call("XGBoosterCreate", dmats, _ULONG(len(cache)), ctypes.byref(self.handle))

    def __del__(self):
        if getattr(self, "handle", None) is not None and _LIB:
            _lib().XGBoosterFree(self.handle)
            self.handle = None

    # ------------------------------------------------------------------ training
    def set_param(self, params: dict) -> None:
        for key, val in params.items():
            if val is not None:
                _call("XGBoosterSetParam", self.handle, str(key).encode(), str(val).encode())

    def boost(self, dtrain: DMatrix, iteration: int, *, grad, hess) -> None:
        """One boosting round with the given gradient statistics."""
        grad, hess = np.asarray(grad), np.asarray(hess)
        _call("XGBoosterTrainOneIter", self.handle, dtrain.handle, ctypes.c_int(iteration),
              _interface(grad), _interface(hess))

    def num_boosted_rounds(self) -> int:
        out = ctypes.c_int()
        _call("XGBoosterBoostedRounds", self.handle, ctypes.byref(out))
        return int(out.value)

    def __getitem__(self, val: slice) -> Booster:
        if not isinstance(val, slice) or (val.stop is not None and val.start is not None
                                          and val.stop < val.start):
            raise XGBoostCallError(f"Booster: only slices of layers are supported, got {val!r}")
        out = ctypes.c_void_p()
        _call("XGBoosterSlice", self.handle, ctypes.c_int(val.start or 0),
              ctypes.c_int(val.stop or 0), ctypes.c_int(val.step or 1), ctypes.byref(out))
        sliced = Booster.__new__(Booster)
        sliced.handle = out
        return sliced

    def set_attr(self, **kwargs) -> None:
        for key, value in kwargs.items():
            _call("XGBoosterSetAttr", self.handle, key.encode(),
                  None if value is None else str(value).encode())

    def attr(self, key: str):
        out, ok = ctypes.c_char_p(), ctypes.c_int()
        _call("XGBoosterGetAttr", self.handle, key.encode(), ctypes.byref(out),
              ctypes.byref(ok))
        return out.value.decode() if ok.value and out.value is not None else None

    def reset(self) -> Booster:
        _call("XGBoosterReset", self.handle)
        return self

    # ------------------------------------------------------------------ prediction
    def predict(self, data: DMatrix, *, output_margin: bool = False,
                training: bool = False) -> np.ndarray:
        args = json.dumps({"type": 1 if output_margin else 0, "training": training,
                           "iteration_begin": 0, "iteration_end": 0,
                           "strict_shape": False}).encode()
        shape, dims, preds = ctypes.POINTER(_ULONG)(), _ULONG(), ctypes.POINTER(ctypes.c_float)()
        _call("XGBoosterPredictFromDMatrix", self.handle, data.handle, args,
              ctypes.byref(shape), ctypes.byref(dims), ctypes.byref(preds))
        return _prediction(shape, dims, preds)

    def inplace_predict(self, data) -> np.ndarray:
        data = np.asarray(data)
        args = _jargs(type=0, training=False, iteration_begin=0, iteration_end=0,
                      missing=float("nan"), strict_shape=False, cache_id=0)
        shape, dims, preds = ctypes.POINTER(_ULONG)(), _ULONG(), ctypes.POINTER(ctypes.c_float)()
        _call("XGBoosterPredictFromDense", self.handle, _interface(data), args,
              ctypes.c_void_p(), ctypes.byref(shape), ctypes.byref(dims), ctypes.byref(preds))
        return _prediction(shape, dims, preds)

    # ------------------------------------------------------------------ persistence
    def save_raw(self, raw_format: str = "ubj") -> bytearray:
        length, cptr = _ULONG(), ctypes.POINTER(ctypes.c_char)()
        _call("XGBoosterSaveModelToBuffer", self.handle, _jargs(format=raw_format),
              ctypes.byref(length), ctypes.byref(cptr))
        return _buffer(cptr, length.value)

    def load_model(self, raw) -> None:
        buf = bytearray(raw)
        _call("XGBoosterLoadModelFromBuffer", self.handle,
              (ctypes.c_char * len(buf)).from_buffer(buf), _ULONG(len(buf)))

    def _serialize(self) -> bytearray:
        length, cptr = _ULONG(), ctypes.POINTER(ctypes.c_char)()
        _call("XGBoosterSerializeToBuffer", self.handle, ctypes.byref(length),
              ctypes.byref(cptr))
        return _buffer(cptr, length.value)

    def _unserialize(self, buf: bytearray) -> None:
        _call("XGBoosterUnserializeFromBuffer", self.handle,
              (ctypes.c_char * len(buf)).from_buffer(buf), _ULONG(len(buf)))

    def __getstate__(self) -> dict:
        return {"serialized": bytes(self._serialize())}

    def __setstate__(self, state: dict) -> None:
        self._create()          # as the package's: the serialized state holds the config
        self._unserialize(bytearray(state["serialized"]))

    def to_xgboost(self):
        """This booster as an ``xgboost.Booster`` (imports the xgboost package)."""
        xgb = importlib.import_module("xgboost")
        return xgb.Booster(model_file=self.save_raw("ubj"))
