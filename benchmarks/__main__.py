"""`make bench`: run every benchmark module here with its default settings, one after another.

`python -m benchmarks [NAME ...]` runs only the named ones (module names without .py).
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    names = sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))
    if argv and argv[0] in ("-h", "--help"):
        print(f"usage: python -m benchmarks [NAME ...]\n{__doc__.strip()}\nbenchmarks: {', '.join(names)}")
        return 0
    chosen = argv or names
    unknown = [n for n in chosen if n not in names]
    if unknown:
        sys.stderr.write(f"benchmarks: error: unknown benchmark '{unknown[0]}' (have: {', '.join(names)})\n")
        return 2
    failed = []
    for name in chosen:
        print(f"\n=== {name} ===", flush=True)
        start = time.monotonic()
        rc = subprocess.call([sys.executable, str(HERE / f"{name}.py")], cwd=HERE.parent)
        print(f"--- {name}: exit {rc}, {time.monotonic() - start:.1f} s", flush=True)
        if rc:
            failed.append(name)
    if failed:
        sys.stderr.write(f"benchmarks: failed: {', '.join(failed)}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
