"""Fixtures for the P4Runtime server tests: a hand-built BMv2 JSON program exercising every
entity kind, a P4Info generated from BMv2 JSON (names = BMv2 names, p4c-style ids), a live
switch target with its gRPC server on 127.0.0.1:0, and a small real gRPC client."""
from __future__ import annotations

import json
import queue
import threading

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4target.engine.sample_programs import ERRORS, FIELD_ALIASES, STANDARD_METADATA, F, expr_param, hexv, op
from p4target.switch.p4runtime import start_p4runtime_server
from p4target.switch.target import SwitchTarget

SM = "standard_metadata"
CPU_PORT = 64
_P4INFO_OPTIONAL = {("MyIngress.t_tern", "hdr.h.d")}   # (table, key) the P4Info calls OPTIONAL
ME = p4info_pb2.MatchField


def _rd(i):
    return {"type": "runtime_data", "value": i}


def _assign(dst, src):
    return {"op": "assign", "parameters": [dst, src]}


def _hdr(name):
    return {"type": "header", "value": name}


def test_program() -> dict:
    """h = {a:8, b:8, c:16, d:32}; on the CPU port a packet_out header {egress_port:9, _pad:7}
    comes first and sends the packet out of that port. Otherwise ingress applies
    MyIngress.t_tern (ternary b, range c, optional d -> setb), then MyIngress.t_exact (exact a ->
    fwd / drop / to_cpu / mc / learn / clone5 / stats; direct counter, direct meter),
    then, when a == 0xEE, MyIngress.t_sel (exact c, action selector hashing d)."""
    actions = [
        ("NoAction", [], []),
        ("MyIngress.from_cpu", [], [_assign(F(SM, "egress_spec"), F("packet_out", "egress_port")),
                                    {"op": "remove_header", "parameters": [_hdr("packet_out")]}]),
        ("MyIngress.setb", [("v", 8)], [_assign(F("h", "b"), _rd(0))]),
        ("MyIngress.fwd", [("port", 9)], [_assign(F(SM, "egress_spec"), _rd(0))]),
        ("MyIngress.drop", [], [{"op": "mark_to_drop", "parameters": [_hdr(SM)]}]),
        ("MyIngress.to_cpu", [], [_assign(F(SM, "egress_spec"), hexv(CPU_PORT)),
                                  {"op": "add_header", "parameters": [_hdr("packet_in")]},
                                  _assign(F("packet_in", "ingress_port"), F(SM, "ingress_port"))]),
        ("MyIngress.mc", [("grp", 16)], [_assign(F(SM, "mcast_grp"), _rd(0))]),
        ("MyIngress.learn", [], [{"op": "generate_digest", "parameters": [hexv(1), hexv(1)]},
                                 _assign(F(SM, "egress_spec"), hexv(1))]),
        ("MyIngress.clone5", [], [_assign(F(SM, "egress_spec"), hexv(1)),
                                  {"op": "clone_ingress_pkt_to_egress", "parameters": [hexv(5), hexv(1)]}]),
        ("MyIngress.stats", [("port", 9)], [
            _assign(F(SM, "egress_spec"), _rd(0)),
            {"op": "count", "parameters": [{"type": "counter_array", "value": "MyIngress.cnt"}, hexv(1)]},
            {"op": "register_read", "parameters": [F("scalars", "r32"), {"type": "register_array", "value": "MyIngress.reg"}, hexv(2)]},
            {"op": "register_write", "parameters": [{"type": "register_array", "value": "MyIngress.reg"}, hexv(2),
                                                    expr_param(op("&", op("+", F("scalars", "r32"), hexv(1)),
                                                                  hexv(0xFFFFFFFF)))]},
            {"op": "execute_meter", "parameters": [{"type": "meter_array", "value": "MyIngress.mtr"}, hexv(0), F("h", "b")]}]),
    ]
    aid = {name: i for i, (name, _, _) in enumerate(actions)}

    def table(name, tid, keys, acts, default, nxt, **extra):
        t = {"name": name, "id": tid, "type": "simple", "max_size": 1024, "with_counters": False,
             "support_timeout": False, "direct_meters": None,
             "match_type": next((k for k in ("range", "ternary", "lpm") if k in {mt for _, _, mt in keys}), "exact"),
             # BMv2 knows no "optional" match type: the JSON says "ternary" (as p4c writes it) and
             # only the P4Info says OPTIONAL (_P4INFO_OPTIONAL)
             "key": [{"match_type": "ternary" if mt == "optional" else mt, "name": f"hdr.{h}.{f}",
                      "target": [h, f], "mask": None} for h, f, mt in keys],
             "action_ids": [aid[a] for a in acts], "actions": list(acts), "base_default_next": nxt,
             "next_tables": {a: nxt for a in acts},
             "default_entry": {"action_id": aid[default], "action_const": False, "action_data": [],
                               "action_entry_const": False}}
        t.update(extra)
        return t

    tables = [
        table("tbl_from_cpu", 0, [], ["MyIngress.from_cpu"], "MyIngress.from_cpu", None,
              default_entry={"action_id": aid["MyIngress.from_cpu"], "action_const": True, "action_data": [],
                             "action_entry_const": True}),
        table("MyIngress.t_tern", 1, [("h", "b", "ternary"), ("h", "c", "range"), ("h", "d", "optional")],
              ["MyIngress.setb", "NoAction"], "NoAction", "MyIngress.t_exact"),
        table("MyIngress.t_exact", 2, [("h", "a", "exact")],
              ["MyIngress.fwd", "MyIngress.drop", "MyIngress.to_cpu", "MyIngress.mc", "MyIngress.learn",
               "MyIngress.clone5", "MyIngress.stats", "NoAction"], "NoAction", "node_sel",
              with_counters=True, direct_meters="MyIngress.t_exact_mtr"),
        table("MyIngress.t_sel", 3, [("h", "c", "exact")], ["MyIngress.fwd", "MyIngress.drop"],
              "MyIngress.drop", None, type="indirect_ws", action_profile="MyIngress.sel"),
    ]
    del tables[3]["default_entry"]
    return {
        "header_types": [
            {"name": "scalars_0", "id": 0, "fields": [["r32", 32, False], ["color", 8, False]]},
            {"name": SM, "id": 1, "fields": STANDARD_METADATA},
            {"name": "h_t", "id": 2, "fields": [["a", 8, False], ["b", 8, False], ["c", 16, False], ["d", 32, False]]},
            {"name": "packet_out_t", "id": 3, "fields": [["egress_port", 9, False], ["_pad", 7, False]]},
            {"name": "packet_in_t", "id": 4, "fields": [["ingress_port", 9, False], ["_pad", 7, False]]},
        ],
        "headers": [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
            {"name": SM, "id": 1, "header_type": SM, "metadata": True},
            {"name": "packet_out", "id": 2, "header_type": "packet_out_t", "metadata": False},
            {"name": "packet_in", "id": 3, "header_type": "packet_in_t", "metadata": False},
            {"name": "h", "id": 4, "header_type": "h_t", "metadata": False},
        ],
        "errors": ERRORS, "field_aliases": FIELD_ALIASES,
        "field_lists": [{"id": 1, "name": "fl", "elements": []}],  # p4c's empty list of a clone
        "learn_lists": [{"id": 1, "name": "learn_t", "elements": [F("h", "a"), F("h", "c")]}],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0, "parser_ops": [],
             "transition_key": [F(SM, "ingress_port")],
             "transitions": [{"type": "hexstr", "value": f"0x{CPU_PORT:04x}", "mask": None, "next_state": "parse_cpu"},
                             {"type": "default", "value": None, "mask": None, "next_state": "parse_h"}]},
            {"name": "parse_cpu", "id": 1,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "packet_out"}]}],
             "transition_key": [], "transitions": [{"type": "default", "value": None, "mask": None, "next_state": "parse_h"}]},
            {"name": "parse_h", "id": 2,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "h"}]}],
             "transition_key": [], "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}]},
        ]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["packet_in", "h"]}],
        "counter_arrays": [{"name": "MyIngress.cnt", "id": 0, "is_direct": False, "size": 8},
                           {"name": "MyIngress.t_exact_ctr", "id": 1, "is_direct": True, "binding": "MyIngress.t_exact"}],
        "meter_arrays": [{"name": "MyIngress.mtr", "id": 0, "is_direct": False, "size": 4, "rate_count": 2, "type": "packets"},
                         {"name": "MyIngress.t_exact_mtr", "id": 1, "is_direct": True, "binding": "MyIngress.t_exact",
                          "size": 1024, "rate_count": 2, "type": "packets", "result_target": ["scalars", "color"]}],
        "register_arrays": [{"name": "MyIngress.reg", "id": 0, "size": 4, "bitwidth": 32}],
        "calculations": [],
        "actions": [{"name": n, "id": i, "runtime_data": [{"name": p, "bitwidth": w} for p, w in params],
                     "primitives": prims} for i, (n, params, prims) in enumerate(actions)],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "node_cpu", "tables": tables,
             "action_profiles": [{"name": "MyIngress.sel", "id": 0, "max_size": 64,
                                  "selector": {"algo": "crc16", "input": [F("h", "d")]}}],
             "conditionals": [
                 {"name": "node_cpu", "id": 0, "expression": op("d2b", None, op("valid", None, _hdr("packet_out"))),
                  "true_next": "tbl_from_cpu", "false_next": "MyIngress.t_tern"},
                 {"name": "node_sel", "id": 1, "expression": op("==", F("h", "a"), hexv(0xEE)),
                  "true_next": "MyIngress.t_sel", "false_next": None}]},
            {"name": "egress", "id": 1, "init_table": None, "tables": [], "action_profiles": [], "conditionals": []},
        ],
        "checksums": [],
    }


