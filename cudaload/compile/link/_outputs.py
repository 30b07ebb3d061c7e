"""What a program of PTX or NVVM IR compiles to, checked: by plan.default_arch before any device
or library is asked, and again where it is built (_ptx_input.link, _nvvm_input.build).

Apart from the modules that build such programs, which import the Linker: the Linker looks its
link up through request.py, which plan.py's check would otherwise reach back from.

Imports of cudaload: none.
"""

from __future__ import annotations

__all__ = ["NVVM_OUTPUTS", "check_output"]

NVVM_OUTPUTS = ("auto", "cubin", "ptx")


def check_output(output: str, code_type: str = "ptx") -> None:
    """Raise ValueError unless ``output`` is one a PTX program compiles to: CUBIN ("auto" too);
    for ``code_type="nvvm"``, one a NVVM IR program does: CUBIN or PTX."""
    if code_type == "nvvm":
        if output not in NVVM_OUTPUTS:
            raise ValueError(f"a NVVM IR program compiles to CUBIN ('auto', 'cubin') or PTX "
                             f"('ptx'), not {output!r}")
    elif output not in ("auto", "cubin"):
        raise ValueError(f"a PTX program compiles to CUBIN, not {output!r}: its PTX is "
                         f"ObjectCode.from_bytes(text, 'ptx'), which loads as it is")
