"""Small type/range checkers shared by the record dataclasses and the step schemas.

Each checker returns the value (unchanged, or a tuple for sequences) or raises
``RecordFieldError`` naming the field label it was given, e.g. ``"error_no (r[1])"``.
Invariants: ``bool`` is never accepted where an integer or a number is expected (JSON
``true`` is not ``1`` for TVM's reader); numbers are finite (no NaN or infinity, which
JSON cannot represent portably); integers fit in 64 bits (TVM reads them as ``int64``,
and a 4,000-digit "cost" would overflow ``float`` in every sum).
"""
import math

from records.errors import RecordFieldError

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def is_int(value) -> bool:
    """True for Python ints that are not bools and fit in a signed 64-bit integer."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and INT64_MIN <= value <= INT64_MAX)


def is_number(value) -> bool:
    """True for finite ints/floats that are not bools."""
    if is_int(value):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _range_text(minimum, maximum) -> str:
    if minimum is not None and maximum is not None:
        return f" in {minimum}..{maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


def expect_int(value, field: str, *, minimum=None, maximum=None) -> int:
    """An int (not bool) within the optional inclusive bounds."""
    if type(value) is int and minimum is not None and minimum <= value <= INT64_MAX \
            and (maximum is None or value <= maximum):
        return value                     # the common case, decided without further calls
    ok = is_int(value)
    ok = ok and (minimum is None or value >= minimum)
    ok = ok and (maximum is None or value <= maximum)
    if not ok:
        too_big = isinstance(value, int) and not isinstance(value, bool) and not is_int(value)
        kind = "a 64-bit integer" if too_big else "an integer"
        raise RecordFieldError(field, value, kind + _range_text(minimum, maximum))
    return value


def expect_number(value, field: str, *, minimum=0) -> "int | float":
    """A finite int or float >= ``minimum`` (``None``: no bound). Its type is kept."""
    if not is_number(value) or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise RecordFieldError(field, value, "a finite number" + bound)
    return value


def expect_str(value, field: str, *, allow_empty: bool = False) -> str:
    """A string, non-empty unless ``allow_empty``."""
    if not isinstance(value, str) or (not allow_empty and not value):
        raise RecordFieldError(field, value, "a string" if allow_empty else "a non-empty string")
    return value


def expect_seq(value, field: str, *, min_len=None, max_len=None) -> tuple:
    """A list or tuple whose length is within the optional bounds, returned as a tuple."""
    if not isinstance(value, (list, tuple)):
        raise RecordFieldError(field, value, "a list" + _len_text(min_len, max_len))
    if (min_len is not None and len(value) < min_len) or (
            max_len is not None and len(value) > max_len):
        raise RecordFieldError(field, value, "a list" + _len_text(min_len, max_len)
                               + f" (it has {len(value)})")
    return tuple(value)


def _len_text(min_len, max_len) -> str:
    if min_len is None and max_len is None:
        return ""
    if min_len == max_len:
        return f" of {min_len} elements"
    return " of" + _range_text(min_len, max_len) + " elements"


def expect_int_seq(value, field: str, *, minimum=None) -> tuple:
    """A list of ints, each >= ``minimum`` when given; element errors name the index."""
    items = expect_seq(value, field)
    if minimum is not None and all(type(v) is int and minimum <= v <= INT64_MAX
                                   for v in items):
        return items                     # the common case, without a call per element
    for index, item in enumerate(items):
        expect_int(item, f"{field}[{index}]", minimum=minimum)
    return items
