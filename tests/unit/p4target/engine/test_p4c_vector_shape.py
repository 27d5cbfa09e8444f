"""A parameter vector as p4c writes an empty one (`log_msg` with no arguments:
`{"type": "parameters_vector", "value": {}}`): BMv2 (jsoncpp) iterates an array or an object
alike, and a null, string or number as no items; the loader reads each as BMv2 does."""
from __future__ import annotations

import pytest

from p4target.compiler import compile_text
from p4target.engine import Engine

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; log_msg("plain message"); log_msg("a={}", {hdr.h.a}); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _vectors(program: dict) -> list[dict]:
    return [p["parameters"][1] for a in program["actions"] for p in a["primitives"] if p["op"] == "log_msg"]


def _logs(program: dict) -> list[str]:
    engine = Engine(program)
    logs: list[str] = []
    engine.set_log_callback(logs.append)
    assert [port for port, _ in engine.process(0, b"\x07")] == [1]
    return logs


def test_a_vector_as_an_object_loads_and_runs_like_an_array() -> None:
    program = compile_text(PROGRAM, "vector.p4").bmv2_json
    plain, with_arg = _vectors(program)
    assert plain["value"] == [] and len(with_arg["value"]) == 1
    expected = _logs(program)
    plain["value"] = {}
    with_arg["value"] = {"0": with_arg["value"][0]}
    assert _logs(program) == expected
    assert expected == ["plain message", "a=7"]


@pytest.mark.parametrize("value", ["x", 3, None])
def test_a_vector_of_another_kind_is_empty_as_in_bmv2(value: object) -> None:
    program = compile_text(PROGRAM, "vector.p4").bmv2_json
    _vectors(program)[0]["value"] = value
    assert _logs(program)[0] == "plain message"
