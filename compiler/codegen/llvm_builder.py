"""Text builders for one LLVM module and for the functions inside it.

Role: ``ModuleContext`` collects everything global (declarations, extra function
definitions such as outlined parallel workers and math kernels, loop metadata, the
target's function attributes); ``FunctionBuilder`` accumulates the instructions of one
function as lines of text.  The expression/statement emitters are mixins on top of
``FunctionBuilder`` (see llvm_function.py).

Invariants:
- every global symbol is declared or defined exactly once: declarations and foreign
  definitions (mathlib text) are deduplicated by symbol name, because LLVM rejects a
  second ``declare`` of the same function;
- local value names are ``%<hint><n>`` with a per-function counter, never bare numbers
  (numbered values would have to be dense and in order);
- ``block`` is always the label of the block instructions are currently appended to,
  so phi nodes can name their real predecessors after nested control flow;
- allocas go to the entry block (``allocas``) so they are allocated once per call and
  can be promoted by mem2reg / SROA;
- pure instructions are deduplicated by text only within the current block (a value
  defined in the block dominates the rest of it); loads, calls, phis never are;
- a function outlined from another (parallel body) sees the parent's bindings through
  ``lookup``, which records each one it uses as a new parameter (``captured``).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, ClassVar

from ..errors import CodegenError
from . import mathlib as _mathlib
from .llvm_types import global_name, local_hint

# Our attribute groups use high numbers so they never clash with groups in foreign
# IR text (mathlib) that starts numbering at #0.
ATTR_FUNC = "#900"
ATTR_ENTRY = "#901"

# Instructions that read memory, have side effects or must stay where they are.
_IMPURE = ("load", "call", "phi", "alloca", "store")

_SYM_CALL = re.compile(r'@("[^"]+"|[A-Za-z0-9_.$]+)\s*\(')
_SYM_DEF = re.compile(r'^\s*@("[^"]+"|[A-Za-z0-9_.$]+)\s*=')


class ModuleContext:
    """Global state of one generated module."""

    def __init__(self, target):
        self.target = target
        self.decls: dict = {}       # symbol -> declare line
        self.defs: dict = {}        # symbol -> full definition text (workers, math)
        self.globals: dict = {}     # key -> global line (constants, attributes of mathlib)
        self.metadata: list = []
        # ids of the For nodes LLVM must not auto-vectorize (set per PrimFunc)
        self.divided_loops: set = set()
        self.dtypes: dict = {}      # binary node -> dtype (see ExprMixin.dtype_of)
        self._md = 1000             # metadata ids; high to stay clear of foreign text
        self._names: dict = {}
        self._errors: dict = {}     # PrimFunc name -> error messages (status codes 1..n)

    # ---------------------------------------------------------------- symbols
    def declare(self, sym: str, line: str) -> str:
        if sym in self.defs:
            raise CodegenError(f"codegen: function {sym} is defined in this module but the "
                               f"generated code also needs the external function {sym}; "
                               "rename the function")
        self.decls.setdefault(sym, line)
        return sym

    def intrinsic(self, name: str, ret: str, args: tuple) -> str:
        """Declare ``@name`` returning ``ret`` with argument types ``args``."""
        sym = "@" + name
        if sym not in self.decls:
            self.decls[sym] = f"declare {ret} {sym}({', '.join(args)})"
        return sym

    def define(self, sym: str, text: str) -> None:
        if sym in self.defs or sym in self.decls:
            raise CodegenError(f"codegen: function {sym} defined twice (or also needed as "
                               "an external function); function names in one module must "
                               "be unique")
        self.defs[sym] = text

    def counter(self, key: str) -> int:
        """0, 1, 2, ... on successive calls with the same ``key``."""
        n = self._names.get(("#", key), 0)
        self._names[("#", key)] = n + 1
        return n

    def unique_name(self, base: str) -> str:
        """``base`` or ``base.<n>``: names of generated functions never collide."""
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}.{n}"

    # ---------------------------------------------------------------- math kernels
    def math_function(self, name: str, dtype: str) -> str:
        """Symbol of mathlib's ``name`` for ``dtype``; merges its IR text once."""
        key = ("math", name, dtype)
        sym = self.globals.get(key)
        if sym is None:
            sym, text = _mathlib.math_function(name, dtype)
            # the "needed" variant also carries the libm declarations the kernel calls
            needed = getattr(_mathlib, "math_functions_needed_ir", None)
            if needed is not None:
                text = needed([(name, dtype)])
            if not sym.startswith("@"):
                sym = "@" + sym
            self._merge_foreign(text)
            self.globals[key] = sym
        return sym

    def _merge_foreign(self, text: str) -> None:
        """Add foreign IR text entity by entity, dropping what is already present."""
        cur = None
        for line in text.splitlines():
            if cur is not None:
                cur.append(line)
                if line.startswith("}"):
                    self._add_def("\n".join(cur))
                    cur = None
                continue
            s = line.strip()
            if not s or s.startswith(";"):
                continue
            if s.startswith("define"):
                if s.endswith("}"):
                    self._add_def(line)
                else:
                    cur = [line]
            elif s.startswith("declare"):
                m = _SYM_CALL.search(s)
                if m:
                    self.declare("@" + m.group(1), s)
            else:
                m = _SYM_DEF.match(s)
                self.globals.setdefault(("g", m.group(1) if m else s), s)
        if cur is not None:
            raise CodegenError("codegen: unterminated function definition in mathlib text")

    def _add_def(self, text: str) -> None:
        m = _SYM_CALL.search(text.split("\n", 1)[0])
        if m is None:
            raise CodegenError(f"codegen: cannot find the symbol of {text[:60]!r}")
        sym = "@" + m.group(1)
        if sym not in self.defs:
            self.decls.pop(sym, None)
            self.defs[sym] = text

    # ---------------------------------------------------------------- metadata
    def loop_md(self, unroll_full: bool, no_vectorize: bool = False) -> str:
        """Suffix for a loop's back edge (``, !llvm.loop !N``) or '': full unrolling
        and/or LLVM's loop vectorizer turned off (``tir.analysis.divided_loops``)."""
        props = (['!{!"llvm.loop.unroll.full"}'] if unroll_full else []) + \
            (['!{!"llvm.loop.vectorize.enable", i1 false}'] if no_vectorize else [])
        if not props:
            return ""
        a = self._md
        self._md += 1 + len(props)
        ids = [f"!{a + 1 + k}" for k in range(len(props))]
        self.metadata.append(f"!{a} = distinct !{{!{a}, {', '.join(ids)}}}")
        self.metadata += [f"{i} = {p}" for i, p in zip(ids, props)]
        return f", !llvm.loop !{a}"

    def error_code(self, root: str, kind: str, message: str) -> int:
        """The status code (1, 2, ...) that reports ``kind: message`` for ``root``.

        See ``status_globals``: the runtime maps a nonzero status back to the message.
        """
        table = self._errors.setdefault(root, [])
        entry = f"{kind}:{message}"
        if entry not in table:
            table.append(entry)
        return table.index(entry) + 1

    def status_globals(self, root: str) -> str:
        """``@<root>__status`` (i32, 0 = ok) and ``@<root>__errors`` (the messages).

        A kernel cannot raise, and aborting would kill the caller, so a failure it
        detects (an allocation that returned NULL, an out-of-bounds index in a checked
        build) stores a code into the status word, skips the affected work and returns.
        The runtime reads the word after each call and raises ``kind(message)``.  The
        table is the messages ``"<ExceptionName>:<text>"``, each NUL-terminated, then
        one more NUL; it lives in the object so exported libraries carry it too.
        """
        entries = self._errors.get(root, [])
        data = b"".join(e.encode() + b"\0" for e in entries) + b"\0"
        lit = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}"
                      for c in data)
        st, er = global_name(root + "__status"), global_name(root + "__errors")
        return (f"{st} = global i32 0, align 4\n"
                f"{er} = constant [{len(data)} x i8] c\"{lit}\", align 1")

    def foreign_globals(self) -> list:
        return [v for k, v in self.globals.items() if k[0] == "g"]


