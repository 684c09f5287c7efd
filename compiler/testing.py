"""``compiler.testing`` (TVM's ``tvm.testing``): the helpers CPU tutorials and tests import.

Role: a TVM script's ``tvm.testing.assert_allclose(c.numpy(), ref, rtol=1e-5)`` and
``if not tvm.testing.device_enabled(tgt): ...`` run unchanged.

Invariants: only the CPU exists here, so ``device_enabled`` is true exactly for targets of
kind "llvm" (or the device name "cpu") and ``enabled_targets()`` is ``[("llvm", cpu(0))]``.
``assert_allclose`` takes NDArrays or anything numpy takes and, as TVM's, first requires
equal shapes (numpy alone would broadcast ``(3,)`` against ``(1, 3)``), then raises
numpy's AssertionError with its report of the mismatching elements.
"""
from __future__ import annotations

import numpy as np

from .runtime.ndarray import Device, NDArray, cpu
from .target import Target

__all__ = ["assert_allclose", "device_enabled", "enabled_targets", "requires_llvm",
           "uses_gpu"]

_CPU_NAMES = ("llvm", "cpu")


def _as_numpy(x) -> np.ndarray:
    return x.numpy() if isinstance(x, NDArray) else np.asanyarray(x)


def assert_allclose(actual, desired, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """``|actual - desired| <= atol + rtol * |desired|`` elementwise, with equal shapes."""
    actual, desired = _as_numpy(actual), _as_numpy(desired)
    if actual.shape != desired.shape:
        raise AssertionError(f"assert_allclose: shapes differ: actual {actual.shape}, "
                             f"desired {desired.shape}")
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=True)


def device_enabled(target) -> bool:
    """True when ``target`` ("llvm -mcpu=...", a Target, "cpu") can run on this build."""
    if isinstance(target, Target):
        return target.kind.name in _CPU_NAMES
    if isinstance(target, Device):
        return target.device_type == 1
    if not isinstance(target, str):
        raise TypeError(f"device_enabled: target {target!r}: expected a string such as "
                        "'llvm' or a Target")
    words = target.split()
    return bool(words) and words[0] in _CPU_NAMES


def enabled_targets() -> list:
    """``[(target string, device)]`` for every target that runs here: only the CPU."""
    return [("llvm", cpu(0))]


def requires_llvm(func):
    """TVM's decorator for tests that need LLVM: it is always available here."""
    return func


def uses_gpu(func):
    """TVM's marker for tests that also run on GPUs; they run on the CPU here."""
    return func