def p4info_for(bmv2: dict, controller_headers: dict[str, str] | None = None,
               hidden_tables: tuple[str, ...] = ("tbl_",)) -> p4info_pb2.P4Info:
    """A P4Info for a BMv2 JSON program as p4c would emit it: same names, ids = prefix << 24 | n.
    `controller_headers` maps 'packet_in'/'packet_out' to BMv2 header instance names."""
    P = p4info_pb2.P4Ids
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    types = {t["name"]: {f[0]: f[1] for f in t["fields"]} for t in bmv2["header_types"]}
    hdr_type = {h["name"]: h["header_type"] for h in bmv2["headers"]}

    def width(target):
        return 1 if target[1] == "$valid$" else types[hdr_type[target[0]]][target[1]]

    def new_id(prefix, n):
        return (prefix << 24) | n

    action_ids = {}
    for n, a in enumerate(bmv2["actions"], 1):
        pa = info.actions.add()
        pa.preamble.id, pa.preamble.name = new_id(P.ACTION, n), a["name"]
        action_ids[a["name"]] = pa.preamble.id
        for pid, rd in enumerate(a.get("runtime_data", []), 1):
            pa.params.add(id=pid, name=rd["name"], bitwidth=rd["bitwidth"])
    kinds = {"exact": ME.EXACT, "lpm": ME.LPM, "ternary": ME.TERNARY, "range": ME.RANGE,
             "optional": ME.OPTIONAL, "valid": ME.EXACT}
    table_ids, profile_tables = {}, {}
    tables = [t for p in bmv2["pipelines"] for t in p["tables"]
              if not any(t["name"].startswith(h) for h in hidden_tables)]
    for n, t in enumerate(tables, 1):
        pt = info.tables.add()
        pt.preamble.id, pt.preamble.name = new_id(P.TABLE, n), t["name"]
        table_ids[t["name"]] = pt.preamble.id
        for fid, k in enumerate(t["key"], 1):
            kind = "optional" if (t["name"], k["name"]) in _P4INFO_OPTIONAL else k["match_type"]
            pt.match_fields.add(id=fid, name=k["name"], bitwidth=width(k["target"]), match_type=kinds[kind])
        for a in t["actions"]:
            pt.action_refs.add(id=action_ids[a])
        de = t.get("default_entry")
        if de and de.get("action_const"):
            pt.const_default_action_id = action_ids[bmv2["actions"][de["action_id"]]["name"]]
        pt.size = t.get("max_size", 0)
        if t.get("action_profile"):
            profile_tables.setdefault(t["action_profile"], []).append(t["name"])
        pt.is_const_table = bool(t.get("entries"))
    profile_ids = {}
    profiles = [p for pipe in bmv2["pipelines"] for p in pipe.get("action_profiles", [])]
    for n, p in enumerate(profiles, 1):
        pp = info.action_profiles.add()
        pp.preamble.id, pp.preamble.name = new_id(P.ACTION_PROFILE, n), p["name"]
        profile_ids[p["name"]] = pp.preamble.id
        pp.with_selector = "selector" in p
        pp.size = p.get("max_size", 0)
        pp.table_ids.extend(table_ids[t] for t in profile_tables.get(p["name"], []))
    for pt in info.tables:
        for tname, tid in table_ids.items():
            if tid == pt.preamble.id:
                for prof, tnames in profile_tables.items():
                    if tname in tnames:
                        pt.implementation_id = profile_ids[prof]
    for n, c in enumerate(bmv2.get("counter_arrays", []), 1):
        if c.get("is_direct"):
            dc = info.direct_counters.add()
            dc.preamble.id, dc.preamble.name = new_id(P.DIRECT_COUNTER, n), c["name"]
            dc.spec.unit, dc.direct_table_id = p4info_pb2.CounterSpec.BOTH, table_ids[c["binding"]]
            _table(info, dc.direct_table_id).direct_resource_ids.append(dc.preamble.id)
        else:
            pc = info.counters.add()
            pc.preamble.id, pc.preamble.name = new_id(P.COUNTER, n), c["name"]
            pc.spec.unit, pc.size = p4info_pb2.CounterSpec.BOTH, c["size"]
    for n, m in enumerate(bmv2.get("meter_arrays", []), 1):
        unit = p4info_pb2.MeterSpec.PACKETS if m.get("type") == "packets" else p4info_pb2.MeterSpec.BYTES
        if m.get("is_direct"):
            dm = info.direct_meters.add()
            dm.preamble.id, dm.preamble.name = new_id(P.DIRECT_METER, n), m["name"]
            dm.spec.unit, dm.direct_table_id = unit, table_ids[m["binding"]]
            _table(info, dm.direct_table_id).direct_resource_ids.append(dm.preamble.id)
        else:
            pm = info.meters.add()
            pm.preamble.id, pm.preamble.name = new_id(P.METER, n), m["name"]
            pm.spec.unit, pm.size = unit, m["size"]
    for n, r in enumerate(bmv2.get("register_arrays", []), 1):
        pr = info.registers.add()
        pr.preamble.id, pr.preamble.name = new_id(P.REGISTER, n), r["name"]
        pr.size = r["size"]
        pr.type_spec.bitstring.bit.bitwidth = r["bitwidth"]
    for n, ll in enumerate(bmv2.get("learn_lists", []), 1):
        pd = info.digests.add()
        pd.preamble.id, pd.preamble.name = new_id(P.DIGEST, n), ll["name"]
        pd.type_spec.struct.name = ll["name"]
    for n, (role, header) in enumerate(sorted((controller_headers or {}).items()), 1):
        cpm = info.controller_packet_metadata.add()
        cpm.preamble.id, cpm.preamble.name = new_id(P.CONTROLLER_HEADER, n), role
        for mid, (fname, fwidth) in enumerate(types[hdr_type[header]].items(), 1):
            cpm.metadata.add(id=mid, name=fname, bitwidth=fwidth)
    return info


