"""Zero-loss packet rate through one switch process on veth, and the latency it adds.

Two network namespaces are wired to the switch (root namespace) by veth; another pair of
namespaces is wired directly as the latency baseline. For each program (`benchmarks/programs/l3_router.p4`,
gradlane.json with 8 priority queues and gradient DATA traffic; both compiled by the embedded
compiler) and each switch:
- zero-loss rate: frames paced at a rate for `--duration` s; the rate passes when fewer than 1%
  are missing at the far port (the kernel's tx counter) 0.1 s after the last was sent. The rate
  climbs by x1.6 until one fails, then is bisected; the figure is the highest rate that passed.
- latency (measured first, on the fresh switch): `--probes` frames at `--probe-rate` pps
  carrying their send time, one-way (same clock); the figure is the switch path minus the
  direct veth path's p50 (for p99 an upper bound: the direct path's jitter counts as the
  switch's).
Switches: this tree's embedded switch; `--compare-tree DIR` also runs another checkout's
embedded switch (e.g. the previous release) in the same run, alternating with this one;
`simple_switch` when it is on PATH or in /opt/p4ref/bin; a bare Python raw-socket forwarder
(`_forwarder.py`, no P4, first program only) as the ceiling of receive + send alone. Figures are printed beside the
previous release's (`benchmarks/baseline.json`; `--record-baseline` writes them). Needs root.
Run: .venv/bin/python benchmarks/switch_throughput.py [--duration S] [--compare-tree DIR] [...]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

import _baseline
from _netlab import Net, ns_socket, tx_packets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hosts.headers import GradData, GradientHeader  # noqa: E402
from p4target.compiler import compile_file  # noqa: E402

MARK = 40405
FRAME_BYTES = 128
GRADLANE_COMMANDS = (
    "act_prof_create_member GradIngress.ecmp_selector GradIngress.set_nhop 00:00:00:00:01:fe 00:00:00:00:01:aa 1\n"
    "act_prof_create_member GradIngress.ecmp_selector GradIngress.set_nhop 00:00:00:00:02:fe 00:00:00:00:02:bb 2\n"
    "table_indirect_add GradIngress.ipv4_lpm 10.0.1.0/24 => 0\n"
    "table_indirect_add GradIngress.ipv4_lpm 10.0.2.0/24 => 1\n"
    # gradient DATA of job 1 (any policy epoch) into queue 5, drop-eligible, 5% bound, threshold 10 packets
    "table_add GradIngress.gradient_class GradIngress.set_class 0x0001&&&0xffff 0->65535 0->255 0&&&0 "
    "=> 5 1 3 500 500 10 1\n")
L3_COMMANDS = ("table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.1.0/24 => 00:00:00:00:01:01 1\n"
               "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.2.0/24 => 00:00:00:00:02:02 2\n")
SIMPLE_SWITCH_DIRS = ("/opt/p4ref/bin",)


@dataclass
class Switch:
    """How to start one kind of switch."""
    label: str
    argv: list[str]
    cwd: str = ROOT
    env: dict[str, str] = field(default_factory=dict)
    kind: str = "embedded"  # embedded | simple_switch | forwarder (no P4: the ceiling reference)


@dataclass
class Row:
    program: str
    switch: str
    zero_loss_pps: float
    p50_us: float
    p99_us: float
    rx_drops: str


def _frame(kind: str, index: int) -> bytes:
    """A 128-byte frame from 10.0.1.1 to 10.0.2.2: UDP (l3) or gradient DATA (gradlane).
    The last 12 bytes carry (seq, send time ns) for latency probes."""
    base = (Ether(src="00:00:00:00:01:aa", dst="00:00:00:00:01:fe") /
            IP(src="10.0.1.1", dst="10.0.2.2", ttl=32, tos=0))
    if kind == "gradlane":
        pkt = base / UDP(sport=MARK, dport=19527) / GradientHeader(job_id=1, layer_id=index % 8, round=1,
                                                                     chunk_seq=index)
        head = bytes(pkt)
        n = (FRAME_BYTES - len(head)) // 4
        pkt = pkt / GradData(values=[0.5] * n)
    else:
        head = bytes(base / UDP(sport=MARK, dport=MARK))
        pkt = base / UDP(sport=MARK, dport=MARK) / bytes(FRAME_BYTES - len(head))
    data = bytes(pkt)
    return data + bytes(max(0, FRAME_BYTES - len(data)))


def _stamped(frame: bytes, seq: int, stamp_ns: int) -> bytes:
    return frame[:-12] + struct.pack("!IQ", seq, stamp_ns)


def _probe_of(data: bytes) -> tuple[int, int] | None:
    if len(data) < 54 or data[12:14] != b"\x08\x00" or data[34:36] != MARK.to_bytes(2, "big"):
        return None
    return struct.unpack("!IQ", data[-12:]) if len(data) >= FRAME_BYTES else None


def trial(tx: socket.socket, frames: list[bytes], out_iface: str, rate: float, duration: float) -> tuple[float, float]:
    """Send at `rate` pps for `duration` s; (achieved send rate, fraction missing 0.1 s after)."""
    before = tx_packets(out_iface)
    total = max(1, int(rate * duration))
    nf = len(frames)
    send = tx.send
    clock = time.monotonic
    sent = 0
    start = clock()
    while sent < total:
        due = min(total, int((clock() - start) * rate) + 1)
        while sent < due:
            try:
                send(frames[sent % nf])
            except BlockingIOError:
                time.sleep(0.0002)
                continue
            sent += 1
        if sent < total:
            time.sleep(0.0003)
    elapsed = clock() - start
    time.sleep(0.1)
    on_time = tx_packets(out_iface) - before
    _wait_quiet(lambda: tx_packets(out_iface), 0.3, 5.0)
    return sent / max(elapsed, 1e-9), max(0.0, 1.0 - on_time / sent)


def zero_loss_rate(tx: socket.socket, frames: list[bytes], out_iface: str, args: argparse.Namespace,
                   trace: list[str]) -> float:
    """The highest paced rate (achieved pps) with under 1% loss: x1.6 steps, then bisection."""
    passed, failed = 0.0, None
    rate = args.start_rate
    while rate <= args.max_rate:
        achieved, loss = trial(tx, frames, out_iface, rate, args.duration)
        trace.append(f"{rate:.0f}:{achieved:.0f}pps/{loss * 100:.1f}%")
        if loss >= 0.01:
            failed = rate
            break
        passed = max(passed, achieved)
        rate *= 1.6
    if failed is None:
        return passed
    low = passed or failed / 4
    for _ in range(args.bisect):
        mid = math.sqrt(low * failed)
        achieved, loss = trial(tx, frames, out_iface, mid, args.duration)
        trace.append(f"{mid:.0f}:{achieved:.0f}pps/{loss * 100:.1f}%")
        if loss < 0.01:
            passed, low = max(passed, achieved), mid
        else:
            failed = mid
    return passed


def latency(tx: socket.socket, rx: socket.socket, frame: bytes, count: int, rate: float) -> tuple[float, float]:
    """(p50, p99) one-way microseconds of `count` probes paced at `rate` pps."""
    arrivals: list[tuple[int, int]] = []
    stop = threading.Event()

    def receiver() -> None:
        rx.settimeout(0.2)
        while not stop.is_set():
            try:
                data = rx.recv(65536)
            except socket.timeout:
                continue
            now = time.monotonic_ns()
            probe = _probe_of(data)
            if probe is not None and probe[1]:
                arrivals.append((probe[1], now))

    thread = threading.Thread(target=receiver, daemon=True)
    thread.start()
    try:
        gap = 1.0 / rate
        next_at = time.monotonic()
        for seq in range(count):
            next_at += gap
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            tx.send(_stamped(frame, seq, time.monotonic_ns()))
        _wait_quiet(lambda: len(arrivals), 0.5, 5.0)
    finally:
        stop.set()
        thread.join()
    lat = sorted((arr - sent) / 1e3 for sent, arr in arrivals)
    if not lat:
        return float("nan"), float("nan")
    return lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def _wait_quiet(read, quiet: float, limit: float) -> None:
    last, since, began = read(), time.monotonic(), time.monotonic()
    while time.monotonic() - since < quiet and time.monotonic() - began < limit:
        time.sleep(0.05)
        now = read()
        if now != last:
            last, since = now, time.monotonic()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_switch(sw: Switch, ports: list[str], json_path: str, log_path: str,
                 extra: tuple[str, ...]) -> tuple[subprocess.Popen, int]:
    """Start `sw` on the interfaces; (process, Thrift port) once it is ready."""
    thrift = free_port()
    iface_args = [a for i, name in enumerate(ports, 1) for a in ("-i", f"{i}@{name}")]
    if sw.kind == "forwarder":
        argv = [*sw.argv, str(thrift), *ports]
    elif sw.kind == "embedded":
        argv = [*sw.argv, *iface_args, "--thrift-port", str(thrift), "--log-file", log_path, "-L", "info", json_path,
                "--", "--grpc-server-addr", f"127.0.0.1:{free_port()}", *extra]
    else:  # simple_switch logs nothing without --log-file (its default level is trace)
        argv = [*sw.argv, *iface_args, "--thrift-port", str(thrift), json_path] + (["--", *extra] if extra else [])
    env = dict(os.environ, **sw.env)
    proc = subprocess.Popen(argv, cwd=sw.cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{sw.label} exited at start: {proc.stderr.read().decode(errors='replace')[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", thrift), timeout=0.5).close()
            return proc, thrift
        except OSError:
            time.sleep(0.2)
    stop_switch(proc)
    raise RuntimeError(f"{sw.label} did not open its Thrift port {thrift} within 60 s")


def stop_switch(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def _rx_drops(log_path: str) -> str:
    """The switch's own receive drops from its `<log>.stats.json` (embedded switch), or n/a."""
    try:
        with open(log_path + ".stats.json") as f:
            stats = json.load(f)
    except (OSError, ValueError):
        return "n/a"
    return str(stats.get("rx_drops_total", "n/a"))


