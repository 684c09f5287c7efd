"""TVM's task input buffers: real data for some placeholders of a task, measured with
instead of random inputs.

Why: a kernel whose inputs carry meaning -- indices into another tensor, a sparse
matrix's row pointers -- reads out of bounds, or takes another path, on random data;
``SearchTask(..., task_inputs={name: array})`` gives the data to use.

Invariants (TVM's semantics where it has them):
- buffers are registered per (workload key, name) in a process-wide table; a name
  already registered keeps its data unless ``overwrite``; ``save_to_file`` also writes
  it to ``DEFAULT_DIRECTORY`` as ``.npy`` (no pickle), where ``get_task_input_buffer``
  finds it in a later process (a resumed tuning run);
- here a name must be the name of one placeholder of the task, with its shape and dtype
  (TVM also matches names through registered check functions, which are not
  supported: an unknown name is an error, never silently random data);
- the runner hands the data to its worker as an ``.npy`` file it writes once per
  registered array (in a directory it removes when it closes); the worker loads each
  file once and copies it into the candidate's argument.
"""
from __future__ import annotations

import hashlib
import os
import tempfile

import numpy as np

from compiler.te.tensor import PlaceholderOp

from .errors import AutoSchedError

__all__ = ["register_task_input_buffer", "get_task_input_buffer", "DEFAULT_DIRECTORY"]

DEFAULT_DIRECTORY = "~/.cache/tensor-autosched/task_inputs"
_TABLE: dict = {}        # workload key -> {name: read-only np.ndarray}
_LOADED: dict = {}       # in a run worker: file path -> array


class TaskInputError(AutoSchedError):
    """A task input that is not a placeholder of its task, or has another shape/dtype."""


def as_input_array(data, what: str) -> np.ndarray:
    """A read-only copy of ``data`` (a numpy array or an NDArray)."""
    arr = data.numpy() if hasattr(data, "numpy") else data
    if not isinstance(arr, np.ndarray):
        raise TaskInputError(f"{what}: expected a numpy array or an NDArray, got "
                             f"{type(data).__name__}")
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    return arr


def _file(workload_key: str, name: str) -> str:
    """Where ``save_to_file`` keeps an input (``DEFAULT_DIRECTORY`` read at each call)."""
    digest = hashlib.sha1(workload_key.encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return os.path.join(os.path.expanduser(DEFAULT_DIRECTORY), f"{digest}_{safe}.npy")


def register_task_input_buffer(workload_key: str, input_name: str, input_data,
                               overwrite: bool = False, save_to_file: bool = False):
    """Register ``input_data`` as input ``input_name`` of ``workload_key``; returns the
    registered array (the earlier one when the name was taken and not ``overwrite``)."""
    table = _TABLE.setdefault(workload_key, {})
    if input_name in table and not overwrite:
        return table[input_name]
    arr = as_input_array(input_data, f"task input {input_name!r}")
    table[input_name] = arr
    if save_to_file:
        path = _file(workload_key, input_name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            np.save(f, arr, allow_pickle=False)
        os.replace(tmp, path)      # atomic: a reader never sees half a file
    return arr


def get_task_input_buffer(workload_key: str, input_name: str) -> np.ndarray:
    """The registered data of ``input_name``, from this process or from its file."""
    arr = _TABLE.get(workload_key, {}).get(input_name)
    if arr is not None:
        return arr
    path = _file(workload_key, input_name)
    if os.path.exists(path):
        arr = np.load(path, allow_pickle=False)
        arr.flags.writeable = False
        _TABLE.setdefault(workload_key, {})[input_name] = arr
        return arr
    raise TaskInputError(f"task input {input_name!r} of {workload_key} is not registered in "
                         f"this process and has no file {path}; pass it to SearchTask("
                         "task_inputs=...)")


def check_task_inputs(tensors, names) -> None:
    """Each name is one placeholder of ``tensors`` with the registered data's shape and
    dtype (``names``: {name: array})."""
    placeholders: dict = {}
    for t in tensors:
        if isinstance(t.op, PlaceholderOp):
            placeholders.setdefault(t.op.name, []).append(t)
    for name, arr in names.items():
        found = placeholders.get(name, [])
        if len(found) != 1:
            what = "no placeholder" if not found else f"{len(found)} placeholders"
            raise TaskInputError(f"task input {name!r}: the task has {what} of that name "
                                 f"(placeholders: {sorted(placeholders)}); a task input "
                                 "names the placeholder it replaces")
        t = found[0]
        shape = tuple(int(d) for d in t.shape)
        if arr.shape != shape or arr.dtype != np.dtype(t.dtype):
            raise TaskInputError(f"task input {name!r}: data {arr.shape} {arr.dtype}, but "
                                 f"the placeholder is {shape} {t.dtype}")


def files_for(task, directory: str, written: dict) -> tuple:
    """``((name, path), ...)`` of ``task``'s inputs, each written once to ``directory``
    (``written``: the caller's {(workload key, name): (array, path)} memo; a registered
    array is read-only and replaced, never changed, so the array object decides)."""
    out = []
    for name in getattr(task, "task_input_names", ()):
        arr = get_task_input_buffer(task.workload_key, name)
        key = (task.workload_key, name)
        hit = written.get(key)
        if hit is None or hit[0] is not arr:
            fd, path = tempfile.mkstemp(dir=directory, prefix="input_", suffix=".npy")
            with os.fdopen(fd, "wb") as f:
                np.save(f, arr, allow_pickle=False)
            hit = written[key] = (arr, path)
        out.append((name, hit[1]))
    return tuple(out)


def load_into(meta, arrays, fixed) -> None:
    """In a run worker: copy each fixed input file into the argument of that name."""
    by_name = dict(fixed)
    for p, arr in zip(meta.params, arrays):
        path = by_name.get(p.name)
        if path is None:
            continue
        data = _LOADED.get(path)
        if data is None:
            data = _LOADED[path] = np.load(path, allow_pickle=False)
        if data.shape != tuple(p.shape) or data.dtype != p.np_dtype:
            raise TaskInputError(
                f"task input {p.name!r} is {data.shape} {data.dtype}, but the candidate's "
                f"parameter is {tuple(p.shape)} {p.np_dtype} (a rewritten layout? tune "
                "the task with layout_rewrite_option=NO_REWRITE)")
        arr[...] = data
