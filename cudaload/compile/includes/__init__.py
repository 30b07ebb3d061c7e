"""What a source includes, found as NVRTC finds it, for the cache key: ``search`` (the include
search: each header a source reaches, and whether it still is what was compiled),
``_directives`` (the ``#include`` lines read), ``_headers`` (which CUDA header folders, and how
one is told apart from another), ``_reads`` (NVRTC's own record of the headers it read) and
``_option_files`` (files named by options, as ``-include``).
"""
