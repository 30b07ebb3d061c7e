#!/usr/bin/env bash
# The whole test suite, from a fresh machine: system tools if missing (Debian/Ubuntu), a virtual
# environment with cudaload[nvrtc,test], Debian's libcuda 535 as a real driver without GPU, the check
# that the generated cffi modules match headers/, mypy over cudaload/, then pytest.  Extra arguments
# go to pytest.
#
# The environment is the README's set-up one, `.venv` (made here if absent; the `test` extra is
# added to it), unless PYTHON is another X.Y than `.venv`'s: then `.venv-X.Y`, beside it.
#
#   PYTHON=python3.13 bash ci/test.sh        # another interpreter (3.11 or newer), in .venv-3.13
#   CUDALOAD_VENV=/path/venv bash ci/test.sh # another environment folder
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
x_y() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
if [ -n "${CUDALOAD_VENV:-}" ]; then
    VENV="$CUDALOAD_VENV"
else
    VENV="$ROOT/.venv"
    wanted="$(x_y "$PYTHON")"
    if [ -x "$VENV/bin/python" ] && [ "$(x_y "$VENV/bin/python")" != "$wanted" ]; then
        VENV="$ROOT/.venv-$wanted"
    fi
fi

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
# The network-filesystem tests mount a folder through sshfs from an OpenSSH server on the
# loopback (tests/_sshfs.py); they skip, with the reason, where these cannot be installed.
optional=()
command -v sshfs >/dev/null || optional+=(sshfs)
command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] || optional+=(openssh-server)
if [ ${#optional[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then sudo=(); elif sudo -n true 2>/dev/null; then sudo=(sudo -n); else
        sudo=(false); fi
    if [ "${sudo[0]:-}" != false ]; then
        echo "ci/test.sh: installing ${optional[*]}" >&2
        { "${sudo[@]}" apt-get -q update && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" \
            apt-get -q install -y --no-install-recommends "${optional[@]}"; } >&2 ||
            echo "ci/test.sh: could not install ${optional[*]}: those tests skip" >&2
    fi
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
# The type checker over the package (settings in pyproject.toml's [tool.mypy]).
"$VENV/bin/python" -m mypy cudaload

# What pip installed must compile every CUDA header on its own, so the tests run with each CUDA
# toolkit under /usr/local hidden: an empty read-only tmpfs over it in a private mount namespace
# (as root, or as root of a user namespace).  Each one is first bind-mounted aside, at the path
# CUDALOAD_TEST_SYSTEM_TOOLKITS names, for the test that shows which toolkit headers are preferred.
# Where no namespace can be made, cuda.pathfinder is kept from searching outside the environment
# instead (tests/_hide_toolkits/sitecustomize.py), and CUDA_HOME, CUDA_PATH and CONDA_PREFIX unset.
toolkits=()
for dir in /usr/local/cuda*; do
    [ -d "$dir" ] || continue
    real="$(readlink -f "$dir")"
    [[ " ${toolkits[*]} " == *" $real "* ]] || toolkits+=("$real")
done
# -rs: each skip's reason in the summary (the GPU tests' one line says why there is no GPU)
run_tests=("$VENV/bin/python" -m pytest -q -rs tests "$@")
unset CUDA_HOME CUDA_PATH CONDA_PREFIX
if [ ${#toolkits[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then ns=(unshare -m --propagation private)
    else ns=(unshare -r -m --propagation private); fi
    if "${ns[@]}" true 2>/dev/null; then
        aside="$(mktemp -d)"
        export CUDALOAD_TEST_HIDDEN_TOOLKITS="${toolkits[*]}"
        export CUDALOAD_TEST_SYSTEM_TOOLKITS="$(printf "$aside/%s " "${toolkits[@]##*/}")"
        echo "ci/test.sh: hiding ${toolkits[*]} from the tests (empty tmpfs, private mount namespace)" >&2
        status=0
        "${ns[@]}" bash -c 'set -e; aside="$1"; shift
            for dir in $CUDALOAD_TEST_HIDDEN_TOOLKITS; do
                mkdir "$aside/${dir##*/}"; mount --bind "$dir" "$aside/${dir##*/}"
                mount -t tmpfs -o ro,size=4k cudaload-hidden "$dir"
            done
            exec "$@"' hide "$aside" "${run_tests[@]}" || status=$?
        rm -rf "$aside"
        [ "$status" = 5 ] && echo "ci/test.sh: pytest collected no tests" >&2
        exit "$status"
    fi
    echo "ci/test.sh: no private mount namespace here: cuda.pathfinder is kept to this environment" \
         "instead, so that ${toolkits[*]} stay out of the tests" >&2
    export CUDALOAD_TEST_HIDDEN_TOOLKITS="${toolkits[*]}" CUDALOAD_TEST_HIDDEN_BY=pathfinder
    export PYTHONPATH="$ROOT/tests/_hide_toolkits${PYTHONPATH:+:$PYTHONPATH}"
fi

status=0
"${run_tests[@]}" || status=$?
if [ "$status" = 5 ]; then
    echo "ci/test.sh: pytest collected no tests" >&2
fi
exit "$status"
