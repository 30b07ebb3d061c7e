"""The package's version, in a module of its own so that any layer may read it.

Imports of cudaload: nothing.

Foundation: imports only other foundation modules of cudaload, if any.
"""

__version__ = "0.1.0"
