"""TVM's task input buffers: real data for some placeholders of a task, measured with
instead of random inputs.

Why: a kernel whose inputs carry meaning -- indices into another tensor, a sparse
matrix's row pointers -- reads out of bounds, or takes another path, on random data;
``SearchTask(..., task_inputs={name: array})`` gives the data to use.

Invariants (TVM's semantics where it has them):
- buffers are registered per (workload key, name) in a process-wide table; a name
  already registered keeps its data unless ``overwrite``; as TVM's, a name not found
  under a task's key is looked up under ``"default"`` (and ``SearchTask(task_inputs=
  [names])`` takes names registered earlier); ``save_to_file`` also writes
  it to ``DEFAULT_DIRECTORY`` as ``.npy`` (no pickle), where ``get_task_input_buffer``
  finds it in a later process (a resumed tuning run);
- a name names an argument of the task: a placeholder of that name (when no other has
  it), or what a registered check function (``register_task_input_check_func``) maps to
  it, as TVM's ``prepare_input_map``; a name that names none, or data of another shape
  or dtype, is an error when the task is made, never silently random data;
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
from .extents import bound_tensors

__all__ = ["register_task_input_buffer", "get_task_input_buffer",
           "register_task_input_check_func", "DEFAULT_DIRECTORY"]

DEFAULT_DIRECTORY = "~/.cache/tensor-autosched/task_inputs"
DEFAULT_KEY = "default"  # TVM's: buffers registered under it serve every task
_TABLE: dict = {}        # workload key -> {name: read-only np.ndarray}
_LOADED: dict = {}       # in a run worker: file path -> array
_CHECK_FUNCS: dict = {}  # name -> f(args) -> {tensor: input name}


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


def _lookup(workload_key: str, input_name: str):
    arr = _TABLE.get(workload_key, {}).get(input_name)
    if arr is not None:
        return arr
    path = _file(workload_key, input_name)
    if os.path.exists(path):
        arr = np.load(path, allow_pickle=False)
        arr.flags.writeable = False
        _TABLE.setdefault(workload_key, {})[input_name] = arr
    return arr


def get_task_input_buffer(workload_key: str, input_name: str) -> np.ndarray:
    """The registered data of ``input_name``, from this process or from its file; as
    TVM's, data registered under the workload key ``"default"`` serves every task."""
    arr = _lookup(workload_key, input_name)
    if arr is None and workload_key != DEFAULT_KEY:
        arr = _lookup(DEFAULT_KEY, input_name)
    if arr is not None:
        return arr
    raise TaskInputError(f"task input {input_name!r} of {workload_key} is not registered in "
                         f"this process (under its workload key or {DEFAULT_KEY!r}) and has "
                         f"no file {_file(workload_key, input_name)}; pass it to SearchTask("
                         "task_inputs=...)")


def register_task_input_check_func(func_name, f=None, override: bool = False):
    """TVM's decorator: register ``f(args) -> {tensor: input name}``, which names the
    arguments of a task (its ComputeDAG's tensors) that task inputs replace; used as
    ``@register_task_input_check_func`` or with a name.  A name registered twice raises
    unless ``override``."""
    if callable(func_name):
        f, func_name = func_name, getattr(func_name, "__name__", repr(func_name))
    if not isinstance(func_name, str):
        raise TaskInputError(f"register_task_input_check_func({func_name!r}): expected a "
                             "function or its name")

    def register(fn):
        if func_name in _CHECK_FUNCS and not override:
            raise TaskInputError(f"task input check function {func_name!r} is already "
                                 "registered (override=True replaces it)")
        _CHECK_FUNCS[func_name] = fn
        return fn
    return register(f) if f is not None else register


def checked_input_names(tensors) -> dict:
    """{argument position: input name} that the registered check functions give
    ``tensors`` (placeholder names left out): the arguments whose data matter."""
    index = {id(t): k for k, t in enumerate(tensors)}
    out: dict = {}
    for fn in _CHECK_FUNCS.values():
        for t, name in fn(list(tensors)).items():
            if id(t) in index:
                out[index[id(t)]] = name
    return out


