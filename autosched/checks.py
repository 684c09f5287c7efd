"""The one validator of numeric arguments and config fields in the auto-scheduler.

``check_number(value, what, low)`` returns ``value`` when it is a finite real number (an
int when ``integer``; never a bool) ``>= low`` (``> low`` when ``strict``), and raises
ValueError otherwise with a message that names the argument, the bad value and what
was expected: ``"LocalRunner number=0: expected an int >= 1"``.  ``check_fields`` does the
same for fields of a config dataclass, named ``"<Class> <field>"``.
"""
from __future__ import annotations

import math

__all__ = ["check_number", "check_fields"]


def check_number(value, what: str, low=None, *, integer: bool = False, strict: bool = False,
                 high=None, unit: str = ""):
    ok = not isinstance(value, bool) and (
        isinstance(value, int) if integer else
        isinstance(value, (int, float)) and math.isfinite(value))
    if ok and low is not None:
        ok = value > low if strict else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        kind = "an int" if integer else "a finite number" + (f" of {unit}" if unit else "")
        bounds = []
        if low is not None:
            bounds.append(f"{'>' if strict else '>='} {low:g}")
        if high is not None:
            bounds.append(f"<= {high:g}")
        raise ValueError(f"{what}={value!r}: expected {kind} {' and '.join(bounds)}".rstrip())
    return value


def check_fields(obj, names, low=None, *, integer: bool = False, strict: bool = False,
                 high=None) -> None:
    """``check_number`` on each named field of the config ``obj``."""
    for name in names:
        check_number(getattr(obj, name), f"{type(obj).__name__} {name}", low,
                     integer=integer, strict=strict, high=high)
