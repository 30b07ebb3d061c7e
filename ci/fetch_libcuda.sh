#!/usr/bin/env bash
# The driver library without GPU for cudaload's tests: `cudaload fetch-libcuda`
# (cudaload/wheelcheck/fetch_libcuda.sh: Debian's libcuda1, Ubuntu's libnvidia-compute-535),
# unpacked into this checkout's .cache/libcuda535; prints the path of its libcuda.so.1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CUDALOAD_LIBCUDA_DIR="${CUDALOAD_LIBCUDA_DIR:-$ROOT/.cache/libcuda535}" \
    exec bash "$ROOT/cudaload/wheelcheck/fetch_libcuda.sh"
