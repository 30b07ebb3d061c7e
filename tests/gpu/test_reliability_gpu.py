"""Hostile launches, device faults and load on a real GPU: typed errors, no crash, no growth.

Every bad launch must raise a typed error (LaunchArgumentError for arguments, ValueError/TypeError
for the launch shape) and leave the kernel usable: each test ends with a correct launch checked.
Faults that poison the context run in a subprocess.
"""

from __future__ import annotations

import json
import os
import threading

import pytest

import cudaload
from cudaload.errors import DriverError, LaunchArgumentError

from .._support import scenario_json

np = pytest.importorskip("numpy")

PARAMS = r"""
struct Pair { int a; float b; };
extern "C" __global__ void params(int i, unsigned u, long long ll, float f, double d,
                                  const int* ptr, Pair s, long long* out) {
    out[0] = i; out[1] = u; out[2] = ll; out[3] = (long long)f; out[4] = (long long)d;
    out[5] = ptr[0]; out[6] = s.a; out[7] = (long long)s.b;
}
"""
N_PARAMS = 8


_made: list = []


@pytest.fixture
def setup():
    # Function scope, made once: a module-scoped fixture would run before the autouse GPU check.
    if _made:
        return _made[0]
    kernel = cudaload.Program(PARAMS).compile().load().get_kernel("params")
    one = cudaload.alloc(4).copy_from_host(np.array([42], np.int32))
    out = cudaload.alloc(8 * 8)
    pair = np.array((7, 3.0), dtype=[("a", "<i4"), ("b", "<f4")])[()]
    good = [-5, 7, -(2 ** 40), 2.0, 3.0, one, pair, out]
    _made.append((kernel, good, out))
    return _made[0]


def check_still_works(setup):
    kernel, good, out = setup
    out.memset(0)
    kernel(1, 1, tuple(good))
    got = np.frombuffer(out.copy_to_host(), np.int64)
    assert list(got) == [-5, 7, -(2 ** 40), 2, 3, 42, 7, 3]


# --- arity ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("count", [n for n in range(N_PARAMS + 4) if n != N_PARAMS])
def test_every_wrong_arity(setup, count):
    kernel, good, _out = setup
    args = tuple((good * 2)[:count])
    with pytest.raises(LaunchArgumentError, match=f"takes {N_PARAMS} arguments, {count} given"):
        kernel(1, 1, args)
    check_still_works(setup)


# --- wrong kind or width, per parameter ---------------------------------------------------------

_HOST = np.zeros(4, np.int32)
BAD = {
    0: [2 ** 31, -(2 ** 31) - 1, 1.5, "1", None, b"\0\0\0\0", 1j, np.float32(1), _HOST],  # int
    1: [-1, 2 ** 32, 1.5, "1", None, np.int64(-1)],  # unsigned
    2: [2 ** 63, -(2 ** 63) - 1, 1.5, "1", None, np.float64(1)],  # long long
    3: ["1.0", None, 1j, b"\0\0\0\0", _HOST, [1.0]],  # float
    4: ["1.0", None, 1j, b"\0" * 8, _HOST, (1.0,)],  # double
    5: [1.5, "0x10", _HOST, -1, 2 ** 64, b"\0" * 8, 1j],  # pointer
    6: [b"\0" * 7, b"\0" * 9, b"", "ab", None, [7, 3.0], np.zeros(3, np.int32)],  # struct (8 B)
}
CASES = [(index, i) for index, values in BAD.items() for i in range(len(values))]


@pytest.mark.parametrize("index, which", CASES,
                         ids=[f"param{p}-{BAD[p][w]!r:.20}" for p, w in CASES])
def test_every_wrong_kind_and_width(setup, index, which):
    kernel, good, _out = setup
    args = list(good)
    args[index] = BAD[index][which]
    with pytest.raises(LaunchArgumentError) as info:
        kernel(1, 1, tuple(args))
    message = str(info.value)
    assert f"argument {index}" in message and "signature" in message, message
    check_still_works(setup)


# --- launch shape ------------------------------------------------------------------------------

SHAPES = [
    ("grid zero", 0, 1), ("block zero", 1, 0), ("grid negative", -1, 1), ("block negative", 1, -4),
    ("grid y zero", (1, 0), 1), ("block z zero", 1, (1, 1, 0)),
    ("grid x beyond", 2 ** 31, 1), ("grid y beyond", (1, 65536), 1), ("grid z beyond", (1, 1, 65536), 1),
    ("block x beyond", 1, 1025), ("block z beyond", 1, (1, 1, 65)), ("threads beyond", 1, (1024, 2)),
    ("four dimensions", (1, 1, 1, 1), 1), ("not a number", "a", 1), ("float", 1.5, 1),
    ("grid huge", 2 ** 70, 1),
]


@pytest.mark.parametrize("label, grid, block", SHAPES, ids=[s[0] for s in SHAPES])
def test_bad_grid_and_block(setup, label, grid, block):
    kernel, good, _out = setup
    with pytest.raises((ValueError, TypeError)) as info:
        kernel(grid, block, tuple(good))
    assert not isinstance(info.value, DriverError), info.value
    check_still_works(setup)


