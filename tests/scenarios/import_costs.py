"""What importing cudaload brings in, seen from a fresh process.

    python -m tests.scenarios.import_costs SCENARIO

This module imports nothing beyond json and sys until a scenario runs, so that what a scenario
finds in sys.modules came from cudaload.
"""

from __future__ import annotations

import json
import sys


def lazy_names() -> None:
    """Whether cudaload.availability is imported before and after is_available is looked up,
    whether that is its own function, and the names of __all__ that dir() lacks."""
    import cudaload

    before = "cudaload.availability" in sys.modules
    fn = cudaload.is_available
    print(json.dumps({"before": before, "after": "cudaload.availability" in sys.modules,
                      "same": fn is cudaload.availability.is_available,
                      "all": sorted(set(cudaload.__all__) - set(dir(cudaload)))}))


SCENARIOS = {"lazy_names": lazy_names}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
