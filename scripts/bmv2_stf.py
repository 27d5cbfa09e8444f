#!/usr/bin/env python3
"""Our STF tests on a real BMv2 `simple_switch`, driven command by command.

p4c's runner (`backends/bmv2/run-bmv2-test.py`) sends every table command before the first
packet, has no range match kind and checks neither counters nor registers, so many of our tests
cannot run through it as written. Here `p4target.stf.StfRunner`, the runner CI uses on the
embedded switch, drives a real `simple_switch` instead: control-plane commands go over BMv2's
Thrift API (the `bm_runtime` bindings installed with BMv2), packets in and out over its nanomsg
packet-in socket (`--packet-in`), one packet at a time; the outputs of a packet are those that
arrive until the switch has been quiet for `QUIET` seconds. The table shapes (key widths, action
parameters) come from loading the same JSON into the embedded engine.

Not part of CI: it needs a locally built simple_switch (see p4target/README.md, "Checking
against the real BMv2"). `check_reference.py --driver ours` runs it; the pure helpers are
unit-tested in tests/unit/test_check_reference.py.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from p4target.engine import Engine, Exact, Lpm, Optional, Range, Ternary, Valid  # noqa: E402
from p4target.stf import StfResult, StfRunner, parse_stf  # noqa: E402

QUIET = 0.25  # seconds without output after which a packet's outputs are taken as complete
START_TIMEOUT = 30.0

# BMv2's packet-in messages (src/bm_sim/dev_mgr_packet_in.cpp): a packed header of three native
# ints, type, port and (for packets) length, then the packet
MSG_PACKET_IN = 3
MSG_PACKET_OUT = 4
_HEADER = struct.Struct("=iii")

# nanomsg constants (nn.h, pair.h)
_AF_SP = 1
_NN_PAIR = 16
_NN_SOL_SOCKET = 0
_NN_RCVTIMEO = 5
_NN_MSG = ctypes.c_size_t(-1).value


class Bmv2Unavailable(Exception):
    """The switch or its bindings are not there, or the switch did not start."""


def packet_in_message(port: int, data: bytes) -> bytes:
    """The message that hands `data` to the switch on `port`."""
    return _HEADER.pack(MSG_PACKET_IN, port, len(data)) + data


def parse_packet_out(message: bytes) -> tuple[int, bytes] | None:
    """(port, packet) of a PACKET_OUT message; None for any other message."""
    if len(message) < _HEADER.size:
        return None
    kind, port, length = _HEADER.unpack_from(message)
    if kind != MSG_PACKET_OUT:
        return None
    return port, message[_HEADER.size:_HEADER.size + length]


def value_bytes(value: int, width: int) -> bytes:
    """`value` in the whole bytes of a `width`-bit field, as simple_switch_CLI sends it."""
    return (value & ((1 << width) - 1)).to_bytes(max(1, (width + 7) // 8), "big")


def port_map(ports: list[int]) -> str:
    """simple_switch_CLI's port bitmap for `mc_node_create`: a '1' per port, port 0 rightmost."""
    bits = ["0"] * (max(ports) + 1 if ports else 0)
    for p in ports:
        bits[p] = "1"
    return "".join(reversed(bits))


def _as_kind(value: Any, match_type: str, width: int) -> Any:
    """An STF key value in the form of its key's match kind, as p4c's runner writes it for
    simple_switch_CLI: a plain value on a ternary (or optional) key matches all bits, on an LPM
    key the whole width, on a range key just itself (BMv2 refuses another kind: BAD_MATCH_KEY)."""
    if isinstance(value, Exact):
        if match_type in ("ternary", "optional"):
            return Ternary(value.value, (1 << width) - 1)
        if match_type == "lpm":
            return Lpm(value.value, width)
        if match_type == "range":
            return Range(value.value, value.value)
    if isinstance(value, Lpm) and match_type == "ternary":
        return Ternary(value.value, ((1 << value.prefix_len) - 1) << (width - value.prefix_len))
    return value


