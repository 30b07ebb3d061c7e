"""Keeps cuda.pathfinder's header search to this Python environment's wheels.

ci/test.sh puts this folder on PYTHONPATH where no private mount namespace can hide the CUDA
toolkits: every process of the tests then finds headers only in site-packages (not through
CUDA_HOME/CUDA_PATH, conda, the libcudart the system loader finds, or system folders).  The module
is patched when first imported, so processes that never search do not pay for importing it.
"""

import importlib.abc
import importlib.util
import sys

_TARGET = "cuda.pathfinder._headers.find_nvidia_headers"


class _Patch(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        module.FIND_STEPS = (module.find_in_site_packages,)


sys.meta_path.insert(0, _Patch())
