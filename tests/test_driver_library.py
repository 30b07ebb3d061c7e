"""`cudaload fetch-libcuda`: the path of NVIDIA's libcuda.so.1 unpacked from the distribution's
package (here: the one ci/fetch_libcuda.sh unpacked, found again without the network), and a
failure that says what to do instead."""

from __future__ import annotations

import os

from tests.test_cli import cli


def test_fetch_libcuda_prints_the_library_it_unpacked(libcuda_535):
    folder = libcuda_535.split(os.sep + "root" + os.sep)[0]  # CUDALOAD_LIBCUDA_DIR of that fetch
    proc = cli("fetch-libcuda", env={"CUDALOAD_LIBCUDA_DIR": folder})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == libcuda_535


def test_fetch_libcuda_without_apt_says_what_to_do_instead(tmp_path):
    # No apt-get on PATH (bash itself is found by its full path): not Debian or Ubuntu.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("find", "head", "dirname"):
        for where in ("/usr/bin", "/bin"):
            if os.path.exists(f"{where}/{tool}"):
                os.symlink(f"{where}/{tool}", bin_dir / tool)
                break
    os.symlink("/bin/bash" if os.path.exists("/bin/bash") else "/usr/bin/bash", bin_dir / "bash")
    proc = cli("fetch-libcuda", env={"CUDALOAD_LIBCUDA_DIR": str(tmp_path / "cache"),
                                     "PATH": str(bin_dir)})
    assert proc.returncode == 1 and proc.stdout == ""
    assert "apt-get is needed (Debian or Ubuntu)" in proc.stderr, proc.stderr
    assert "set CUDALOAD_TEST_LIBCUDA to a libcuda.so.1" in proc.stderr
