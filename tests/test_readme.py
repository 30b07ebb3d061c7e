"""The README as a front page: its first screen says what cudaload is for, the set-up and test
commands and the fallback example with its kernel's source; then how a host package installs it,
the three uses with their code and five headline figures against the peers, before the detail;
each figure taken from docs/benchmarks.md; the map of the code true for this tree."""

from __future__ import annotations

import os
import re

import pytest

from tests._doc_blocks import python_blocks, read
from tests._support import ROOT


@pytest.fixture(scope="module")
def readme() -> str:
    return read("README.md")


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def test_the_first_screen_says_what_the_set_up_and_test_commands_and_the_kernel(readme):
    screen = "\n".join(readme.splitlines()[:40])
    assert "fall back to the CPU" in screen  # what cudaload is for
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[nvrtc]'" in screen  # set-up
    assert "\nbash ci/test.sh\n" in screen and "PYTHON=python3.13 bash ci/test.sh" in screen
    assert "```cuda\n" + SCALE_CU in screen  # the kernel, with its parameters, ...
    kernel_at = readme.index("```cuda")
    example_at = readme.index("```python")
    assert kernel_at < example_at < readme.index("\n## Install it in a host package")  # ...first
    assert readme.index("\n## Against the peers") > readme.index("\n## Install it in a host")


def test_the_front_page_says_how_to_install_and_the_three_uses(readme):
    front = readme[:readme.index("\n## Against the peers")]
    install = _section(front, "Install it in a host package")
    assert 'dependencies = ["cudaload[nvrtc]"]' in install and "docs/packaging.md" in install
    uses = _section(front, "Three uses")
    assert "except cudaload.CudaUnavailableError" in uses       # a dependency with a fallback
    assert "cudaload.is_available()" in uses                     # an availability check
    assert "cudaload check-wheel" in uses and "no_cuda" in uses  # a packaging test
    assert len(re.findall(r"^```", uses, re.M)) >= 10  # the kernel, and each use with its code
    assert "## Measured" not in readme  # the run-by-run narrative lives in docs/measured.md


def test_the_headline_table_has_five_rows_of_figures_from_the_benchmark_report(readme):
    table = _section(readme, "Against the peers")
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    header, body = rows[0], rows[1:]
    for peer in ("cudaload", "cuda.core", "cuda.bindings", "CuPy", "PyTorch"):
        assert peer in header, peer
    assert len(body) == 5, body
    report = read("docs", "benchmarks.md")
    figures = [f for row in body for f in re.findall(r"\d[\d,]*\.?\d* (?:ms|µs)", row)]
    assert len(figures) >= 20
    invented = [f for f in figures if f not in report]
    assert invented == [], invented


def test_the_detail_moved_to_docs_is_there_and_linked(readme):
    for page, words in (("measured.md", "compile_all"), ("cache.md", "CUDALOAD_CACHE_SHARED=1")):
        assert f"(docs/{page})" in readme, page
        assert words in read("docs", page)
    assert "bash ci/test.sh" in readme  # the test command CI runs


def test_running_on_many_machines_names_each_way(readme):
    section = _section(readme, "Running on many machines")
    for words in ("claim", "CUDALOAD_CACHE_READ_DIRS", "executor=", "MPIPoolExecutor",
                  "Device(", "docs/api.md"):
        assert words in section, words


def test_the_map_of_the_code_names_files_that_exist(readme):
    section = _section(readme, "How the code is laid out")
    assert "__init__.py" in section and "footer" in section
    files = {name for _folder, _dirs, names in os.walk(os.path.join(ROOT, "cudaload"))
             for name in names}
    named = {name for name in re.findall(r"`(?:[\w/]+/)?(\w+\.py)`", section)
             if not name.startswith("test_")}  # the tests that check the map are tests/'s
    assert len(named) > 30 and sorted(named - files) == []
    for package in ("bindings", "compile", "launch"):
        docstring = read("cudaload", package, "__init__.py")
        assert re.search(rf"Layer \d, {package}: may import", docstring), package


# ---- the README's fallback code, as written there, run in a fresh process ------------------------

SCALE_CU = ('extern "C" __global__ void scale(float *x, float a, int n) {\n'
            '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
            '    if (i < n) x[i] *= a;\n}\n')


def run_readme_fallback(tmp_path, env=None, unset=(), then: str = "") -> dict:
    """The first Python block of the README's "Three uses" in a package ``mypkg`` that ships
    ``scale.cu`` (the README's own CUDA block), called on 300 floats: its result, whether it is
    the right one, whether it came from the GPU (the program compiled in this process) and
    whether libnvrtc was mapped.  ``then``: more code, run after that in the same process, which
    may add to the dict ``out`` (``x``, ``scale``, ``json`` and ``cudaload`` are there)."""
    import textwrap

    from tests._support import run_json

    blocks = python_blocks(read("README.md"), "Three uses")
    code = blocks["Three uses", 0].code
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scale.cu").write_text(readme_kernel())
    (tmp_path / "readme_scale.py").write_text(code)
    main = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import numpy as np
        import cudaload
        from readme_scale import scale

        x = np.arange(300, dtype=np.float32)
        y = scale(x, 3.0)
        try:  # compiled in this process: the GPU path ran (a memory-cache hit now)
            gpu = cudaload.Program.from_resource("mypkg", "scale.cu").compile().cached == "memory"
        except cudaload.CudaUnavailableError:
            gpu = False
        with open("/proc/self/maps") as f:
            nvrtc = "libnvrtc" in f.read()
        out = {{"right": bool((y == x * 3).all()), "gpu": gpu, "nvrtc": nvrtc}}
    """)
    return run_json(main + textwrap.dedent(then) + "\nprint(json.dumps(out))\n",
                    env={"CUDALOAD_CACHE": "0", **(env or {})}, unset=unset)


def readme_kernel() -> str:
    """The kernel the README shows before its fallback code: its first CUDA block."""
    return re.search(r"```cuda\n(.*?)```", read("README.md"), re.S).group(1)


def test_the_readme_kernel_is_the_one_its_fallback_code_launches():
    assert readme_kernel() == SCALE_CU
    code = python_blocks(read("README.md"), "Three uses")["Three uses", 0].code
    assert '"scale.cu"' in code and 'get_kernel("scale")' in code
    assert "(buf, a, x.size)" in code  # float *x, float a, int n
    assert "@functools.cache" in code  # looked up once per process


@pytest.mark.parametrize("nvrtc", ["nvrtc", "no nvrtc"])
@pytest.mark.parametrize("driver", ["libcuda 535, no GPU", "no driver"])
def test_the_readme_fallback_code_runs_as_written_without_a_gpu(request, tmp_path, driver, nvrtc):
    env = {"CUDALOAD_LIBCUDA": request.getfixturevalue("libcuda_535")
           if driver != "no driver" else "/nonexistent/libcuda.so.1"}
    if nvrtc == "no nvrtc":
        env["CUDALOAD_LIBNVRTC"] = "/nonexistent/libnvrtc.so"
    out = run_readme_fallback(tmp_path, env, unset=() if nvrtc == "no nvrtc"
                              else ("CUDALOAD_LIBNVRTC",))
    assert out == {"right": True, "gpu": False, "nvrtc": False}, out
