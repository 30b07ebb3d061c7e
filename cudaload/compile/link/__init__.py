"""Linking: ``linker`` (:class:`~cudaload.Linker`: code of every form linked into one, by
nvJitLink or the driver), ``_linker`` (which nvJitLink), ``_link_options``, and the programs
made by linking: PTX (``_ptx_input``) and NVVM IR (``_nvvm_input``), and what they compile to
(``_outputs``).
"""
