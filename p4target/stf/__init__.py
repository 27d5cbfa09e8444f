"""STF packet tests (the format of p4c's BMv2 test suite) on the embedded engine."""
from .cli import main, run_stf
from .errors import StfError, StfSyntaxError
from .parser import Command, parse_stf
from .runner import StfResult, StfRunner

__all__ = ["main", "run_stf", "parse_stf", "Command", "StfRunner", "StfResult", "StfError", "StfSyntaxError"]