def _table(info, table_id):
    return next(t for t in info.tables if t.preamble.id == table_id)


class Sink:
    """Frames the switch transmits: (port, bytes)."""

    def __init__(self) -> None:
        self.q: queue.Queue = queue.Queue()

    def __call__(self, port: int, data: bytes) -> None:
        self.q.put((port, data))

    def get(self, timeout: float = 3.0):
        return self.q.get(timeout=timeout)

    def drain(self, wait: float = 0.3, first: float | None = None) -> list:
        """Frames until `wait` seconds pass without one (the first may take `first` seconds)."""
        out = []
        timeout = wait if first is None else first
        try:
            while True:
                out.append(self.q.get(timeout=timeout))
                timeout = wait
        except queue.Empty:
            return out


class Client:
    """A P4Runtime client on a real gRPC channel with one StreamChannel."""

    def __init__(self, addr: str, device_id: int = 0) -> None:
        self.device_id = device_id
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out: queue.Queue = queue.Queue()
        self.inbox: dict[str, queue.Queue] = {k: queue.Queue() for k in ("arbitration", "packet", "digest", "error", "end")}
        self.election_id = (0, 1)
        self.role = ""
        self._stream = self.stub.StreamChannel(iter(self._out.get, None))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for msg in self._stream:
                self.inbox[msg.WhichOneof("update")].put(msg)
        except grpc.RpcError as exc:
            self.inbox["end"].put(exc)
            return
        self.inbox["end"].put(None)

    def get(self, kind: str, timeout: float = 3.0):
        return self.inbox[kind].get(timeout=timeout)

    def none(self, kind: str, wait: float = 0.3) -> bool:
        try:
            self.inbox[kind].get(timeout=wait)
        except queue.Empty:
            return True
        return False

    def send(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._out.put(msg)

    def arbitrate(self, election_id=(0, 1), role: str = "", device_id: int | None = None):
        self.election_id, self.role = election_id, role
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id if device_id is None else device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = election_id
        if role:
            req.arbitration.role.name = role
        self.send(req)
        return self.get("arbitration").arbitration

    def _stamp(self, req) -> None:
        req.device_id = self.device_id
        req.election_id.high, req.election_id.low = self.election_id
        req.role = self.role

    def set_pipeline(self, bmv2: dict, p4info, action=None, cookie: int | None = None):
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest()
        self._stamp(req)
        req.action = action or req.VERIFY_AND_COMMIT
        if bmv2 is not None:
            req.config.p4_device_config = json.dumps(bmv2).encode()
        if p4info is not None:
            req.config.p4info.CopyFrom(p4info)
        if cookie is not None:
            req.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(req)

    def write(self, *updates, atomicity=0):
        req = p4runtime_pb2.WriteRequest(atomicity=atomicity)
        self._stamp(req)
        req.updates.extend(updates)
        return self.stub.Write(req)

    def read(self, *entities) -> list:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        return [e for resp in self.stub.Read(req) for e in resp.entities]

    def close(self) -> None:
        self._out.put(None)
        self._stream.cancel()
        self.channel.close()
        self._reader.join(timeout=3)


class Switch:
    """A SwitchTarget (CPU port 64) with its P4Runtime server; `client()` opens clients."""

    def __init__(self) -> None:
        self.sink = Sink()
        self.target = SwitchTarget(device_id=0, cpu_port=CPU_PORT, transmit=self.sink)
        self.server = start_p4runtime_server(self.target, "127.0.0.1:0")
        self.addr = f"127.0.0.1:{self.server.port}"
        self.clients: list[Client] = []

    def client(self, election_id=(0, 1), role: str = "") -> Client:
        c = Client(self.addr)
        self.clients.append(c)
        if election_id is not None:
            c.arbitrate(election_id, role)
        return c

    def close(self) -> None:
        for c in self.clients:
            c.close()
        self.server.stop()
        self.target.stop()


@pytest.fixture
def program():
    bmv2 = test_program()
    return bmv2, p4info_for(bmv2, {"packet_in": "packet_in", "packet_out": "packet_out"})


@pytest.fixture
def switch():
    sw = Switch()
    yield sw
    sw.close()


@pytest.fixture
def loaded(switch, program):
    """A switch with the test program pushed by a primary client: (switch, client, p4info)."""
    c = switch.client()
    c.set_pipeline(program[0], program[1])
    return switch, c, program[1]


@pytest.fixture
def p4info_builder():
    return p4info_for


class Ids:
    """Name -> id look-ups and entity builders over one P4Info."""

    def __init__(self, p4info) -> None:
        self.p4info = p4info

    def _find(self, items, name):
        for x in items:
            if x.preamble.name == name:
                return x
        raise KeyError(name)

    def table(self, name):
        return self._find(self.p4info.tables, name).preamble.id

    def action(self, name):
        return self._find(self.p4info.actions, name).preamble.id

    def of(self, kind, name):
        return self._find(getattr(self.p4info, kind), name).preamble.id

    def field(self, table, fname):
        t = self._find(self.p4info.tables, table)
        return next(f.id for f in t.match_fields if f.name == fname)

    def act(self, name, *values):
        a = p4runtime_pb2.Action(action_id=self.action(name))
        for pid, v in enumerate(values, 1):
            a.params.add(param_id=pid, value=v if isinstance(v, bytes) else _b(v))
        return a

    def entry(self, table, match=(), action=None, params=(), priority=0, **kw):
        """match: [(field name, kind, value...)] with kind exact/lpm/ternary/range/optional."""
        te = p4runtime_pb2.TableEntry(table_id=self.table(table), priority=priority, **kw)
        for fname, kind, *vals in match:
            fm = te.match.add(field_id=self.field(table, fname))
            vals = [v if isinstance(v, bytes) else _b(v) if kind != "lpm" or i == 0 else v for i, v in enumerate(vals)]
            if kind == "exact":
                fm.exact.value = vals[0]
            elif kind == "lpm":
                fm.lpm.value, fm.lpm.prefix_len = vals
            elif kind == "ternary":
                fm.ternary.value, fm.ternary.mask = vals
            elif kind == "range":
                fm.range.low, fm.range.high = vals
            else:
                fm.optional.value = vals[0]
        if action is not None:
            te.action.action.CopyFrom(self.act(action, *params))
        return te


def _b(v: int) -> bytes:
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


def update(kind: str, entity_field: str, msg):
    """An Update of type INSERT/MODIFY/DELETE for one entity message."""
    u = p4runtime_pb2.Update(type=getattr(p4runtime_pb2.Update, kind))
    getattr(u.entity, entity_field).CopyFrom(msg)
    return u


def write_errors(exc: grpc.RpcError) -> list:
    """(canonical code, message) per update from a Write's UNKNOWN status details."""
    from google.rpc import status_pb2
    assert exc.code() == grpc.StatusCode.UNKNOWN
    raw = dict(exc.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(raw)
    out = []
    for d in status.details:
        err = p4runtime_pb2.Error()
        assert d.Unpack(err)
        out.append((err.canonical_code, err.message))
    return out


@pytest.fixture
def ids(program):
    return Ids(program[1])


@pytest.fixture
def helpers():
    """Module-level helpers for tests: update(), write_errors(), encoding of ints."""
    return type("H", (), {"update": staticmethod(update), "write_errors": staticmethod(write_errors),
                          "b": staticmethod(_b), "Ids": Ids, "p4info_for": staticmethod(p4info_for)})
