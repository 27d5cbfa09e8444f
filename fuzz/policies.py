"""Policy files against the loader (in process) and the real gradctl (a sample, as processes)."""
from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from controller.errors import PolicyError
from controller.policy import load_policy
from fuzz.mutate import mutate_bytes
from fuzz.report import Report

ROOT = Path(__file__).resolve().parents[1]
SEED_POLICY = ROOT / "controller" / "policies" / "default.yaml"
HANG_SECONDS = 2.0
ODD_VALUES: list[Any] = [None, True, -1, 0, 1, 2 ** 64, 10 ** 30, 1.5, -0.0, float("inf"), "",
                         "x" * 1000, [], {}, [1, 2, 3], {"a": 1}, [[[[[]]]]]]


def _mutate_doc(rng: random.Random, doc: Any) -> Any:
    """``doc`` with one value, key or list changed somewhere."""
    doc = copy.deepcopy(doc)
    nodes: list[Any] = []
    stack = [doc]
    while stack:
        n = stack.pop()
        if isinstance(n, (dict, list)):
            nodes.append(n)
            stack.extend(n.values() if isinstance(n, dict) else n)
    if not nodes:
        return rng.choice(ODD_VALUES)
    node = rng.choice(nodes)
    keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
    op = rng.randrange(4)
    if op == 0 and keys:
        node[rng.choice(keys)] = rng.choice(ODD_VALUES)
    elif op == 1 and keys:
        del node[rng.choice(keys)]
    elif op == 2:
        if isinstance(node, dict):
            node[rng.choice(["job", "range", "loss_bound", "extra", "phases", "jobs"])] = \
                rng.choice(ODD_VALUES)
        else:
            node.append(copy.deepcopy(rng.choice(nodes)) if rng.random() < 0.5
                        else rng.choice(ODD_VALUES))
    elif keys:
        deep: Any = 1
        for _ in range(rng.choice([5, 40, 200])):
            deep = [deep]
        node[rng.choice(keys)] = deep
    return doc


def _render(rng: random.Random, doc: Any) -> tuple[str, bytes]:
    if rng.random() < 0.5:
        return ".json", json.dumps(doc, default=str).encode()
    return ".yaml", yaml.safe_dump(doc, default_flow_style=rng.random() < 0.5).encode()


def _special(rng: random.Random) -> tuple[str, bytes]:
    """Inputs known to hurt naive loaders: bombs, deep nesting, long numbers, bad bytes."""
    choice = rng.randrange(6)
    if choice == 0:
        lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
        for prev, name in zip("abcdefgh", "bcdefghi"):
            lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        return ".yaml", "\n".join(lines).encode()
    if choice == 1:
        n = rng.choice([100, 10000, 200000])
        return rng.choice([".json", ".yaml"]), b"[" * n + b"]" * n
    if choice == 2:
        return rng.choice([".json", ".yaml"]), b'{"jobs": [{"job": ' + b"9" * rng.choice([30, 5000, 100000]) + b"}]}"
    if choice == 3:
        return ".yaml", rng.randbytes(rng.randint(1, 4096))
    if choice == 4:
        return ".yaml", b"jobs:\n" + b"  - job: 1\n    layers: [{range: [0, 3], loss_bound: 0.1}]\n" * 2000
    return ".yaml", b"\xef\xbb\xbf" + SEED_POLICY.read_bytes() + b"\n\xc3\x28"


def run(count: int, seconds: float, seed: int = 1) -> Report:
    """Up to ``count`` policy files in ``seconds``; every 25th also through a gradctl process."""
    rng = random.Random(seed)
    report = Report("policies")
    seed_text = SEED_POLICY.read_bytes()
    seed_doc = yaml.safe_load(seed_text)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gradlane-fuzz-") as tmp:
        for i in range(count):
            if time.monotonic() - start > seconds:
                break
            pick = rng.random()
            if pick < 0.4:
                ext, data = _render(rng, _mutate_doc(rng, seed_doc))
            elif pick < 0.8:
                ext, data = ".yaml", mutate_bytes(rng, seed_text)
            else:
                ext, data = _special(rng)
            path = Path(tmp) / f"p{i % 50}{ext}"
            path.write_bytes(data)
            report.tried += 1
            t0 = time.monotonic()
            try:
                load_policy(path)
                report.outcomes["valid"] += 1
            except PolicyError as exc:
                report.outcomes["refused"] += 1
                if "\n" in str(exc) or len(str(exc)) > 2000:
                    report.fail("traceback", f"multi-line or huge error for {path.name}: {str(exc)[:200]}")
            except Exception as exc:  # noqa: BLE001 - that is what we look for
                report.fail("traceback", f"{type(exc).__name__}: {exc} ({data[:80]!r})")
            if time.monotonic() - t0 > HANG_SECONDS:
                report.fail("hang", f"{time.monotonic() - t0:.1f} s for {data[:80]!r}")
            if i % 25 == 0:
                _through_gradctl(report, path, data)
    report.seconds = time.monotonic() - start
    return report


def _through_gradctl(report: Report, path: Path, data: bytes) -> None:
    try:
        done = subprocess.run([sys.executable, "-m", "controller.gradctl", "--socket",
                               str(path.parent / "none.sock"), "policy", "apply", str(path), "--check"],
                              cwd=ROOT, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        report.fail("hang", f"gradctl ran over 20 s on {data[:80]!r}")
        return
    report.outcomes["gradctl"] += 1
    if "Traceback" in done.stderr or done.returncode not in (0, 1) \
            or (done.returncode == 1 and done.stderr.count("\n") != 1):
        report.fail("traceback", f"gradctl exit {done.returncode}: {done.stderr[-300:]}")
