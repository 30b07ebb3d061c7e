"""Jobs for compile_all's worker processes in tests: a module that imports nothing, so that what
a worker has imported is what the worker itself imported."""

import sys


def imported(name):
    """Whether this process has imported ``name``, and its -O and -B flags."""
    return name in sys.modules, sys.flags.optimize, sys.flags.dont_write_bytecode


def descriptors():
    """What each of this process's descriptors is, as Linux names it (/proc/self/fd)."""
    import os

    links = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            links[name] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own, closed by now
            pass
    return links


def how_started(what="all"):
    """"forked": prints a line, then whether this worker is a fork of its caller, and its pid;
    "sleep": never ends; else whether forked, its parent and its descriptors."""
    import os
    import time

    from cudaload.compile.parallel import _workers

    if what == "sleep":
        time.sleep(600)
    if what == "forked":
        print("worker", flush=True)
        return _workers.forked, os.getpid()
    return {"forked": _workers.forked, "parent": os.getppid(), "links": descriptors()}


def nap(seconds):
    """Sleeps ``seconds``, then this process's pid."""
    import os
    import time

    time.sleep(seconds)
    return os.getpid()


def start_a_thread():
    """An initializer that leaves a second thread running (a process it runs in may not fork)."""
    import threading
    import time

    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()


def exit_in_the_template():
    """An initializer that ends the template process it runs in, status 3 (a template that dies
    before its forks); in a worker, nothing."""
    import os
    import sys

    if any("_templated" in word for word in getattr(sys, "orig_argv", ())):
        os._exit(3)
