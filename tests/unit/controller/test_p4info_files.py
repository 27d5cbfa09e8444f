"""The controller reads P4Info in every format the compiler writes (`--p4runtime-files` with a
text, JSON or binary suffix), and says in one line when a file is none of them."""
from __future__ import annotations

import shutil

import pytest

from controller.errors import ConfigError
from controller.p4info import P4Info, load_p4info
from p4target.compiler import cli
from support.dataplane import P4SRC, PROGRAM

SUFFIXES = (".txtpb", ".txt", ".json", ".bin")


@pytest.fixture(scope="module")
def compiled_files(tmp_path_factory):
    """p4src compiled by `p4target compile`, its P4Info written in every format."""
    out = tmp_path_factory.mktemp("p4info")
    files = ",".join(str(out / f"gradlane.p4info{suffix}") for suffix in SUFFIXES)
    assert cli.main(["--arch", "v1model", "-I", str(P4SRC), "--p4runtime-files", files,
                     "-o", str(out / "gradlane.json"), str(PROGRAM)]) == 0
    return out


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_every_format_the_compiler_writes_loads(compiled_files, dataplane_p4info, suffix):
    info = load_p4info(compiled_files / f"gradlane.p4info{suffix}")
    assert info == dataplane_p4info
    assert P4Info(info).table_id("GradIngress.ipv4_lpm") == P4Info(dataplane_p4info).table_id("GradIngress.ipv4_lpm")


@pytest.mark.parametrize("suffix", [".json", ".txtpb", ".bin"])
def test_other_suffix_is_recognised_by_content(compiled_files, dataplane_p4info, tmp_path, suffix):
    renamed = tmp_path / "pipeline.p4info"
    shutil.copy(compiled_files / f"gradlane.p4info{suffix}", renamed)
    assert load_p4info(renamed) == dataplane_p4info


@pytest.mark.parametrize("name, content, message", [
    ("p.json", b"{\"tables\": [", r"p\.json: not a P4Info file \(json: "),
    ("p.txt", b"tables { nonsense", r"p\.txt: not a P4Info file \(text: "),
    ("p.json", b"{\"no_such_field\": 1}", r"p\.json: not a P4Info file \(json: "),
])
def test_malformed_file_is_one_line_config_error(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=message) as info:
        load_p4info(path)
    assert "\n" not in str(info.value)


def test_missing_file_is_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"cannot read P4Info .*nope\.txt: No such file"):
        load_p4info(tmp_path / "nope.txt")
