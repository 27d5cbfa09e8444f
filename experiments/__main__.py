"""`python -m experiments`: list or run gradlane's experiments (see experiments/README.md)."""
from __future__ import annotations

import sys

from experiments.cli import main

sys.exit(main())
