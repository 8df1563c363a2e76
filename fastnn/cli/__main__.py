"""``python -m fastnn.cli``: the same as the ``fastnn`` command."""

import sys

from fastnn.cli import main

sys.exit(main())
