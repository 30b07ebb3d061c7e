"""``python -m cudaload``: the same command line as the ``cudaload`` script.

Entry point: may import every layer.
"""

import sys

from .cli import main

sys.exit(main())
