"""Bad policy input (issue 18 points 3 and 6): every case is a one-line error, bounded in CPU time
and memory, through the real gradctl and the real daemon's API; nothing empty wipes the network."""
from __future__ import annotations

import json

import pytest
from support.controller_daemon import Network, raw_request, run_gradctl, stop_daemon

from controller import api

CPU_SECONDS = 2.0
MAX_RSS_MB = 200.0
RULE = "jobs:\n  - job: 1\n    layers:\n      - range: [0, 3]\n        loss_bound: {}\n"


def _alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


BAD_FILES = {
    "empty.yaml": (b"", "the document is empty"),
    "spaces.yaml": (b"   \n\n  \n", "the document is empty"),
    "comment.yaml": (b"# nothing but a comment\n", "the document is empty"),
    "null.yaml": (b"null\n", "the document is empty"),
    "null.json": (b"null", "the document is empty"),
    "nojobs.yaml": (b"version: 1\njobs: []\n", "no jobs in the policy"),
    "latin1.yaml": ("jobs:\n  - job: 1\n    name: caf\u00e9\n".encode("latin-1"), "not UTF-8 text"),
    "bound400.yaml": (RULE.format("1" + "0" * 399).encode(), "integer of 400 digits is too long"),
    "bound400.json": (('{"jobs": [{"job": 1, "layers": [{"range": [0, 3], "loss_bound": 1'
                       + "0" * 399 + "}]}]}").encode(), "integer of 400 digits is too long"),
    "bound400frac.yaml": (RULE.format("0." + "0" * 398 + "1").encode(), None),  # valid: tiny bound
    "boundhuge.yaml": (RULE.format("1.0e+400").encode(), "loss_bound: must be in [0, 1], got inf"),
    "deep.json": (b"[" * 100000 + b"]" * 100000, "nested deeper than 32 levels"),
    "deep.yaml": (b"[" * 100000 + b"]" * 100000, "nested deeper than 32 levels"),
    "deepmap.yaml": ("".join("  " * i + "a:\n" for i in range(200)).encode(),
                     "nested deeper than 32 levels"),
    "int5000.yaml": (b"jobs:\n  - job: " + b"9" * 5000 + b"\n", "integer of 5000 digits is too long"),
    "int5000.json": (b'{"jobs": [{"job": ' + b"9" * 5000 + b"}]}", "integer of 5000 digits is too long"),
    "bomb.yaml": (_alias_bomb().encode(), "YAML aliases (*name) are not allowed"),
    "control.yaml": (b"# a comment with a \x01 control character\n", "not valid YAML: unacceptable character"),
    "big.yaml": (b"# " + b"x" * (2 << 20) + b"\n", "larger than 1048576 bytes"),
    # a YAML 1.1 sexagesimal float PyYAML sums in powers of 60 (it overflowed into a traceback)
    "sexagesimal.yaml": (RULE.format(":".join(["0"] * 220) + ":0.1").encode(), "does not fit a float"),
    # ~1 MiB of DDL flows: refused by count before any flow is compared with another
    "ddlflows.json": (('{"jobs": [{"job": 1, "layers": [{"range": [0, 3], "loss_bound": 0.1}], "ddl_flows": ['
                       + ", ".join(f'{{"worker_rank": 1, "dst_ports": {i % 65536}}}' for i in range(26000))
                       + "]}]}").encode(), "ddl_flows: more than 256 DDL flows"),
}


def _assert_one_line_bounded(done, expect: str) -> None:
    assert done.code == 1, (done.code, done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("gradctl: error: "), done.stderr
    assert expect in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr) < 400
    assert done.cpu_seconds < CPU_SECONDS, done
    assert done.max_rss_mb < MAX_RSS_MB, done


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_policy_file_is_one_line_bounded(tmp_path, name):
    content, expect = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(content)
    done = run_gradctl("--socket", str(tmp_path / "none.sock"), "policy", "apply", str(path), "--check")
    if expect is None:
        assert done.code == 0 and done.stdout == f"{path}: valid\n", done
        return
    _assert_one_line_bounded(done, f"{path}: ")
    assert expect in done.stderr


@pytest.mark.parametrize("device, expect", [("/dev/null", "the document is empty"),
                                            ("/dev/zero", "larger than 1048576 bytes")])
def test_devices_are_one_line_bounded(tmp_path, device, expect):
    done = run_gradctl("--socket", str(tmp_path / "none.sock"), "policy", "apply", device)
    _assert_one_line_bounded(done, f"gradctl: error: {device}: ")
    assert expect in done.stderr


