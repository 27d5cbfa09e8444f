"""What TLS with client certificates costs the control plane: a controller's connection (channel,
handshake, StreamChannel arbitration) and a batch Write, plaintext and TLS side by side on one
switch program, the two switch processes alternating so both see the same machine.

Run: .venv/bin/python benchmarks/control_tls.py [--connects N] [--batch N] [--reps N]
     [--switch "/opt/p4ref/bin/simple_switch_grpc"]  (default: the embedded switch)
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from p4.v1 import p4runtime_pb2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.client import SwitchConnection  # noqa: E402
from controller.tls import load_client_tls  # noqa: E402
from p4target.compiler import compile_text  # noqa: E402
from topo.pki import create_run_pki  # noqa: E402

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Switch:
    """A switch process (embedded or BMv2) with P4Runtime on a free loopback port."""

    def __init__(self, argv0: list[str], folder: Path, tls_flags: list[str]) -> None:
        self.addr = f"127.0.0.1:{_free_port()}"
        env = dict(os.environ)
        if "p4ref" in argv0[0]:
            env["LD_LIBRARY_PATH"] = str(Path(argv0[0]).parents[1] / "lib")
        self.log = open(folder / f"switch{self.addr.rsplit(':', 1)[1]}.log", "w")
        self.proc = subprocess.Popen([*argv0, "--no-p4", "--thrift-port", str(_free_port()), "--",
                                      "--grpc-server-addr", self.addr, *tls_flags],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", int(self.addr.rsplit(":", 1)[1])), timeout=0.3).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the switch did not start: {argv0}")
                time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_t ethernet; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table l2 { key = { hdr.ethernet.dst : exact; } actions = { fwd; } size = 65536; }
    apply { l2.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _updates(p4info, kind: int, first: int, n: int) -> list[p4runtime_pb2.Update]:
    table = p4info.tables[0]
    action = next(a for a in p4info.actions if a.preamble.name.endswith("fwd"))
    out = []
    for i in range(first, first + n):
        u = p4runtime_pb2.Update(type=kind)
        te = u.entity.table_entry
        te.table_id = table.preamble.id
        te.match.add(field_id=table.match_fields[0].id).exact.value = (0x020000000000 + i).to_bytes(6, "big")
        te.action.action.action_id = action.preamble.id
        te.action.action.params.add(param_id=1, value=(1 + i % 8).to_bytes(2, "big"))
        out.append(u)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connects", type=int, default=30, help="connections measured per mode")
    ap.add_argument("--batch", type=int, default=1000, help="table entries per Write")
    ap.add_argument("--reps", type=int, default=7, help="batch Writes measured per mode")
    ap.add_argument("--switch", default=None, help="switch executable (default: the embedded switch)")
    args = ap.parse_args()
    argv0 = [args.switch] if args.switch else [sys.executable, "-m", "p4target", "switch"]
    program = compile_text(PROGRAM, "l2.p4")
    bmv2, p4info = program.bmv2_json, program.p4info
    with tempfile.TemporaryDirectory(prefix="gradlane-bench-") as tmp:
        folder = Path(tmp)
        pki = create_run_pki(folder)
        creds = load_client_tls(pki.folder).credentials()
        modes = {"plaintext": (Switch(argv0, folder, []), None), "tls": (Switch(argv0, folder, pki.switch_flags()), creds)}
        connect: dict[str, list[float]] = {m: [] for m in modes}
        write: dict[str, list[float]] = {m: [] for m in modes}
        try:
            conns = {}
            for mode, (sw, cred) in modes.items():
                conn = SwitchConnection("s", sw.addr, 0, election_id=(0, 10), timeout=30, credentials=cred)
                conn.connect()
                conn.set_pipeline(p4info, json.dumps(bmv2).encode())
                conns[mode] = conn
            for i in range(args.connects):          # a second client each time: backup, then gone
                for mode, (sw, cred) in modes.items():
                    t0 = time.perf_counter()
                    c = SwitchConnection("s", sw.addr, 0, election_id=(0, 5), timeout=30, credentials=cred)
                    c.connect()
                    connect[mode].append(time.perf_counter() - t0)
                    c.close()
            for rep in range(args.reps):
                for mode, conn in conns.items():
                    ins = _updates(p4info, p4runtime_pb2.Update.INSERT, 0, args.batch)
                    t0 = time.perf_counter()
                    conn.write(ins)
                    write[mode].append(time.perf_counter() - t0)
                    conn.write(_updates(p4info, p4runtime_pb2.Update.DELETE, 0, args.batch))
            for conn in conns.values():
                conn.close()
        finally:
            for sw, _ in modes.values():
                sw.stop()
    name = "BMv2 " + args.switch if args.switch else "embedded switch"
    print(f"{name}: median (min) over {args.connects} connections / {args.reps} Writes of {args.batch} entries")
    print(f"{'mode':<10}{'connect ms':>14}{'write ms':>14}{'entries/s':>12}")
    for mode in modes:
        c, w = connect[mode], write[mode]
        print(f"{mode:<10}{1e3 * statistics.median(c):>9.2f} ({1e3 * min(c):.2f}){1e3 * statistics.median(w):>9.1f} "
              f"({1e3 * min(w):.1f}){args.batch / statistics.median(w):>10.0f}")
    cp, ct = statistics.median(connect["plaintext"]), statistics.median(connect["tls"])
    wp, wt = statistics.median(write["plaintext"]), statistics.median(write["tls"])
    print(f"TLS / plaintext: connect {ct / cp:.2f}x (+{1e3 * (ct - cp):.2f} ms), write {wt / wp:.2f}x")


if __name__ == "__main__":
    main()
