#!/usr/bin/env bash
# The example host package (examples/gpuops) as its users get it: build cudaload's wheel and the
# example's wheel with a bundle of precompiled kernels, check that both are pure Python with no
# ELF file and no DT_NEEDED on a CUDA library, install both into a fresh virtual environment with
# only their declared dependencies, and check there, without CUDA and then with the real driver
# library of Debian's libcuda1 but no GPU (CUDALOAD_TEST_LIBCUDA, fetched by ci/fetch_libcuda.sh),
# that the operations fall back to numpy, give numpy's results, say so once with the reason, and
# map no CUDA library beyond the driver they were pointed at.
#
# Building the bundle needs NVRTC in $PYTHON's environment (pip install 'cudaload[nvrtc]').
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
ARCHS=(sm_80 sm_90 sm_100)
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
say() { echo "packaging_example_test: $*"; }

# --- build --------------------------------------------------------------------------------------
"$PYTHON" -m venv "$WORK/build-env"
"$WORK/build-env/bin/python" -m pip install -q --disable-pip-version-check build
"$WORK/build-env/bin/python" -m build --wheel --outdir "$WORK/dist" "$ROOT" >&2

# A copy of the example, so the bundle is made beside its sources without touching the checkout.
cp -r "$ROOT/examples/gpuops" "$WORK/gpuops-src"
rm -f "$WORK/gpuops-src/gpuops/_kernels.bundle"
arch_args=()
for a in "${ARCHS[@]}"; do arch_args+=(--arch "$a"); done
(cd "$WORK/gpuops-src" && CUDALOAD_CACHE_DIR="$WORK/precompile-cache" \
    PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m cudaload precompile \
    --programs gpuops._kernels:programs "${arch_args[@]}" -o gpuops/_kernels.bundle) > "$WORK/precompile.log" \
    || { cat "$WORK/precompile.log" >&2
         say "cudaload precompile failed: NVRTC is needed to build the bundle (pip install 'cudaload[nvrtc]')" >&2
         exit 1; }
tail -n 1 "$WORK/precompile.log"
"$WORK/build-env/bin/python" -m build --wheel --outdir "$WORK/dist" "$WORK/gpuops-src" >&2

CUDALOAD_WHEEL="$(ls "$WORK"/dist/cudaload-*.whl)"
GPUOPS_WHEEL="$(ls "$WORK"/dist/gpuops-*.whl)"
say "built $(basename "$CUDALOAD_WHEEL") and $(basename "$GPUOPS_WHEEL")"

# --- what the wheels hold -------------------------------------------------------------------------
mkdir -p "$WORK/unpacked"
PYTHONPATH="$ROOT" "$PYTHON" - "$WORK/unpacked" "$CUDALOAD_WHEEL" "$GPUOPS_WHEEL" "${#ARCHS[@]}" <<'PY'
import os, sys, zipfile
from cudaload.compile import cache
from cudaload import Bundle

out, wheels, narchs = sys.argv[1], sys.argv[2:4], int(sys.argv[4])
for wheel in wheels:
    name = os.path.basename(wheel)
    assert name.endswith("-py3-none-any.whl"), f"wheel tag is not py3-none-any: {name}"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
        assert "Root-Is-Purelib: true" in meta, f"{name}: not purelib:\n{meta}"
        compiled = [n for n in names if n.endswith((".so", ".pyd", ".dylib", ".dll")) or ".so." in n]
        assert not compiled, f"{name}: compiled files: {compiled}"
        elf = [n for n in names if zf.read(n)[:4] == b"\x7fELF"]
        assert not elf, f"{name}: ELF files: {elf}"
        zf.extractall(os.path.join(out, name))
        if name.startswith("gpuops-"):
            for needed in ("gpuops/__init__.py", "gpuops/kernels/ops.cu",
                           "gpuops/kernels/common.cuh", "gpuops/_kernels.bundle"):
                assert needed in names, f"{name}: {needed} missing"
            requires = [l.split(":", 1)[1].strip().split()[0].split(">")[0].split("=")[0]
                        for l in zf.read(next(n for n in names if n.endswith("METADATA")))
                        .decode().splitlines() if l.startswith("Requires-Dist:")]
            assert sorted(requires) == ["cudaload", "numpy"], requires
            # The CUBINs inside the bundle, written out so that readelf can look at each one.
            bundle = Bundle(zf.read("gpuops/_kernels.bundle"))
            assert len(bundle) == 18 * narchs, f"bundle has {len(bundle)} entries"
            folder = os.path.join(out, "cubins")
            os.makedirs(folder, exist_ok=True)
            for i, e in enumerate(bundle._entries().values()):
                obj = cache.decode(bundle._data[e["offset"]:e["offset"] + e["length"]])
                assert obj.code[:4] == b"\x7fELF", e
                with open(os.path.join(folder, f"{i}-{e['arch']}.cubin"), "wb") as f:
                    f.write(obj.code)
    print(f"packaging_example_test: {name}: {len(names)} files, pure Python, no ELF file")
PY

