"""bench/family_bench.py's CPU parts: a small family compiled, and linked into one module, by
the benchmark itself (the GPU rows are measured on the device)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests._support import ROOT, child_env


def test_the_family_linked_into_one_module_is_measured_and_found_again(tmp_path):
    out = tmp_path / "family.json"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "family_bench.py"), "--quick",
                    "--no-lto", "--kernels", "3", "--workers", "1", "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=600,
                   env=child_env(unset=("CUDALOAD_LIBNVRTC", "CUDALOAD_LIBNVJITLINK")))
    rows = json.loads(out.read_text())["rows"]
    cold, warm = rows["linked_cold"], rows["linked_warm"]
    assert "error" not in cold and "error" not in warm, (cold, warm)
    assert cold["kernels"] == 1 and cold["link_s"] > 0 and cold["module_kib"] > 0
    assert cold["cached"] == ["None"] and warm["cached"] == ["disk"]
    assert warm["code"] == cold["code"]  # the fresh process found the very module on disk
    assert rows["warm"]["cached"] == ["disk"] and "linked_cold_s" in \
        json.loads(out.read_text())["summary"]