def measure_switch(net: Net, sw: Switch, program: str, json_path: str, commands: str,
                   args: argparse.Namespace, tmp: str, extra: tuple[str, ...] = ()) -> Row:
    """One switch on one program between two fresh namespaces: zero-loss rate and latency."""
    tag = f"{program[:2]}{len(net.namespaces)}"
    h1, h2 = net.namespace(f"{tag}a"), net.namespace(f"{tag}b")
    s1, s2 = f"glb{net.tag}{tag}s1", f"glb{net.tag}{tag}s2"
    net.to_root(h1, s1)
    net.to_root(h2, s2)
    log_path = os.path.join(tmp, f"{tag}.log")
    proc, thrift = start_switch(sw, [s1, s2], json_path, log_path, extra)
    try:
        if sw.kind != "forwarder":
            cli = os.path.join(os.path.dirname(sys.executable), "simple_switch_CLI")
            done = subprocess.run([cli, "--thrift-port", str(thrift)],
                                  input=commands + f"set_queue_depth {args.queue_depth}\n",
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0 or "Error" in done.stdout:
                raise RuntimeError(f"{sw.label}: programming failed: {(done.stdout + done.stderr)[-400:]}")
        frames = [_stamped(_frame(program, i), i, 0) for i in range(64)]
        tx = ns_socket(h1, "eth0")
        try:
            # latency first, on the fresh switch: "at low load", not in the wake of the overloads
            rx = ns_socket(h2, "eth0")
            try:
                p50, p99 = latency(tx, rx, frames[0], args.probes, args.probe_rate)
            finally:
                rx.close()  # closed: it must not hold the rate trials' frames
            trace: list[str] = []
            pps = float("nan") if args.latency_only else zero_loss_rate(tx, frames, s2, args, trace)
            if trace:
                print(f"  {program:<9} {sw.label:<22} trials {' '.join(trace)}", flush=True)
        finally:
            tx.close()
    finally:
        stop_switch(proc)
    return Row(program, sw.label, pps, p50, p99, _rx_drops(log_path))


def _compiled(program: str) -> dict:
    """The program's BMv2 JSON from the embedded compiler (loads on simple_switch too)."""
    if program == "gradlane":
        return compile_file(os.path.join(ROOT, "p4src", "gradlane.p4"),
                            include_dirs=[os.path.join(ROOT, "p4src")]).bmv2_json
    return compile_file(os.path.join(ROOT, "benchmarks", "programs", "l3_router.p4")).bmv2_json


def _simple_switch() -> str | None:
    found = shutil.which("simple_switch")
    if found:
        return found
    for d in SIMPLE_SWITCH_DIRS:
        path = os.path.join(d, "simple_switch")
        if os.access(path, os.X_OK):
            return path
    return None


def _switches(args: argparse.Namespace) -> list[Switch]:
    embedded = [sys.executable, "-m", "p4target", "switch"]
    out = [] if args.no_embedded else [Switch("embedded (this tree)", embedded)]
    if args.compare_tree:
        tree = os.path.abspath(args.compare_tree)
        out.append(Switch(f"embedded ({os.path.basename(tree)})", embedded, cwd=tree, env={"PYTHONPATH": tree}))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per rate trial")
    ap.add_argument("--start-rate", type=float, default=2000.0, help="first trial rate (pps)")
    ap.add_argument("--max-rate", type=float, default=160000.0, help="highest rate tried (pps)")
    ap.add_argument("--bisect", type=int, default=3, help="bisection steps after the first failed rate")
    ap.add_argument("--probes", type=int, default=1000, help="latency probes")
    ap.add_argument("--probe-rate", type=float, default=1000.0, help="latency probe rate (pps)")
    ap.add_argument("--queue-depth", type=int, default=1024, help="egress queue depth set on every switch")
    ap.add_argument("--programs", default="l3,gradlane", help="comma-separated: l3, gradlane")
    ap.add_argument("--compare-tree", metavar="DIR", help="also run the embedded switch of this checkout")
    ap.add_argument("--repeat", type=int, default=1, help="rounds over the switches (order alternates)")
    ap.add_argument("--no-forwarder", action="store_true",
                    help="skip the bare Python raw-socket forwarder (no P4; the ceiling of this path)")
    ap.add_argument("--latency-only", action="store_true", help="skip the zero-loss rate search")
    ap.add_argument("--record-baseline", action="store_true", help="write this tree's figures to baseline.json")
    ap.add_argument("--no-embedded", action="store_true", help="skip this tree's embedded switch")
    ap.add_argument("--no-simple-switch", action="store_true", help="skip simple_switch even when installed")
    ap.add_argument("--simple-switch", metavar="PATH", help="the simple_switch to run (default: on PATH or in /opt/p4ref/bin)")
    ap.add_argument("--gradlane-json", metavar="PATH", help="load this gradlane JSON (default: compiled from p4src)")
    ap.add_argument("--json-out", metavar="PATH", help="also write the rows as JSON (program, switch, zero_loss_pps)")
    args = ap.parse_args()
    sys.setswitchinterval(1e-4)  # the probe receiver must get the GIL at once
    if os.geteuid() != 0:
        print("switch_throughput: not run (needs root for network namespaces and raw sockets)")
        return 0
    programs = [p.strip() for p in args.programs.split(",") if p.strip()]
    bad = [p for p in programs if p not in ("l3", "gradlane")]
    if bad:
        sys.stderr.write(f"switch_throughput: error: unknown program '{bad[0]}' (have: l3, gradlane)\n")
        return 2
    switches = _switches(args)
    ss = None if args.no_simple_switch else args.simple_switch or _simple_switch()
    if ss:
        switches.append(Switch(f"simple_switch ({ss})", [ss], kind="simple_switch"))
        print(f"simple_switch: {ss} (runs the same programs)")
    else:
        print("simple_switch: absent (not on PATH nor in /opt/p4ref/bin); no BMv2 comparison")
    if not switches:
        sys.stderr.write("switch_throughput: error: --no-embedded and no simple_switch: nothing to measure\n")
        return 2
    forwarder = None if args.no_forwarder else Switch(
        "bare Python forwarder", [sys.executable, os.path.join(ROOT, "benchmarks", "_forwarder.py")], kind="forwarder")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start", flush=True)
    net = Net(str(os.getpid() % 100000))
    rows: list[Row] = []
    try:
        d1, d2 = net.namespace("d1"), net.namespace("d2")
        net.direct(d1, d2)
        tx, rx = ns_socket(d1, "eth0"), ns_socket(d2, "eth0")
        try:
            direct = latency(tx, rx, _frame("l3", 0), args.probes, args.probe_rate)
        finally:
            tx.close()
            rx.close()
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for program in programs:
                paths[program] = os.path.join(tmp, f"{program}.json")
                if program == "gradlane" and args.gradlane_json:
                    shutil.copyfile(args.gradlane_json, paths[program])
                    continue
                with open(paths[program], "w") as f:
                    json.dump(_compiled(program), f)
            for round_ in range(args.repeat):
                for n, program in enumerate(programs):
                    runs = switches + ([forwarder] if forwarder and program == programs[0] else [])
                    order = runs if (round_ + n) % 2 == 0 else list(reversed(runs))
                    for sw in order:
                        commands = L3_COMMANDS if program == "l3" else GRADLANE_COMMANDS
                        extra = ("--priority-queues", "8") if program == "gradlane" else ()
                        try:
                            rows.append(measure_switch(net, sw, program, paths[program], commands, args, tmp, extra))
                        except RuntimeError as exc:
                            print(f"  {program:<9} {sw.label}: not measured: {exc}", flush=True)
    finally:
        net.close()
    print(f"machine: load average {os.getloadavg()[0]:.2f} at end")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump([{"program": r.program, "switch": r.switch, "zero_loss_pps": r.zero_loss_pps} for r in rows], f)
    if args.no_embedded:
        return 0  # the figures below and the baseline are this tree's embedded switch's
    print(f"\n{'program':<10}{'switch':<36}{'zero-loss pps':>14}{'p50 add us':>12}{'p99 add us':>12}{'rx drops*':>10}")
    for r in rows:
        print(f"{r.program:<10}{r.switch[:35]:<36}{r.zero_loss_pps:>14.0f}{r.p50_us - direct[0]:>12.1f}"
              f"{r.p99_us - direct[0]:>12.1f}{r.rx_drops:>10}")
    print("* the switch's own receive drops over all its trials (the search overloads it on purpose); "
          "n/a: the switch does not count them")
    print(f"direct veth one-way latency: p50 {direct[0]:.1f} us, p99 {direct[1]:.1f} us")
    figures = _figures(rows, switches[0].label, direct)
    names = {"l3_zero_loss_kpps": ("L3 router zero-loss rate", "kpps"),
             "gradlane_zero_loss_kpps": ("gradlane.json zero-loss rate (8 queues, gradient DATA)", "kpps"),
             "l3_p50_added_us": ("latency added at low load, p50 (L3 router)", "us"),
             "l3_p99_added_us": ("latency added at low load, p99 (L3 router)", "us"),
             "gradlane_p50_added_us": ("latency added at low load, p50 (gradlane)", "us"),
             "gradlane_p99_added_us": ("latency added at low load, p99 (gradlane)", "us")}
    print()
    for key, value in figures.items():
        text, unit = names[key]
        print(f"{text}: {_baseline.beside(key, value, unit)}")
    for other in switches[1:]:
        for program in programs:
            mine = _best(rows, program, switches[0].label)
            theirs = _best(rows, program, other.label)
            if mine and theirs:
                print(f"{program}: this tree / {other.label}: {mine / theirs:.2f}x zero-loss rate")
    if args.record_baseline:
        _baseline.record(figures)
        print(f"recorded in {_baseline.PATH}")
    return 0


def _best(rows: list[Row], program: str, label: str) -> float:
    values = [r.zero_loss_pps for r in rows if r.program == program and r.switch == label
              and not math.isnan(r.zero_loss_pps)]
    return max(values) if values else 0.0


def _median(values: list[float]) -> float:
    values = sorted(v for v in values if not math.isnan(v))
    return values[len(values) // 2] if values else float("nan")


def _figures(rows: list[Row], label: str, direct: tuple[float, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for program in ("l3", "gradlane"):
        mine = [r for r in rows if r.program == program and r.switch == label]
        if not mine:
            continue
        if not any(math.isnan(r.zero_loss_pps) for r in mine):
            out[f"{program}_zero_loss_kpps"] = max(r.zero_loss_pps for r in mine) / 1000
        out[f"{program}_p50_added_us"] = _median([r.p50_us for r in mine]) - direct[0]
        # the direct path's p99 is mostly the machine's scheduling noise: subtract its p50
        out[f"{program}_p99_added_us"] = _median([r.p99_us for r in mine]) - direct[0]
    return out


if __name__ == "__main__":
    sys.exit(main())
