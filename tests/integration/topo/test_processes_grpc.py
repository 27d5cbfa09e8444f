"""ManagedProcess launches while the parent holds a live gRPC client (a real server on
127.0.0.1; split from tests/unit/topo/test_processes.py)."""
from __future__ import annotations

import sys

from topo.processes import ManagedProcess


def test_launches_survive_a_live_grpc_client_in_the_parent(tmp_path):
    """Regression: a Popen preexec_fn forced fork(), whose gRPC (>= 1.81) child handler then
    crashed some children (EBADF in its poller after close_fds). 1-2 in 100 died that way."""
    from concurrent import futures

    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=10)
        failures = []
        for i in range(100):
            proc = ManagedProcess(f"p{i}", "test", [sys.executable, "-c", "pass"], tmp_path / f"p{i}.log").start()
            code = proc.wait_exit(20)
            proc.stop()
            if code != 0 or proc.output().strip():
                failures.append((i, code, proc.output()[:200]))
        assert failures == []
    finally:
        channel.close()
        server.stop(None)
