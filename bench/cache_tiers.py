"""A disk hit in a read-only cache tier (``CUDALOAD_CACHE_READ_DIRS``) against one in the writable
cache folder: what ``DiskCache.lookup`` costs the caller for each.

    python bench/cache_tiers.py [--entries N] [--bytes B] [--sshfs] [--out FILE]

Fills a throw-away writable folder and a throw-away tier with N entries each (B bytes of code),
then looks every one up once, alternating local and tier keys, with the page cache warm for both
(each file was just written).  Each key is looked up once: a tier hit is copied into the writable
folder (on the writer's thread), so a second lookup of it would be a local hit.  Figures, in
microseconds: the median and 90th percentile of a local hit, of a tier hit (the caller's time;
the copy runs on the writer's thread), of a tier hit together with its copy (the writer waited
for), and of a local miss with the variable unset and set (the tier holding nothing).  With
``--sshfs`` the tier lies on an sshfs mount of an OpenSSH server on the loopback
(tests/_sshfs.py), a network filesystem.  Needs neither NVRTC nor a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _key(kind: str, i: int) -> str:
    return (kind * 8 + "%056x" % i)[-64:]


def _figures(samples: list[int]) -> dict:
    ordered = sorted(samples)
    return {"median_us": round(statistics.median(ordered) / 1000, 1),
            "p90_us": round(ordered[int(len(ordered) * 0.9)] / 1000, 1), "n": len(ordered)}


def measure(base: str, tier_root: str, entries: int, size: int) -> dict:
    os.environ["CUDALOAD_CACHE_DIR"] = os.path.join(base, "local")
    os.environ.pop("CUDALOAD_CACHE_MAX_BYTES", None)
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    local, tier = cache.DiskCache(os.path.join(base, "local")), cache.DiskCache(tier_root)
    code = os.urandom(size)
    for i in range(entries):
        obj = ObjectCode(b"\x7fELF" + code[4:], "cubin", "sm_90")
        local.store(_key("a", i), obj)
        tier.store(_key("b", i), obj)
    local.writer.wait()
    hits, tier_hits, copied, miss_unset, miss_set = [], [], [], [], []
    clock = time.perf_counter_ns
    for i in range(entries):
        os.environ.pop("CUDALOAD_CACHE_READ_DIRS", None)
        t0 = clock()
        found = local.lookup(_key("a", i))
        hits.append(clock() - t0)
        assert found is not None and found.cached == "disk"
        t0 = clock()
        assert local.lookup(_key("c", i)) is None
        miss_unset.append(clock() - t0)
        os.environ["CUDALOAD_CACHE_READ_DIRS"] = tier_root
        t0 = clock()
        assert local.lookup(_key("c", i)) is None
        miss_set.append(clock() - t0)
        t0 = clock()
        found = local.lookup(_key("b", i))
        t1 = clock()
        local.writer.wait()
        t2 = clock()
        assert found is not None and found.cached == "disk"
        tier_hits.append(t1 - t0)
        copied.append(t2 - t0)
    return {"local_hit": _figures(hits), "tier_hit": _figures(tier_hits),
            "tier_hit_with_copy": _figures(copied),
            "local_miss_variable_unset": _figures(miss_unset),
            "local_miss_tier_empty": _figures(miss_set)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--bytes", type=int, default=16384)
    parser.add_argument("--sshfs", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as base:
        if args.sshfs:
            from tests import _sshfs

            with _sshfs.two_mounts(os.path.join(base, "net")) as (mount, _other, _backing):
                result = measure(base, os.path.join(mount, "tier"), args.entries, args.bytes)
        else:
            result = measure(base, os.path.join(base, "tier"), args.entries, args.bytes)
    result.update({"tier_on": "sshfs (loopback)" if args.sshfs else "the same local disk",
                   "entry_code_bytes": args.bytes, "python": sys.version.split()[0]})
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
