"""Layer 2: CUDA source to device code.  ``program`` (Program.compile), ``options``, ``includes``
(NVRTC's include search, for the cache key), ``toolchain`` (which NVRTC and headers), ``cache``
(the kernel cache, a package), ``_cache_folder`` (the folder it and the toolchain record are kept
in), ``bundle`` (shipped code), ``objectcode`` (compiled code as plain data) and ``_hooks`` (what
compiling asks of the launch side, handed over by the package).

Modules here import the foundation, cudaload.bindings, and each other; never cudaload.launch.

Layer 2, compile: may import the foundation, bindings and compile.
"""
