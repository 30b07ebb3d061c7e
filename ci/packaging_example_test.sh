#!/usr/bin/env bash
# The example host package (examples/gpuops) as its users get it, checked the way any host
# package can check its own: build cudaload's wheel and the example's wheel with a bundle of
# precompiled kernels; `cudaload check-wheel` on the example's wheel (no compiled file with a
# CUDA link-time dependency; every program of the bundle precompiled for each arch built, and
# what the other archs find; installed into a fresh virtual environment with only its declared
# dependencies and imported there without CUDA and with the real driver library of Debian's
# libcuda1 but no GPU, CUDALOAD_TEST_LIBCUDA, fetched by the built wheel's
# `cudaload fetch-libcuda`); then the example's own tests, which use cudaload's pytest plugin,
# against the installed wheels: the operations fall back to numpy, give numpy's results, say so
# once with the reason, and map no CUDA library beyond the driver they were pointed at.
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

# --- what the wheel holds that is the example's own: tag, files, declared dependencies ------------
"$WORK/build-env/bin/python" - "$GPUOPS_WHEEL" <<'PY'
import os, sys, zipfile
wheel = sys.argv[1]
name = os.path.basename(wheel)
assert name.endswith("-py3-none-any.whl"), f"wheel tag is not py3-none-any: {name}"
with zipfile.ZipFile(wheel) as zf:
    names = zf.namelist()
    meta = zf.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    assert "Root-Is-Purelib: true" in meta, f"{name}: not purelib:\n{meta}"
    for needed in ("gpuops/__init__.py", "gpuops/kernels/ops.cu", "gpuops/kernels/common.cuh",
                   "gpuops/_kernels.bundle"):
        assert needed in names, f"{name}: {needed} missing"
    requires = [l.split(":", 1)[1].strip().split()[0].split(">")[0].split("=")[0]
                for l in zf.read(next(n for n in names if n.endswith("METADATA")))
                .decode().splitlines() if l.startswith("Requires-Dist:")]
    assert sorted(requires) == ["cudaload", "numpy"], requires
print(f"packaging_example_test: {name}: {len(names)} files, tag py3-none-any, "
      "requires cudaload and numpy")
PY

# --- cudaload check-wheel, from an environment with cudaload's wheel installed ---------------------
"$PYTHON" -m venv "$WORK/env"
"$WORK/env/bin/python" -m pip install -q --disable-pip-version-check "$CUDALOAD_WHEEL" "$GPUOPS_WHEEL" pytest
# The driver library without GPU as docs/packaging.md has a host package get it: the installed
# wheel's `cudaload fetch-libcuda` (into this checkout's cache, which ci/fetch_libcuda.sh fills
# too, so a second fetch needs no network); a CUDALOAD_TEST_LIBCUDA given is used as it is.
if [ -z "${CUDALOAD_TEST_LIBCUDA:-}" ] || [ ! -e "$CUDALOAD_TEST_LIBCUDA" ]; then
    if CUDALOAD_TEST_LIBCUDA="$(CUDALOAD_LIBCUDA_DIR="$ROOT/.cache/libcuda535" \
            "$WORK/env/bin/cudaload" fetch-libcuda)"; then
        export CUDALOAD_TEST_LIBCUDA
        say "driver library without GPU: $CUDALOAD_TEST_LIBCUDA (cudaload fetch-libcuda)"
    elif [ -n "${CI:-}" ]; then
        say "cudaload fetch-libcuda failed in CI: the checks with a driver but no GPU cannot run" >&2
        exit 1
    else
        unset CUDALOAD_TEST_LIBCUDA
        say "the checks with a driver but no GPU are skipped: cudaload fetch-libcuda failed"
    fi
fi
cd "$WORK"  # outside the checkout: the installed copies are what gets imported
check=("$WORK/env/bin/cudaload" check-wheel "$GPUOPS_WHEEL" --with "$CUDALOAD_WHEEL" --import gpuops
       ${CI:+--no-skip} "${arch_args[@]}" --arch sm_86 --arch sm_75)
set +e
env -u PYTHONPATH -u CUDALOAD_LIBCUDA "${check[@]}" --json > "$WORK/check.json"
check_rc=$?
set -e
"$WORK/env/bin/python" - "$WORK/check.json" "$check_rc" "${ARCHS[@]}" <<'PY'
import json, os, sys
report, rc, archs = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3:]
assert rc == "0" and report["ok"], "cudaload check-wheel failed:\n" + "\n".join(report["failures"])
assert report["files"] == [], report["files"]
(bundle,) = report["bundles"]
assert bundle["path"] == "gpuops/_kernels.bundle" and len(bundle["programs"]) == 18, bundle
for program in bundle["programs"]:
    assert all(program["code"][a] == a for a in archs), program  # each arch built, exactly
    assert program["code"]["sm_86"] == "sm_80" and program["code"]["sm_75"] is None, program
extras = ("nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "cupy", "torch", "pytest")
for run in report["imports"]:
    installed = [line.split()[0].lower() for line in run["installed"]]
    assert not [n for n in installed if n.startswith(extras)], installed
    assert not run["skipped"] or not os.environ.get("CUDALOAD_TEST_LIBCUDA"), run["skipped"]
print(f"packaging_example_test: check-wheel: 18 programs precompiled for {', '.join(archs)}; "
      "sm_86 uses sm_80 code; sm_75 compiles with NVRTC; gpuops imports without CUDA")
PY

# --require-bundle: the bundle is in the wheel with code for every built arch (sm_86 runs the
# sm_80 code); sm_75, which it lacks, fails the check.
env -u PYTHONPATH "$WORK/env/bin/cudaload" check-wheel "$GPUOPS_WHEEL" --require-bundle \
    "${arch_args[@]}" --arch sm_86 > "$WORK/required.txt" \
    || { cat "$WORK/required.txt"; say "check-wheel --require-bundle failed" >&2; exit 1; }
if env -u PYTHONPATH "$WORK/env/bin/cudaload" check-wheel "$GPUOPS_WHEEL" --require-bundle \
        --arch sm_75 > "$WORK/required.txt"; then
    say "check-wheel --require-bundle --arch sm_75 passed a bundle without sm_75 code" >&2; exit 1
fi
grep -q "FAIL gpuops/_kernels.bundle: no code for sm_75 for 18 of 18 programs" "$WORK/required.txt" \
    || { cat "$WORK/required.txt"; say "check-wheel --require-bundle: unexpected report" >&2; exit 1; }
say "check-wheel --require-bundle: the bundle covers ${ARCHS[*]} and sm_86, and sm_75 fails"

# --- the example's own tests, through cudaload's pytest plugin, against the installed wheels ------
cp -r "$ROOT/examples/gpuops/tests" "$WORK/gpuops-tests"
env -u CUDALOAD_LIBCUDA -u CUDALOAD_LIBNVRTC -u PYTHONPATH \
    "$WORK/env/bin/python" -m pytest -q -rs -p no:cacheprovider "$WORK/gpuops-tests"
say "all checks passed"
