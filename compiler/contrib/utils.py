"""TVM's ``tvm.contrib.utils``: ``tempdir()`` makes a temporary directory for build outputs.

Invariant: the directory is removed when the TempDirectory is garbage collected, at
interpreter exit, on ``remove()`` or at the end of a ``with`` block -- whichever comes
first -- unless ``keep_for_debug=True``.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref

__all__ = ["TempDirectory", "tempdir"]


class TempDirectory:
    """A temporary directory; ``relpath(name)`` is the path of ``name`` inside it."""

    def __init__(self, custom_path=None, keep_for_debug: bool = False):
        if custom_path is not None:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = os.path.abspath(os.fspath(custom_path))
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="tas-tvm-")
        self.keep_for_debug = keep_for_debug
        # A finalizer, not __del__: it also runs at interpreter exit and never twice.
        self._cleanup = weakref.finalize(self, _remove, None if keep_for_debug or
                                         custom_path is not None else self.temp_dir)

    def relpath(self, name: str) -> str:
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list:
        return os.listdir(self.temp_dir)

    def remove(self) -> None:
        """Delete the directory now (a directory given as custom_path is kept)."""
        self._cleanup()

    def __enter__(self) -> TempDirectory:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"TempDirectory({self.temp_dir!r})"


def _remove(path) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


def tempdir(custom_path=None, keep_for_debug: bool = False) -> TempDirectory:
    """A new TempDirectory (TVM's ``utils.tempdir()``)."""
    return TempDirectory(custom_path, keep_for_debug)