class FunctionBuilder:
    """Instruction text of one function; ``vars`` maps TIR Vars to operands."""

    def __init__(self, mod: ModuleContext, name: str, in_parallel: bool = False,
                 root: str | None = None):
        self.mod = mod
        self.name = name
        self.root = root or name     # the PrimFunc name, for naming outlined functions
        self.lines: list = []
        self.allocas: list = []
        self.vars: dict = {}
        self.block = "%entry"
        self.in_parallel = in_parallel
        self._n = 0
        self._cse: dict = {}         # instruction text -> value, for the current block
        # Outlined functions capture what they use from the enclosing scope lazily:
        # ``outer`` is the parent's (paused, so unchanging) vars; ``captured`` maps each
        # variable taken from it to [parameter name, is a buffer data pointer].
        self.outer: dict | None = None
        self.captured: dict = {}
        self.load_mask: str | None = None   # <N x i1> operand while emitting a masked branch

    def lookup(self, var, is_data: bool = False):
        """Operand bound to ``var`` here, capturing it from ``outer`` if needed; or None."""
        v = self.vars.get(var)
        if v is not None and not is_data:
            return v
        cap = self.captured.get(var)
        if cap is not None:
            cap[1] = cap[1] or is_data
            return v if v is not None else cap[0]
        if v is not None:
            return v
        if self.outer is not None and var in self.outer:
            name = f"%{local_hint(var.name)}.f{len(self.captured)}"
            self.captured[var] = [name, is_data]
            return name
        return None

    def tmp(self, hint: str = "t") -> str:
        self._n += 1
        return f"%{hint}{self._n}"

    def op(self, text: str, hint: str = "t") -> str:
        """Append ``%x = text`` and return ``%x``.

        Pure instructions are value-numbered by their text within the current block:
        unrolled kernels repeat the same index arithmetic many times, and emitting it
        once keeps the IR (and LLVM's parse/optimize time) smaller.
        """
        pure = not text.startswith(_IMPURE)
        if pure:
            prev = self._cse.get(text)
            if prev is not None:
                return prev
        self._n += 1
        name = f"%{hint}{self._n}"
        self.lines.append(f"  {name} = {text}")
        if pure:
            self._cse[text] = name
        return name

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)

    def new_label(self, hint: str) -> str:
        self._n += 1
        return f"%{hint}{self._n}"

    def start_block(self, label: str) -> None:
        self.lines.append(f"{label[1:]}:")
        self.block = label
        self._cse = {}

    def br(self, label: str, suffix: str = "") -> None:
        self.lines.append(f"  br label {label}{suffix}")

    def cbr(self, cond: str, then: str, other: str, suffix: str = "") -> None:
        self.lines.append(f"  br i1 {cond}, label {then}, label {other}{suffix}")

    def report(self, kind: str, message: str) -> None:
        """Store the status code of ``kind: message`` (see ModuleContext.status_globals).

        Atomic: parallel workers of one kernel may fail at the same time."""
        code = self.mod.error_code(self.root, kind, message)
        status = global_name(self.root + "__status")
        self.emit(f"store atomic i32 {code}, ptr {status} monotonic, align 4")

    def entry_alloca(self, ty: str, align: int, hint: str) -> str:
        self._n += 1
        name = f"%{local_hint(hint)}.a{self._n}"
        self.allocas.append(f"  {name} = alloca {ty}, align {align}")
        return name

    def body_text(self) -> str:
        """Entry block (allocas first) followed by the emitted instructions."""
        return "entry:\n" + "\n".join(self.allocas + self.lines) + "\n  ret void\n}"


