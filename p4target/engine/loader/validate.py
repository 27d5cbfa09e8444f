"""Placeholder: BMv2's load-time checks (filled in below)."""
from __future__ import annotations


def validate(j: dict) -> None:
    return None
