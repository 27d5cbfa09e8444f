"""Benchmarks that print figures; `python -m benchmarks` runs them all (see __main__)."""