class EmitterBase(FunctionBuilder):
    """The base of the emitter mixins: the builder plus the methods they call on each
    other.  Each method is defined by one mixin (``llvm_expr``, ``llvm_memory``,
    ``llvm_calls``, ``llvm_stmt``, ``llvm_parallel``); ``FunctionEmitter`` composes them.
    The declarations exist for the type checker only."""

    _EXPR: ClassVar[dict]
    _STMT: ClassVar[dict]

    if TYPE_CHECKING:
        def expr(self, e) -> str: ...
        def expr_as(self, e, dtype: str) -> str: ...
        def dtype_of(self, e) -> str: ...
        def cast_value(self, v: str, src: str, dst: str) -> str: ...
        def extract(self, v: str, dtype: str, lane: int) -> str: ...
        def broadcast(self, v: str, scalar_dtype: str, lanes: int) -> str: ...
        def call_unary(self, name: str, v: str, d: str) -> str: ...
        def _e_var(self, e) -> str: ...
        def vector_load(self, load, mask: str, passthru) -> str: ...
        def stmt(self, s) -> None: ...
        def int_operand(self, e, d: str) -> str: ...
        def emit_loop(self, var, lo: str, hi: str, body_fn, md: str = "",
                      nonempty: bool = False) -> None: ...
        def parallel_for(self, s) -> bool: ...
