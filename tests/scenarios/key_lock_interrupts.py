"""KeyboardInterrupt raised at each step of taking a key's lock, in a fresh process (a lock
left held would block every later test of this process that shares its slot), for
tests/test_writer.py.

    python -m tests.scenarios.key_lock_interrupts taking FOLDER CLAIMS

For the n-th event (a call or a line) of cudaload's code met while ``with disk.lock(key):``
is entered, n = 1, 2, ... until one enters the block: KeyboardInterrupt is raised there (as
Ctrl-C would be at that point: CPython raises it between bytecodes), then the key must be free
for another thread of this process and for another process, and no claim file may be left
(``CLAIMS`` "1": the folder is treated as one other machines share, claims.py).  Prints
[the steps tried, the first one that left the key taken or a claim behind, as "file:line
event: what was left", or null] as JSON.
"""

from __future__ import annotations

import dis
import fcntl
import json
import os
import sys
import threading

_NOP = dis.opmap["NOP"]


def _starts(code) -> dict:
    """Line -> the offset of its first instruction in ``code``."""
    first: dict = {}
    for offset, line in dis.findlinestarts(code):
        first.setdefault(line, offset)
    return first


def _interrupting_at(n: int, fired: list):
    """A tracer raising KeyboardInterrupt at the ``n``-th step of cudaload's code: a function's
    start, or a line's.  A line met again later in it (a ``with`` line as its block ends, whose
    ``__exit__`` CPython calls before it looks for a signal again) is no step, nor one that
    starts with a NOP (a ``try:``, which may lie outside the ``try`` around it, where CPython
    never raises)."""
    import cudaload

    root = os.path.dirname(cudaload.__file__)
    seen = [0]
    starts: dict = {}

    def tracer(frame, event, _arg):
        if fired or not frame.f_code.co_filename.startswith(root):
            return None
        return step(frame, event, _arg)

    def step(frame, event, _arg):
        if fired:
            return None
        code = frame.f_code
        if event == "line":
            first = starts.get(code) or starts.setdefault(code, _starts(code))
            if first.get(frame.f_lineno) != frame.f_lasti or code.co_code[frame.f_lasti] == _NOP:
                return step
        elif event != "call":
            return step
        seen[0] += 1
        if seen[0] == n:
            fired.append(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} "
                         f"{frame.f_code.co_name} {event}")
            raise KeyboardInterrupt
        return step
    return tracer


def _free_here(disk, key: str) -> bool:
    """Whether another thread of this process takes ``key`` within 5 s."""
    taken = threading.Event()

    def take():
        with disk.lock(key):
            pass
        taken.set()  # once released again: its claim too
    threading.Thread(target=take, daemon=True).start()
    return taken.wait(5)


def _free_elsewhere(disk, key: str) -> bool:
    """Whether another process could lock ``key``'s byte (POSIX record locks are a process's)."""
    from cudaload.compile.cache import locks

    path = os.path.join(disk.folder, locks.KEYS_FILE)
    if not os.path.exists(path):
        return True
    pid = os.fork()
    if pid == 0:
        try:
            fd = os.open(path, os.O_RDWR)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(key[:16], 16) % locks._SLOTS)
            os._exit(0)
        except BaseException:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def taking(folder: str, with_claims: str) -> None:
    from cudaload.compile.cache import DiskCache

    disk = DiskCache(folder, claims=with_claims == "1")
    disk.ready()  # the folder made and swept: what comes before the lock is not what is tried
    with disk.lock("f" * 64):  # nor are the imports of a first lock
        pass
    left = None
    n = 0
    while left is None:
        n += 1
        key = f"{n:016x}" + "ab" * 24
        fired: list = []
        entered = False
        sys.settrace(_interrupting_at(n, fired))
        try:
            with disk.lock(key):
                sys.settrace(None)
                entered = True
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)
        if entered and not fired:
            break  # every step before the block was tried
        claims_left = [f for f in os.listdir(disk.folder) if f.endswith(".claim")]
        if claims_left:
            left = f"{fired[0]}: a claim"
        elif not _free_elsewhere(disk, key):
            left = f"{fired[0]}: the key's byte lock"
        elif not _free_here(disk, key):
            left = f"{fired[0]}: the key's thread lock"
    print(json.dumps([n, left]))


SCENARIOS = {"taking": taking}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
