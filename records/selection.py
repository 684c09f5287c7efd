"""Choosing records: which is best, and which target strings match.

Invariants:
- "best" means the lowest ``Record.mean_cost`` among valid records (``error_no == 0``);
  failed records are never best, even when every record failed (the answer is ``None``);
- ties keep the earliest record, so results do not depend on anything but log order;
- target matching is explicit (``mode``): ``"exact"`` compares the whole target strings
  with runs of whitespace collapsed; ``"kind"`` compares only the first word (the target
  kind, e.g. ``llvm``), ignoring options such as ``-mcpu`` and ``-keys``; ``"compatible"``
  compares the kind and the CPU (``-mcpu`` and ``-mattr`` where both strings give them),
  ignoring ``-keys``, ``-num-cores`` and other options: a TVM log line for
  ``"llvm -keys=cpu"`` serves a build for ``"llvm -mcpu=znver3 -num-cores=2"``.
"""
from records.errors import RecordError
from records.record import Record

TARGET_MATCH_MODES = ("exact", "kind", "compatible")
_CPU_OPTIONS = ("-mcpu=", "-mattr=")


def target_kind(target: str) -> str:
    """The target kind: the first word of the target string (``""`` for a blank one)."""
    words = target.split()
    return words[0] if words else ""


def _cpu_options(target: str) -> dict:
    return {w.partition("=")[0]: w.partition("=")[2] for w in target.split()[1:]
            if w.startswith(_CPU_OPTIONS)}


def target_matches(record_target: str, wanted: str, mode: str = "exact") -> bool:
    """Whether a record's target string matches ``wanted`` under ``mode``."""
    if mode == "exact":
        return record_target.split() == wanted.split()
    if mode == "kind":
        return target_kind(record_target) == target_kind(wanted)
    if mode == "compatible":
        if target_kind(record_target) != target_kind(wanted):
            return False
        mine, theirs = _cpu_options(record_target), _cpu_options(wanted)
        return all(mine[k] == theirs[k] for k in mine.keys() & theirs.keys())
    raise RecordError(f"target match mode {mode!r} is unknown, expected one of "
                      + ", ".join(TARGET_MATCH_MODES))


def is_better(candidate: Record, incumbent: "Record | None") -> bool:
    """True when ``candidate`` is valid and strictly cheaper than ``incumbent``."""
    if not candidate.is_valid:
        return False
    return incumbent is None or candidate.mean_cost < incumbent.mean_cost


def best_of(records) -> "Record | None":
    """The best record of an iterable (see the module invariants), or ``None``."""
    best = None
    for record in records:
        if is_better(record, best):
            best = record
    return best
