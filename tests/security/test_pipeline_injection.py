"""A pipeline is data, never code: crafted BMv2 JSON cannot run anything on the switch.

Each payload puts Python source where the engine once pasted JSON values into the code it
generates. Loading must fail with a typed error and the payload's marker file must not appear:
through the engine, P4Runtime SetForwardingPipelineConfig (VERIFY and VERIFY_AND_COMMIT give
INVALID_ARGUMENT; without primary arbitration PERMISSION_DENIED) and Thrift load_new_config.
"""
from __future__ import annotations

import copy
import json

import grpc
import pytest
from bm_runtime.standard.ttypes import InvalidSwapOperation, SwapOperationErrorCode
from p4.v1 import p4runtime_pb2

from p4target.engine import Engine, ProgramLoadError
from p4target.engine.sample_programs import l3_router

Req = p4runtime_pb2.SetForwardingPipelineConfigRequest


def _run(marker) -> str:
    return f"__import__('os').system('touch {marker}')"


def _action(j: dict, name: str) -> dict:
    return next(a for a in j["actions"] if a["name"] == name)


def _set_param(j, marker):  # an action parameter's "value"
    _action(j, "MyIngress.ipv4_forward")["primitives"][0]["parameters"][1]["value"] = _run(marker)


def _action_id(j, marker):  # a name of generated code built from an id
    _action(j, "NoAction")["id"] = f"0(P, D): pass\n{_run(marker)}\ndef _x"


def _conditional_id(j, marker):  # a name of generated code built from a conditional's id
    j["pipelines"][0]["conditionals"][0]["id"] = f"0_ingress(P): pass\n{_run(marker)}\ndef _y"


def _error_value(j, marker):  # an error's numeric value, pasted into the parser's code
    j["errors"][1][1] = f"1)\n{_run(marker)}\nif 0:\n    (1"


def _lookahead(j, marker):  # a lookahead's width, in a parser verify
    j["parsers"][0]["parse_states"][1]["parser_ops"].append({"op": "verify", "parameters": [
        {"type": "lookahead", "value": [0, f"8): pass\n{_run(marker)}\nif 0:\n    if (1"]},
        {"type": "hexstr", "value": "0x1"}]})


def _calc_bitwidth(j, marker):
    j["calculations"][0]["input"].append({"type": "hexstr", "value": "0x1", "bitwidth": f"8)]\n{_run(marker)}\n_z = [(0"})


def _log_format(j, marker):  # a string is data: quoted, never source (act_count runs per packet)
    _action(j, "act_count")["primitives"] = [{"op": "log_msg", "parameters": [
        {"type": "string", "value": f"')\n{_run(marker)}\n('"}, {"type": "parameters_vector", "value": []}]}]


def _next_state(j, marker):
    j["parsers"][0]["parse_states"][0]["transitions"][0]["next_state"] = f"'\n{_run(marker)}\n'"


def _field_width(j, marker):
    j["header_types"][0]["fields"][0][1] = f"8)\n{_run(marker)}\n_w = (0"


def _hexstr(j, marker):
    _action(j, "MyIngress.ipv4_forward")["primitives"][3]["parameters"][1] = {"type": "hexstr", "value": _run(marker)}


def _names_with_quotes(j, marker):  # names are data: quotes and newlines never reach source text
    j["pipelines"][0]["tables"][1]["name"] = f"t'\"\n{_run(marker)}"
    j["pipelines"][0]["conditionals"][0]["true_next"] = j["pipelines"][0]["tables"][1]["name"]


# values of the wrong type: refused at load
PAYLOADS = [_set_param, _action_id, _conditional_id, _error_value, _lookahead, _calc_bitwidth,
            _field_width, _hexstr]
# strings where strings belong: the program loads (or is refused for a dangling name), and the
# text stays data while packets run
STRINGS = [_log_format, _next_state, _names_with_quotes]


def crafted(mutate, marker) -> dict:
    j = copy.deepcopy(l3_router())
    mutate(j, marker)
    return j


