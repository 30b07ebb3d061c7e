"""Layer 3: running device code.  ``device`` (devices and their contexts), ``memory``, ``stream``,
``graph``, ``module`` (loaded code), ``_graph_pins`` (code kept loaded for graphs), ``kernel`` (the
launch path), ``attributes`` (what the driver says of a kernel, occupancy), ``arguments``
(packing), ``signature`` (parameter types, read with cudaload._base._demangle), ``_foreign`` (other
libraries' arrays and streams), ``dlpack`` (memory exported to them), ``_sizes``, ``_unpicklable``
(GPU state refuses to be pickled), and ``rawkernel`` (a kernel from source, the one module that also
uses cudaload.compile.program).

Modules here import the foundation, cudaload.bindings, cudaload.compile, and each other.

Layer 3, launch: may import the foundation, bindings, compile and launch.
"""
