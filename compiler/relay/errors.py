"""Exception classes of the graph level (``compiler.relay``).

Every message names the node (operator and argument, or variable), the bad value and
what was expected.
"""
from ..errors import CompilerError

__all__ = ["RelayError", "RelayTypeError", "RelayInputError", "UnknownOpError"]


class RelayError(CompilerError, ValueError):
    """Base class of the errors the graph level raises on purpose."""


class RelayTypeError(RelayError):
    """Type inference failed: an operator got arguments of the wrong shape or dtype."""


class UnknownOpError(RelayError, KeyError):
    """An operator name is not registered."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class RelayInputError(RelayError):
    """A graph executor input is missing, unknown, or has the wrong shape or dtype."""
