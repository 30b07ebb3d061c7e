#!/usr/bin/env bash
# Fetch NVIDIA's driver library of the 535 series (CUDA 12.2) from the distribution's archive,
# unpack it without installing it, and print the path of its libcuda.so.1: a real driver library
# for a machine without a GPU (cuInit answers CUDA_ERROR_NO_DEVICE), for CUDALOAD_TEST_LIBCUDA.
#   Debian: libcuda1 from non-free (suite: CUDALOAD_DEBIAN_SUITE, default bookworm).
#   Ubuntu: libnvidia-compute-535 from restricted (suite: this release's codename).
# Run as `cudaload fetch-libcuda`.  Needs apt-get and dpkg, not root: apt runs on private state only
# (its own sources list, lists and cache, under CUDALOAD_LIBCUDA_DIR, default
# ~/.cache/cudaload-libcuda), so the machine's apt configuration is neither needed nor changed; the
# archive's signature is checked with the keys the machine trusts, which is why each distribution
# fetches from its own archive.  The sources list lives outside the lists folder because apt
# deletes files it does not know from there.  A second run prints the path it unpacked before.
set -euo pipefail

DEST="${CUDALOAD_LIBCUDA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cudaload-libcuda}"

find_so() { [ -d "$DEST/root" ] && find "$DEST/root" -name libcuda.so.1 | head -n 1 || true; }

so="$(find_so)"
if [ -n "$so" ]; then
    echo "$so"
    exit 0
fi

for tool in apt-get dpkg; do
    command -v "$tool" >/dev/null || {
        echo "cudaload fetch-libcuda: $tool is needed (Debian or Ubuntu); elsewhere set" \
             "CUDALOAD_TEST_LIBCUDA to a libcuda.so.1 unpacked from NVIDIA's driver package" >&2
        exit 1
    }
done

distro="$(. /etc/os-release 2>/dev/null && echo "${ID:-}")"
if [ "$distro" = ubuntu ]; then
    suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
    case "$(dpkg --print-architecture)" in
        amd64|i386) mirror=http://archive.ubuntu.com/ubuntu ;;
        *) mirror=http://ports.ubuntu.com/ubuntu-ports ;;
    esac
    source_line="deb $mirror $suite restricted"
    package=libnvidia-compute-535
else
    source_line="deb http://deb.debian.org/debian ${CUDALOAD_DEBIAN_SUITE:-bookworm} non-free"
    package=libcuda1
fi

apt_dir="$DEST/apt"
rm -rf "$DEST/root" "$apt_dir"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/download" "$DEST/root"
echo "$source_line" > "$apt_dir/sources.list"
opts=(
    -q
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "APT::Sandbox::User=$(id -un)"
)
apt-get "${opts[@]}" update >&2
(cd "$apt_dir/download" && apt-get "${opts[@]}" download "$package" >&2)
dpkg -x "$apt_dir"/download/"$package"_*.deb "$DEST/root"
rm -rf "$apt_dir/lists" "$apt_dir/cache"

so="$(find_so)"
[ -n "$so" ] || { echo "cudaload fetch-libcuda: libcuda.so.1 not found in $package" >&2; exit 1; }
echo "$so"
