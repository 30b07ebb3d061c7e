#!/usr/bin/env bash
# Build the wheel, check that it is pure Python, install it into a fresh virtual environment with
# only its declared dependencies (no extras), and check there that importing it maps no CUDA
# library and that it reports, without raising, why CUDA is not available.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$PYTHON" -m venv "$WORK/build-env"
"$WORK/build-env/bin/python" -m pip install -q --disable-pip-version-check build
"$WORK/build-env/bin/python" -m build --wheel --outdir "$WORK/dist" "$ROOT" >&2

wheels=("$WORK"/dist/*.whl)
[ ${#wheels[@]} = 1 ] || { echo "packaging_test: expected one wheel, got ${wheels[*]}" >&2; exit 1; }
WHEEL="${wheels[0]}"
echo "packaging_test: built $(basename "$WHEEL")"

"$WORK/build-env/bin/python" - "$WHEEL" <<'PY'
import sys, zipfile
wheel = sys.argv[1]
name = wheel.rsplit("/", 1)[-1]
assert name.endswith("-py3-none-any.whl"), f"wheel tag is not py3-none-any: {name}"
with zipfile.ZipFile(wheel) as zf:
    names = zf.namelist()
    meta = next(n for n in names if n.endswith(".dist-info/WHEEL"))
    text = zf.read(meta).decode()
compiled = [n for n in names if n.endswith((".so", ".pyd", ".dylib", ".dll")) or ".so." in n]
assert not compiled, f"compiled files in the wheel: {compiled}"
assert "Tag: py3-none-any" in text and "Root-Is-Purelib: true" in text, text
for needed in ("cudaload/__init__.py", "cudaload/bindings/_cuda_ffi.py", "cudaload/bindings/_nvrtc_ffi.py",
               "cudaload/bindings/_dlpack_ffi.py", "cudaload/bindings/_cuda_protos.py",
               "cudaload/availability.py", "cudaload/cli.py"):
    assert needed in names, f"{needed} missing from the wheel"
print(f"packaging_test: {len(names)} files, pure Python, tag py3-none-any")
PY

"$PYTHON" -m venv "$WORK/env"
"$WORK/env/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL"

# Outside the repository, so that the installed copy is what gets imported.
cd "$WORK"
"$WORK/env/bin/python" - <<'PY'
import importlib.metadata as md
extras = [d for d in ("nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "numpy", "pytest")
          if any(dist.metadata["Name"] == d for dist in md.distributions())]
assert not extras, f"not a dependency, yet installed: {extras}"

import json, os, sys
import cudaload
assert cudaload.__file__.startswith(sys.prefix), f"imported {cudaload.__file__}, not the installed copy"
with open("/proc/self/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if "libcuda" in line or "libnvrtc" in line})
assert not mapped, f"import cudaload mapped {mapped}"
heavy = [m for m in ("pycparser", "cffi", "_cffi_backend", "cuda.pathfinder", "numpy") if m in sys.modules]
assert not heavy, f"import cudaload imported {heavy}"
print("packaging_test: import cudaload maps no CUDA library and imports nothing heavy")
PY

# is_available() must be False with a reason here, whatever this machine has: no driver is forced,
# and NVRTC is absent unless the machine has a CUDA toolkit (the nvrtc extra was not installed).
set +e
CUDALOAD_LIBCUDA=/nonexistent/libcuda.so.1 "$WORK/env/bin/python" - <<'PY'
import json, sys, cudaload
st = cudaload.status()
assert cudaload.is_available() is False and st.available is False
problems = st.as_dict()["problems"]
assert problems and all(p["what"] and p["hint"] for p in problems), problems
if not st.as_dict()["nvrtc"]["found"]:  # a system CUDA toolkit may still provide one
    assert any("cudaload[nvrtc]" in p["hint"] for p in problems), problems
print("packaging_test: is_available() is False:", "; ".join(p["what"] for p in problems))
PY
rc=$?
CUDALOAD_LIBCUDA=/nonexistent/libcuda.so.1 "$WORK/env/bin/cudaload" doctor --json > "$WORK/doctor.json"
doctor_rc=$?
set -e
[ "$rc" = 0 ] || exit "$rc"
[ "$doctor_rc" = 1 ] || { echo "packaging_test: cudaload doctor exited $doctor_rc, not 1" >&2; exit 1; }
"$WORK/env/bin/python" -c 'import json, sys; assert json.load(open(sys.argv[1]))["available"] is False' \
    "$WORK/doctor.json"
echo "packaging_test: the cudaload console script reports and exits 1; all checks passed"
