"""Devices and NDArrays (TVM's ``tvm.cpu``, ``tvm.device``, ``tvm.nd``).

Only the CPU exists here.  An ``NDArray`` owns a C-contiguous, 64-byte-aligned numpy
array on it; ``numpy()`` returns a copy (as TVM does), ``copyfrom`` writes into it, and
compiled modules accept NDArrays wherever they accept numpy arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CompilerError
from .module import empty_aligned

__all__ = ["Device", "cpu", "device", "NDArray", "array", "empty"]


@dataclass(frozen=True)
class Device:
    device_type: int = 1       # kDLCPU
    device_id: int = 0

    MASK2STR = {1: "cpu"}

    def __repr__(self) -> str:
        return f"{self.MASK2STR.get(self.device_type, self.device_type)}({self.device_id})"

    @property
    def exist(self) -> bool:
        return self.device_type == 1

    def sync(self) -> None:
        """Kernels run synchronously on the CPU: nothing to wait for."""


def cpu(dev_id: int = 0) -> Device:
    return Device(1, int(dev_id))


def device(dev_type="cpu", dev_id: int = 0) -> Device:
    """``tvm.device("cpu")`` / ``tvm.device("llvm")``: only the CPU exists here."""
    name = str(dev_type).split()[0]
    if name not in ("cpu", "llvm", "1") and dev_type != 1:
        raise CompilerError(f"device {dev_type!r}: only the CPU ('cpu' or 'llvm') is supported "
                            "on this build")
    return cpu(dev_id)


class NDArray:
    """A tensor on a device (TVM's ``tvm.nd.NDArray``)."""

    __slots__ = ("_data", "device")

    def __init__(self, data: np.ndarray, dev: Device | None = None):
        self._data = data
        self.device = dev or cpu()

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def dtype(self) -> str:
        return str(self._data.dtype)

    def numpy(self) -> np.ndarray:
        return self._data.copy()

    asnumpy = numpy

    def copyfrom(self, source) -> NDArray:
        src = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if src.shape != self.shape:
            raise ValueError(f"NDArray.copyfrom: shape {src.shape} does not match {self.shape}")
        self._data[...] = src
        return self

    def copyto(self, target):
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        return array(self._data, target)

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"<tvm.nd.NDArray shape={self.shape}, {self.device}>\n{self._data!r}"


def array(arr, device: Device | None = None) -> NDArray:
    """A new NDArray holding a copy of ``arr`` (numpy array, list or NDArray).

    ``device`` is TVM's keyword name; it may also be given positionally."""
    src = arr.numpy() if isinstance(arr, NDArray) else np.asarray(arr)
    data = empty_aligned(src.shape, src.dtype)
    data[...] = src
    return NDArray(data, device)


def empty(shape, dtype="float32", device: Device | None = None) -> NDArray:
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    return NDArray(empty_aligned(shape, dtype), device)
