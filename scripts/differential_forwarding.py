#!/usr/bin/env python3
"""Differential forwarding of large P4 programs: the same table entries, installed through
P4Runtime, and the same packets through up to four pipelines, and every packet whose output
(port, bytes) differs, or counter that differs, reported.

The four pipelines:
  (a) p4c's JSON on the real BMv2 (`simple_switch_grpc`), the reference;
  (b) our compiler's JSON on the real BMv2;
  (c) our compiler's JSON on the embedded switch;
  (d) p4c's JSON on the embedded switch.

Entries and packets are generated from p4c's JSON and P4Info with a seed: packets walk every
path of the parser graph (select values forced into the fields a transition reads), plus
truncated and byte-flipped copies of them (malformed) and a few random frames; entries take
their keys from the field values of those packets (so that lookups hit), their actions and
parameters at random. Tables with constant entries or an action profile are left as they are.

`--record FILE` writes the case (entries, packets) with (a)'s outputs and counters: CI replays
such a recording from `tests/differential/` on the embedded switch alone (`--replay FILE`,
arm (d)), without p4c, BMv2 or the program's source. Not part of CI otherwise: the real arms
need a locally built `simple_switch_grpc` (p4target/README.md, "Checking against the real
BMv2"), the program's source for (b) and (c), and our compiler.

The real BMv2 takes and returns packets over its nanomsg packet-in socket (`--packet-in`); the
embedded switch runs in this process with its P4Runtime server on a loopback port.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # run as a script: the repository's packages, scripts.bmv2_stf

DEFAULT_PREFIX = Path(os.environ.get("P4REF_PREFIX", "/opt/p4ref"))
FIXTURES = ROOT / "tests" / "differential" / "fixtures"
PORTS = (1, 2, 3, 4)  # ingress ports the packets arrive on; also the bias of port-like parameters
MAX_PATHS = 150
START_TIMEOUT = 60.0
RPC_TIMEOUT = 120.0


class Unavailable(Exception):
    """A tool or file an arm needs is not there; the message says which."""


# --------------------------------------------------------------------------- the program
@dataclass
class Program:
    """One BMv2 JSON document with its P4Info (text format)."""

    bmv2_json: dict
    p4info_text: str
    p4info: Any = None

    def __post_init__(self) -> None:
        from google.protobuf import text_format
        from p4.config.v1 import p4info_pb2
        self.p4info = text_format.Parse(self.p4info_text, p4info_pb2.P4Info())

    def table(self, name: str) -> Any:
        return next((t for t in self.p4info.tables if t.preamble.name == name), None)

    def action(self, name: str) -> Any:
        return next((a for a in self.p4info.actions if a.preamble.name == name), None)


def strip_source_info(node: Any) -> Any:
    """The JSON without its `source_info` objects (they quote the program's source)."""
    if isinstance(node, dict):
        return {k: strip_source_info(v) for k, v in node.items() if k != "source_info"}
    if isinstance(node, list):
        return [strip_source_info(v) for v in node]
    return node


# --------------------------------------------------------------------------- packets
def _header_types(j: dict) -> dict[str, list]:
    return {t["name"]: t["fields"] for t in j.get("header_types", [])}


def _instance_type(j: dict) -> dict[str, str]:
    out = {h["name"]: h["header_type"] for h in j.get("headers", [])}
    for s in j.get("header_stacks", []):
        out[s["name"]] = s["header_type"]
    return out


def _pack(fields: list, values: dict[str, int]) -> bytes:
    bits, width = 0, 0
    for f in fields:
        w = int(f[1])
        bits = (bits << w) | (values.get(f[0], 0) & ((1 << w) - 1))
        width += w
    return bits.to_bytes(width // 8, "big") if width % 8 == 0 else b""


def generate_packets(j: dict, rng: random.Random) -> list[dict]:
    """Packets along the parser's paths: [{"port", "data" (hex), "kind"}], valid ones first."""
    types, inst = _header_types(j), _instance_type(j)
    parser = j["parsers"][0]
    states = {s["name"]: s for s in parser["parse_states"]}
    paths: list[list[tuple[str, dict[str, int]]]] = []

    def walk(state: str | None, headers: list[tuple[str, dict[str, int]]], depth: int,
             stack_next: dict[str, int]) -> None:
        if len(paths) >= MAX_PATHS:
            return
        if state is None or depth > 24 or state not in states:
            paths.append(headers)
            return
        s = states[state]
        headers = [(h, dict(v)) for h, v in headers]
        stack_next = dict(stack_next)
        for op in s.get("parser_ops", []):
            if op.get("op") not in ("extract", "extract_VL"):
                continue
            p = op["parameters"][0]
            name = p.get("value")
            if p.get("type") == "stack":
                index = stack_next.get(name, 0)
                stack_next[name] = index + 1
                name = f"{name}[{index}]"
                htype = inst.get(p["value"])
            else:
                htype = inst.get(name)
            if htype is None or any(f[1] == "*" for f in types.get(htype, [])):
                paths.append(headers)  # varbit or unknown: the path ends here
                return
            values = {f[0]: rng.getrandbits(int(f[1])) for f in types[htype]}
            headers.append((name, values))
        keys = s.get("transition_key", [])
        options = s.get("transitions", [])
        for t in options[:12]:
            forced = [(h, dict(v)) for h, v in headers]
            if t.get("type") == "hexstr" and t.get("value"):
                _force(forced, keys, t["value"], t.get("mask"), j, types, inst)
            walk(t.get("next_state"), forced, depth + 1, stack_next)
        if not options:
            paths.append(headers)

    walk(parser["init_state"], [], 0, {})
    packets: list[dict] = []
    seen: set[bytes] = set()
    for headers in paths:
        data = b"".join(_pack(types[inst[h.split("[")[0]]], v) for h, v in headers)
        data += bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 48)))
        if len(data) < 14:
            data += bytes(14 - len(data))
        if data in seen:
            continue
        seen.add(data)
        packets.append({"port": rng.choice(PORTS), "data": data.hex(), "kind": "path"})
    malformed = []
    for p in packets:
        data = bytes.fromhex(p["data"])
        cut = data[:rng.randint(1, max(1, len(data) - 1))]
        malformed.append({"port": rng.choice(PORTS), "data": cut.hex(), "kind": "truncated"})
        flipped = bytearray(data)
        i = rng.randrange(len(flipped))
        flipped[i] ^= 1 << rng.randrange(8)
        malformed.append({"port": rng.choice(PORTS), "data": bytes(flipped).hex(), "kind": "flipped"})
    for _ in range(8):
        garbage = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 120)))
        malformed.append({"port": rng.choice(PORTS), "data": garbage.hex(), "kind": "random"})
    return packets + malformed


