"""Counter, meter and register arrays are bounded (issue 25 point 4): a pipeline whose arrays
would take more than the switch's documented memory limit is refused with a one-line error
before anything is allocated, over every loading path: the switch's command line, Thrift
load_new_config and P4Runtime SetForwardingPipelineConfig. The running pipeline stays.
An expression nested deeper than the engine can compile gets an error naming the limit, not an
internal one (point 5)."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from bm_runtime.standard.ttypes import InvalidSwapOperation
from p4.v1 import p4runtime_pb2

from p4target.engine import Engine, ProgramLoadError
from p4target.engine.loader.schema.declarations import CELL_BYTES, STATE_BUDGET_BYTES
from p4target.engine.loader.schema.expressions import MAX_EXPRESSION_DEPTH
from p4target.engine.sample_programs import l3_router

ROOT = Path(__file__).resolve().parents[2]
Req = p4runtime_pb2.SetForwardingPipelineConfigRequest


def _huge_counter() -> dict:
    j = copy.deepcopy(l3_router())
    j["counter_arrays"][0]["size"] = 2 ** 40
    return j


def _huge_meter() -> dict:
    j = copy.deepcopy(l3_router())
    j["meter_arrays"].append({"name": "MyIngress.m", "id": 0, "is_direct": False,
                              "size": 10 ** 7, "rate_count": 2, "type": "packets"})
    return j


def _many_registers() -> dict:
    """Each array below the limit, together above it."""
    j = copy.deepcopy(l3_router())
    per = STATE_BUDGET_BYTES // CELL_BYTES["register_arrays"] // 3
    j["register_arrays"] = [{"name": f"MyIngress.r{i}", "id": i, "size": per, "bitwidth": 32}
                            for i in range(4)]
    return j


OVERSIZED = {"counter 2**40": _huge_counter, "meter 10**7": _huge_meter,
             "four registers": _many_registers}


@pytest.mark.parametrize("build", list(OVERSIZED.values()), ids=list(OVERSIZED))
def test_the_engine_refuses_arrays_beyond_the_limit(build):
    with pytest.raises(ProgramLoadError, match=r"\.size: \d+ cells .* 256 MiB limit"):
        Engine(build())


def test_arrays_within_the_limit_load():
    j = copy.deepcopy(l3_router())
    j["counter_arrays"][0]["size"] = 1 << 16
    assert Engine(j) is not None


def test_the_switch_command_line_gives_one_line(tmp_path):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(_huge_counter()))
    done = subprocess.run([sys.executable, "-m", "p4target", "switch", "--thrift-port", "0",
                           str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "counter_arrays[0].size" in lines[0], done.stderr


def test_thrift_load_new_config_refuses_them(thrift):
    target, std = thrift
    running = target.engine
    for build in OVERSIZED.values():
        with pytest.raises(InvalidSwapOperation):
            std.bm_load_new_config(json.dumps(build()))
    assert target.engine is running


@pytest.mark.parametrize("action", ["VERIFY", "VERIFY_AND_COMMIT"])
def test_p4runtime_refuses_them(p4runtime, action):
    target, client = p4runtime
    client.arbitrate(1)
    for build in OVERSIZED.values():
        code = client.set_pipeline(build(), getattr(Req, action), 1)
        assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert target.engine is None


def _nested(depth: int) -> dict:
    """l3_router whose first conditional compares a sum nested `depth` operations deep."""
    e: dict = {"type": "hexstr", "value": "0x1"}
    for _ in range(depth - 1):
        e = {"type": "expression", "value": {"op": "+", "left": e,
                                              "right": {"type": "hexstr", "value": "0x1"}}}
    j = copy.deepcopy(l3_router())
    j["pipelines"][0]["conditionals"][0]["expression"] = {"type": "expression", "value": {
        "op": "==", "left": e, "right": {"type": "hexstr", "value": "0x1"}}}
    return j


def test_an_expression_nested_too_deep_gets_an_error_naming_the_limit():
    with pytest.raises(ProgramLoadError) as e:
        Engine(_nested(250))
    assert str(e.value) == ("pipelines[0].conditionals[0].expression: expression nested more "
                            f"than {MAX_EXPRESSION_DEPTH} operations deep, this switch's limit "
                            "(p4target/README.md, Limits)")
    assert Engine(_nested(MAX_EXPRESSION_DEPTH)) is not None
