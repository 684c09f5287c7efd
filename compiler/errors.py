"""Exception classes of the compiler, one per layer.

Every message names the object involved, the bad value and what was expected, so a
user can fix the call without reading the compiler's source.
"""


class CompilerError(Exception):
    """Base class of every error the compiler raises on purpose."""


class TEError(CompilerError, ValueError):
    """A tensor-expression definition is malformed (bad shape, dtype, axis, ...)."""


class ScheduleError(CompilerError, ValueError):
    """A schedule primitive was used on the wrong stage, axis or in the wrong order."""


class LoweringError(CompilerError):
    """A schedule could not be lowered to a loop nest (bound inference, attach, ...)."""


class CodegenError(CompilerError):
    """A lowered function could not be turned into LLVM IR."""


class BuildError(CompilerError):
    """The LLVM module could not be verified, optimized or loaded."""


class PackedFuncError(CompilerError, ValueError):
    """A packed function is missing, registered twice, or got arguments it cannot decode."""
