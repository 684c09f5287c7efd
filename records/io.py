"""Reading and writing tuning logs (JSON lines, one ``Record`` per line).

Invariants:
- a writer emits each record as one whole line with a single ``os.write`` on an
  ``O_APPEND`` descriptor (no user-space buffer), so a finished record is in the file as
  soon as ``write`` returns and an interrupt (Ctrl-C, a crash) cannot leave half of a
  line buffered; several writers, in sequence or in parallel, never interleave inside a
  line;
- if a file ends with a torn line (no final newline), a new writer first ends that line,
  so the next record never glues onto the fragment and is never lost;
- readers are lazy, never execute anything from the file (``json.loads`` only), skip
  blank lines silently and report each bad line with the file and line number: as a
  ``RecordWarning`` (or to ``on_error``) and go on, or by raising under ``strict=True``;
- a final line without a newline that does not parse is reported as a
  ``TruncatedLineError`` (a torn write), any other bad line as a syntax or field error;
- reading holds at most one line of ``MAX_LINE_BYTES`` in memory: a longer line is
  skipped (reported with its number) without being read whole, and writers refuse to
  write a record that long, so what one writes the other reads;
- a reader raises nothing but ``RecordError`` (strict mode) and ``OSError`` (the file):
  whatever a line holds, it is skipped with its line number, never an abort.
"""
import os
import tempfile
import warnings

from records.errors import (
    RecordError,
    RecordSyntaxError,
    RecordWarning,
    TruncatedLineError,
    short_repr,
)
from records.record import Record
from records.selection import best_of, target_matches

_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
# A record is a few kilobytes (60 KB with 2,000 steps); a megabyte is no record.
MAX_LINE_BYTES = 1 << 20
_SKIP_CHUNK = 1 << 16


def _check_record(record, path, index: int) -> Record:
    if not isinstance(record, Record):
        raise TypeError(f"{path}: item {index} to write is a {type(record).__name__}, "
                        "expected records.Record")
    return record


