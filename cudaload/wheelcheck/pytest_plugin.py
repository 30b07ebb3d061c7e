"""pytest fixtures for host packages that test what they do where CUDA is absent: ``no_cuda``
and ``cuda_without_gpu``.

Installing cudaload registers this module with pytest (the ``pytest11`` entry point
``cudaload``).  It defines these two fixtures and nothing else (no hook, no option, no autouse
fixture), so a test suite that names neither is untouched; importing it loads no CUDA library.
Each fixture is a :class:`~cudaload.wheelcheck.environments.CudaProcess`: call it with a
function defined at the top level of a test module (and arguments that pickle) to run it in a
fresh process and get its result or its exception; ``.env`` is that process's environment for
a ``subprocess.run`` of one's own::

    def backend():
        import mypkg
        return mypkg.backend()

    def test_falls_back_to_numpy(no_cuda):
        assert no_cuda(backend) == "numpy"

``no_cuda``: cudaload finds no driver and no GPU is visible.  ``cuda_without_gpu``: a real
driver library (``CUDALOAD_TEST_LIBCUDA``, else ``CUDALOAD_LIBCUDA``, else this machine's)
with every GPU hidden; the test is skipped, with the reason, where there is none.
"""

from __future__ import annotations

import os

import pytest

from .environments import CudaProcess, find_driver, no_driver_env, without_gpu_env

__all__ = ["no_cuda", "cuda_without_gpu"]


@pytest.fixture
def no_cuda(tmp_path_factory) -> CudaProcess:
    """Runs code in a fresh process where cudaload finds no CUDA driver."""
    folder = tmp_path_factory.mktemp("no-cuda")
    return CudaProcess("no CUDA driver", no_driver_env(os.environ, str(folder)))


@pytest.fixture
def cuda_without_gpu() -> CudaProcess:
    """Runs code in a fresh process with a real CUDA driver library but no GPU; skips the test
    where no driver library is available."""
    driver, how = find_driver()
    if driver is None:
        from .driver_library import FETCH_STEP  # deferred: only the check that needs it

        pytest.skip(f"no CUDA driver library to test with: {FETCH_STEP}; or set "
                    f"CUDALOAD_TEST_LIBCUDA to the path of one (libcuda.so.1, nvcuda.dll) ({how})")
    return CudaProcess(f"the CUDA driver {driver} but no GPU", without_gpu_env(os.environ, driver),
                       driver)