@pytest.mark.parametrize("mutate", PAYLOADS, ids=lambda m: m.__name__.strip("_"))
def test_engine_refuses_code_in_json(mutate, tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(ProgramLoadError):
        Engine(crafted(mutate, marker))
    assert not marker.exists()


@pytest.mark.parametrize("mutate", STRINGS, ids=lambda m: m.__name__.strip("_"))
def test_strings_stay_data(mutate, tmp_path):
    marker = tmp_path / "pwned"
    try:
        eng = Engine(crafted(mutate, marker))
    except ProgramLoadError:
        assert not marker.exists()
        return
    frame = bytes(6) + bytes(6) + b"\x08\x00" + bytes([0x45]) + bytes(19)
    for port in (1, 2):
        eng.process(port, frame)
    assert not marker.exists()


def test_a_name_with_quotes_and_newlines_is_only_looked_up(tmp_path):
    j = crafted(_names_with_quotes, tmp_path / "pwned")
    assert j["pipelines"][0]["tables"][1]["name"] in Engine(j).table_names()


# -- P4Runtime (fixtures in conftest.py) ------------------------------------------------
@pytest.mark.parametrize("action", [Req.VERIFY, Req.VERIFY_AND_COMMIT], ids=["VERIFY", "VERIFY_AND_COMMIT"])
@pytest.mark.parametrize("mutate", PAYLOADS, ids=lambda m: m.__name__.strip("_"))
def test_p4runtime_refuses_code_in_json(p4runtime, mutate, action, tmp_path):
    target, client = p4runtime
    client.arbitrate(1)
    marker = tmp_path / "pwned"
    assert client.set_pipeline(crafted(mutate, marker), action, 1) == grpc.StatusCode.INVALID_ARGUMENT
    assert not marker.exists()
    assert target.engine is None


@pytest.mark.parametrize("action", [Req.VERIFY, Req.VERIFY_AND_COMMIT], ids=["VERIFY", "VERIFY_AND_COMMIT"])
def test_pipeline_changes_need_the_primary(p4runtime, action, tmp_path):
    target, client = p4runtime
    marker = tmp_path / "pwned"
    bad = crafted(_set_param, marker)
    # no client is primary: no election id, or any election id, is refused before the JSON is read
    assert client.set_pipeline(bad, action, None) == grpc.StatusCode.PERMISSION_DENIED
    assert client.set_pipeline(bad, action, 1) == grpc.StatusCode.PERMISSION_DENIED
    client.arbitrate(5)
    assert client.set_pipeline(l3_router(), action, 4) == grpc.StatusCode.PERMISSION_DENIED
    assert client.set_pipeline(l3_router(), action, None) == grpc.StatusCode.PERMISSION_DENIED
    assert not marker.exists() and target.engine is None
    assert client.set_pipeline(l3_router(), action, 5) == grpc.StatusCode.OK


BROKEN = {  # shapes real BMv2 refuses or cannot run; before, some passed VERIFY, some got INTERNAL
    "no deparser": lambda j: j.update(deparsers=[]),
    "action not an object": lambda j: j["actions"].append(5),
    "field not a list": lambda j: j["header_types"][2]["fields"].append("ttl"),
    "dangling next state": lambda j: j["parsers"][0]["parse_states"][0]["transitions"][0].update(next_state="x"),
    "parse states not a list": lambda j: j["parsers"][0].update(parse_states="start"),
    "expression without type": lambda j: j["pipelines"][0]["conditionals"][0].update(expression={"op": "d2b"}),
}


@pytest.mark.parametrize("mutate", list(BROKEN.values()), ids=list(BROKEN))
def test_p4runtime_verify_refuses_broken_pipelines_with_invalid_argument(p4runtime, mutate):
    target, client = p4runtime
    client.arbitrate(1)
    j = copy.deepcopy(l3_router())
    mutate(j)
    assert client.set_pipeline(j, Req.VERIFY, 1) == grpc.StatusCode.INVALID_ARGUMENT


def test_p4runtime_verify_refuses_a_deeply_nested_config(p4runtime):
    target, client = p4runtime
    client.arbitrate(1)
    req = Req(device_id=0, action=Req.VERIFY)
    req.election_id.low = 1
    req.config.p4_device_config = b"[" * 100000 + b"]" * 100000
    req.config.p4info.SetInParent()
    with pytest.raises(grpc.RpcError) as e:
        client.stub.SetForwardingPipelineConfig(req, timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# -- Thrift (fixtures in conftest.py) ---------------------------------------------------
@pytest.mark.parametrize("mutate", PAYLOADS, ids=lambda m: m.__name__.strip("_"))
def test_thrift_load_new_config_refuses_code_in_json(thrift, mutate, tmp_path):
    target, std = thrift
    running = target.engine
    marker = tmp_path / "pwned"
    with pytest.raises(InvalidSwapOperation):
        std.bm_load_new_config(json.dumps(crafted(mutate, marker)))
    assert not marker.exists()
    assert target.engine is running


def test_thrift_a_second_config_before_the_swap_is_refused(thrift):
    target, std = thrift
    std.bm_load_new_config(json.dumps(l3_router()))
    with pytest.raises(InvalidSwapOperation) as e:
        std.bm_load_new_config(json.dumps(l3_router()))
    assert e.value.code == SwapOperationErrorCode.ONGOING_SWAP
    std.bm_swap_configs()
    std.bm_load_new_config(json.dumps(l3_router()))  # after the swap, the next one is welcome
