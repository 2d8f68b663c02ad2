"""``python -m luong`` (and ``torchrun -m luong``) run the ``luong`` command."""

import sys

from luong.cli import main

sys.exit(main())
