"""For tests of Ctrl-C held off a thread inside NVRTC or nvJitLink (cudaload/_base/_sigint.py): a
thread that watches the main thread's blocked signals (Linux's /proc) and, once SIGINT is among
them, sends SIGINT to this process; and a program NVRTC takes seconds over (CUB's block
reduction)."""

from __future__ import annotations

import os
import signal
import threading
import time

_MAIN = threading.main_thread().native_id

CUB = ('#include <cub/block/block_reduce.cuh>\n'
       'extern "C" __global__ void k(int *p) { typedef cub::BlockReduce<int, 128> R;\n'
       '  __shared__ typename R::TempStorage t; p[0] = R(t).Sum(p[threadIdx.x]); }\n')


def held() -> bool:
    """Whether the main thread has SIGINT blocked now."""
    with open(f"/proc/self/task/{_MAIN}/status") as f:
        mask = next(line.split()[1] for line in f if line.startswith("SigBlk:"))
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))


def watch() -> tuple[list, list]:
    """Start the watcher: (seen, done); ``seen`` gets True once it sent SIGINT, and it stops
    watching once something is appended to ``done``."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    seen: list = []
    done: list = []

    def run() -> None:
        while not done and not held():
            time.sleep(0.001)
        if not done:
            seen.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=run, daemon=True).start()
    return seen, done


def interrupted(call) -> list:
    """``call()`` in the main thread, watched: [SIGINT held before it?, seen held (and sent)?,
    KeyboardInterrupt raised?, held after it?]."""
    before = held()
    seen, done = watch()
    try:
        call()
        raised = False
    except KeyboardInterrupt:
        raised = True
    done.append(True)
    return [before, bool(seen), raised, held()]
