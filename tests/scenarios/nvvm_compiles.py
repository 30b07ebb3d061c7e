"""Programs of NVVM IR (``code_type="nvvm"``) compiled by the real libNVVM (named by
$CUDALOAD_LIBNVVM, or the nvidia-nvvm wheel) to PTX, and linked to CUBIN by the real nvJitLink;
one fresh process each, no GPU.

    python -m tests.scenarios.nvvm_compiles SCENARIO ARGS...

Each scenario prints what it saw as JSON on the last line.  Importing this module loads nothing.
"""

from __future__ import annotations

import json
import sys

# A kernel twice(int *out, int n): out[i] = 2 * i for each thread i below n.  NVVM IR of the
# version libNVVM 2.0 reads: typed pointers, the nvptx64 triple and datalayout, the kernel
# marked in !nvvm.annotations.
TWICE = r"""
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @twice(i32* %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %store, label %done
store:
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds i32, i32* %out, i64 %idx
  %v = shl i32 %i, 1
  store i32 %v, i32* %p, align 4
  br label %done
done:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

!nvvm.annotations = !{!0}
!0 = !{void (i32*, i32)* @twice, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
"""


def _loaded(stem: str) -> bool:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return stem in maps.read()


def forms(*options: str) -> None:
    """The program compiled to PTX, then CUBIN, for sm_90 with libNVVM ``options``: each one's
    kind, arch, name, where it came from and a piece of its code."""
    import cudaload

    program = cudaload.Program(TWICE, code_type="nvvm", name="twice.ll", options=options)
    seen = {}
    for output in ("ptx", "cubin"):
        obj = program.compile(arch="sm_90", output=output)
        seen[output] = {"kind": obj.kind, "arch": obj.arch, "name": obj.name,
                        "cached": obj.cached, "entry": b".entry twice" in obj.code,
                        "elf": obj.code[:4] == b"\x7fELF", "size": len(obj.code)}
    as_bytes = cudaload.Program(TWICE.encode(), code_type="nvvm", name="twice.ll",
                                options=options).compile(arch="sm_90", output="ptx")
    seen["bytes"] = as_bytes.code == program.compile(arch="sm_90", output="ptx").code
    seen["nvrtc"] = _loaded("libnvrtc")
    print(json.dumps(seen))


def broken() -> None:
    """IR libNVVM refuses: the error's type, log and message."""
    import cudaload

    program = cudaload.Program(TWICE.replace("ret void", "ret i32 7"), code_type="nvvm",
                               name="broken.ll")
    try:
        program.compile(arch="sm_90")
    except cudaload.CudaLoadError as err:
        print(json.dumps({"type": type(err).__name__, "log": getattr(err, "log", None),
                          "message": str(err), "name": getattr(err, "name", None),
                          "function": getattr(err, "function", None),
                          "compile_error": isinstance(err, cudaload.CompileError)}))
        return
    print(json.dumps({"type": None}))


def unavailable(arch: str) -> None:
    """A compile where libNVVM or the device is missing: the error's type, message and hint
    (``arch`` "none": compile(arch=None))."""
    import cudaload

    program = cudaload.Program(TWICE, code_type="nvvm", name="twice.ll")
    try:
        program.compile(arch=None if arch == "none" else arch)
    except cudaload.CudaLoadError as err:
        print(json.dumps({"type": type(err).__name__, "message": str(err),
                          "hint": getattr(err, "hint", ""),
                          "unavailable": isinstance(err, cudaload.CudaUnavailableError),
                          "nvvm": _loaded("libnvvm")}))
        return
    print(json.dumps({"type": None}))


def bitcode(path: str) -> None:
    """The bitcode in file ``path`` (TWICE assembled) compiled to PTX, and the text beside it."""
    import cudaload

    with open(path, "rb") as f:
        data = f.read()
    obj = cudaload.Program(data, code_type="nvvm", name="twice.bc").compile(arch="sm_90",
                                                                           output="ptx")
    text = cudaload.Program(TWICE, code_type="nvvm", name="twice.bc").compile(arch="sm_90",
                                                                             output="ptx")
    print(json.dumps({"kind": obj.kind, "entry": b".entry twice" in obj.code,
                      "magic": data[:4].hex(), "same": obj.code == text.code,
                      "cached": [obj.cached, text.cached]}))


SCENARIOS = {f.__name__: f for f in (forms, broken, unavailable, bitcode)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
