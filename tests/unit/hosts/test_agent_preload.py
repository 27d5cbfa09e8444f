"""An agent imports its model's heavy libraries before its signal handlers exist
(hosts.cli.run_agent's preload): PyTorch for the torch kinds, nothing for the NumPy ones."""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from hosts.cli import agent_main

ROOT = Path(__file__).resolve().parents[3]


def _imports_torch(model: str) -> bool:
    code = ("import argparse, sys\n"
            "from hosts.training.model_args import preload_model\n"
            f"preload_model(argparse.Namespace(model={model!r}))\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    return out.stdout.strip() == "True"


def test_preload_imports_torch_for_a_torch_model_only():
    assert _imports_torch("torch-mlp")
    assert not _imports_torch("mlp")


def test_agent_main_preloads_with_the_parsed_flags_before_the_handlers_and_the_body():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="mlp")
    seen: list[tuple[str, str, bool]] = []

    def preload(args: argparse.Namespace) -> None:
        installed = signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        seen.append(("preload", args.model, installed))

    def body(args: argparse.Namespace) -> None:
        seen.append(("body", args.model, signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL))

    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        assert agent_main(parser, body, "test-agent", ["--model", "resnet"], preload=preload) == 0
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert seen == [("preload", "resnet", False), ("body", "resnet", True)]
