"""``python -m npseq``: the same as the ``npseq`` command."""
import sys

from .cli import main

sys.exit(main())