class _Nanomsg:
    """A nanomsg PAIR socket through libnanomsg (ctypes; no Python binding needed)."""

    def __init__(self, address: str) -> None:
        path = ctypes.util.find_library("nanomsg")
        if path is None:
            raise Bmv2Unavailable("libnanomsg is not installed")
        self.lib = ctypes.CDLL(path, use_errno=True)
        self.lib.nn_send.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.lib.nn_recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.lib.nn_freemsg.argtypes = [ctypes.c_void_p]
        self.sock = self.lib.nn_socket(_AF_SP, _NN_PAIR)
        if self.sock < 0 or self.lib.nn_connect(self.sock, address.encode()) < 0:
            raise Bmv2Unavailable(f"cannot open a nanomsg socket to {address}")
        self._timeout_ms = -2

    def send(self, message: bytes) -> None:
        if self.lib.nn_send(self.sock, message, len(message), 0) != len(message):
            raise Bmv2Unavailable("nanomsg send failed")

    def recv(self, timeout: float) -> bytes | None:
        ms = max(1, int(timeout * 1000))
        if ms != self._timeout_ms:
            value = ctypes.c_int(ms)
            self.lib.nn_setsockopt(self.sock, _NN_SOL_SOCKET, _NN_RCVTIMEO, ctypes.byref(value),
                                   ctypes.sizeof(value))
            self._timeout_ms = ms
        buf = ctypes.c_void_p()
        n = self.lib.nn_recv(self.sock, ctypes.byref(buf), _NN_MSG, 0)
        if n < 0:
            return None
        try:
            return ctypes.string_at(buf, n)
        finally:
            self.lib.nn_freemsg(buf)

    def close(self) -> None:
        self.lib.nn_close(self.sock)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Counters:
    """`program.counters[name].read(index)` as StfRunner calls it, read from the switch."""

    def __init__(self, switch: "RealSwitch", names: list[str]) -> None:
        self._switch, self._names = switch, names

    def __iter__(self):
        return iter(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __getitem__(self, name: str) -> Any:
        switch = self._switch

        class _Counter:
            def read(self, index: int) -> tuple[int, int]:
                value = switch.standard.bm_counter_read(0, name, index)
                return value.packets, value.bytes
        return _Counter()


class _Program:
    def __init__(self, switch: "RealSwitch", shape: Engine) -> None:
        self.registers = shape.program.registers
        self.counters = _Counters(switch, list(shape.program.counters))


class _Refused:
    """A Thrift client whose refusals (BMv2's Invalid*Operation) are ValueErrors, which
    StfRunner reports as the failure of the STF command that caused them."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(*args: Any) -> Any:
            from thrift.Thrift import TException
            try:
                return method(*args)
            except TException as e:
                code = getattr(e, "code", None)
                raise ValueError(f"simple_switch refused {name}: {type(e).__name__}"
                                 + (f" code {code}" if code is not None else "")) from None
        return call


class RealSwitch:
    """A real simple_switch running one BMv2 JSON, with the Engine methods StfRunner uses."""

    def __init__(self, simple_switch: str, env: dict[str, str], bmv2_json: dict, json_path: str,
                 priority_queues: int = 1, log: str | None = None) -> None:
        try:
            from bm_runtime.simple_pre_lag import SimplePreLAG
            from bm_runtime.standard import Standard
            from bm_runtime.standard.ttypes import (BmAddEntryOptions, BmMatchParam, BmMatchParamExact,
                                                    BmMatchParamLPM, BmMatchParamRange, BmMatchParamTernary,
                                                    BmMatchParamType, BmMatchParamValid)
            from sswitch_runtime import SimpleSwitch
            from sswitch_runtime.ttypes import MirroringSessionConfig
            from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
            from thrift.transport import TSocket, TTransport
        except ImportError as e:
            raise Bmv2Unavailable(f"BMv2's Thrift bindings are not importable ({e}); "
                                  "put BMv2's lib/python3*/site-packages on PYTHONPATH") from None
        self.t = dict(BmAddEntryOptions=BmAddEntryOptions, BmMatchParam=BmMatchParam,
                      BmMatchParamExact=BmMatchParamExact, BmMatchParamLPM=BmMatchParamLPM,
                      BmMatchParamRange=BmMatchParamRange, BmMatchParamTernary=BmMatchParamTernary,
                      BmMatchParamType=BmMatchParamType, BmMatchParamValid=BmMatchParamValid,
                      MirroringSessionConfig=MirroringSessionConfig)
        self.shape = Engine(bmv2_json)  # key widths and action parameters, nothing runs here
        self.program = _Program(self, self.shape)
        self._dir = tempfile.mkdtemp(prefix="bmv2-stf-")
        address = f"ipc://{self._dir}/packets.ipc"
        thrift_port = _free_port()
        cmd = [simple_switch, "--packet-in", address, "--thrift-port", str(thrift_port),
               "--device-id", "0", json_path]
        if priority_queues > 1:
            cmd += ["--", "--priority-queues", str(priority_queues)]
        self._log = open(log or os.devnull, "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                self._log.close()
                raise Bmv2Unavailable(f"simple_switch exited with {self.proc.returncode} at start"
                                      + (f" (see {log})" if log else ""))
            try:
                with socket.create_connection(("127.0.0.1", thrift_port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.close()
                    raise Bmv2Unavailable("simple_switch's Thrift port did not open") from None
                time.sleep(0.1)
        transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", thrift_port))
        protocol = TBinaryProtocol.TBinaryProtocol(transport)
        def client(cls: Any, service: str) -> Any:
            return _Refused(cls.Client(TMultiplexedProtocol.TMultiplexedProtocol(protocol, service)))
        self.standard = client(Standard, "standard")
        self.pre = client(SimplePreLAG, "simple_pre_lag")
        self.sswitch = client(SimpleSwitch, "simple_switch")
        transport.open()
        self._transport = transport
        self.packets = _Nanomsg(address)

    def close(self) -> None:
        if getattr(self, "_transport", None) is not None:
            self._transport.close()
        if getattr(self, "packets", None) is not None:
            self.packets.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    # -- what StfRunner reads ------------------------------------------------------------
    def table_names(self) -> list[str]:
        return self.shape.table_names()

    def table(self, name: str) -> Any:
        return self.shape.table(name)

    # -- control plane -------------------------------------------------------------------
    def _match_key(self, table: str, key: list) -> list:
        t = self.t
        kinds = t["BmMatchParamType"]
        params = []
        for kf, value in zip(self.shape.table(table).keys, key):
            w = kf.width
            value = _as_kind(value, kf.match_type, w)
            if isinstance(value, Exact):
                params.append(t["BmMatchParam"](type=kinds.EXACT, exact=t["BmMatchParamExact"](
                    value_bytes(value.value, w))))
            elif isinstance(value, Lpm):
                params.append(t["BmMatchParam"](type=kinds.LPM, lpm=t["BmMatchParamLPM"](
                    value_bytes(value.value, w), value.prefix_len)))
            elif isinstance(value, Ternary):
                params.append(t["BmMatchParam"](type=kinds.TERNARY, ternary=t["BmMatchParamTernary"](
                    value_bytes(value.value, w), value_bytes(value.mask, w))))
            elif isinstance(value, Optional):  # BMv2 has no optional kind: p4c writes ternary
                mask = 0 if value.wildcard else (1 << w) - 1
                params.append(t["BmMatchParam"](type=kinds.TERNARY, ternary=t["BmMatchParamTernary"](
                    value_bytes(value.value, w), value_bytes(mask, w))))
            elif isinstance(value, Range):
                params.append(t["BmMatchParam"](type=kinds.RANGE, range=t["BmMatchParamRange"](
                    value_bytes(value.low, w), value_bytes(value.high, w))))
            elif isinstance(value, Valid):
                params.append(t["BmMatchParam"](type=kinds.VALID, valid=t["BmMatchParamValid"](
                    bool(value.value))))
            else:
                raise ValueError(f"key kind {type(value).__name__} has no BMv2 form")
        return params

    def _action_data(self, table: str, action: str, data: list[int]) -> list[bytes]:
        spec = self.shape.table(table).actions[action]
        return [value_bytes(v, w) for (_, w), v in zip(spec.params, data)]

    def act_prof_add_member(self, profile: str, action: str, data: list[int]) -> int:
        spec = next(t for t in (self.shape.table(n) for n in self.shape.table_names())
                    if t.profile is not None and t.profile.name == profile).actions[action]
        return self.standard.bm_mt_act_prof_add_member(
            0, profile, action, [value_bytes(v, w) for (_, w), v in zip(spec.params, data)])

    def table_add(self, table: str, key: list, action: str | None = None, data: list[int] = (),
                  priority: int | None = None, member: int | None = None) -> int:
        options = self.t["BmAddEntryOptions"](priority=priority or 0)
        match = self._match_key(table, key)
        if member is not None:
            return self.standard.bm_mt_indirect_add_entry(0, table, match, member, options)
        return self.standard.bm_mt_add_entry(0, table, match, action, self._action_data(table, action, list(data)),
                                             options)

    def table_clear(self, table: str) -> None:
        self.standard.bm_mt_clear_entries(0, table, False)

    def table_set_default(self, table: str, action: str, data: list[int]) -> None:
        self.standard.bm_mt_set_default_action(0, table, action, self._action_data(table, action, list(data)))

    def table_entry_counter(self, table: str, handle: int) -> tuple[int, int]:
        value = self.standard.bm_mt_read_counter(0, table, handle)
        return value.packets, value.bytes

    def mirroring_add(self, session: int, port: int) -> None:
        self.sswitch.mirroring_session_add(session, self.t["MirroringSessionConfig"](port=port))

    def mc_mgrp_create(self, mgrp: int) -> None:
        self.pre.bm_mc_mgrp_create(0, mgrp)

    def mc_node_create(self, rid: int, ports: list[int]) -> int:
        return self.pre.bm_mc_node_create(0, rid, port_map(list(ports)), "")

    def mc_node_associate(self, mgrp: int, node: int) -> None:
        self.pre.bm_mc_node_associate(0, mgrp, node)

    def register_write(self, name: str, index: int, value: int) -> None:
        self.standard.bm_register_write(0, name, index, value)

    def register_read(self, name: str, index: int) -> int:
        return self.standard.bm_register_read(0, name, index)

    # -- packets -------------------------------------------------------------------------
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        self.packets.send(packet_in_message(port, data))
        out = []
        while True:
            message = self.packets.recv(QUIET)
            if message is None:
                return out
            parsed = parse_packet_out(message)
            if parsed is not None:
                out.append(parsed)


def run_stf_on_bmv2(simple_switch: str, env: dict[str, str], bmv2_json: dict, json_path: str,
                    stf_text: str, stf_file: str, priority_queues: int = 1,
                    log: str | None = None) -> StfResult:
    """Run one STF test on a fresh real simple_switch; the switch is stopped afterwards."""
    commands = parse_stf(stf_text, stf_file)
    switch = RealSwitch(simple_switch, env, bmv2_json, json_path, priority_queues, log)
    try:
        return StfRunner(switch, stf_file).run(commands)  # type: ignore[arg-type]
    finally:
        switch.close()


def main(argv: list[str] | None = None) -> int:
    """`bmv2_stf.py PROGRAM.p4 TEST.stf [--json FILE]`: one STF test on real BMv2 (under the
    network lock)."""
    import argparse
    import fcntl
    import json

    ap = argparse.ArgumentParser(description=main.__doc__.split("\n")[0].strip("`"))
    ap.add_argument("program")
    ap.add_argument("stf")
    ap.add_argument("--json", help="run this BMv2 JSON instead of compiling PROGRAM with our compiler")
    ap.add_argument("--priority-queues", type=int, default=1)
    ap.add_argument("--simple-switch", default="/opt/p4ref/bin/simple_switch")
    ap.add_argument("--log", help="simple_switch's console output to this file")
    args = ap.parse_args(argv)
    prefix = Path(args.simple_switch).resolve().parent.parent
    env = dict(os.environ, LD_LIBRARY_PATH=str(prefix / "lib"))
    sys.path[:0] = [str(p) for p in sorted((prefix / "lib").glob("python3*/site-packages"))]
    with tempfile.TemporaryDirectory() as tmp:
        if args.json:
            path = args.json
            program = json.loads(Path(path).read_text())
        else:
            from p4target.compiler import compile_file
            program = compile_file(args.program, include_dirs=(str(Path(args.program).parent),)).bmv2_json
            path = str(Path(tmp) / "program.json")
            Path(path).write_text(json.dumps(program))
        with open("/tmp/gradlane-net.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            result = run_stf_on_bmv2(args.simple_switch, env, program, path, Path(args.stf).read_text(),
                                     args.stf, args.priority_queues, args.log)
    for line in result.lines:
        print(line)
    print("PASS" if result.ok else f"FAIL ({result.failures} failure(s))")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