def _force(headers: list, keys: list, value: str, mask: str | None, j: dict, types: dict, inst: dict) -> None:
    """Write a transition's select value into the header fields its key reads."""
    raw = bytes.fromhex(value[2:] if value.startswith("0x") else value)
    mraw = bytes.fromhex(mask[2:] if mask and mask.startswith("0x") else mask) if mask else None
    offset = 0
    by_name = {h: v for h, v in headers}
    for k in keys:
        if k.get("type") == "field":
            hname, fname = k["value"]
        elif k.get("type") == "stack_field":
            sname, fname = k["value"]
            last = [h for h in by_name if h.startswith(f"{sname}[")]
            hname = last[-1] if last else None
        else:
            hname, fname = None, None
        width = _key_width(k, types, inst)
        nbytes = (width + 7) // 8
        chunk = int.from_bytes(raw[offset:offset + nbytes], "big")
        mchunk = int.from_bytes(mraw[offset:offset + nbytes], "big") if mraw else (1 << width) - 1
        offset += nbytes
        if hname in by_name and fname in by_name[hname]:
            old = by_name[hname][fname]
            by_name[hname][fname] = (old & ~mchunk) | (chunk & mchunk)


def _key_width(k: dict, types: dict, inst: dict) -> int:
    if k.get("type") == "lookahead":
        return int(k["value"][1])
    if k.get("type") in ("field", "stack_field"):
        hname, fname = k["value"]
        for f in types.get(inst.get(hname, ""), []):
            if f[0] == fname:
                return int(f[1]) if f[1] != "*" else 0
    return 0


