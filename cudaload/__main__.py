"""``python -m cudaload``: the same command line as the ``cudaload`` script.
"""

import sys

from .cli import main

sys.exit(main())