@pytest.mark.parametrize("argv, expect", [
    (["policy", "phase", "--job", "1", "--round", "1e23"], "argument --round: expected a non-negative"),
    (["policy", "phase", "--job", "1", "--round", "-1"], "argument --round: expected a non-negative"),
    (["policy", "phase", "--job", "1", "--round", "4294967296"], "(0..4294967295)"),
    (["policy", "phase", "--job", "1", "--round", "9" * 5000], "argument --round"),
    (["policy", "set", "--job", "70000", "--layers", "0-3"], "argument --job"),
    (["stats", "--switch", ""], "argument --switch: expected a switch name"),
    (["pcn", "set", "--switch", "", "--port", "1", "--threshold", "5"], "argument --switch"),
])
def test_bad_arguments_are_refused(tmp_path, argv, expect):
    done = run_gradctl("--socket", str(tmp_path / "none.sock"), *argv)
    assert done.code == 2 and done.stderr.count("\n") == 1 and expect in done.stderr, done
    assert done.cpu_seconds < CPU_SECONDS and done.max_rss_mb < MAX_RSS_MB, done


@pytest.fixture
def daemon(tmp_path):
    net = Network(tmp_path)
    proc = net.start_daemon("--policy", "controller/policies/default.yaml")
    yield net
    stop_daemon(proc)
    net.stop()


def _classes(net: Network) -> list:
    return api.call(net.socket, "policy.show")["classes"]


def test_empty_policies_are_refused_and_clear_needs_yes(daemon, tmp_path):
    before = _classes(daemon)
    assert len(before) == 3
    for raw in [b'{"cmd": "policy.apply", "args": {}}',
                b'{"cmd": "policy.apply", "args": {"document": null}}',
                b'{"cmd": "policy.apply", "args": {"document": {}}}',
                b'{"cmd": "policy.apply", "args": {"document": {"jobs": []}}}',
                b'{"cmd": "policy.apply"}',
                b'{"cmd": "policy.clear", "args": {}}',
                b'{"cmd": "policy.clear", "args": {"confirm": "yes"}}']:
        answer = raw_request(daemon.socket, raw)
        assert answer["ok"] is False and "delete" in answer["error"], (raw, answer)
    for name in ("empty.yaml", "comment.yaml", "null.json"):
        path = tmp_path / name
        path.write_bytes(BAD_FILES[name][0])
        done = run_gradctl("--socket", str(daemon.socket), "policy", "apply", str(path))
        _assert_one_line_bounded(done, "the document is empty")
    done = run_gradctl("--socket", str(daemon.socket), "policy", "clear")
    assert done.code == 1 and "add --yes" in done.stderr, done
    assert _classes(daemon) == before            # nothing was deleted
    done = run_gradctl("--socket", str(daemon.socket), "policy", "clear", "--yes")
    assert done.code == 0 and "s1: 0 inserted, 0 modified, 3 deleted" in done.stdout, done
    assert _classes(daemon) == []
    assert not [e for e in daemon.servers["s1"].entities("table_entry")
                if e.table_entry.table_id == 0x02000003]


@pytest.mark.parametrize("raw, expect", [
    (b'{"cmd": "pcn.set", "args": {"switch": "s1", "port": 2, "threshold": 5.5}}',
     "threshold: must be an integer"),
    (b'{"cmd": "pcn.set", "args": {"switch": "s1", "port": 2.0, "threshold": 5}}',
     "port: must be an integer"),
    (b'{"cmd": "policy.phase", "args": {"job": 1, "round": 1e400}}', "round: must be an integer"),
    (b'{"cmd": "policy.phase", "args": {"job": 1, "round": -1}}', "round: must be in [0, 4294967295]"),
    (b'{"cmd": "policy.phase", "args": {"job": 1, "round": 1' + b"0" * 400 + b'}}',
     "integer of 401 digits is too long"),
    (b'{"cmd": "policy.phase", "args": {"job": 1, "round": NaN}}', "NaN is not a JSON number"),
    (b'{"cmd": "policy.set", "args": {"job": 1, "layers": [0, 1e400], "loss_bound": 0.1}}',
     "layers[1]: must be an integer"),
    (b'{"cmd": "stats", "args": {"switch": ""}}', "switch: must be a non-empty string"),
    (b'{"cmd": "stats", "args": []}', "args must be a mapping"),
    (b'{"cmd": "policy.apply", "args": {"document": ' + b"[" * 50000 + b"]" * 50000 + b"}}",
     "nested deeper than 32 levels"),
    (b'{"cmd": "policy.apply", "args": {"document": ' + b'{"a": ' * 40 + b"1" + b"}" * 40 + b"}}",
     "nested deeper than 32 levels"),
    (b'{"cmd": "policy.apply", "args": {"document": {"jobs": [{"job": 1, "layers": '
     b'[{"range": [0, 3], "loss_bound": 1e400}]}]}}}', "loss_bound: must be in [0, 1], got inf"),
])
def test_raw_api_requests_get_an_error_answer(daemon, raw, expect):
    before = _classes(daemon)
    answer = raw_request(daemon.socket, raw)
    assert answer["ok"] is False and expect in answer["error"], answer
    assert "\n" not in answer["error"] and len(answer["error"]) < 1100
    assert api.ping(daemon.socket) is not None     # the daemon still serves
    assert _classes(daemon) == before


def test_api_answer_does_not_quote_whole_values(daemon):
    answer = raw_request(daemon.socket, json.dumps(
        {"cmd": "policy.apply", "args": {"document": {"jobs": "x" * 100000}}}).encode())
    assert answer["ok"] is False and len(answer["error"]) < 300, answer
