#!/usr/bin/env bash
# Build the wheel and check it as any host package checks its own: `cudaload check-wheel`, run
# by the console script the wheel installs, finds no compiled file with a link-time CUDA
# dependency, installs the wheel into a fresh virtual environment with only its declared
# dependencies (no extras) and imports it there without a CUDA driver and with a driver but no
# GPU (CUDALOAD_TEST_LIBCUDA, when set): the import maps no CUDA library and cudaload.status()
# says why CUDA is not available.  Besides, what is cudaload's own: the wheel is pure Python
# (py3-none-any) with the files cudaload needs and its pytest plugin registered, importing it
# imports nothing heavy, and the console script reports and exits 1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
say() { echo "packaging_test: $*"; }

"$PYTHON" -m venv "$WORK/build-env"
"$WORK/build-env/bin/python" -m pip install -q --disable-pip-version-check build
"$WORK/build-env/bin/python" -m build --wheel --outdir "$WORK/dist" "$ROOT" >&2

wheels=("$WORK"/dist/*.whl)
[ ${#wheels[@]} = 1 ] || { say "expected one wheel, got ${wheels[*]}" >&2; exit 1; }
WHEEL="${wheels[0]}"
say "built $(basename "$WHEEL")"

"$WORK/build-env/bin/python" - "$WHEEL" <<'PY'
import sys, zipfile
wheel = sys.argv[1]
name = wheel.rsplit("/", 1)[-1]
assert name.endswith("-py3-none-any.whl"), f"wheel tag is not py3-none-any: {name}"
with zipfile.ZipFile(wheel) as zf:
    names = zf.namelist()
    text = zf.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    entry_points = zf.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt")))
compiled = [n for n in names if n.endswith((".so", ".pyd", ".dylib", ".dll")) or ".so." in n]
assert not compiled, f"compiled files in the wheel: {compiled}"
assert "Tag: py3-none-any" in text and "Root-Is-Purelib: true" in text, text
for needed in ("cudaload/__init__.py", "cudaload/bindings/_cuda_ffi.py", "cudaload/bindings/_nvrtc_ffi.py",
               "cudaload/bindings/_dlpack_ffi.py", "cudaload/bindings/_cuda_protos.py",
               "cudaload/availability.py", "cudaload/cli/__init__.py", "cudaload/py.typed",
               "cudaload/wheelcheck/_probe.py", "cudaload/wheelcheck/pytest_plugin.py",
               "cudaload/wheelcheck/fetch_libcuda.sh"):
    assert needed in names, f"{needed} missing from the wheel"
assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "LICENSE missing from the wheel"
assert b"[pytest11]\ncudaload = cudaload.wheelcheck.pytest_plugin" in entry_points, entry_points
print(f"packaging_test: {len(names)} files, pure Python, tag py3-none-any, pytest plugin registered")
PY

"$PYTHON" -m venv "$WORK/env"
"$WORK/env/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL"

# Outside the repository, so that the installed copy is what gets imported.
cd "$WORK"
if [ -n "${CI:-}" ] && { [ -z "${CUDALOAD_TEST_LIBCUDA:-}" ] || [ ! -e "$CUDALOAD_TEST_LIBCUDA" ]; }; then
    say "CUDALOAD_TEST_LIBCUDA is not set or missing in CI: ci/fetch_libcuda.sh must run" >&2
    exit 1
fi
# `cudaload fetch-libcuda` from the installed wheel: here it finds the library ci/fetch_libcuda.sh
# unpacked (its folder as CUDALOAD_LIBCUDA_DIR), so no network is needed.
if [ -n "${CUDALOAD_TEST_LIBCUDA:-}" ] && [ -e "$CUDALOAD_TEST_LIBCUDA" ]; then
    fetched="$(CUDALOAD_LIBCUDA_DIR="${CUDALOAD_TEST_LIBCUDA%%/root/*}" env -u PYTHONPATH \
        "$WORK/env/bin/cudaload" fetch-libcuda)"
    [ "$fetched" = "$CUDALOAD_TEST_LIBCUDA" ] || { say "cudaload fetch-libcuda printed $fetched" >&2; exit 1; }
fi
env -u PYTHONPATH "$WORK/env/bin/cudaload" check-wheel "$WHEEL" --import cudaload --json \
    > "$WORK/check.json" || { cat "$WORK/check.json"; say "cudaload check-wheel failed" >&2; exit 1; }
"$WORK/env/bin/python" - "$WORK/check.json" <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1]))
assert report["ok"] and report["files"] == [], report["failures"]
installed = {line.split()[0].lower() for line in report["imports"][0]["installed"]}
assert installed <= {"cudaload", "cffi", "pycparser", "cuda-pathfinder", "cuda_pathfinder"}, installed
for run in report["imports"]:
    if run["skipped"]:
        assert not os.environ.get("CUDALOAD_TEST_LIBCUDA"), run["skipped"]
        print(f"packaging_test: check-wheel, {run['mode']}: skipped: {run['skipped']}")
        continue
    # NVRTC is absent unless the machine has a CUDA toolkit: the nvrtc extra was not installed.
    nvrtc = [p for p in run["problems"] if p["what"].startswith("libnvrtc not found")]
    assert all("cudaload[nvrtc]" in p["hint"] for p in nvrtc), nvrtc
    print(f"packaging_test: check-wheel, {run['mode']}: import maps no CUDA library; "
          f"status: {run['reason']}")
PY

"$WORK/env/bin/python" - <<'PY'
import sys, cudaload
heavy = [m for m in ("pycparser", "cffi", "_cffi_backend", "cuda.pathfinder", "numpy") if m in sys.modules]
assert not heavy, f"import cudaload imported {heavy}"
print("packaging_test: import cudaload imports nothing heavy")
PY

set +e
CUDALOAD_LIBCUDA=/nonexistent/libcuda.so.1 "$WORK/env/bin/cudaload" doctor --json > "$WORK/doctor.json"
doctor_rc=$?
set -e
[ "$doctor_rc" = 1 ] || { say "cudaload doctor exited $doctor_rc, not 1" >&2; exit 1; }
"$WORK/env/bin/python" -c 'import json, sys; assert json.load(open(sys.argv[1]))["available"] is False' \
    "$WORK/doctor.json"
say "the cudaload console script reports and exits 1; all checks passed"
