"""Objects that hold GPU state refuse to be pickled or copied, saying what to send instead.

A module, kernel, buffer, stream, event or graph is a handle into this process's CUDA context: in
another process its address or handle means nothing, and a copy in this one would share the
handle but not its release.  Each such class derives from :class:`GpuState` and names, in
``_SEND_INSTEAD``, what to pickle in its place.
"""

from __future__ import annotations

from ..errors import NotPicklableError

__all__ = ["GpuState", "NotPicklableError"]


class GpuState:
    """Mixin: pickling or copying raises :class:`NotPicklableError` with ``_SEND_INSTEAD``."""

    __slots__ = ()
    _SEND_INSTEAD = "send the data it was made from and make it again in the receiving process"

    def __reduce_ex__(self, protocol):
        # pickle, copy.copy and copy.deepcopy all ask __reduce_ex__ first.
        name = type(self).__name__
        raise NotPicklableError(
            f"a cudaload.{name} cannot be pickled or copied: it holds GPU state (handles of "
            f"this process's CUDA context), which means nothing in another process.",
            hint=self._SEND_INSTEAD)

    def __reduce__(self):
        return self.__reduce_ex__(2)
