"""Ahead-of-time build of the operator library with nvcc, the way a framework ships it.

The kernels are split into translation units (a framework's library is many files too), each
compiled by ``nvcc -fatbin`` for sm_80, sm_90 and sm_100 with the fatbin compressed
(``-Xfatbin=-compress-all``, as framework builds do).  Outputs go to
``.benchbuild/memory_story/<source digest>/<library>/`` with ``manifest.json`` recording the build
time, the machine it ran on and the file sizes, so a GPU machine without nvcc can reuse them.

    python bench/memory_story/build.py --library small|large|all [--jobs N] [--force]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_ROOT = os.environ.get("CUDALOAD_BENCH_BUILD", os.path.join(REPO, ".benchbuild", "memory_story"))
ARCHS = (80, 90, 100)
KERNELS_PER_UNIT = 160


def library_dir(library: str) -> str:
    return os.path.join(BUILD_ROOT, ops.source_digest(), library)


def find_nvcc() -> str | None:
    for cand in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    return out.strip().splitlines()[-2] if out.strip() else "unknown"


def load_manifest(library: str) -> dict | None:
    """The manifest of a finished build of ``library`` for the current source, or None."""
    path = os.path.join(library_dir(library), "manifest.json")
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return None
    files = [os.path.join(library_dir(library), u["fatbin"]) for u in manifest.get("units", [])]
    return manifest if files and all(os.path.isfile(f) for f in files) else None


def fatbins(library: str) -> list[str]:
    """Paths of the fatbins of a finished build.  Raises FileNotFoundError when there is none."""
    manifest = load_manifest(library)
    if manifest is None:
        raise FileNotFoundError(
            f"no prebuilt {library} library under {library_dir(library)}; "
            f"run: python bench/memory_story/build.py --library {library}")
    return [os.path.join(library_dir(library), u["fatbin"]) for u in manifest["units"]]


def elf_bytes(paths) -> dict[str, int]:
    """Uncompressed device code per arch in fatbins: {"sm_90": bytes, ...} (what a loader gets).

    Reads the fatbin container headers: magic, version, header size, payload size, then per entry
    a header whose word 7 is the arch and whose bytes 56..63 hold the uncompressed size of a
    compressed entry (0 when the entry is stored as is)."""
    out: dict[str, int] = {}
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        magic, _, header, size = struct.unpack_from("<IHHQ", data, 0)
        if magic != 0xBA55ED50:
            raise ValueError(f"{path} is not a fatbin")
        off = header
        while off < header + size:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, off)
            arch = struct.unpack_from("<I", data, off + 28)[0]
            plain = struct.unpack_from("<Q", data, off + 56)[0] if entry_header >= 64 else 0
            label = f"sm_{arch}" if kind == 2 else f"ptx_{arch}"
            out[label] = out.get(label, 0) + (plain or payload)
            off += entry_header + payload
    return out


def _compile_unit(nvcc: str, src: str, out: str) -> float:
    cmd = [nvcc, "-fatbin", "-Xfatbin=-compress-all", "-O3", "-diag-suppress", "177,550",
           *[f"-gencode=arch=compute_{a},code=sm_{a}" for a in ARCHS], src, "-o", out]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"nvcc failed on {src}:\n{proc.stderr[-4000:]}")
    return time.perf_counter() - t0


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(), "os": platform.platform()}


def build(library: str, jobs: int | None = None, force: bool = False, log=print) -> dict:
    """Build ``library`` unless a build of the same source exists; returns its manifest.

    Raises FileNotFoundError without nvcc, RuntimeError when nvcc fails.
    """
    if not force and (manifest := load_manifest(library)) is not None:
        return manifest
    nvcc = find_nvcc()
    if nvcc is None:
        raise FileNotFoundError("nvcc not found (set NVCC=/path/to/nvcc) and no prebuilt library")
    out_dir = library_dir(library)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    kernels = ops.kernels(library)
    units = [kernels[i:i + KERNELS_PER_UNIT] for i in range(0, len(kernels), KERNELS_PER_UNIT)]
    jobs = jobs or os.cpu_count() or 1
    log(f"building {library}: {len(kernels)} kernels in {len(units)} units, "
        f"sm_{'/sm_'.join(map(str, ARCHS))}, {jobs} jobs")
    srcs = []
    for n, unit in enumerate(units):
        src = os.path.join(out_dir, f"unit{n:03d}.cu")
        with open(src, "w", encoding="utf-8") as f:
            f.write(ops.source(unit))
        srcs.append(src)
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(_compile_unit, nvcc, s, s[:-3] + ".fatbin") for s in srcs]
        unit_seconds = [f.result() for f in futures]
    wall = time.perf_counter() - t0
    manifest = {
        "library": library, "kernels": len(kernels), "archs": [f"sm_{a}" for a in ARCHS],
        "digest": ops.source_digest(), "build_seconds": round(wall, 2),
        "build_cpu_seconds": round(sum(unit_seconds), 2), "jobs": jobs,
        "nvcc": nvcc_version(nvcc), "machine": machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "compression": "-Xfatbin=-compress-all",
        "units": [{"fatbin": os.path.basename(s)[:-3] + ".fatbin", "kernels": len(u),
                   "bytes": os.path.getsize(s[:-3] + ".fatbin")} for s, u in zip(srcs, units)],
    }
    manifest["bytes"] = sum(u["bytes"] for u in manifest["units"])
    for s in srcs:
        os.remove(s)
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    log(f"built {library}: {manifest['bytes'] / 2**20:.1f} MiB in {wall:.0f} s")
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--library", choices=("small", "large", "all"), default="small")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    for lib in (("small", "large") if args.library == "all" else (args.library,)):
        m = build(lib, args.jobs, args.force)
        print(json.dumps({k: v for k, v in m.items() if k != "units"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
