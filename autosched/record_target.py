"""The Target of a tuning log record's target string.

Why: TVM writes target options this compiler does not model (``-link-params=0`` in the
logs of several TVM releases, ``-libs=...``, ``-model=...``); they change nothing when a
record's steps are replayed, so a log that has them must still load, resume and apply.

Invariants: only unknown ``-name=value`` options of an llvm target are ignored
(``compiler.target.parse_target_lenient``), and a warning names them once per target
string and process; an unknown kind (another device) or a bad value raises BuildError.
"""
from __future__ import annotations

import warnings

from compiler.target import Target, parse_target_lenient

__all__ = ["record_target"]

_WARNED: set = set()      # target strings whose ignored options were reported


def record_target(text) -> Target:
    """The Target of a log record's ``text`` (see the module docstring)."""
    target, ignored = parse_target_lenient(text)
    if ignored and text not in _WARNED:
        _WARNED.add(text)
        warnings.warn(f"target {text!r} of a log record: {' '.join(ignored)} ignored (no "
                      "meaning for this compiler's llvm target)", stacklevel=2)
    return target
