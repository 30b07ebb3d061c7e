"""Kernels on a real GPU: results against numpy, every argument kind, wrong arguments, limits."""

from __future__ import annotations

import threading

import pytest

import cudaload
from cudaload.errors import LaunchArgumentError

from .._support import run_scenario
from .kernels import KINDS, SAXPY, SHARED, TEMPLATED

np = pytest.importorskip("numpy")


def to_device(a):
    return cudaload.alloc(a.nbytes).copy_from_host(a)


def to_host(buf, dtype, n):
    return np.frombuffer(buf.copy_to_host(), dtype=dtype)[:n]


def test_saxpy_matches_numpy():
    n = 10_000
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    y = np.random.default_rng(1).random(n, dtype=np.float32)
    dx, dy = to_device(x), to_device(y)
    k = cudaload.RawKernel(SAXPY, "saxpy")
    k(((n + 255) // 256,), (256,), (dx, dy, np.float32(2.5), n))
    np.testing.assert_allclose(to_host(dy, np.float32, n), 2.5 * x + y, rtol=1e-6)
    assert [p.ctype for p in k.params] == ["const float*", "float*", "float", "int"]


@pytest.mark.parametrize("ctype, dtype", [("float", np.float32), ("double", np.float64),
                                          ("int", np.int32)])
def test_templated_kernel_through_name_expression(ctype, dtype):
    n = 1000
    x = np.arange(n).astype(dtype)
    buf = to_device(x)
    k = cudaload.RawKernel(TEMPLATED, f"scale<{ctype}>")
    k(4, 256, (buf, 3, n))
    np.testing.assert_array_equal(to_host(buf, dtype, n), x * 3)
    assert k.params[1].ctype == ctype  # from the mangled name


def test_every_scalar_kind_packs_exactly():
    mod = cudaload.Program(KINDS).compile().load()
    k = mod.get_kernel("kinds")
    out, real = cudaload.alloc(11 * 8).memset(0), cudaload.alloc(3 * 8)
    one = to_device(np.array([42], np.int32))
    pair = np.array((7, 0.25), dtype=[("a", "<i4"), ("b", "<f4")])[()]
    args = (out, real.ptr, -5, 250, np.int16(-300), 65000, -(2 ** 31), 2 ** 32 - 1, -(2 ** 63),
            2 ** 64 - 1, np.float32(1.5), 2.25, True, pair, one)
    k(1, 1, args)
    ints = to_host(out, np.int64, 11)
    assert list(ints) == [-5, 250, -300, 65000, -(2 ** 31), 2 ** 32 - 1, -(2 ** 63), -1, 1, 7, 42]
    assert list(to_host(real, np.float64, 3)) == [1.5, 2.25, 0.25]
    # a struct as raw bytes, and a NULL pointer
    k(1, 1, args[:13] + (np.array((8, 0.5), dtype=pair.dtype).tobytes(), None))
    ints = to_host(out, np.int64, 11)
    assert ints[9] == 8 and ints[10] == -1


def test_array_protocols_cai_and_dlpack():
    n = 256
    k = cudaload.RawKernel(TEMPLATED, "scale<float>")
    buf = to_device(np.ones(n, np.float32))

    class CAI:
        __cuda_array_interface__ = property(lambda self: buf.__cuda_array_interface__)

    k(1, n, (CAI(), 2.0, n))
    np.testing.assert_array_equal(to_host(buf, np.float32, n), 2.0)
    k(1, n, (buf.ptr, 2.0, n))  # raw int pointer
    np.testing.assert_array_equal(to_host(buf, np.float32, n), 4.0)
    cupy = pytest.importorskip("cupy")
    arr = cupy.ones(n, dtype=cupy.float32)

    class DL:
        def __dlpack__(self, **kw):
            return arr.__dlpack__(**kw)

        def __dlpack_device__(self):
            return arr.__dlpack_device__()

    k(1, n, (DL(), 5.0, n))
    assert float(arr.sum()) == 5.0 * n


def test_wrong_arguments_raise_clear_errors():
    k = cudaload.RawKernel(SAXPY, "saxpy")
    x = cudaload.alloc(64)
    with pytest.raises(LaunchArgumentError, match=r"int n.*saxpy\(const float\* x"):
        k(1, 1, (x, x, 1.0, 2 ** 40))
    with pytest.raises(LaunchArgumentError, match="takes 4 arguments, 3 given"):
        k(1, 1, (x, x, 1.0))
    with pytest.raises(LaunchArgumentError, match="device memory"):
        k(1, 1, (np.zeros(4, np.float32), x, 1.0, 4))
    with pytest.raises(LaunchArgumentError, match="integer is needed"):
        k(1, 1, (x, x, 1.0, 4.0))
    with pytest.raises(ValueError, match="limits"):
        k(1, 4096, (x, x, 1.0, 4))
    with pytest.raises(ValueError, match="shared memory"):
        k(1, 1, (x, x, 1.0, 4), shared_mem=10 ** 7)
    k(1, 1, (x, x, 1.0, 4))  # still launchable after the errors


def test_declared_signature_for_extern_c_binary():
    obj = cudaload.Program(SAXPY).compile()
    k = cudaload.ObjectCode.from_bytes(obj.code, obj.kind).load().get_kernel(
        "saxpy", signature="const float* x, float* y, float a, int n")
    with pytest.raises(LaunchArgumentError, match="int n"):
        k(1, 1, (0, 0, 1.0, 2 ** 31))


def test_large_shared_memory_is_enabled_automatically():
    n = 30_000  # 120 KB of floats: above the 48 KiB default
    x = np.arange(n, dtype=np.float32)
    buf = to_device(x)
    cudaload.RawKernel(SHARED, "reverse")(1, 256, (buf, n), shared_mem=n * 4)
    np.testing.assert_array_equal(to_host(buf, np.float32, n), x[::-1])


def test_sixteen_threads_launch_at_once():
    k = cudaload.RawKernel(SAXPY, "saxpy")
    n, errors, results = 4096, [], {}
    start = threading.Barrier(16)

    def work(t):
        try:
            x = to_device(np.full(n, t, np.float32))
            y = to_device(np.zeros(n, np.float32))
            s = cudaload.Stream()
            start.wait()
            for _ in range(50):
                k(n // 256, 256, (x, y, 1.0, n), stream=s)
            s.synchronize()
            results[t] = to_host(y, np.float32, n)
        except Exception as exc:  # reported below with the thread number
            errors.append((t, exc))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors
    for t in range(16):
        np.testing.assert_array_equal(results[t], 50.0 * t)


def test_sticky_error_is_reported_as_such():
    proc = run_scenario("gpu_faults", "sticky_lines", timeout=120)
    assert "FIRST CUDA_ERROR_ILLEGAL_ADDRESS" in proc.stdout
    assert "unusable" in proc.stdout
    assert "SECOND CUDA_ERROR_ILLEGAL_ADDRESS" in proc.stdout


def test_fork_child_gets_clear_error_and_never_hangs():
    proc = run_scenario("gpu_faults", "fork_child", timeout=60)
    assert "CHILD 0" in proc.stdout


def test_launch_shape_changes_are_seen_whatever_object_carries_them():
    """Repeated shapes are found by identity; a mutated list or a new equal tuple must not be."""
    k = cudaload.RawKernel('extern "C" __global__ void mark(int *out) { out[blockIdx.x] += 1; }',
                           "mark")
    out = cudaload.alloc(4 * 8)
    out.memset(0)
    grid = [2]
    k(grid, 1, (out,))
    grid[0] = 4  # same list object, new shape
    k(grid, 1, (out,))
    k((1,), 1, (out,))
    k(tuple([1]), 1, (out,))  # an equal tuple built at run time
    for blocks in (3, 3, 300 // 100):  # small ints: the same objects, identity hit
        k(blocks, 1, (out,))
    counts = to_host(out, np.int32, 8).tolist()
    assert counts == [7, 5, 4, 1, 0, 0, 0, 0], counts


def test_repeated_launches_see_every_changed_argument():
    """From the third launch on a kernel's calls take the fast path, which packs again only
    what changed: buffers, scalars and values that alternate, or come back after other types."""
    n = 256
    x = np.arange(n, dtype=np.float32)
    dx, d1, d2 = to_device(x), to_device(np.zeros(n, np.float32)), to_device(np.zeros(n, np.float32))
    k = cudaload.RawKernel(SAXPY, "saxpy")
    expected = {id(d1): np.zeros(n, np.float32), id(d2): np.zeros(n, np.float32)}
    plan = [(d1, 1.0, n), (d1, 1.0, n), (d1, 1.0, n), (d2, 2.0, n), (d1, -0.5, n // 2),
            (d2, np.float32(3.0), n), (d2, 2.0, n), (d1, 1.0, n)] * 3
    for out, a, count in plan:
        k((n + 63) // 64, 64, (dx, out, a, count))
        expected[id(out)][:count] += np.float32(a) * x[:count]
    for out in (d1, d2):
        np.testing.assert_allclose(to_host(out, np.float32, n), expected[id(out)], rtol=1e-6)
    assert k.func != k._kernel_state.launch  # the fast path did run