def input_positions(tensors) -> dict:
    """{input name: argument positions} of a task's arguments ``tensors``: a placeholder
    is named by its op name when no other placeholder has it, then the registered check
    functions name arguments (overriding), as TVM's ``prepare_input_map``."""
    counts: dict = {}
    for t in tensors:
        if isinstance(t.op, PlaceholderOp):
            counts[t.op.name] = counts.get(t.op.name, 0) + 1
    named = {k: t.op.name for k, t in enumerate(tensors)
             if isinstance(t.op, PlaceholderOp) and counts[t.op.name] == 1}
    named.update(checked_input_names(tensors))
    out: dict = {}
    for k, name in sorted(named.items()):
        out.setdefault(name, []).append(k)
    return out


def check_task_inputs(tensors, names) -> None:
    """Each name names an argument of ``tensors`` (``input_positions``) whose shape and
    dtype are the data's (``names``: {name: array})."""
    positions = input_positions(tensors)
    for name, arr in names.items():
        if name not in positions:
            raise TaskInputError(f"task input {name!r}: no argument of the task has that "
                                 f"name (named: {sorted(positions)}); a task input names "
                                 "the placeholder it replaces, or a registered check "
                                 "function maps it")
        for k in positions[name]:
            t = tensors[k]
            shape = tuple(int(d) for d in t.shape)
            if arr.shape != shape or arr.dtype != np.dtype(t.dtype):
                raise TaskInputError(f"task input {name!r}: data {arr.shape} {arr.dtype}, "
                                     f"but the placeholder is {shape} {t.dtype}")


def arrays_for(task) -> tuple:
    """``((argument position, name, array), ...)`` of ``task``'s inputs (for runners that
    send the data themselves, e.g. over RPC)."""
    names = getattr(task, "task_input_names", ())
    if not names:
        return ()
    positions = input_positions(task.compute_dag.tensors)
    return tuple((k, name, get_task_input_buffer(task.workload_key, name))
                 for name in names for k in positions.get(name, ()))


def files_for(task, directory: str, written: dict) -> tuple:
    """``((argument position, path), ...)`` of ``task``'s inputs, each written once to
    ``directory`` (``written``: the caller's {(workload key, name): (array, path)} memo;
    a registered array is read-only and replaced, never changed, so the array object
    decides)."""
    names = getattr(task, "task_input_names", ())
    if not names:
        return ()
    positions = input_positions(task.compute_dag.tensors)
    out: list = []
    for name in names:
        arr = get_task_input_buffer(task.workload_key, name)
        key = (task.workload_key, name)
        hit = written.get(key)
        if hit is None or hit[0] is not arr:
            fd, path = tempfile.mkstemp(dir=directory, prefix="input_", suffix=".npy")
            with os.fdopen(fd, "wb") as f:
                np.save(f, arr, allow_pickle=False)
            hit = written[key] = (arr, path)
        out.extend((k, name, hit[1]) for k in positions.get(name, ()))
    return tuple(out)


def load_into(meta, arrays, fixed) -> None:
    """In a run worker: copy each fixed input file into the argument at its position."""
    for k, name, path in fixed:
        data = _LOADED.get(path)
        if data is None:
            data = _LOADED[path] = np.load(path, allow_pickle=False)
        p = meta.params[k]
        if data.shape != tuple(p.shape) or data.dtype != p.np_dtype:
            raise TaskInputError(
                f"task input {name!r} is {data.shape} {data.dtype}, but the candidate's "
                f"parameter {p.name!r} is {tuple(p.shape)} {p.np_dtype} (a rewritten "
                "layout? tune the task with layout_rewrite_option=NO_REWRITE)")
        arrays[k][...] = data


def check_loop_bounds_have_data(task) -> None:
    """A loop whose extent reads a placeholder (a sparse kernel's ``indptr``) runs out of
    bounds on random data: such placeholders must be given as task inputs."""
    tensors = task.compute_dag.tensors
    given = set()
    positions = input_positions(tensors) if getattr(task, "task_input_names", ()) else {}
    for name in getattr(task, "task_input_names", ()):
        given.update(positions.get(name, ()))
    for op, t in bound_tensors(task.compute_dag.ops):
        k = next((i for i, a in enumerate(tensors) if a.op is t.op), None)
        if k is None or k not in given:
            raise TaskInputError(
                f"task {task.workload_key}: the loop bounds of {op.name} read "
                f"{t.op.name} (argument {k}), which has no task input; random data would "
                "make every candidate read out of bounds. Give its data with "
                "SearchTask(..., task_inputs={name: array}) (for topi's sparse_dense, "
                "TVM's 'sparse_dense_bsr_..._W_indptr' names work)")