def _encode(record: Record, compact: bool) -> bytes:
    # json.dumps escapes control characters, so the line cannot contain a newline.
    data = (record.to_json(compact=compact) + "\n").encode("utf-8")
    if len(data) > MAX_LINE_BYTES:
        raise RecordError(f"record of workload {short_repr(record.workload_key)} with "
                          f"{len(record.input.steps)} steps is {len(data)} bytes as JSON, "
                          f"expected at most {MAX_LINE_BYTES} (readers skip longer lines)")
    return data


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data``; a regular file takes it in one call, the loop covers short writes."""
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, data[written:])


class RecordWriter:
    """Append records to ``path``, one flushed line each; a context manager.

    ``fsync=True`` also forces each line to disk (survives a power loss, costs ~ms).
    ``compact=True`` writes without spaces after separators (TVM's readers accept both).
    """

    def __init__(self, path, *, fsync: bool = False, compact: bool = False):
        self.path = os.fspath(path)
        self._fsync = fsync
        self._compact = compact
        self._fd: int | None = os.open(self.path, _OPEN_FLAGS, 0o644)
        try:
            self._end_torn_line()
        except BaseException:
            os.close(self._fd)
            raise

    def _end_torn_line(self) -> None:
        """Terminate a torn last line left by an earlier crash (see module invariants)."""
        fd = self._fd
        assert fd is not None
        if os.fstat(fd).st_size == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            last = f.read(1)
        if last != b"\n":
            _write_all(fd, b"\n")

    @property
    def closed(self) -> bool:
        return self._fd is None

    def write(self, record: Record) -> None:
        """Append one record as one line."""
        if self._fd is None:
            raise RecordError(f"{self.path}: write to a closed RecordWriter")
        data = _encode(_check_record(record, self.path, 0), self._compact)
        size = os.fstat(self._fd).st_size
        try:
            _write_all(self._fd, data)
        except OSError:
            # e.g. a full disk after a partial write: cut the torn line so the log ends
            # with its last whole record
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise
        if self._fsync:
            os.fsync(self._fd)

    def write_many(self, records) -> int:
        """Append every record of an iterable; returns how many were written."""
        count = 0
        for record in records:
            self.write(record)
            count += 1
        return count

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RecordReader:
    """Lazily iterate the records of ``path`` (see the module invariants).

    ``strict=True`` raises the first ``RecordError``; otherwise each bad line goes to
    ``on_error(error)`` when given, else to ``warnings.warn(..., RecordWarning)``.
    """

    def __init__(self, path, *, strict: bool = False, on_error=None):
        self.path = os.fspath(path)
        self.strict = strict
        self.on_error = on_error

    def __iter__(self):
        for _, record in self.numbered():
            yield record

    def numbered(self):
        """Yield ``(line_number, record)`` pairs; line numbers are 1-based."""
        with open(self.path, "rb") as f:
            for lineno, raw in enumerate(_physical_lines(f), start=1):
                if type(raw) is int:
                    self._report(RecordSyntaxError(
                        f"line is {raw} bytes long, expected at most {MAX_LINE_BYTES} "
                        "(a record is a few kilobytes)", path=self.path, lineno=lineno))
                    continue
                if not raw.strip() or raw.lstrip().startswith(b"#"):
                    continue                  # blank and comment lines (TVM logs have them)
                try:
                    record = _parse_line(raw)
                except RecordError as err:
                    self._report(err.at(self.path, lineno))
                    continue
                yield lineno, record

    def _report(self, err: RecordError) -> None:
        if self.strict:
            raise err
        if self.on_error is not None:
            self.on_error(err)
        else:
            warnings.warn(f"skipping bad log line: {err}", RecordWarning, stacklevel=4)


def _physical_lines(f):
    """Yield each line of the binary file ``f`` (newline included), or, for a line longer
    than ``MAX_LINE_BYTES``, its length in bytes: such a line is read in chunks and
    dropped, so memory stays bounded whatever the file holds."""
    readline = f.readline
    while True:
        raw = readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        length = len(raw)
        while not raw.endswith(b"\n"):
            raw = readline(_SKIP_CHUNK)
            if not raw:
                break
            length += len(raw)
        yield length


def _parse_line(raw: bytes) -> Record:
    """Parse one physical line (with its newline, if any)."""
    torn = not raw.endswith(b"\n")
    try:
        text = raw.decode("utf-8")
        return Record.from_json(text)
    except UnicodeDecodeError as err:
        failure = RecordSyntaxError(f"line is not UTF-8 text (byte {err.start})")
    except RecordSyntaxError as err:
        failure = err
    if torn:
        raise TruncatedLineError("truncated last line (no newline at end of file; the "
                                 f"writer was probably interrupted): {failure.reason}")
    raise failure


def load_records(path, *, strict: bool = False, on_error=None):
    """Iterate the records of a log lazily (``RecordReader`` semantics)."""
    return iter(RecordReader(path, strict=strict, on_error=on_error))


def save_records(path, records, *, append: bool = True, fsync: bool = False,
                 compact: bool = False) -> int:
    """Write records to ``path``; returns how many were written.

    ``append=True`` appends through a ``RecordWriter``. ``append=False`` replaces the file
    atomically: lines go to a temporary file beside it, renamed over ``path`` only when
    every record was written, so a failure leaves the old file intact.
    """
    if append:
        with RecordWriter(path, fsync=fsync, compact=compact) as writer:
            return writer.write_many(records)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        count = 0
        with os.fdopen(fd, "wb") as f:
            for count, record in enumerate(records, start=1):
                f.write(_encode(_check_record(record, path, count - 1), compact))
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return count


def load_best_record(path, workload_key: str, target: "str | None" = None, *,
                     target_match: str = "exact", strict: bool = False,
                     on_error=None) -> "Record | None":
    """The best valid record of ``workload_key`` in the log, or ``None``.

    Best is the lowest mean cost among records with ``error_no == 0`` (earliest on ties).
    ``target=None`` accepts any target; otherwise targets are compared with
    ``target_matches(record.target, target, target_match)``: ``"exact"`` (whole string,
    whitespace-normalized, the default), ``"kind"`` (first word only, e.g. ``llvm``) or
    ``"compatible"`` (kind and CPU; see ``records.selection``).
    """
    if target is not None:
        target_matches(target, target, target_match)  # reject a bad mode before reading
    candidates = (r for r in RecordReader(path, strict=strict, on_error=on_error)
                  if r.workload_key == workload_key
                  and (target is None or target_matches(r.target, target, target_match)))
    return best_of(candidates)
