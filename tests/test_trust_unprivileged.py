"""The cache folder's trust rules as an ordinary user sees them.

Run as root, ``os.geteuid() == 0`` makes "belongs to root or to this user" one test, so a rule
turned round for everyone else would pass unseen.  These tests set up folders of several owners,
groups and modes as root, then judge them in a subprocess started with another uid and gid (no
account needed: subprocess's ``user``/``group``/``extra_groups``), and skip where the tests do
not run as root.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests._support import child_env

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="starts a process of another uid and gives folders to other users: run as root")

USER, GROUP = 23456, 23456  # the ordinary user, and its own (primary) group
SHARED_GID = 23457  # a group the user is in, as a supplementary group
FOREIGN_GID = 23458  # a group the user is not in
OTHER = 12345  # another user

# Judged in the user's process: folder name -> [not shared, shared].
JUDGE = r"""
import json, os, sys
from cudaload._base import _untrusted

top = sys.argv[1]
out = {"ids": [os.geteuid(), os.getegid(), sorted(os.getgroups())]}
for name in sorted(os.listdir(top)):
    path = os.path.join(top, name)
    out[name] = [_untrusted.folder_problem(path, False), _untrusted.folder_problem(path, True),
                 _untrusted.path_problem(path), _untrusted.problem(os.stat(path))]
print(json.dumps(out))
"""

# owner, group, mode of each folder the user judges
FOLDERS = {
    "own": (USER, GROUP, 0o700),
    "own, its group may write": (USER, GROUP, 0o770),
    "own, a foreign group may write": (USER, FOREIGN_GID, 0o2770),
    "own, every user may write": (USER, GROUP, 0o777),
    "root's": (0, 0, 0o755),
    "root's, a foreign group may write": (0, FOREIGN_GID, 0o2770),
    "another user's": (OTHER, OTHER, 0o700),
    "another user's, the shared group's": (OTHER, SHARED_GID, 0o2770),
    "another user's, the user's own group": (OTHER, GROUP, 0o2770),
    "another user's, a foreign group's": (OTHER, FOREIGN_GID, 0o2770),
    "another user's, shared group, every user may write": (OTHER, SHARED_GID, 0o2777),
}

BELONGS = f"it belongs to uid {OTHER}, not to this user (uid {USER})"
FOREIGN = f"it belongs to uid {OTHER} and group {FOREIGN_GID}, a group this user is not in"
EVERY = "every user may write it"
GROUP_MAY = "its group may write it"
# folder -> (folder_problem not shared, folder_problem shared); path_problem and problem are the
# not-shared answer
EXPECTED = {
    "own": (None, None),
    "own, its group may write": (GROUP_MAY, None),
    "own, a foreign group may write": (GROUP_MAY, None),  # one's own folder: any group
    "own, every user may write": (EVERY, EVERY),
    "root's": (None, None),
    "root's, a foreign group may write": (GROUP_MAY, None),
    "another user's": (BELONGS, f"it belongs to uid {OTHER} and group {OTHER}, a group this user "
                                "is not in"),
    "another user's, the shared group's": (BELONGS, None),
    "another user's, the user's own group": (BELONGS, None),
    "another user's, a foreign group's": (BELONGS, FOREIGN),
    "another user's, shared group, every user may write": (EVERY, EVERY),
}


@pytest.fixture
def workspace():
    """A folder every user may read, outside pytest's (root's, 0700) temporary folders."""
    top = tempfile.mkdtemp(prefix="cudaload-trust-")
    os.chmod(top, 0o755)
    yield top
    shutil.rmtree(top, ignore_errors=True)


_IDS = dict(user=USER, group=GROUP, extra_groups=[SHARED_GID])


@functools.cache
def _python() -> str | None:
    """An interpreter USER may run: this one, or the system's of the same version (a virtual
    environment's link may lead through root's private home)."""
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if candidate is None:
            continue
        try:
            proc = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=60, **_IDS)
        except OSError:
            continue
        if proc.returncode == 0 and proc.stdout.strip() == str(sys.version_info[:2]):
            return candidate
    return None


def _as_user(args: list[str], **kw):
    """``python args`` started as USER (group GROUP, also in SHARED_GID), cudaload importable."""
    python = _python()
    if python is None:
        pytest.skip(f"no Python {sys.version_info[0]}.{sys.version_info[1]} that uid {USER} "
                    "may run (this one lies in a folder only root may enter)")
    env = child_env(unset=("CUDALOAD_CACHE_DIR",))
    return subprocess.Popen([python, *args], env=env, cwd="/", text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **_IDS, **kw)


def test_folders_of_each_owner_group_and_mode_as_an_ordinary_user_sees_them(workspace):
    top = os.path.join(workspace, "folders")
    os.mkdir(top, 0o755)
    for name, (uid, gid, mode) in FOLDERS.items():
        path = os.path.join(top, name)
        os.mkdir(path)
        os.chown(path, uid, gid)
        os.chmod(path, mode)
    proc = _as_user(["-c", JUDGE, top])
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    out = json.loads(stdout.splitlines()[-1])
    assert out.pop("ids") == [USER, GROUP, [SHARED_GID]]
    got = {name: tuple(found) for name, found in out.items()}
    assert got == {name: (alone, shared, alone, alone) for name, (alone, shared) in EXPECTED.items()}


# Watches a cache folder that does not exist yet, then, after a line on stdin, looks again.
WATCH = r"""
import json, sys, warnings
from cudaload.compile import cache

disk = cache.DiskCache(sys.argv[1])
first = [disk.usable, disk.place.trusted]
print(json.dumps(first), flush=True)
sys.stdin.readline()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    second = [disk.usable, disk.place.trusted, [str(w.message) for w in caught]]
print(json.dumps(second), flush=True)
"""


@pytest.mark.parametrize("owner", [OTHER, USER])
def test_a_cache_folder_made_by_another_user_after_the_first_look_is_not_used(workspace, owner):
    """A folder that did not exist is not trusted for the rest of the process: under a shared
    /tmp, another user may create it meanwhile, and choose the code this process runs."""
    root = os.path.join(workspace, "cache")
    proc = _as_user(["-c", WATCH, root], stdin=subprocess.PIPE)
    assert json.loads(proc.stdout.readline()) == [True, False]  # usable, not yet judged trusted
    os.mkdir(root, 0o700)
    os.chown(root, owner, owner)
    stdout, stderr = proc.communicate("\n", timeout=60)
    assert proc.returncode == 0, stderr
    usable, trusted, warned = json.loads(stdout.splitlines()[-1])
    if owner == OTHER:
        assert (usable, trusted) == (False, False)
        assert len(warned) == 1 and f"belongs to uid {OTHER}" in warned[0] and root in warned[0]
    else:  # the user's own folder, made meanwhile by another of its processes
        assert (usable, trusted, warned) == (True, True, [])
