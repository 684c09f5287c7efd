"""Test helper: hand-written LLVM IR modules (add, count, gomp, bool) and their metadata
for the runtime tests."""
import numpy as np

N = 1024

def add_ir(n=N, name="add", align=64, repeat=True):
    """C[i] = A[i] + B[i] for i < n, float32; params claim ``align`` bytes."""
    attr = f" align {align}" if align else ""
    p = ", ".join(f"ptr noalias{attr} %{x}" for x in "ABC")
    text = f"""
define void @{name}({p}) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %pa = getelementptr float, ptr %A, i64 %i
  %pb = getelementptr float, ptr %B, i64 %i
  %pc = getelementptr float, ptr %C, i64 %i
  %a = load float, ptr %pa, align 4
  %b = load float, ptr %pb, align 4
  %c = fadd float %a, %b
  store float %c, ptr %pc, align 4
  %i1 = add i64 %i, 1
  %d = icmp eq i64 %i1, {n}
  br i1 %d, label %exit, label %loop
exit:
  ret void
}}
"""
    return text + (repeat_ir(name, 3) if repeat else "")

def repeat_ir(name, nargs):
    params = ", ".join(f"ptr %p{k}" for k in range(nargs))
    args = ", ".join(f"ptr %p{k}" for k in range(nargs))
    return f"""
define void @{name}__repeat({params}, i64 %n) {{
entry:
  %z = icmp sle i64 %n, 0
  br i1 %z, label %exit, label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  call void @{name}({args})
  %i1 = add i64 %i, 1
  %d = icmp eq i64 %i1, %n
  br i1 %d, label %exit, label %loop
exit:
  ret void
}}
"""

COUNT_BODY = """{
entry:
  %v = load volatile i64, ptr %C
  %v1 = add i64 %v, 1
  store volatile i64 %v1, ptr %C
  ret void
}
"""

COUNT_IR = ("define void @count(ptr noalias %C) " + COUNT_BODY + repeat_ir("count", 1)
            + "define void @tick(ptr noalias %C) " + COUNT_BODY)

COUNT_META = [("count", [("C", (1,), "int64")]), ("tick", [("C", (1,), "int64")])]

GOMP_IR = """
declare void @GOMP_parallel(ptr, ptr, i32, i32)
declare i32 @omp_get_thread_num()
declare i32 @omp_get_num_threads()
declare float @expf(float)

define internal void @par_worker(ptr %data) {
  %t = call i32 @omp_get_thread_num()
  %n = call i32 @omp_get_num_threads()
  %out = load ptr, ptr %data
  %t64 = sext i32 %t to i64
  %p = getelementptr i32, ptr %out, i64 %t64
  store i32 %n, ptr %p
  ret void
}

define void @par(ptr noalias %O) {
  %d = alloca ptr
  store ptr %O, ptr %d
  call void @GOMP_parallel(ptr @par_worker, ptr %d, i32 2, i32 0)
  ret void
}

define void @vexp(ptr noalias %X, ptr noalias %Y) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %px = getelementptr float, ptr %X, i64 %i
  %py = getelementptr float, ptr %Y, i64 %i
  %x = load float, ptr %px
  %e = call float @expf(float %x)
  store float %e, ptr %py
  %i1 = add i64 %i, 1
  %d = icmp eq i64 %i1, 16
  br i1 %d, label %exit, label %loop
exit:
  ret void
}
"""

BOOL_IR = """
define void @lnot(ptr noalias %A, ptr noalias %B) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %pa = getelementptr i8, ptr %A, i64 %i
  %pb = getelementptr i8, ptr %B, i64 %i
  %a = load i8, ptr %pa
  %z = icmp eq i8 %a, 0
  %b = zext i1 %z to i8
  store i8 %b, ptr %pb
  %i1 = add i64 %i, 1
  %d = icmp eq i64 %i1, 8
  br i1 %d, label %exit, label %loop
exit:
  ret void
}
"""

ADD_META = [("add", [("A", (N,), "float32", False), ("B", (N,), "float32", False),
                     ("C", (N,), "float32", True)])]

def abc_arrays(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32),
            np.zeros(n, np.float32))
