"""One folder mounted twice through sshfs from an OpenSSH server on the loopback: two "machines"
sharing a network filesystem (a lock taken through one mount is not seen through the other, a
rename shows late through the other, O_EXCL is refused across them).

:func:`two_mounts` starts its own ``sshd`` (its own host key, an authorized key made in a temp
folder, a free loopback port), mounts, and always unmounts and stops the server; every subprocess
has a timeout.  It raises :class:`Unavailable`, with the reason, where FUSE, sshfs or sshd cannot
run."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time


class Unavailable(Exception):
    """sshfs mounts cannot be made here; the message says why."""


def _tool(name: str, *places: str) -> str:
    found = shutil.which(name) or next((p for p in places if os.access(p, os.X_OK)), None)
    if found is None:
        raise Unavailable(f"{name} is not installed")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def two_mounts(base):
    """Yield (mount_a, mount_b, backing): two sshfs mounts of the folder ``backing``, all under
    ``base``."""
    sshd = _tool("sshd", "/usr/sbin/sshd")
    sshfs, keygen = _tool("sshfs"), _tool("ssh-keygen")
    fusermount = shutil.which("fusermount3") or _tool("fusermount")
    if not os.path.exists("/dev/fuse"):
        raise Unavailable("/dev/fuse is missing: FUSE cannot run here")
    base = str(base)
    backing, mounts = os.path.join(base, "backing"), [os.path.join(base, m) for m in "ab"]
    for folder in (backing, *mounts):
        os.makedirs(folder, exist_ok=True)
    host_key, user_key = os.path.join(base, "host_key"), os.path.join(base, "user_key")
    for key in (host_key, user_key):
        _run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", key], timeout=30)
    shutil.copy(user_key + ".pub", os.path.join(base, "authorized_keys"))
    port = _free_port()
    config = os.path.join(base, "sshd_config")
    with open(config, "w") as f:
        f.write(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
                f"AuthorizedKeysFile {base}/authorized_keys\nPermitRootLogin prohibit-password\n"
                f"PasswordAuthentication no\nStrictModes no\nUsePAM no\n"
                f"PidFile {base}/sshd.pid\nSubsystem sftp internal-sftp\n")
    with contextlib.suppress(OSError):
        os.makedirs("/run/sshd", exist_ok=True)  # its privilege separation folder
    server = subprocess.Popen([sshd, "-D", "-e", "-f", config], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    mounted: list[str] = []
    try:
        _wait_listening(port, server)
        options = (f"IdentityFile={user_key},StrictHostKeyChecking=no,BatchMode=yes,"
                   "UserKnownHostsFile=/dev/null")
        for mount in mounts:
            got = _run([sshfs, "-p", str(port), "-o", options, f"127.0.0.1:{backing}", mount])
            if got.returncode:
                raise Unavailable(f"sshfs could not mount: {got.stderr.strip()}")
            mounted.append(mount)
        yield mounts[0], mounts[1], backing
    finally:
        for mount in mounted:
            with contextlib.suppress(subprocess.TimeoutExpired):
                if _run([fusermount, "-u", mount], timeout=30).returncode:
                    _run([fusermount, "-u", "-z", mount], timeout=30)  # lazily, never hung
        server.send_signal(signal.SIGTERM)
        try:
            server.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate(timeout=10)


def _wait_listening(port: int, server: subprocess.Popen) -> None:
    end = time.monotonic() + 15
    while time.monotonic() < end:
        if server.poll() is not None:
            raise Unavailable(f"sshd could not start: {server.stderr.read().strip()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise Unavailable("sshd did not listen within 15 s")
