"""Exceptions and warnings of the ``records`` package.

Invariants:
- every error raised on purpose by ``records`` is a ``RecordError`` (a ``ValueError``),
  so callers can catch one class;
- a message names the file and line when they are known, the field (by name and by its
  JSON path such as ``r[1]``), the bad value (shortened) and what was expected;
- the location is attached late (``RecordError.at``) because the parser of one line does
  not know which file or line it came from, only the reader does;
- errors copy and pickle with all their attributes (they may cross process boundaries in
  a parallel tuner), although subclasses take keyword-rich constructors.
"""
import reprlib

# A bad value is echoed in messages; a multi-kilobyte step list would drown the message.
_MAX_VALUE_CHARS = 60
# reprlib bounds the work as well as the text: a value parsed from a hostile line may be
# nested hundreds of levels deep or hold a million elements, and a plain repr() of it
# would recurse that deep or build megabytes only to cut them.
_REPR = reprlib.Repr()
_REPR.maxlevel = 4
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = 20
_REPR.maxstring = _REPR.maxlong = _REPR.maxother = _MAX_VALUE_CHARS


def short_repr(value) -> str:
    """``repr(value)`` cut to a readable length (the tail is replaced by '...').

    Bounded in time and depth whatever the value (see ``_REPR``)."""
    text = _REPR.repr(value)
    if len(text) <= _MAX_VALUE_CHARS:
        return text
    return text[:_MAX_VALUE_CHARS - 3] + "..."


class RecordError(ValueError):
    """A record, a log line or a log file is not what the format requires.

    Attributes: ``reason`` (the message without location), ``path`` and ``lineno``
    (1-based physical line), both ``None`` when unknown.
    """

    def __init__(self, reason: str, *, path=None, lineno=None):
        self.reason = reason
        self.path = None if path is None else str(path)
        self.lineno = lineno
        super().__init__(self._message())

    def _message(self) -> str:
        if self.path is not None and self.lineno is not None:
            return f"{self.path}:{self.lineno}: {self.reason}"
        if self.path is not None:
            return f"{self.path}: {self.reason}"
        if self.lineno is not None:
            return f"line {self.lineno}: {self.reason}"
        return self.reason

    def at(self, path, lineno) -> "RecordError":
        """A copy of this error located at ``path``:``lineno`` (same class, same reason)."""
        state = dict(self.__dict__, path=None if path is None else str(path), lineno=lineno)
        return _restore(type(self), state)

    def __reduce__(self):
        # The default rebuilds from self.args, which does not fit the constructors.
        return _restore, (type(self), dict(self.__dict__))


def _restore(cls, state: dict) -> RecordError:
    """Rebuild an error of class ``cls`` from its attribute dict (copy, pickle)."""
    err = cls.__new__(cls)
    err.__dict__.update(state)
    err.args = (err._message(),)
    return err


class RecordSyntaxError(RecordError):
    """A line is not a JSON object (malformed or non-UTF-8 text)."""


class TruncatedLineError(RecordSyntaxError):
    """The last line of a file has no newline and does not parse: a torn write."""


class RecordFieldError(RecordError):
    """A JSON value has the wrong type, length or range for its field."""

    def __init__(self, field: str, value, expected: str, *, path=None, lineno=None):
        self.field = field
        self.value = value
        self.expected = expected
        reason = f"{field}: got {short_repr(value)}, expected {expected}"
        super().__init__(reason, path=path, lineno=lineno)


class RecordWarning(UserWarning):
    """A bad line was skipped by a non-strict reader (the message names file and line)."""
