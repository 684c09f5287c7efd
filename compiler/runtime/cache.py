"""On-disk cache of compiled object code.

Role: let ``compile_ir`` skip LLVM entirely when the same IR was already compiled for the
same target, opt level and toolchain (tuning rebuilds identical candidates often, and test
runs rebuild the same kernels).

Invariants:
- The key is sha256 over (format version, llvmlite version, LLVM version, ``str(target)``,
  triple, feature string, opt level) followed by the IR text.  Anything that can change the
  machine code is in the key, so a hit is always safe to load.
- An entry is ``MAGIC + sha256(payload) + payload``.  A short, foreign or corrupted file
  fails the check and counts as a miss (and is removed, best effort), never as an error.
- Writes are atomic: a temporary file in the same directory, then ``os.replace``; readers in
  other processes see either no entry or a whole one.
- The cache is an optimisation only: any OS error while reading or writing is swallowed
  (counted in ``errors``) and compilation proceeds as if the cache were absent.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ..target import Target

FORMAT_VERSION = 1
MAGIC = b"TASOBJ\x01\n"
_DIGEST = 32
DEFAULT_DIRECTORY = "~/.cache/tensor-autosched/objects"


class ObjectCache:
    """A directory of object files addressed by content hash.

    ``hits``, ``misses``, ``writes`` and ``errors`` count what happened, for tests and stats.
    """

    def __init__(self, directory=None):
        if directory is None:
            directory = DEFAULT_DIRECTORY
        if not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"ObjectCache directory {directory!r}: expected a str or path")
        self.directory = Path(directory).expanduser()
        self.hits = self.misses = self.writes = self.errors = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ObjectCache({str(self.directory)!r})"

    @staticmethod
    def key(ir_text: str, target: Target, opt_level: int) -> str:
        """Hex sha256 identifying the object compiled from these inputs."""
        header = json.dumps([FORMAT_VERSION, llvmlite.__version__, list(llvm.llvm_version_info),
                             str(target), target.triple, target.features, int(opt_level)])
        h = hashlib.sha256(header.encode())
        h.update(b"\n")
        h.update(ir_text.encode())
        return h.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.obj"

    def get(self, key: str):
        """The cached object bytes, or None on a miss (absent, unreadable or corrupt)."""
        p = self.path(key)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            self._count("misses")
            return None
        except OSError:
            self._count("misses", "errors")
            return None
        payload = _unpack(data)
        if payload is None:
            self._count("misses", "errors")
            try:      # a corrupt entry would otherwise be re-read and rejected forever
                p.unlink()
            except OSError:
                pass
            return None
        self._count("hits")
        return payload

    def put(self, key: str, obj: bytes) -> bool:
        """Store ``obj`` under ``key`` atomically; False if the disk refused."""
        tmp = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".obj", dir=self.directory)
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(obj).digest() + obj)
            os.replace(tmp, self.path(key))
            tmp = None
        except OSError:
            self._count("errors")
            return False
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        self._count("writes")
        return True

    def clear(self) -> int:
        """Remove every entry (and stale temporaries); returns how many files went."""
        n = 0
        try:
            entries = list(self.directory.iterdir())
        except OSError:
            return 0
        for p in entries:
            if p.suffix == ".obj":
                try:
                    p.unlink()
                    n += 1
                except OSError:
                    pass
        return n

    def _count(self, *names) -> None:
        with self._lock:
            for n in names:
                setattr(self, n, getattr(self, n) + 1)


def _unpack(data: bytes):
    head = len(MAGIC) + _DIGEST
    if len(data) < head or not data.startswith(MAGIC):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(MAGIC):head]:
        return None
    return payload


class _DefaultCache:
    """Sentinel meaning "the process-wide default cache" (see ``set_default_cache``)."""

    def __repr__(self) -> str:
        return "DEFAULT_CACHE"


DEFAULT_CACHE = _DefaultCache()
_default: dict = {"cache": None, "set": False}
_default_lock = threading.Lock()


def default_cache():
    """The process-wide cache: ``ObjectCache()`` unless ``set_default_cache`` changed it."""
    with _default_lock:
        if not _default["set"]:
            _default["cache"] = ObjectCache()
            _default["set"] = True
        return _default["cache"]


def set_default_cache(cache) -> None:
    """Make ``cache`` (an ObjectCache, or None to disable caching) the process default."""
    if cache is not None and not isinstance(cache, ObjectCache):
        raise TypeError(f"set_default_cache({cache!r}): expected an ObjectCache or None")
    with _default_lock:
        _default["cache"] = cache
        _default["set"] = True


def resolve_cache(cache):
    """Turn a ``cache=`` argument (DEFAULT_CACHE, None or ObjectCache) into ObjectCache|None."""
    if cache is DEFAULT_CACHE:
        return default_cache()
    if cache is None or isinstance(cache, ObjectCache):
        return cache
    raise TypeError(f"cache={cache!r}: expected an ObjectCache, None or DEFAULT_CACHE")
