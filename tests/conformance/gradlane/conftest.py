"""Makes the scenario generator importable as `gradlane_stf_generate` for the tests here."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("gradlane_stf_generate", Path(__file__).with_name("generate.py"))
_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _module
_spec.loader.exec_module(_module)
