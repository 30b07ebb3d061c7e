"""Scripts the tests run in a fresh interpreter (dlopen and cache state are per process)."""
