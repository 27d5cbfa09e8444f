"""`p4target compile` command line: p4c-bm2-ss flags, errors, atomic outputs, and end-to-end
compilation of the conformance programs and gradlane.p4 (once the back end exists)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

import p4target.compiler
from p4target.compiler import cli
from p4target.compiler.p4info import PREFIX_ACTION, PREFIX_TABLE, P4InfoHints, build_p4info, hashed_id, read_p4info
from p4target.engine.sample_programs import l3_router
from p4target.errors import CompileError
from support.p4info_index import P4InfoIndex

REPO = Path(__file__).resolve().parents[4]

CONFORMANCE = sorted(p for p in (REPO / "tests/conformance/switch").glob("*.p4")
                     if "V1Switch(" in p.read_text())


def run_cli(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "prog.p4"
    path.write_text("// placeholder: these tests stop before compiling\n")
    return path


# --- command line handling (no compilation needed) -----------------------------------


def test_help_and_version(capsys):
    code, out, err = run_cli(["--help"], capsys)
    assert code == 0 and err == ""
    for flag in ("--p4runtime-files", "-o", "--arch", "--p4v", "--std", "-I", "-D", "--version"):
        assert flag in out
    code, out, _ = run_cli(["--version"], capsys)
    assert code == 0 and "p4c-bm2-ss compatible" in out and "Version" in out


@pytest.mark.parametrize("argv,fragment", [
    (["--frobnicate", "x.p4"], "unrecognized arguments: --frobnicate"),
    ([], "no input file given"),
    (["a.p4", "b.p4"], "unrecognized arguments: b.p4"),
    (["x.p4", "-o"], "argument -o: expected one argument"),
    (["--p4runtime-fil", "x.txt", "x.p4"], "unrecognized arguments"),  # no abbreviations
    (["x.p4", "-D", "9bad=1"], "'9bad' is not a macro name"),
    (["x.p4", "--p4runtime-format", "text"], "--p4runtime-format needs --p4runtime-file"),
    (["x.p4", "--p4runtime-files", "a.txt,,b.txt"], "empty file name"),
    (["x.p4", "-o", "same.json", "--p4runtime-files", "same.json"], "'same.json' is named more than once"),
    (["x.p4", "-o", "a.json", "--p4info", "./a.json"], "'./a.json' is named more than once"),
    (["x.p4", "--std", "p4-18"], "argument --std: invalid choice"),
])
def test_usage_errors_exit_2_with_one_line(argv, fragment, capsys):
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("p4target compile: error: ")
    assert fragment in err


@pytest.mark.parametrize("argv,message", [
    (["--arch", "psa"], "architecture 'psa' is not supported (only v1model)"),
    (["--target", "tofino"], "target 'tofino' is not supported"),
    (["--p4v", "14"], "P4_14 is not supported"),
    (["--std", "p4-14"], "P4_14 is not supported"),
    (["--p4runtime-files", "out.p4info.yaml"], "out.p4info.yaml: unknown P4Info file suffix '.yaml'"),
    (["--p4info", "out.p4info"], "unknown P4Info file suffix '.p4info'"),
])
def test_unsupported_values_exit_1_before_anything_is_written(argv, message, source, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    code, out, err = run_cli(argv + [source], capsys)
    assert code == 1 and out == ""
    assert err.startswith("p4target compile: error: ") and err.count("\n") == 1
    assert message in err
    assert sorted(os.listdir(tmp_path)) == before


def test_missing_input_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["nope.p4", "--p4runtime-files", "p.txt"], capsys)
    assert code == 1
    assert err == "p4target compile: error: nope.p4: No such file or directory\n"
    code, _, err = run_cli([tmp_path], capsys)
    assert code == 1 and "not a regular file" in err
    assert os.listdir(tmp_path) == []


def test_accepted_p4c_forms_parse():
    ap = cli.build_parser()
    args = ap.parse_args(["--arch", "v1model", "--p4v", "16", "--std", "p4-16", "--target", "bmv2",
                          "-o", "out.json", "--p4runtime-files", "a.txt,b.json", "--p4runtime-files", "c.bin",
                          "--p4info", "d.txtpb", "--p4runtime-file", "e.pb", "--p4runtime-format", "text",
                          "-I", "inc1", "-Iinc2", "-D", "A", "-DB=2", "-DC=", "prog.p4"])
    assert args.source == "prog.p4" and args.output == "out.json"
    assert args.include == ["inc1", "inc2"]
    assert cli._defines(args.define) == {"A": "1", "B": "2", "C": ""}
    assert cli._p4info_outputs(args) == [("a.txt", "text"), ("b.json", "json"), ("c.bin", "binary"),
                                         ("d.txtpb", "text"), ("e.pb", "text")]
    legacy = ap.parse_args(["--p4runtime-file", "x.out", "p.p4"])
    assert cli._p4info_outputs(legacy) == [("x.out", "binary")]  # p4c's default format


# --- output writing, with a stand-in compile_file (in addition to the end-to-end tests) ----


@pytest.fixture
def fake_backend(monkeypatch):
    calls = []

    def compile_file(path, include_dirs=(), defines=None):
        calls.append((path, list(include_dirs), dict(defines or {})))
        if "broken" in str(path):
            raise CompileError("unknown identifier 'x'", str(path), 3, 7)
        if "crash" in str(path):
            raise ValueError("boom")
        prog = l3_router()
        return SimpleNamespace(bmv2_json=prog, p4info=build_p4info(prog, P4InfoHints()))

    monkeypatch.setattr(p4target.compiler, "compile_file", compile_file, raising=False)
    return calls


def test_outputs_written_in_every_format(fake_backend, source, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli([source, "-I", "incdir", "-D", "X=3", "--p4runtime-files", "p.txt,p.json,p.bin",
                              "--p4runtime-file", "legacy.out", "--p4runtime-format", "json"], capsys)
    assert (code, out, err) == (0, "", "")
    assert fake_backend == [(str(source), ["incdir"], {"X": "3"})]
    assert json.loads((tmp_path / "prog.json").read_text()) == l3_router()  # default: <basename>.json in cwd
    assert (tmp_path / "prog.json").read_text().startswith('{\n  "header_types"')
    infos = [read_p4info(tmp_path / n) for n in ("p.txt", "p.json", "p.bin")]
    assert infos[0] == infos[1] == infos[2]
    assert P4InfoIndex(infos[0]).table_id("MyIngress.ipv4_lpm") == 37375156
    assert json.loads((tmp_path / "legacy.out").read_text())["pkgInfo"]["arch"] == "v1model"


def test_output_directory_gets_basename_json(fake_backend, source, tmp_path, capsys):
    out_dir = tmp_path / "build"
    out_dir.mkdir()
    code, _, err = run_cli([source, "-o", out_dir], capsys)
    assert code == 0, err
    assert json.loads((out_dir / "prog.json").read_text())["program"] == "l3_router.p4"


def test_compile_error_prints_location_and_writes_nothing(fake_backend, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    broken = tmp_path / "broken.p4"
    broken.write_text("")
    code, out, err = run_cli([broken, "--p4runtime-files", "p.txt"], capsys)
    assert code == 1 and out == ""
    assert err == f"{broken}:3:7: error: unknown identifier 'x'\n"
    assert os.listdir(tmp_path) == ["broken.p4"]


def test_compiler_bug_is_one_line(fake_backend, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("P4TARGET_TRACEBACK", raising=False)
    crash = tmp_path / "crash.p4"
    crash.write_text("")
    code, _, err = run_cli([crash], capsys)
    assert code == 1 and err.count("\n") == 1 and "internal compiler error: ValueError: boom" in err


@pytest.mark.slow
def test_module_entry_point_dispatches():
    proc = subprocess.run([sys.executable, "-m", "p4target", "compile", "--bogus"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("p4target compile: error: unrecognized arguments: --bogus")


# --- end to end with the real compiler -------------------------------------------------


def _check_outputs(src: Path, out_dir: Path) -> None:
    bmv2 = json.loads((out_dir / "out.json").read_text())
    assert bmv2["pipelines"] and bmv2["header_types"]
    from p4target.engine import Engine
    Engine(bmv2)  # the switch engine accepts what the compiler wrote

    infos = [read_p4info(out_dir / n) for n in ("p.txt", "p.json", "p.bin")]
    assert infos[0] == infos[1] == infos[2]
    info = infos[0]
    text_format.Parse((out_dir / "p.txt").read_text(), p4info_pb2.P4Info())
    assert info.pkg_info.arch == "v1model"
    idx = P4InfoIndex(info)
    source_text = src.read_text()
    for table in info.tables:
        if "@id" not in source_text:
            assert table.preamble.id == hashed_id(PREFIX_TABLE, table.preamble.name)
        assert table.size > 0
        assert all(mf.bitwidth > 0 and mf.match_type for mf in table.match_fields)
        for ref in table.action_refs:
            idx.action(ref.id)  # every reference resolves
    for action in info.actions:
        if "@id" not in source_text:
            assert action.preamble.id == hashed_id(PREFIX_ACTION, action.preamble.name)
    json_tables = {t["name"] for p in bmv2["pipelines"] for t in p["tables"]}
    assert {t.preamble.name for t in info.tables} <= json_tables


@pytest.mark.parametrize("src", CONFORMANCE, ids=lambda p: p.name)
def test_compile_conformance_programs(src, tmp_path, capsys):
    code, _, err = run_cli([src, "-o", tmp_path / "out.json", "-I", src.parent,
                            "--p4runtime-files", f"{tmp_path}/p.txt,{tmp_path}/p.json,{tmp_path}/p.bin"], capsys)
    assert code == 0, err
    _check_outputs(src, tmp_path)


def test_compile_gradlane(tmp_path, capsys):
    src = REPO / "p4src" / "gradlane.p4"
    code, _, err = run_cli(["--arch", "v1model", "--p4v", "16", src, "-o", tmp_path / "out.json",
                            "--p4runtime-files", f"{tmp_path}/p.txt,{tmp_path}/p.json,{tmp_path}/p.bin"], capsys)
    assert code == 0, err
    _check_outputs(src, tmp_path)
    info = read_p4info(tmp_path / "p.txt")
    assert len(info.tables) > 0 and len(info.actions) > 0


BAD_PROGRAM = """#include <core.p4>
#include <v1model.p4>
struct H {}
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) { state start { transition accept; } }
control VC(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t s) {
    apply { s.egress_spec = undefined_thing; }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { apply {} }
control CC(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply {} }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_real_compile_error_location(tmp_path, capsys):
    bad = tmp_path / "bad.p4"
    bad.write_text(BAD_PROGRAM)
    code, out, err = run_cli([bad, "-o", tmp_path / "bad.json", "--p4runtime-files", f"{tmp_path}/p.txt"], capsys)
    assert code == 1 and out == ""
    assert re.match(rf"^{re.escape(str(bad))}:8:\d+: error: .*undefined_thing", err), err
    assert err.count("\n") == 1
    assert sorted(os.listdir(tmp_path)) == ["bad.p4"]
