#!/usr/bin/env bash
# Fetch Debian's non-free libcuda1 (the 535 driver series: CUDA 12.2), unpack it without installing
# it, and print the path of its libcuda.so.1.  Tests load it through CUDALOAD_LIBCUDA: a real driver
# library on a machine without a GPU, so cuInit answers CUDA_ERROR_NO_DEVICE.
#
# apt runs on private state only: its own sources list (bookworm non-free), lists and cache,
# so the machine's apt configuration is neither needed nor changed.  The sources list lives outside
# the lists folder because apt deletes files it does not know from there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${CUDALOAD_LIBCUDA_DIR:-$ROOT/.cache/libcuda535}"
SUITE="${CUDALOAD_DEBIAN_SUITE:-bookworm}"

find_so() { [ -d "$DEST/root" ] && find "$DEST/root" -name libcuda.so.1 | head -n 1 || true; }

so="$(find_so)"
if [ -n "$so" ]; then
    echo "$so"
    exit 0
fi

for tool in apt-get dpkg; do
    command -v "$tool" >/dev/null || { echo "fetch_libcuda.sh: $tool is needed (Debian/Ubuntu)" >&2; exit 1; }
done

apt_dir="$DEST/apt"
rm -rf "$DEST/root" "$apt_dir"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/download" "$DEST/root"
echo "deb http://deb.debian.org/debian $SUITE non-free" > "$apt_dir/sources.list"
opts=(
    -q
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "APT::Sandbox::User=$(id -un)"
)
apt-get "${opts[@]}" update >&2
(cd "$apt_dir/download" && apt-get "${opts[@]}" download libcuda1 >&2)
dpkg -x "$apt_dir"/download/libcuda1_*.deb "$DEST/root"
rm -rf "$apt_dir/lists" "$apt_dir/cache"

so="$(find_so)"
[ -n "$so" ] || { echo "fetch_libcuda.sh: libcuda.so.1 not found in the unpacked package" >&2; exit 1; }
echo "$so"
