#!/usr/bin/env bash
# The whole test suite, from a fresh machine: system tools if missing (Debian/Ubuntu), a virtual
# environment with cudaload[nvrtc,test], Debian's libcuda 535 as a real driver without GPU, the check
# that the generated cffi modules match headers/, then pytest.  Extra arguments go to pytest.
#
#   PYTHON=python3.12 bash ci/test.sh        # another interpreter (3.11 or newer)
#   CUDALOAD_VENV=/path/venv bash ci/test.sh # another environment folder (default .venv-ci)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
VENV="${CUDALOAD_VENV:-$ROOT/.venv-ci}"

# Install what a bare Debian 12 lacks: the venv module, a C compiler (tests build tiny shared
# libraries), and nothing else.
missing=()
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
command -v cc >/dev/null || missing+=(gcc libc6-dev)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then sudo=(); elif sudo -n true 2>/dev/null; then sudo=(sudo -n); else
        echo "ci/test.sh: please install ${missing[*]} (needs root)" >&2; exit 1; fi
    echo "ci/test.sh: installing ${missing[*]}" >&2
    "${sudo[@]}" apt-get -q update >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -q install -y --no-install-recommends \
        "${missing[@]}" >&2
fi

"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 11):
    sys.exit(f"ci/test.sh: Python 3.11 or newer is needed, {sys.executable} is {sys.version.split()[0]}")
PY

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[nvrtc,test]'

if [ -z "${CUDALOAD_TEST_LIBCUDA:-}" ]; then
    CUDALOAD_TEST_LIBCUDA="$(bash ci/fetch_libcuda.sh)"
fi
export CUDALOAD_TEST_LIBCUDA
# Tests that need the driver library or the C compiler fail here instead of skipping.
export CI="${CI:-1}"

"$VENV/bin/python" ci/gen_ffi.py --check

status=0
"$VENV/bin/python" -m pytest -q tests "$@" || status=$?
if [ "$status" = 5 ]; then
    echo "ci/test.sh: pytest collected no tests" >&2
fi
exit "$status"
