"""`make check-reference`'s parity table (scripts/check_parity.py): the figures read from a demo's
summary and the tolerances they are compared with. The runs themselves need the real toolchain."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_parity", ROOT / "scripts" / "check_parity.py")
check_parity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_parity)

DEMO = """\
training: finished in 13.3 s, 20 round(s)
loss bounds: from the controller's policy: epoch 1 from round 0 (push 0.011, 0.011, regime normal); epoch 2 from round 7 (push 0.02)
per-layer delivered push fraction (min over bound-closed rounds / min over all rounds / mean) vs loss bound; 2 round(s) closed by the deadline:
  layer 0: 1.000 / 0.908 / 0.998   bound 0.011  ok, 1 violation(s)
  layer 1: 1.000 / 1.000 / 1.000   bound 0.011  ok, 0 violation(s)
bound violations: 1 (push layer 0 x1; pull 0)  VIOLATED
accuracy: 0.8914
switch statistics (gradctl stats):
  s1 job 1 layers 0-3 mag 0-7: seen 37259, dropped 327 (0.88% vs bound 1.10%), CE-marked 0
  s1 port 1 queue 6: tx 1602, selectively dropped 0, CE-marked 0
  s1 port 6 queue 7: tx 1858, selectively dropped 0, CE-marked 0
"""


def test_demo_figures_are_read_from_the_summary():
    f = check_parity.parse_demo(DEMO)
    assert f["rounds"] == 20 and f["deadline-closed rounds"] == 2 and f["bound violations"] == 1
    assert f["accuracy"] == 0.8914 and f["policy epochs"] == "1@0 2@7"
    assert f["layer 0 delivered (mean)"] == 0.998 and f["layer 1 delivered (mean)"] == 1.0
    assert f["s1 gradient packets seen at ingress"] == 37259 and f["s1 selectively dropped"] == 327
    assert f["s1 packets sent (gradient queues)"] == 1602 + 1858


def test_tolerances():
    agree = check_parity.agree
    assert agree("accuracy", 0.8914, 0.8886)[0] and not agree("accuracy", 0.89, 0.87)[0]
    assert agree("layer 0 delivered (mean)", 1.0, 0.985)[0] and not agree("layer 0 delivered (mean)", 1.0, 0.95)[0]
    assert agree("s1 packets sent (gradient queues)", 28333, 24647)[0]
    assert not agree("s1 packets sent (gradient queues)", 28333, 20000)[0]
    assert not agree("bound violations", 0, 2)[0] and agree("policy epochs", "1@0", "1@0")[0]
    assert agree("s1 gradient packets seen at ingress", 64972, 37259)[0] is None  # reported only
    assert agree("wall time s", 13.3, 17.8)[0] is None


def test_table_only_needs_a_work_folder():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_parity.py"), "--table-only"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--table-only needs --work DIR" in done.stderr
