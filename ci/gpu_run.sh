#!/usr/bin/env bash
# Run the GPU test suite and the launch benchmark on a GPU machine (no network needed) and write
# the record to a folder:  ci/gpu_run.sh OUT_DIR
#   OUT_DIR/result.json     GPU, driver, commit, passed/failed/skipped counts, benchmark figures
#   OUT_DIR/junit.xml, OUT_DIR/pytest.log, OUT_DIR/launch_bench.json
# GPU_RUN_TEST_TIMEOUT bounds pytest (seconds); GPU_RUN_BENCH=0 skips the launch benchmark.
# CUDALOAD_COMMIT names the commit where the copy has no .git.
# Wheels under .whl/ (e.g. cffi, pycparser) are installed first into a private folder.
set -u
OUT="${1:?usage: ci/gpu_run.sh OUT_DIR}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$OUT"
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
    # Into the running environment, so that test subprocesses which set their own PYTHONPATH see
    # them too; into a private folder on PYTHONPATH where that environment is read-only.
    if ! python3 -m pip install -q --no-index --no-deps --no-cache-dir .whl/*.whl; then
        SITE="${TMPDIR:-/tmp}/cudaload-site"
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$SITE" .whl/*.whl || exit 1
        export PYTHONPATH="$SITE:$PYTHONPATH"
    fi
fi
# libNVVM for the NVVM tests where no nvidia-nvvm wheel was installed (its wheel is larger than
# what travels with the tree): .whl/libnvvm.so.xz unpacked, else a CUDA toolkit's own.
if [ -z "${CUDALOAD_TEST_LIBNVVM:-}" ] && ! python3 -c "import nvidia.cu13.lib, os, sys; sys.exit(not any(n.startswith('libnvvm') for n in os.listdir(nvidia.cu13.lib.__path__[0])))" 2>/dev/null; then
    if [ -f .whl/libnvvm.so.xz ]; then
        NVVM_DIR="$(mktemp -d)"
        python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" \
            .whl/libnvvm.so.xz "$NVVM_DIR/libnvvm.so.4" && export CUDALOAD_TEST_LIBNVVM="$NVVM_DIR/libnvvm.so.4"
    else
        for f in "${CUDA_HOME:-/usr/local/cuda}"/nvvm/lib64/libnvvm.so.[0-9]* /usr/local/cuda*/nvvm/lib64/libnvvm.so.[0-9]*; do
            if [ -f "$f" ]; then export CUDALOAD_TEST_LIBNVVM="$f"; break; fi
        done
    fi
fi
export CUDALOAD_CACHE_DIR="${CUDALOAD_CACHE_DIR:-$(mktemp -d)}"
rm -f "$OUT/junit.xml"  # an earlier run's report must not pass for this one's

CUDALOAD_REQUIRE_GPU=1 timeout "${GPU_RUN_TEST_TIMEOUT:-1500}" python3 -m pytest -q -p no:cacheprovider tests/gpu tests \
    --junitxml="$OUT/junit.xml" >"$OUT/pytest.log" 2>&1
PYTEST_RC=$?
BENCH_RC=0
if [ "${GPU_RUN_BENCH:-1}" != 0 ]; then  # 0 where bench/run_all.py runs the benchmarks instead
    timeout 900 python3 bench/launch_bench.py --out "$OUT/launch_bench.json" >"$OUT/launch_bench.log" 2>&1
    BENCH_RC=$?
fi

python3 - "$OUT" "$PYTEST_RC" "$BENCH_RC" <<'PY'
import json, os, subprocess, sys, xml.etree.ElementTree as ET
out, pytest_rc, bench_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as exc:
        return f"unavailable: {exc}"
counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
failed = []
reported = True
try:
    root = ET.parse(os.path.join(out, "junit.xml")).getroot()
    for suite in root.iter("testsuite"):
        for key in counts:
            counts[key] += int(suite.get(key, 0))
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
except (OSError, ET.ParseError) as exc:  # pytest killed by its timeout, say: counts unknown
    failed.append(f"no junit report: {exc}")
    reported = False
bench = None
try:
    with open(os.path.join(out, "launch_bench.json")) as f:
        bench = json.load(f)
except (OSError, ValueError):
    pass
record = {
    "gpu": sh("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"),
    # The device copy of a checkout may carry no .git: the caller passes the commit then.
    "commit": os.environ.get("CUDALOAD_COMMIT") or sh("git", "rev-parse", "HEAD") or "unknown",
    "dirty": os.environ.get("CUDALOAD_DIRTY", "unknown"),
    "python": sys.version.split()[0],
    "libnvvm": os.environ.get("CUDALOAD_TEST_LIBNVVM"),  # None: a wheel's, or none
    "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    if reported else None,
    "failed": counts["failures"] + counts["errors"] if reported else None,
    "skipped": counts["skipped"] if reported else None,
    "failed_tests": failed,
    "pytest_exit": pytest_rc,
    "bench_exit": bench_rc,
    "bench": bench,
}
with open(os.path.join(out, "result.json"), "w") as f:
    json.dump(record, f, indent=2)
print(json.dumps({k: record[k] for k in ("gpu", "commit", "passed", "failed", "skipped",
                                         "pytest_exit")}))
PY
[ "$PYTEST_RC" -eq 0 ] && [ "$BENCH_RC" -eq 0 ]
