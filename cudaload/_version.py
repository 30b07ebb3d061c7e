"""The package's version, in a module of its own so that any layer may read it.

Imports of cudaload: nothing.
"""

__version__ = "0.1.0"