@pytest.mark.parametrize("shared", ["limit+1", "2**31", "-1", "2**64"])
def test_shared_memory_beyond_the_device_limit(setup, shared):
    kernel, good, _out = setup
    limit = cudaload.Device(0).attribute(97)  # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    nbytes = {"limit+1": limit + 1, "2**31": 2 ** 31, "-1": -1, "2**64": 2 ** 64}[shared]
    with pytest.raises(ValueError):
        kernel(1, 1, tuple(good), shared_mem=nbytes)
    check_still_works(setup)


def test_a_freed_buffer_is_refused(setup):
    # In a subprocess: if the freed pointer reached the kernel, the context could be poisoned.
    out = scenario_json("gpu_faults", "freed_buffer")
    for what in ("launch", "copy_to_host", "memset"):
        assert out[what] != "accepted", f"{what} of a freed buffer was accepted: {out}"
        assert out[what][2] and "freed" in out[what][1], out
    assert out["after"] == 1, out


def test_a_buffer_of_another_device_is_refused(setup):
    if cudaload.device_count() < 2:
        pytest.skip("needs two GPUs")
    kernel, good, _out = setup
    other = cudaload.alloc(8, device=1)
    args = list(good)
    args[5] = other
    with pytest.raises(LaunchArgumentError, match="device"):
        kernel(1, 1, tuple(args))
    check_still_works(setup)


# --- faults ---------------------------------------------------------------------------------------

def test_sticky_error_is_reported_and_a_new_process_works():
    out = scenario_json("gpu_faults", "sticky_fault", timeout=120)
    assert out["fault"] is not None, "the faulting kernel was not reported"
    name, message = out["fault"]
    assert name in ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED")
    assert "restart the process" in message
    assert out["after"] is not None  # sticky: the context stays unusable, and says so
    # a fault is the program's, not "no CUDA here": a host package must not fall back silently
    assert out["fault_unavailable"] is False and out["after_unavailable"] is False
    fresh = scenario_json("gpu_faults", "launch_once")
    assert fresh == 5


def test_out_of_memory_is_a_driver_error_and_recoverable():
    total = cudaload.Device(0).total_memory
    for nbytes in (total * 2, total + (1 << 30), 1 << 50):
        with pytest.raises(DriverError) as info:
            cudaload.alloc(nbytes)
        assert info.value.name == "CUDA_ERROR_OUT_OF_MEMORY"
        assert "free device memory" in str(info.value)
        assert not isinstance(info.value, cudaload.CudaUnavailableError)
    cudaload.alloc(1 << 20).memset(0)  # the context is fine afterwards


def test_fork_after_initialisation_fails_clearly_in_the_child():
    out = scenario_json("gpu_faults", "fork_after_init", timeout=60)
    assert out.startswith("ForkedProcessError") and "spawn" in out


# --- load ----------------------------------------------------------------------------------------

def test_32_threads_compile_and_launch_at_once():
    n = 4096
    barrier = threading.Barrier(32)
    errors, results = [], {}

    def work(t: int):
        try:
            src = ('extern "C" __global__ void add(int *x, int n) {'
                   f' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += {t} + i; }}')
            barrier.wait()
            k = cudaload.RawKernel(src, "add")
            shared = cudaload.RawKernel(
                'extern "C" __global__ void twice(int *x, int n) {'
                ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }', "twice")
            buf = cudaload.alloc(4 * n).memset(0)
            s = cudaload.Stream()
            for _ in range(10):
                k((n + 255) // 256, 256, (buf, n), stream=s)
            shared((n + 255) // 256, 256, (buf, n), stream=s)
            s.synchronize()
            results[t] = np.frombuffer(buf.copy_to_host(), np.int32)
        except Exception as err:  # collected: a thread's exception must fail the test
            errors.append(repr(err))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(32)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert errors == []
    assert sorted(results) == list(range(32))
    for t, got in results.items():
        np.testing.assert_array_equal(got, 2 * 10 * (t + np.arange(n)))


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc/self/statm")
def test_a_million_launches_do_not_grow_memory(record_property):
    k = cudaload.RawKernel('extern "C" __global__ void inc(int *x) { atomicAdd(x, 1); }', "inc")
    buf = cudaload.alloc(4).memset(0)
    dev = cudaload.Device(0)
    for _ in range(10_000):  # warm up: plans, configs, allocator pools
        k(1, 1, (buf,))
    dev.synchronize()
    rss0, free0 = _rss(), dev.mem_info()[0]
    total = 1_000_000
    for i in range(total):
        k(1, 1, (buf,))
        if i % 50_000 == 0:
            dev.synchronize()
    dev.synchronize()
    rss1, free1 = _rss(), dev.mem_info()[0]
    count = int(np.frombuffer(buf.copy_to_host(), np.int32)[0])
    growth = {"launches": total, "host_rss_growth": rss1 - rss0,
              "device_free_drop": free0 - free1}
    record_property("million_launches", growth)
    print("million launches:", json.dumps(growth))
    assert count == total + 10_000
    assert rss1 - rss0 < 16 << 20, growth
    assert free0 - free1 < 4 << 20, growth
