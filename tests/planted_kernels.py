"""Hand-written LLVM IR kernels that crash, hang or run slowly, with the signature of a
float32 matmul ``(A, B, C)`` of ``n x n``: the runners' tests plant them among real
candidates."""
from compiler.runtime import compile_ir

CRASH_BODY = "entry:\n  store volatile float 0.0, ptr null\n  ret void"
HANG_BODY = ("entry:\n  br label %loop\nloop:\n  %v = load volatile float, ptr %A\n"
             "  br label %loop")


def slow_body(iterations: int) -> str:
    """A loop of ``iterations`` volatile loads (about 1 ns each)."""
    return ("entry:\n  br label %loop\nloop:\n  %i = phi i64 [0, %entry], [%n, %loop]\n"
            "  %v = load volatile float, ptr %A\n  %n = add i64 %i, 1\n"
            f"  %c = icmp ult i64 %n, {iterations}\n  br i1 %c, label %loop, label %done\n"
            "done:\n  ret void")


def hand_kernel(name: str, body: str, n: int):
    """``(object code, funcs_meta)`` of ``body`` as kernel ``name``."""
    ir = f"define void @{name}(ptr %A, ptr %B, ptr %C) {{\n{body}\n}}\n"
    shape = (n, n)
    metas = [(name, [("A", shape, "float32", False), ("B", shape, "float32", False),
                     ("C", shape, "float32", True)])]
    return compile_ir(ir, "llvm", cache=None), metas
