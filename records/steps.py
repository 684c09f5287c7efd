"""Schemas of the transform-step records stored in a log's state (``i[1][1]``).

A step record is a list whose first element is its code and whose other elements are
the step's fields, exactly as TVM's auto-scheduler writes them
(``src/auto_scheduler/transform_step.cc``). This module only checks shapes; what a step
*means* is the auto-scheduler's business (``autosched.steps``).

Invariants:
- ``STEP_FIELDS`` lists every known code with its field names and kinds, in record order;
- a validated step is a tuple; nested lists become tuples, so records are hashable;
- ids (stage, iterator, step indices) are integers >= 0; flags (``inner_to_outer``,
  ``factor_or_nparts``) are the integers 0/1 that TVM writes, never JSON booleans;
- ``AN``'s annotation is an integer (TVM's ``IteratorAnnotation`` enum) or a string
  (a readable name); both round-trip unchanged.
"""
from records.errors import RecordFieldError
from records.validate import (
    INT64_MAX,
    expect_int,
    expect_int_seq,
    expect_seq,
    expect_str,
    is_int,
)

# Field kinds.
ID = "id"                    # int >= 0: a stage, iterator or step index
INT = "int"                  # any int
FLAG = "flag"                # int 0 or 1
STR = "str"                  # non-empty string (pragma, memory scope)
ID_LIST = "id_list"          # list of ids
LENGTHS = "lengths"          # list of split lengths, ints >= 1
EXTENT = "extent"            # int >= 0 or null (an unknown extent)
ANNOTATION = "annotation"    # int >= 0 or non-empty string

STEP_FIELDS: dict = {
    "AN": (("stage", ID), ("iter", ID), ("annotation", ANNOTATION)),
    "FU": (("stage", ID), ("fused_ids", ID_LIST)),
    "PR": (("stage", ID), ("iter", ID), ("pragma", STR)),
    "RE": (("stage", ID), ("order", ID_LIST)),
    "SP": (("stage", ID), ("iter", ID), ("extent", EXTENT), ("lengths", LENGTHS),
           ("inner_to_outer", FLAG)),
    "FSP": (("stage", ID), ("iter", ID), ("src_step", ID), ("n_split", ID)),
    "FFSP": (("stage", ID), ("iter", ID), ("src_steps", ID_LIST), ("level", ID),
             ("factor_or_nparts", FLAG)),
    "SA": (("stage", ID), ("iter", ID), ("factor", INT), ("offset", INT)),
    "CA": (("stage", ID), ("target_stage", ID), ("target_iter", ID)),
    "CI": (("stage", ID),),
    "CR": (("stage", ID),),
    "CHR": (("stage", ID), ("scope", STR), ("reader_stages", ID_LIST)),
    "CHW": (("stage", ID), ("scope", STR)),
    "RF": (("stage", ID), ("iter", ID), ("factor_iter", ID)),
}

STEP_CODES = tuple(STEP_FIELDS)
# Kinds an int >= 0 always satisfies (a FLAG also needs <= 1).
_NON_NEGATIVE_INT_KINDS = frozenset((ID, INT, FLAG, EXTENT, ANNOTATION))
_KINDS = {code: tuple(kind for _, kind in fields) for code, fields in STEP_FIELDS.items()}


def _check_field(kind: str, value, field: str):
    """Validate one field value of kind ``kind``; returns it (sequences as tuples)."""
    if kind == ID:
        return expect_int(value, field, minimum=0)
    if kind == INT:
        return expect_int(value, field)
    if kind == FLAG:
        return expect_int(value, field, minimum=0, maximum=1)
    if kind == STR:
        return expect_str(value, field)
    if kind == ID_LIST:
        return expect_int_seq(value, field, minimum=0)
    if kind == LENGTHS:
        return expect_int_seq(value, field, minimum=1)
    if kind == EXTENT:
        return None if value is None else expect_int(value, field, minimum=0)
    if kind == ANNOTATION:
        if isinstance(value, str) and value:
            return value
        if is_int(value) and value >= 0:
            return value
        raise RecordFieldError(field, value, "an integer >= 0 or a non-empty string")
    raise AssertionError(f"unknown field kind {kind!r}")  # a bug in STEP_FIELDS


def validate_step(step, index: int, where: str = "steps") -> tuple:
    """Check step record number ``index`` and return it as a (nested) tuple.

    ``where`` prefixes field labels, e.g. ``"steps[3] (i[1][1][3])"``. Labels are only
    built for an error: a log holds millions of steps and nearly all of them are fine.
    """
    items = expect_seq(step, f"{where}[{index}]", min_len=1) \
        if type(step) is not list or not step else step
    code = items[0]
    if not isinstance(code, str) or code not in STEP_FIELDS:
        raise RecordFieldError(f"{where}[{index}][0] (step code)", code,
                               "one of " + ", ".join(STEP_CODES))
    fields = STEP_FIELDS[code]
    if len(items) != len(fields) + 1:
        names = ", ".join(name for name, _ in fields)
        raise RecordFieldError(f"{where}[{index}]", step, f"[{code!r}, {names}] "
                               f"({len(fields) + 1} elements, it has {len(items)})")
    checked: list = [code]
    position = 0
    for kind in _KINDS[code]:
        position += 1
        value = items[position]
        if type(value) is int and 0 <= value <= (1 if kind is FLAG else INT64_MAX) \
                and kind in _NON_NEGATIVE_INT_KINDS:
            checked.append(value)        # the most common fields, checked inline
        else:
            name = fields[position - 1][0]
            checked.append(_check_field(kind, value,
                                        f"{where}[{index}][{position}] ({code} {name})"))
    return tuple(checked)


def step_to_list(step: tuple) -> list:
    """A validated step as JSON-ready nested lists."""
    return [list(v) if isinstance(v, tuple) else v for v in step]
