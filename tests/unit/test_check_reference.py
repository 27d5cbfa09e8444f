"""`make check-reference` (scripts/check_reference.py): our STF dialect translated for p4c's
runner, the simple_switch_CLI adapter, and a clear refusal when the reference tools are absent.
The run on real BMv2 itself is not in CI (it needs a local BMv2 build)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


check = _load("check_reference")
adapter = _load("check_reference_cli")


def test_our_stf_keys_become_forms_p4cs_runner_reads() -> None:
    stf = ("add T 10 h.a:0x0001&&&0xffff h.c:0x0a&&&0x3f h.d:0x0a000202/24 h.g:0x0a000202/22 "
           "h.r:2..9 h.s:2->9 A(x:1)\n")
    assert check.runner_stf(stf) == (
        "add T 10 h.a:0x0001 h.c:0b**001010 h.d:0x0a0002** "
        "h.g:0b0000101000000000000000********** "
        f"h.r:{hex(2 << check.RANGE_SHIFT | 9)} h.s:{hex(2 << check.RANGE_SHIFT | 9)} A(x:1)\n")


def test_register_write_values_become_decimal_for_simple_switch_cli() -> None:
    assert check.runner_stf("register_write cells 5 0x100\nregister_write r 1 0b11\nregister_write r 2 7\n") == \
        "register_write cells 5 256\nregister_write r 1 3\nregister_write r 2 7\n"


def test_expectations_p4cs_runner_does_not_check_are_left_out() -> None:
    stf = ("register_read R 5 8\nregister_read S 1\ncheck_counter C.c(2) packets == 2\n"
           "packet 0 00\nexpect 0 00\n")
    assert check.runner_stf(stf) == "register_read R 5\nregister_read S 1\n\npacket 0 00\nexpect 0 00\n"


def test_runner_limits_are_named() -> None:
    assert check.runner_limit("add T k:1 A()\npacket 0 00\n", "") == ""
    assert "between packets" in check.runner_limit("packet 0 00\nregister_write r 1 2\npacket 0 00\n", "")
    assert "range" in check.runner_limit("", 'Exception("Unexpected key type range")')


def test_cli_adapter_gives_profile_tables_members_and_writes_ranges() -> None:
    info = {"params": {"set_nhop": 2, "cls": 1},
            "tables": {"lpm": {"profile": "sel", "keys": ["lpm"]},
                       "classify": {"profile": None, "keys": ["ternary", "range"]}}}
    members: dict[str, int] = {}
    out = []
    for line in ("table_add lpm set_nhop 0x0a000202/32 => 0x0102 0x02",
                 "table_add lpm set_nhop 0x0a000303/32 => 0x0103 0x03",
                 f"table_add classify cls 0x1&&&0xf {hex(2 << adapter.RANGE_SHIFT | 9)} => 7 9990",
                 "register_write r 1 2"):
        out += adapter.translate(line, info, members)
    assert out == ["act_prof_create_member sel set_nhop 0x0102 0x02",
                   "table_indirect_add lpm 0x0a000202/32 => 0",
                   "act_prof_create_member sel set_nhop 0x0103 0x03",
                   "table_indirect_add lpm 0x0a000303/32 => 1",
                   "table_add classify cls 0x1&&&0xf 2->9 => 7 9990",
                   "register_write r 1 2"]


@pytest.mark.slow
def test_the_build_dir_runs_our_compiler_and_declares_simple_switch(tmp_path: Path) -> None:
    build = check.make_build_dir(tmp_path)
    assert "#define HAVE_SIMPLE_SWITCH 1" in (build / "config.h").read_text()
    out = tmp_path / "fwd.json"
    proc = subprocess.run([str(build / "p4c-bm2-ss"), "-o", str(out),
                           str(ROOT / "tests" / "conformance" / "gradlane" / "forwarding.p4")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"pipelines"' in out.read_text()


@pytest.mark.slow
def test_without_simple_switch_it_says_so_and_fails(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path), P4REF_PREFIX=str(tmp_path / "none"))
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_reference.py")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "simple_switch is neither on PATH nor in" in proc.stderr


bmv2_stf = _load("bmv2_stf")


def test_packet_in_messages_are_bmv2s_packed_header_then_the_packet() -> None:
    message = bmv2_stf.packet_in_message(3, b"\xab\xcd")
    assert message == (3).to_bytes(4, sys.byteorder) + (3).to_bytes(4, sys.byteorder) + \
        (2).to_bytes(4, sys.byteorder) + b"\xab\xcd"
    out = (4).to_bytes(4, sys.byteorder) + (7).to_bytes(4, sys.byteorder) + (1).to_bytes(4, sys.byteorder) + b"\x01"
    assert bmv2_stf.parse_packet_out(out) == (7, b"\x01")
    assert bmv2_stf.parse_packet_out(message) is None  # only PACKET_OUT carries the switch's output


def test_values_and_port_maps_as_simple_switch_cli_sends_them() -> None:
    assert bmv2_stf.value_bytes(0x1FF, 9) == b"\x01\xff"
    assert bmv2_stf.value_bytes(5, 1) == b"\x01"  # cut to the field's width
    assert bmv2_stf.value_bytes(0, 48) == bytes(6)
    assert bmv2_stf.port_map([1, 3]) == "1010" and bmv2_stf.port_map([0]) == "1"


def test_stf_key_values_take_their_keys_match_kind_as_bmv2_needs() -> None:
    from p4target.engine import Exact, Lpm, Range, Ternary
    assert bmv2_stf._as_kind(Exact(5), "ternary", 8) == Ternary(5, 0xFF)
    assert bmv2_stf._as_kind(Exact(5), "optional", 8) == Ternary(5, 0xFF)
    assert bmv2_stf._as_kind(Exact(5), "lpm", 16) == Lpm(5, 16)
    assert bmv2_stf._as_kind(Exact(5), "range", 8) == Range(5, 5)
    assert bmv2_stf._as_kind(Lpm(0x0A00, 8), "ternary", 16) == Ternary(0x0A00, 0xFF00)
    assert bmv2_stf._as_kind(Exact(5), "exact", 8) == Exact(5)
