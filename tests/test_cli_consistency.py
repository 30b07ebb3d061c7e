"""`cudaload compile` and `precompile` agree with `Program`: name expressions, the defaults that
make the cache key, the architecture chosen without a GPU; `cache prune` reports what it spared."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests._fakelibs import pretend_driver
from tests._support import ROOT, run_json, scenario_json

TEMPLATE = "template <class T>\n__global__ void k(T *p) { *p = T(1); }\n"
PLAIN = 'extern "C" __global__ void k(float *p) { *p = 1; }\n'
NO_DRIVER = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"}


def cli(*words, env=None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    full_env.update(env or {})
    # As `python -m cudaload`, with the compile log of tests.scenarios.compile_log installed.
    main = ("import sys, tests.scenarios.compile_log; from cudaload.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", main, *words], env=full_env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def cache_env(tmp_path):
    """A cache folder of this test's own, and a log of every NVRTC compilation."""
    return {"CUDALOAD_CACHE_DIR": str(tmp_path / "cache"),
            "TESTS_COMPILE_LOG": str(tmp_path / "compiles.log")}


def _compilations(env) -> int:
    try:
        with open(env["TESTS_COMPILE_LOG"]) as f:
            return len(f.readlines())
    except FileNotFoundError:
        return 0


@pytest.mark.parametrize("kind", ["cubin", "ptx"])
def test_a_template_only_source_is_an_error_that_names_the_fix(tmp_path, cache_env, kind):
    src = tmp_path / "t.cu"
    src.write_text(TEMPLATE)
    proc = cli("compile", str(src), "--arch", "sm_90", f"--{kind}", env=cache_env)
    assert proc.returncode == 1, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "only kernel templates (k)" in lines[0] and "--name-expression 'k<float>'" in lines[0]
    assert not (tmp_path / f"t.{kind}").exists()  # no empty output left to be mistaken for code


