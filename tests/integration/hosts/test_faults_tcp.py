"""The TCP baseline rides out a broken connection as the UDP arms do (real processes on
127.0.0.1): a worker killed and started again is left behind and re-admitted with the current
model; connections reset while both sides live are opened again and the worker re-joins."""
import os
import signal
import socket
import struct
import threading
import time

ROUNDS = 1200   # long enough that a restarted worker re-joins before the job ends
# 64-value chunks: the rounds this test was timed for (MTU-sized ones end 400 rounds before a
# restarted worker has started)
FAST = ("--transport", "tcp", "--peer-timeout", "1.5", "--outage-horizon", "20", "--chunk-elems", "64")


def _ps(agents, tmp_path, port):
    log = tmp_path / "ps.jsonl"
    proc = agents.start("hosts.ps", "--workers", "3", "--bind", "127.0.0.1", "--port", str(port),
                        "--rounds", str(ROUNDS), "--seed", "1", "--log", str(log), *FAST)
    return proc, log


def _worker(agents, tmp_path, rank, ps_port, tag=""):
    log = tmp_path / f"w{rank}{tag}.jsonl"
    proc = agents.start("hosts.worker", "--rank", str(rank), "--workers", "3", "--ps", "127.0.0.1",
                        "--ps-port", str(ps_port), "--bind", "127.0.0.1", "--seed", "1",
                        "--log", str(log), *FAST)
    return proc, log


def _finish(agents, ps, procs):
    rc, _, err = agents.wait(ps, 120)
    assert rc == 0, err
    for proc in procs:
        wrc, _, werr = agents.wait(proc, 30)
        assert wrc == 0, werr


def test_a_killed_tcp_worker_is_left_behind_and_readmitted_with_the_current_model(agents, tmp_path):
    port = agents.free_port()
    ps, ps_log = _ps(agents, tmp_path, port)
    workers = [_worker(agents, tmp_path, r, port) for r in range(3)]
    agents.wait_for_record(ps_log, lambda e: e["event"] == "round" and e["round"] >= 30)
    os.kill(workers[2][0].pid, signal.SIGKILL)
    agents.wait_for_record(ps_log, lambda e: e["event"] == "member" and e["change"] == "absent")
    again, again_log = _worker(agents, tmp_path, 2, port, tag="-again")
    _finish(agents, ps, (workers[0][0], workers[1][0], again))

    events = agents.read_jsonl(ps_log)
    members = [e for e in events if e["event"] == "member"]
    assert [(m["rank"], m["change"]) for m in members] == [(2, "absent"), (2, "rejoined")]
    gone, back = members[0]["round"], members[1]["first_push"]
    rounds = {e["round"]: e for e in events if e["event"] == "round"}
    assert sorted(rounds) == list(range(ROUNDS))
    # the round in flight and every one until it pushes again went on without it, counted lost
    without = [r for r in range(ROUNDS) if rounds[r]["lost"] == [2]]
    assert without == list(range(gone, back))
    assert all(rounds[r]["lost"] == [] for r in range(ROUNDS) if r not in without)
    done = events[-1]
    assert done["event"] == "done" and done["lost_contributions"] == {"2": len(without)}
    assert done["rejoins"] == {"2": 1} and done["absent_at_end"] == []
    wevents = agents.read_jsonl(again_log)
    assert next(e for e in wevents if e["event"] == "rejoin")["first_push"] == back
    assert [e["round"] for e in wevents if e["event"] == "round"] == list(range(back, ROUNDS))
    assert [e for e in events if e["event"] == "epoch"][-1]["accuracy"] > 0.85


class _ResettingProxy:
    """A TCP relay to the PS whose connections can all be reset (RST to both ends) at once."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        self.stopped = False
        self.resetting = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            server = self._connect()
            if server is None:
                client.close()
                continue
            with self.lock:
                self.pairs.append((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _connect(self) -> socket.socket | None:
        """A connection to the PS (which may still be starting), or None after 60 s."""
        end = time.monotonic() + 60
        while not self.stopped and time.monotonic() < end:
            try:
                return socket.create_connection(self.target)
            except OSError:
                time.sleep(0.1)
        return None

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        if self.resetting.is_set():
            return
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def reset_all(self) -> int:
        """Abort every relayed connection with a RST to both ends; how many were reset."""
        self.resetting.set()
        with self.lock:
            pairs, self.pairs = self.pairs, []
        socks = [s for pair in pairs for s in pair]
        for s in socks:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            try:
                s.shutdown(socket.SHUT_RD)    # wakes the relay threads; sends nothing
            except OSError:
                pass
        time.sleep(0.2)
        for s in socks:
            s.close()                          # linger 0: an RST
        self.resetting.clear()
        return len(pairs)

    def stop(self) -> None:
        self.stopped = True
        self.listener.close()
        self.reset_all()


def test_tcp_connections_reset_mid_job_are_opened_again_and_the_job_finishes(agents, tmp_path):
    port = agents.free_port()
    ps, ps_log = _ps(agents, tmp_path, port)
    proxy = _ResettingProxy(("127.0.0.1", port))
    try:
        workers = [_worker(agents, tmp_path, r, proxy.address[1]) for r in range(3)]
        agents.wait_for_record(ps_log, lambda e: e["event"] == "round" and e["round"] >= 30)
        assert proxy.reset_all() == 3
        _finish(agents, ps, [w for w, _ in workers])
    finally:
        proxy.stop()
    events = agents.read_jsonl(ps_log)
    assert sorted(e["round"] for e in events if e["event"] == "round") == list(range(ROUNDS))
    done = events[-1]
    assert done["event"] == "done" and done["absent_at_end"] == []
    assert done["rejoins"] == {"0": 1, "1": 1, "2": 1}
    for _, log in workers:
        wevents = agents.read_jsonl(log)
        kinds = [e["event"] for e in wevents]
        assert "outage" in kinds and "rejoin" in kinds and kinds[-1] == "done"
        assert wevents[-1]["counters"]["reconnects"] >= 1