# --------------------------------------------------------------------------- entries
def generate_entries(prog: Program, packets: list[dict], count: int, rng: random.Random) -> list[dict]:
    """About `count` entries over the program's writable tables, by name:
    {"table", "match": [{"field", "kind", ...}], "action", "params": [(name, int)], "priority"}."""
    j = prog.bmv2_json
    types, inst = _header_types(j), _instance_type(j)
    json_tables = {t["name"]: t for p in j["pipelines"] for t in p["tables"]}
    pool = _field_values(packets, j, types, inst)
    tables = [t for t in prog.p4info.tables
              if not t.is_const_table and t.match_fields
              and t.preamble.name in json_tables]
    entries: list[dict] = []
    if not tables:
        return entries
    per_table = max(1, count // len(tables))
    for t in tables:
        jt = json_tables[t.preamble.name]
        actions = [prog_action for prog_action in
                   (next((a for a in prog.p4info.actions if a.preamble.id == ref.id), None)
                    for ref in t.action_refs if ref.scope != ref.DEFAULT_ONLY) if prog_action]
        if not actions:
            continue
        needs_priority = any(m.match_type in (m.TERNARY, m.RANGE, m.OPTIONAL) for m in t.match_fields)
        keys_seen: set = set()
        for n in range(per_table * 3):
            if len([e for e in entries if e["table"] == t.preamble.name]) >= per_table:
                break
            match = []
            for i, m in enumerate(t.match_fields):
                target = jt["key"][i].get("target") if i < len(jt["key"]) else None
                candidates = pool.get(tuple(target), []) if isinstance(target, list) else []
                if isinstance(target, list) and "port" in str(target[-1]):
                    candidates = list(PORTS)  # ports: the ones packets arrive on
                match.append(_match_value(m, candidates, rng))
            key = tuple(json.dumps(x, sort_keys=True) for x in match)
            if key in keys_seen:
                continue
            keys_seen.add(key)
            match = [x for x in match if x["kind"] != "wildcard"]
            a = rng.choice(actions)
            params = [(p.name, _param_value(p, rng)) for p in a.params]
            entries.append({"table": t.preamble.name, "match": match, "action": a.preamble.name,
                            "params": params, "priority": (n + 1) if needs_priority else 0})
    return entries


def _field_values(packets: list[dict], j: dict, types: dict, inst: dict) -> dict[tuple, list[int]]:
    """Values each header field takes in the valid packets (for keys that hit)."""
    pool: dict[tuple, list[int]] = {}
    # where a header sits in a packet depends on the path: each header's layout is read at a
    # few offsets of each packet (one of them is right for the headers the packet has)
    for p in packets:
        if p["kind"] != "path":
            continue
        data = bytes.fromhex(p["data"])
        for hname, htype in inst.items():
            fields = types.get(htype, [])
            width = sum(int(f[1]) for f in fields if f[1] != "*")
            if not width or width % 8:
                continue
            for start in (0, 14, 18, 34, 42, 54):
                if start + width // 8 > len(data):
                    break
                bits = int.from_bytes(data[start:start + width // 8], "big")
                shift = width
                for f in fields:
                    w = int(f[1])
                    shift -= w
                    pool.setdefault((hname, f[0]), []).append((bits >> shift) & ((1 << w) - 1))
    return pool


def _match_value(m: Any, candidates: list[int], rng: random.Random) -> dict:
    w = m.bitwidth
    full = (1 << w) - 1
    # header fields take values the packets carry; metadata (set by earlier actions from their
    # parameters) small values, as the parameters mostly take: so that tables chain up
    if candidates and rng.random() < 0.8:
        v = rng.choice(candidates) & full
    else:
        v = rng.choice([0, 1, 2, 3, 4, 1, 2, 3, 4, rng.getrandbits(w)]) & full
    mt = m.match_type
    if mt == m.EXACT:
        return {"field": m.name, "kind": "exact", "value": v}
    if mt == m.LPM:
        plen = rng.choice([w, w, rng.randint(1, w)])
        mask = full ^ ((1 << (w - plen)) - 1)
        return {"field": m.name, "kind": "lpm", "value": v & mask, "prefix_len": plen}
    if mt == m.TERNARY:
        if rng.random() < 0.35:
            return {"field": m.name, "kind": "wildcard"}  # a don't-care key is left out
        mask = rng.choice([full, full, full, full & ~0xF, rng.getrandbits(w)]) or full
        return {"field": m.name, "kind": "ternary", "value": v & mask, "mask": mask}
    if mt == m.RANGE:
        lo = max(0, v - rng.randint(0, 8))
        hi = min(full, v + rng.randint(0, 8))
        return {"field": m.name, "kind": "range", "low": lo, "high": hi}
    if mt == m.OPTIONAL:
        if rng.random() < 0.3:
            return {"field": m.name, "kind": "wildcard"}
        return {"field": m.name, "kind": "optional", "value": v}
    return {"field": m.name, "kind": "exact", "value": v}


def _param_value(p: Any, rng: random.Random) -> int:
    if "port" in p.name.lower() and p.bitwidth >= 4:
        return rng.choice(PORTS)
    if p.bitwidth >= 3 and rng.random() < 0.7:
        return rng.choice((1, 2, 3, 4))  # ids other tables are keyed on (next ids, VRFs, ...)
    return rng.getrandbits(p.bitwidth)


# --------------------------------------------------------------------------- P4Runtime
def _bytes(value: int, width: int) -> bytes:
    return value.to_bytes(max(1, (width + 7) // 8), "big")


class Runtime:
    """A P4Runtime client of one switch: primary, pipeline set, entries written one by one."""

    def __init__(self, address: str, device_id: int = 0) -> None:
        import grpc
        from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
        self.pb = p4runtime_pb2
        self.channel = grpc.insecure_channel(address)
        grpc.channel_ready_future(self.channel).result(timeout=START_TIMEOUT)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self._members = 0
        import queue
        self._queue: queue.Queue = queue.Queue()
        self._stream = self.stub.StreamChannel(iter(self._queue.get, None))
        arbitration = p4runtime_pb2.StreamMessageRequest()
        arbitration.arbitration.device_id = device_id
        arbitration.arbitration.election_id.low = 1
        self._queue.put(arbitration)
        import threading
        answer = threading.Thread(target=lambda: next(self._stream, None), daemon=True)
        answer.start()
        answer.join(START_TIMEOUT)
        if answer.is_alive():
            raise Unavailable(f"no arbitration answer from {address}")

    def close(self) -> None:
        self._queue.put(None)
        self.channel.close()

    def set_pipeline(self, prog: Program) -> None:
        pb = self.pb
        req = pb.SetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                    action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(prog.p4info)
        req.config.p4_device_config = json.dumps(prog.bmv2_json).encode()
        self.stub.SetForwardingPipelineConfig(req, timeout=RPC_TIMEOUT)

    def insert(self, prog: Program, entry: dict) -> str:
        """'' when written, else the gRPC error's code name."""
        import grpc
        pb = self.pb
        t = prog.table(entry["table"])
        a = prog.action(entry["action"])
        if t is None or a is None:
            return "NOT_IN_P4INFO"
        fields = {m.name: m for m in t.match_fields}
        te = pb.TableEntry(table_id=t.preamble.id, priority=entry["priority"])
        for m in entry["match"]:
            mf = fields.get(m["field"])
            if mf is None:
                return "NOT_IN_P4INFO"
            fm = te.match.add(field_id=mf.id)
            w = mf.bitwidth
            if m["kind"] == "exact":
                fm.exact.value = _bytes(m["value"], w)
            elif m["kind"] == "lpm":
                fm.lpm.value, fm.lpm.prefix_len = _bytes(m["value"], w), m["prefix_len"]
            elif m["kind"] == "ternary":
                fm.ternary.value, fm.ternary.mask = _bytes(m["value"], w), _bytes(m["mask"], w)
            elif m["kind"] == "range":
                fm.range.low, fm.range.high = _bytes(m["low"], w), _bytes(m["high"], w)
            elif m["kind"] == "optional":
                fm.optional.value = _bytes(m["value"], w)
        action = pb.Action(action_id=a.preamble.id)
        widths = {p.name: p for p in a.params}
        for name, value in entry["params"]:
            p = widths[name]
            action.params.add(param_id=p.id, value=_bytes(value, p.bitwidth))
        try:
            if t.implementation_id:  # an action profile's table: one member per entry
                self._members += 1
                member = pb.ActionProfileMember(action_profile_id=t.implementation_id,
                                                member_id=self._members, action=action)
                self._write(lambda u: u.entity.action_profile_member.CopyFrom(member))
                te.action.action_profile_member_id = self._members
            else:
                te.action.action.CopyFrom(action)
            self._write(lambda u: u.entity.table_entry.CopyFrom(te))
        except grpc.RpcError as e:
            return e.code().name
        return ""

    def _write(self, fill: Callable[[Any], None]) -> None:
        req = self.pb.WriteRequest(device_id=self.device_id)
        req.election_id.low = 1
        fill(req.updates.add(type=self.pb.Update.INSERT))
        self.stub.Write(req, timeout=RPC_TIMEOUT)

    def counters(self, prog: Program) -> dict[str, list[int]]:
        """Every indirect counter cell that is not zero: "name[index]" -> [packets, bytes]."""
        pb = self.pb
        out: dict[str, list[int]] = {}
        for c in prog.p4info.counters:
            req = pb.ReadRequest(device_id=self.device_id)
            req.entities.add().counter_entry.counter_id = c.preamble.id
            for resp in self.stub.Read(req, timeout=RPC_TIMEOUT):
                for ent in resp.entities:
                    ce = ent.counter_entry
                    if ce.data.packet_count or ce.data.byte_count:
                        out[f"{c.preamble.name}[{ce.index.index}]"] = [ce.data.packet_count, ce.data.byte_count]
        direct = {c.preamble.id for c in prog.p4info.direct_counters}
        for t in prog.p4info.tables:
            if not direct.intersection(t.direct_resource_ids):
                continue
            req = pb.ReadRequest(device_id=self.device_id)
            req.entities.add().direct_counter_entry.table_entry.table_id = t.preamble.id
            for resp in self.stub.Read(req, timeout=RPC_TIMEOUT):
                for ent in resp.entities:
                    dc = ent.direct_counter_entry
                    if dc.data.packet_count or dc.data.byte_count:
                        out[f"{t.preamble.name}{_match_text(dc.table_entry)}"] = \
                            [dc.data.packet_count, dc.data.byte_count]
        return out


def _match_text(te: Any) -> str:
    """An entry's match and priority, with values as numbers (switches differ in how many
    bytes they return a value in)."""
    parts = []
    for fm in sorted(te.match, key=lambda f: f.field_id):
        kind = fm.WhichOneof("field_match_type")
        m = getattr(fm, kind)
        values = [int.from_bytes(getattr(m, f.name), "big") if isinstance(getattr(m, f.name), bytes)
                  else getattr(m, f.name) for f in m.DESCRIPTOR.fields]
        parts.append(f"{fm.field_id}:{kind}:{values}")
    return "{" + ",".join(parts) + f";prio {te.priority}" + "}"


# --------------------------------------------------------------------------- switches
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RealBmv2:
    """simple_switch_grpc without a program; packets over nanomsg."""

    QUIET = 0.15

    def __init__(self, prefix: Path) -> None:
        from scripts.bmv2_stf import _Nanomsg
        binary = prefix / "bin" / "simple_switch_grpc"
        if not binary.exists():
            raise Unavailable(f"{binary} is not there")
        self._dir = tempfile.mkdtemp(prefix="diff-bmv2-")
        address = f"ipc://{self._dir}/packets.ipc"
        self.grpc_addr = f"127.0.0.1:{_free_port()}"
        env = dict(os.environ, LD_LIBRARY_PATH=str(prefix / "lib"))
        self._log = open(os.path.join(self._dir, "switch.log"), "w")
        self.proc = subprocess.Popen(
            [str(binary), "--log-console", "-L", "warn", "--no-p4", "--packet-in", address, "--thrift-port", str(_free_port()),
             "--device-id", "0", "--", "--grpc-server-addr", self.grpc_addr],
            env=env, stdout=self._log, stderr=subprocess.STDOUT)
        self.packets = _Nanomsg(address)

    def send(self, port: int, data: bytes) -> list[tuple[int, bytes]] | None:
        """The packet's outputs, sorted; None when the switch process ended meanwhile."""
        from scripts.bmv2_stf import packet_in_message, parse_packet_out
        self.packets.send(packet_in_message(port, data))
        out = []
        while True:
            message = self.packets.recv(self.QUIET)
            if message is None:
                return None if self.proc.poll() is not None else sorted(out)
            parsed = parse_packet_out(message)
            if parsed is not None:
                out.append(parsed)

    def close(self) -> None:
        self.packets.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


class EmbeddedSwitch:
    """The embedded switch in this process: its SwitchTarget and P4Runtime server."""

    def __init__(self) -> None:
        from p4target.switch.p4runtime import start_p4runtime_server
        from p4target.switch.target import SwitchTarget
        self._out: list[tuple[int, bytes]] = []
        self.target = SwitchTarget(transmit=lambda port, frame: self._out.append((port, bytes(frame))))
        self.server = start_p4runtime_server(self.target, "127.0.0.1:0")
        self.grpc_addr = f"127.0.0.1:{self.server.port}"

    def send(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        self._out.clear()
        self.target.receive(port, data)
        return sorted(self._out)

    def close(self) -> None:
        self.server.stop()
        self.target.stop()


# --------------------------------------------------------------------------- one arm
@dataclass
class ArmResult:
    name: str
    refused: list[str] = field(default_factory=list)     # per entry: '' or the error code
    outputs: list[list] = field(default_factory=list)    # per packet: [[port, hex], ...]
    counters: dict = field(default_factory=dict)
    seconds: float = 0.0


EXITED = "switch exited"  # the output of a packet during which the switch process ended


def run_arm(name: str, switch_factory: Callable[[], Any], prog: Program, entries: list[dict],
            packets: list[dict], restart_after: set[int] = frozenset()) -> ArmResult:
    """Entries, then packets, then counters on a fresh switch. simple_switch ends its process on
    a failed `assert` (the embedded switch drops the packet): the switch is then started again
    with the same entries, and so is every other arm's after the same packet (`restart_after`),
    so that all arms count from the same point."""
    started = time.monotonic()
    result = ArmResult(name)
    switch, rt = None, None

    def start() -> None:
        nonlocal switch, rt
        switch = switch_factory()
        rt = Runtime(switch.grpc_addr)
        rt.set_pipeline(prog)
        refused = [rt.insert(prog, e) for e in entries]
        if not result.refused:
            result.refused = refused

    def stop() -> None:
        if rt is not None:
            rt.close()
        if switch is not None:
            switch.close()

    try:
        start()
        for i, p in enumerate(packets):
            out = switch.send(p["port"], bytes.fromhex(p["data"]))
            if out is None:
                result.outputs.append([EXITED])
            else:
                result.outputs.append([[port, data.hex()] for port, data in out])
            if out is None or i in restart_after:
                stop()
                start()
        result.counters = rt.counters(prog)
    finally:
        stop()
    result.seconds = time.monotonic() - started
    return result


def restarts(result: ArmResult) -> set[int]:
    """The packets after which an arm's switch had to start again."""
    return {i for i, out in enumerate(result.outputs) if out == [EXITED]}


def compare(reference: ArmResult, other: ArmResult, packets: list[dict]) -> dict:
    """What differs between two arms: entries accepted, packets' outputs, counters."""
    entries = [i for i, (a, b) in enumerate(zip(reference.refused, other.refused)) if bool(a) != bool(b)]
    # simple_switch ends on a failed assert where the embedded switch drops the packet: a known
    # BMv2 behaviour, counted apart
    exited = [i for i, (a, b) in enumerate(zip(reference.outputs, other.outputs))
              if a != b and a == [EXITED] and b == []]
    differing = [i for i, (a, b) in enumerate(zip(reference.outputs, other.outputs))
                 if a != b and i not in exited]
    counters = sorted(k for k in set(reference.counters) | set(other.counters)
                      if reference.counters.get(k) != other.counters.get(k))
    return {"arm": other.name, "entries_differing": entries, "packets_differing": differing,
            "assert_exits_dropped": exited,
            "counters_differing": counters,
            "examples": [{"packet": i, "kind": packets[i]["kind"], "in": packets[i],
                          reference.name: reference.outputs[i], other.name: other.outputs[i]}
                         for i in differing[:5]]}


# --------------------------------------------------------------------------- main
def _load_program(json_path: Path, p4info_path: Path) -> Program:
    return Program(json.loads(json_path.read_text()), p4info_path.read_text())


def _compile_ours(source: Path) -> Program:
    """Our compiler's JSON and P4Info of a program in the p4c checkout."""
    from google.protobuf import text_format

    from p4target.compiler import compile_file
    from p4target.errors import CompileError
    if not source.exists():
        raise Unavailable(f"{source} is not there (pass the p4c checkout with --p4c-src)")
    try:
        result = compile_file(str(source), include_dirs=(str(source.parent),))
    except CompileError as e:
        raise Unavailable(f"our compiler refuses {source.name}: {e}") from None
    return Program(result.bmv2_json, text_format.MessageToString(result.p4info))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", help="one of tests/differential/fixtures (p4c's JSON and P4Info from "
                    "there; ours compiled from the source in the p4c checkout --p4c-src)")
    ap.add_argument("--p4c-src", type=Path, default=Path(os.environ.get("P4C_SRC", "/opt/p4ref/src/p4c")),
                    help="p4c checkout holding testdata/p4_16_samples (default $P4C_SRC or /opt/p4ref/src/p4c)")
    ap.add_argument("--p4c-json", type=Path, help="p4c's BMv2 JSON of the program")
    ap.add_argument("--p4c-p4info", type=Path, help="p4c's P4Info (text) of the program")
    ap.add_argument("--ours-json", type=Path, help="our compiler's JSON (arms b, c)")
    ap.add_argument("--ours-p4info", type=Path, help="our compiler's P4Info (text)")
    ap.add_argument("--entries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--arms", default="abcd", help="which arms to run (default abcd)")
    ap.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX, help="the reference BMv2 install")
    ap.add_argument("--record", type=Path, help="write the case and arm (a)'s results here")
    ap.add_argument("--replay", type=Path, help="run a recorded case on the embedded switch (arm d)")
    ap.add_argument("--report", type=Path, help="write the comparison here as JSON")
    args = ap.parse_args(argv)
    try:
        if args.replay:
            return _replay(args.replay)
        ours = None
        if args.program:
            manifest = json.loads((FIXTURES / "manifest.json").read_text())
            entry = manifest["programs"].get(args.program)
            if entry is None:
                raise Unavailable(f"no fixture named '{args.program}' (have: {', '.join(sorted(manifest['programs']))})")
            args.p4c_json, args.p4c_p4info = FIXTURES / entry["json"], FIXTURES / entry["p4info"]
            ours = _compile_ours(args.p4c_src / entry["source"])
        if not (args.p4c_json and args.p4c_p4info):
            raise Unavailable("--program, or --p4c-json and --p4c-p4info, are needed (or --replay)")
        p4c = _load_program(args.p4c_json, args.p4c_p4info)
        if args.ours_json and args.ours_p4info:
            ours = _load_program(args.ours_json, args.ours_p4info)
        rng = random.Random(args.seed)
        packets = generate_packets(p4c.bmv2_json, rng)
        entries = generate_entries(p4c, packets, args.entries, rng)
        arms = {"a": ("p4c-json@bmv2", lambda: RealBmv2(args.prefix), p4c),
                "b": ("ours-json@bmv2", lambda: RealBmv2(args.prefix), ours),
                "c": ("ours-json@embedded", EmbeddedSwitch, ours),
                "d": ("p4c-json@embedded", EmbeddedSwitch, p4c)}
        results: list[ArmResult] = []
        for key in args.arms:
            name, factory, prog = arms[key]
            if prog is None:
                print(f"differential: arm {key} ({name}) skipped: no --ours-json/--ours-p4info")
                continue
            after = restarts(results[0]) if results else set()
            results.append(run_arm(name, factory, prog, entries, packets, after))
        report = _report(results, entries, packets)
        if args.report:
            args.report.write_text(json.dumps(report, indent=1) + "\n")
        if args.record:
            ref = results[0]
            args.record.write_text(json.dumps({
                "json": args.p4c_json.name, "p4info": args.p4c_p4info.name, "reference": ref.name, "seed": args.seed, "entries": entries, "packets": packets,
                "refused": ref.refused, "outputs": ref.outputs, "counters": ref.counters}) + "\n")
        return 0 if all(not (c["entries_differing"] or c["packets_differing"] or c["counters_differing"])
                        for c in report["comparisons"]) else 1
    except Unavailable as e:
        print(f"differential: {e}", file=sys.stderr)
        return 2


def _report(results: list[ArmResult], entries: list[dict], packets: list[dict]) -> dict:
    kinds: dict[str, int] = {}
    for p in packets:
        kinds[p["kind"]] = kinds.get(p["kind"], 0) + 1
    ref = results[0]
    forwarded = sum(1 for o in ref.outputs if o and o != [EXITED])
    print(f"differential: {len(entries)} entries ({sum(1 for r in ref.refused if not r)} written on "
          f"{ref.name}), {len(packets)} packets {kinds}, {forwarded} forwarded on {ref.name}")
    comparisons = [compare(ref, r, packets) for r in results[1:]]
    for r in results:
        print(f"  {r.name}: {r.seconds:.1f} s")
    for c in comparisons:
        print(f"  {c['arm']} vs {ref.name}: {len(c['packets_differing'])} packets, "
              f"{len(c['entries_differing'])} entries, {len(c['counters_differing'])} counters differ"
              + (f" ({len(c['assert_exits_dropped'])} packets on which {ref.name} exited on a failed "
                 "assert were dropped)" if c["assert_exits_dropped"] else ""))
        for ex in c["examples"]:
            print(f"    packet {ex['packet']} ({ex['kind']}): {json.dumps(ex)[:400]}")
    return {"entries": len(entries), "packets": kinds, "reference": ref.name,
            "forwarded": forwarded, "comparisons": comparisons}


def replay(recording: dict, p4c: Program) -> tuple[ArmResult, dict]:
    """Arm (d) on a recorded case, and its comparison with the recorded reference."""
    ref = ArmResult(recording["reference"], recording["refused"], recording["outputs"], recording["counters"])
    got = run_arm("p4c-json@embedded", EmbeddedSwitch, p4c, recording["entries"], recording["packets"],
                  restarts(ref))
    return got, compare(ref, got, recording["packets"])


def _replay(path: Path) -> int:
    recording = json.loads(path.read_text())
    base = path.parent
    p4c = _load_program(base / recording["json"], base / recording["p4info"])
    got, diff = replay(recording, p4c)
    print(f"differential replay {path.name}: {len(recording['packets'])} packets, "
          f"{len(diff['packets_differing'])} differ; {len(diff['entries_differing'])} entries and "
          f"{len(diff['counters_differing'])} counters differ ({got.seconds:.1f} s)")
    return 0 if not (diff["packets_differing"] or diff["entries_differing"] or diff["counters_differing"]) else 1


if __name__ == "__main__":
    sys.exit(main())