def test_name_expressions_instantiate_templates_and_show_their_lowered_names(tmp_path, cache_env):
    src = tmp_path / "t.cu"
    src.write_text(TEMPLATE)
    proc = cli("compile", "--name-expression", "k<float>", str(src), "--arch", "sm_90",
               "--name-expression=k<int>", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert "k<float>: _Z1kIfEvPT_" in proc.stdout and "k<int>: _Z1kIiEvPT_" in proc.stdout
    code = (tmp_path / "t.cubin").read_bytes()
    assert b"_Z1kIfEvPT_\0" in code and b"_Z1kIiEvPT_\0" in code
    ptx = cli("compile", str(src), "--ptx", "--name-expression", "k<double>",
              "-o", str(tmp_path / "t.ptx"), env=cache_env)
    assert ptx.returncode == 0, ptx.stderr
    assert re.search(r"\.entry\s+_Z1kIdEvPT_", (tmp_path / "t.ptx").read_text())
    bare = cli("compile", str(src), "--name-expression", env=cache_env)
    assert bare.returncode == 2 and "--name-expression needs a value" in bare.stderr


def test_device_functions_without_kernels_still_compile(tmp_path, cache_env):
    """Code for linking (-rdc=true) may hold device functions only: not every kernel-less output
    is a mistake, only one whose kernels are all uninstantiated templates."""
    src = tmp_path / "lib.cu"
    src.write_text("__device__ int twice(int x) { return 2 * x; }\n")
    proc = cli("compile", str(src), "--arch", "sm_90", "-rdc=true", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert "no kernel" in proc.stdout
    assert (tmp_path / "lib.cubin").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.parametrize("source, names", [(PLAIN, []), (TEMPLATE, ["k<float>"])])
def test_precompile_warms_what_compile_and_program_look_up(tmp_path, cache_env, source, names):
    src = tmp_path / "k.cu"
    src.write_text(source)
    flags = [w for name in names for w in ("--name-expression", name)]
    proc = cli("precompile", str(src), "--arch", "sm_90", *flags, env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert _compilations(cache_env) == 1
    out = run_json(f"""
        import json
        import tests.scenarios.compile_log
        from cudaload import Program
        obj = Program.from_file({str(src)!r}, name_expressions={names!r}).compile(arch="sm_90")
        print(json.dumps(obj.cached))
    """, env=cache_env)
    assert out == "disk"
    proc = cli("compile", str(src), "--arch", "sm_90", *flags, env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert "from the disk cache" in proc.stdout
    assert _compilations(cache_env) == 1  # neither looked-up compile ran NVRTC again


def test_compile_ptx_without_a_gpu_is_for_the_oldest_arch(tmp_path, cache_env):
    """PTX is compiled forward by the driver to newer GPUs, never back: without a GPU to aim at,
    the oldest arch NVRTC supports is the PTX that loads on the most GPUs."""
    src = tmp_path / "k.cu"
    src.write_text(PLAIN)
    archs = run_json("import json; from cudaload.bindings import nvrtc; "
                     "print(json.dumps(sorted(nvrtc.supported_archs())))")
    env = {**cache_env, **NO_DRIVER}
    proc = cli("compile", str(src), "--ptx", env=env)
    assert proc.returncode == 0, proc.stderr
    assert re.search(rf"^\.target\s+sm_{archs[0]}\b", (tmp_path / "k.ptx").read_text(), re.M)
    proc = cli("compile", str(src), env=env)  # a CUBIN runs on its own major only: the newest
    assert proc.returncode == 0, proc.stderr
    assert f"cubin for sm_{archs[-1]}" in proc.stdout
    explicit = cli("compile", str(src), "--ptx", "--arch", "sm_90", "-o", str(tmp_path / "9.ptx"),
                   env=env)
    assert explicit.returncode == 0, explicit.stderr
    assert re.search(r"^\.target\s+sm_90\b", (tmp_path / "9.ptx").read_text(), re.M)
    assert "oldest" in cli("compile", "--help").stdout


def test_compile_ptx_on_a_gpu_is_for_that_gpu(tmp_path, cache_env):
    src = tmp_path / "k.cu"
    src.write_text(PLAIN)
    sm_86 = pretend_driver(tmp_path, 99000, (8, 6))
    proc = scenario_json("cli_compiles", "ptx_on_a_gpu", src, tmp_path / "k.ptx",
                         env={**cache_env, "CUDALOAD_LIBCUDA": sm_86})
    assert proc[0] == 0
    assert re.search(r"^\.target\s+sm_86\b", proc[1], re.M)


def test_cache_prune_says_how_many_entries_it_kept_because_they_are_in_use(cache_env):
    scenario_json("cli_compiles", "store_three", "fresh", env=cache_env)
    proc = cli("cache", "prune", "--max-bytes", "0", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert "0 least recently used entries" in proc.stdout, proc.stdout
    assert "kept 3 entries used in the last 10 seconds" in proc.stdout, proc.stdout
    out = scenario_json("cli_compiles", "store_three", "aged", "prune", env=cache_env)
    assert out["entries"] == 3 and out["kept"] == 0
    assert json.loads(cli("cache", "info", "--json", env=cache_env).stdout)["entries"] == 0


def _usage(command: str) -> str:
    proc = cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout[:proc.stdout.index("\n\n")]


def test_precompiles_usage_line_lists_every_option():
    usage = _usage("precompile")
    for option in ("-j N", "--option", "--name-expression", "--append", "--ltoir", "--programs",
                   "-o OUT.bundle", "--quiet"):
        assert option in usage, option


@pytest.mark.parametrize("command", ["compile", "precompile"])
def test_name_expressions_have_one_metavar_in_every_command(command):
    help_text = cli(command, "--help").stdout
    assert "--name-expression EXPR" in _usage(command)
    assert "--name-expression EXPR" in help_text.split("\n\n", 1)[1]  # the option's own line