# Every ELF file anywhere (none in the wheels; the CUBINs from the bundle) has no DT_NEEDED on a
# CUDA library: CUBINs are loaded by the driver, never by the dynamic linker.  (The wheels'
# having no ELF file at all is the check above; this one covers what the bundle carries.)
command -v readelf >/dev/null || { say "readelf is missing (binutils): cannot check" >&2; exit 1; }
count=0
while IFS= read -r -d '' f; do
    if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
        count=$((count + 1))
        if readelf -d "$f" 2>/dev/null | grep -E 'NEEDED.*(libcuda|libcudart|libnvrtc)'; then
            say "$f has a DT_NEEDED on a CUDA library" >&2
            exit 1
        fi
    fi
done < <(find "$WORK/unpacked" -type f -print0)
say "checked $count ELF files (the bundle's CUBINs) with readelf -d: no DT_NEEDED on CUDA"

# --- installed, without CUDA and with a driver but no GPU -----------------------------------------
"$PYTHON" -m venv "$WORK/env"
"$WORK/env/bin/python" -m pip install -q --disable-pip-version-check "$CUDALOAD_WHEEL" "$GPUOPS_WHEEL"

cat > "$WORK/check.py" <<'PY'
"""Run in the fresh environment: argv[1] is a text the fallback's reason must contain."""
import importlib.metadata as md
import sys
import warnings

expected_reason, driver = sys.argv[1], sys.argv[2]
extras = [d for d in ("nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "cupy", "torch", "pytest")
          if any((dist.metadata["Name"] or "").lower().startswith(d) for dist in md.distributions())]
assert not extras, f"not a dependency, yet installed: {extras}"

import numpy as np
import cudaload
import gpuops

for module in (cudaload, gpuops):
    assert module.__file__.startswith(sys.prefix), f"imported {module.__file__}, not the installed copy"
assert cudaload.is_available() is False
problems = cudaload.status().as_dict()["problems"]
assert problems and all(p["what"] and p["hint"] for p in problems), problems

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    rng = np.random.default_rng(0)
    for dt in (np.float16, np.float32, np.float64):
        acc = np.float64 if dt == np.float64 else np.float32
        x = rng.uniform(-3, 3, (9, 41)).astype(dt)
        y = rng.uniform(-3, 3, (9, 41)).astype(dt)
        wide = x.astype(acc)
        e = np.exp(wide - wide.max(axis=-1, keepdims=True))
        checks = {
            "add": (gpuops.add(x, y), x + y),
            "mul": (gpuops.mul(x, y), x * y),
            "axpy": (gpuops.axpy(-1.25, x, y), (acc(dt(-1.25)) * wide + y.astype(acc)).astype(dt)),
            "relu": (gpuops.relu(x), np.maximum(x, dt(0))),
            "sum": (gpuops.sum(x), dt(np.sum(x, dtype=acc))),
            "softmax": (gpuops.softmax(x), (e / e.sum(axis=-1, keepdims=True)).astype(dt)),
        }
        for op, (got, want) in checks.items():
            assert np.asarray(got).dtype == np.dtype(dt), (op, dt, np.asarray(got).dtype)
            assert np.array_equal(got, want), f"{op} {np.dtype(dt)}: not numpy's result"
said = [str(w.message) for w in caught if issubclass(w.category, gpuops.GpuopsWarning)]
assert len(said) == 1, f"the fallback must be said once, not {len(said)} times: {said}"
assert expected_reason in said[0], f"{expected_reason!r} not in {said[0]!r}"
assert gpuops.loaded_kernels() == []

from cudaload import Bundle
shipped = Bundle.from_resource("gpuops", "_kernels.bundle")
assert len(shipped) > 0, "the installed gpuops has no bundle"

with open("/proc/self/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps
                     if any(lib in line for lib in ("libcuda", "libnvrtc", "libcudart"))})
allowed = {driver} if driver else set()
import os
assert {os.path.realpath(m) for m in mapped} <= {os.path.realpath(a) for a in allowed}, mapped
print(f"packaging_example_test: {'driver ' + driver if driver else 'no CUDA'}: ops fell back to "
      f"numpy with numpy's results; said once: {said[0]}; mapped: {mapped or 'nothing CUDA'}")
PY

cd "$WORK"  # outside the checkout: the installed copies are what gets imported
env -u CUDALOAD_LIBCUDA -u CUDALOAD_LIBNVRTC -u PYTHONPATH \
    "$WORK/env/bin/python" "$WORK/check.py" "libcuda not found" ""

LIBCUDA="${CUDALOAD_TEST_LIBCUDA:-}"
if [ -z "$LIBCUDA" ] || [ ! -e "$LIBCUDA" ]; then
    if [ -n "${CI:-}" ]; then
        say "CUDALOAD_TEST_LIBCUDA is not set or missing in CI: ci/fetch_libcuda.sh must run" >&2
        exit 1
    fi
    say "skipped the driver-without-GPU check: set CUDALOAD_TEST_LIBCUDA to a libcuda.so.1"
    exit 0
fi
env -u CUDALOAD_LIBNVRTC -u PYTHONPATH CUDALOAD_LIBCUDA="$LIBCUDA" \
    "$WORK/env/bin/python" "$WORK/check.py" "CUDA_ERROR_NO_DEVICE" "$LIBCUDA"
say "all checks passed"
