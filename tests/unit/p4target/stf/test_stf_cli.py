"""`p4target stf --json` runs STF tests: matches, mismatches with diffs, syntax errors."""
import json

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine.sample_programs import l3_router
from p4target.stf import main, parse_stf, StfSyntaxError
import pytest


def _frame(ttl: int, dst_mac: str = "00:00:00:00:00:01", src_mac: str = "00:00:00:00:00:02") -> bytes:
    return bytes(Ether(dst=dst_mac, src=src_mac) / IP(src="10.0.0.1", dst="10.0.1.5", ttl=ttl) / UDP() / b"hi")


def _write(tmp_path, stf: str):
    j = tmp_path / "prog.json"
    j.write_text(json.dumps(l3_router()))
    s = tmp_path / "t.stf"
    s.write_text(stf)
    return ["prog.p4", str(s), "--json", str(j)]


def _expected_hex() -> str:
    out = Ether(_frame(64))
    out.src, out.dst = "00:00:00:00:00:01", "aa:bb:cc:dd:ee:ff"
    out[IP].ttl = 63
    del out[IP].chksum
    return bytes(Ether(bytes(out))).hex()


def test_matching_stf_passes(tmp_path, capsys):
    exp = _expected_hex()
    stf = f"""# forward 10.0.1.0/24 to port 3
add ipv4_lpm hdr.ipv4.dstAddr:0x0a000100/24 MyIngress.ipv4_forward(dstAddr:0xaabbccddeeff, port:3)
packet 1 {_frame(64).hex()}
expect 3 {exp[:20]} ** {exp[22:]}$
packet 2 {_frame(64).hex()}
expect 3
check_counter rx(2) packets == 1
"""
    assert main(_write(tmp_path, stf)) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and out.count("ok   expect") == 2


def test_mismatch_fails_with_diff(tmp_path, capsys):
    stf = f"""add MyIngress.ipv4_lpm hdr.ipv4.dstAddr:0x0a000100/24 ipv4_forward(dstAddr:0xaabbccddeeff, port:3)
packet 1 {_frame(64).hex()}
expect 3 {_frame(64).hex()}
expect 4 00
"""
    assert main(_write(tmp_path, stf)) == 1
    out = capsys.readouterr().out
    assert "packet differs" in out and "^" in out
    assert "expect port 4: no packet arrived" in out


def test_unexpected_packet_fails(tmp_path, capsys):
    stf = (f"setdefault ipv4_lpm ipv4_forward(dstAddr:1, port:5)\npacket 1 {_frame(64).hex()}\n"
           f"packet 5 {_frame(64).hex()}\n")
    assert main(_write(tmp_path, stf)) == 1
    assert "unexpected packet on port 5" in capsys.readouterr().out


def test_packet_on_a_port_the_test_never_names_is_ignored(tmp_path, capsys):
    # as with p4c's runner, which starts BMv2 with interfaces for the test's ports only
    stf = f"setdefault ipv4_lpm ipv4_forward(dstAddr:1, port:5)\npacket 1 {_frame(64).hex()}\n"
    assert main(_write(tmp_path, stf)) == 0
    assert "port 5 ignored" in capsys.readouterr().out


def test_lone_last_digit_and_empty_packet(tmp_path, capsys):
    from p4target.stf.parser import parse_stf
    cmds = parse_stf("packet 1 00 1\nexpect 1 00 0\npacket 2\n", "t.stf")
    assert [c.args["data"] for c in cmds] == ["0001", "000", ""]


def test_bad_line_reports_file_and_line(tmp_path, capsys):
    args = _write(tmp_path, "packet 1 0011\nfrobnicate 3\n")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"{args[1]}:2: error: unknown STF command 'frobnicate'"


def test_parser_understands_all_key_forms():
    cmds = parse_stf("add t 7 a:0x0800&&&0xff00 b:10/8 c:1..5 d:0x0a** e:3 act(x:1, y:0x2)\n")
    keys = cmds[0].args["keys"]
    assert cmds[0].args["priority"] == 7
    assert keys == [("a", "ternary", (0x800, 0xff00)), ("b", "lpm", (10, 8)), ("c", "range", (1, 5)),
                    ("d", "ternary", (0x0a00, 0xff00)), ("e", "exact", (3,))]
    assert cmds[0].args["params"] == [("x", 1), ("y", 2)]
    with pytest.raises(StfSyntaxError):
        parse_stf("expect 1 0g\n", "f.stf")


def test_parser_reads_entry_ids_counter_checks_remove_and_no_packet():
    cmds = parse_stf("add t a:1 act() = A\ncheck_counter c($A) bytes >= 3\ncheck_counter c(4)\n"
                     "remove all\nno_packet\n")
    assert cmds[0].args["entry_id"] == "A" and cmds[0].args["action"] == "act"
    assert (cmds[1].args["entry"], cmds[1].args["kind"], cmds[1].args["op"], cmds[1].args["value"]) == \
        ("A", "bytes", ">=", 3)
    # p4c's grammar: a check_counter without a condition means packets == 0
    assert (cmds[2].args["index"], cmds[2].args["kind"], cmds[2].args["value"]) == (4, "packets", 0)
    assert [c.kind for c in cmds[3:]] == ["remove", "no_packet"]
    with pytest.raises(StfSyntaxError):
        parse_stf("remove t 3\n", "f.stf")


def test_missing_compiler_or_file_is_one_line_error(tmp_path, capsys):
    assert main(["x.p4", str(tmp_path / "missing.stf")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.slow
def test_priority_queues_as_simple_switch_has_them(capsys):
    """gradlane's dscp_fallback test needs 8 queues per port: with one, simple_switch (and so the
    embedded switch) drops the DSCP-10 packet of priority 5, and the DSCP-0 packet (TOS 0x00)
    arrives where the TOS-0x28 one was expected."""
    from pathlib import Path
    d = Path(__file__).resolve().parents[4] / "tests" / "conformance" / "gradlane"
    args = [str(d / "dscp_fallback.p4"), str(d / "dscp_fallback.stf"), "-I", str(d), "-q"]
    assert main(args + ["--priority-queues", "8"]) == 0
    assert main(args) == 1
    assert "expected 08000000030300000a0001fe08004528" in capsys.readouterr().out
    assert main(args + ["--priority-queues", "9"]) == 2
