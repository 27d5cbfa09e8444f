"""`topo.run` as users meet it: the Mininet CLI's `train` command, and `--demo`."""
import re
import subprocess
import sys

from support.topology_helpers import REPO


def _run(build_dir, tmp_path, *args, stdin=""):
    argv = [sys.executable, "-m", "topo.run", "--build", build_dir, "--log-dir", str(tmp_path / "logs"),
            "--workers", "2", "--background", "1", *args]
    return subprocess.run(argv, cwd=REPO, input=stdin, capture_output=True, text=True, timeout=600)


def test_cli_train_command(build_dir, switch_works, tmp_path):
    done = _run(build_dir, tmp_path, stdin="train 4 2\ngradctl policy show\nexit\n")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    assert "train [ROUNDS] [WORKERS]" in out and "s1   device 1  gRPC 127.0.0.1:9601" in out
    assert "training: finished" in out and "4 round(s)" in out, out[-2000:]
    assert "LOSS" in out and "gradlane: stopped" in out


def test_demo_exits_zero_with_summary(build_dir, switch_works, tmp_path):
    done = _run(build_dir, tmp_path, "--demo", "--rounds", "5")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for needle in ("training: finished", "5 round(s)", "layer 0:", "accuracy: 0.", "switch statistics"):
        assert needle in done.stdout, (needle, done.stdout[-2000:])
    # the switch processes themselves lost nothing at this scale (embedded switch: a number each)
    drops = re.search(r"switch processes' own receive drops: (.*)", done.stdout)
    assert drops, done.stdout[-2000:]
    counts = [item.rsplit(" ", 1)[1] for item in drops.group(1).split(", ")]
    assert counts and all(c in ("0", "n/a") for c in counts), drops.group(0)
    # per-packet tracing is off by default: each switch's log holds start-up lines, not packets
    assert "switch log: level warn, per-packet tracing off" in done.stdout
    logs = sorted((tmp_path / "logs").glob("s[0-9]*.log"))
    assert logs and all("-L warn" in log.read_text().splitlines()[0] for log in logs)
    sizes = {log.name: log.stat().st_size for log in logs}
    assert all(size < 64 * 1024 for size in sizes.values()), sizes
