"""`python -m tests.import_budget [--update]`: see `tests/import_budget/__init__.py`."""

import sys

from tests.import_budget import main

sys.exit(main(sys.argv[1:]))
