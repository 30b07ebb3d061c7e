"""Layer 0, the foundation: what every layer may use and which knows of none of them.

``_log`` (the loggers), ``_warn`` (warnings attributed to the caller's line), ``lifetime``
(fork, exit, "forget what was found"), ``releases`` (what each CUDA release ships),
``_untrusted`` (files others may have written: whether to believe them, reading them safely),
``_atomic`` (atomic writes), ``_file_lock`` (locks held through a file), ``_elf``, ``_demangle``
(C++ mangled names read), ``_sigint`` (Ctrl-C held off a thread inside NVRTC or nvJitLink) and
``_program_specs`` (``--programs MODULE:NAME``).  The exception tree is the package's own
``cudaload.errors`` (public, and what exceptions pickle by); it belongs to this layer too.

Layer 0, foundation: may import the foundation.
"""
