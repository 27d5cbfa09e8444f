"""Command-line tools (`python scripts/NAME.py`), importable as `scripts.NAME` from the
repository's root, as the tests import them."""
