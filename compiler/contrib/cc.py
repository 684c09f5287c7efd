"""TVM's ``tvm.contrib.cc``: ``create_shared(output, objects, options=None, cc=None)`` links
objects (such as ``Module.save("x.o")``) into a shared library with the system C compiler;
the implementation, which also links the runtime libraries the objects import, is
``compiler.runtime.toolchain``."""
from ..runtime.toolchain import create_shared, find_cc


def get_cc() -> str:
    """The C compiler ``create_shared`` uses by default (TVM's ``cc.get_cc``)."""
    return find_cc()


__all__ = ["create_shared", "get_cc"]
