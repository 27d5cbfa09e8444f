"""Commands run as another local user (uid/gid 65534, "nobody"), for the security tests.

Through util-linux's `setpriv` and `/bin/bash`, never a fork of the test process: a forked child
of a process that holds gRPC threads can abort inside gRPC, and root's Python may not be
readable by that user at all.
"""
from __future__ import annotations

import shutil
import subprocess

NOBODY = 65534
# bash: send the bytes of file $2 to 127.0.0.1:$1 and print how many reply bytes came back (0: the
# server closed the connection unanswered) within half a second
SEND_AND_READ = ('exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 9; cat "$2" >&3 || exit 8; '
                 'timeout 0.5 head -c 1 <&3 | wc -c')


def as_nobody(script: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run the bash `script` (with `args` as $1...) as uid/gid 65534 from `/`."""
    setpriv = shutil.which("setpriv")
    assert setpriv, "util-linux's setpriv is missing"
    return subprocess.run([setpriv, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
                           "/bin/bash", "-c", script, "bash", *args],
                          capture_output=True, text=True, timeout=timeout, cwd="/")


def check_as_nobody(script: str, *args: str) -> str:
    """`as_nobody`, asserting it succeeded; its stdout."""
    done = as_nobody(script, *args)
    assert done.returncode == 0, f"as uid {NOBODY}: {script!r} failed: {done.stderr.strip()}"
    return done.stdout
