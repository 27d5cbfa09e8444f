"""P4Info ``pkg_info`` from ``@pkginfo`` and the other annotations of the main package
instance, as p4c fills it (string values; arch defaults to v1model)."""
from __future__ import annotations

import pytest

from p4target.compiler import compile_text
from p4target.errors import CompileError

_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
ANNOTATIONS
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _pkg_info(annotations: str):
    return compile_text(_PROGRAM.replace("ANNOTATIONS", annotations), "pkg.p4").p4info.pkg_info


def test_without_annotations_only_the_architecture_is_set():
    info = _pkg_info("")
    assert info.arch == "v1model"
    assert not info.name and not info.version and not info.annotations and not info.HasField("doc")


def test_pkginfo_keys_fill_their_fields():
    info = _pkg_info('@pkginfo(name="lab.p4", version="2.1", organization="Lab", '
                     'contact="ops@lab.example", url="https://lab.example")')
    assert (info.name, info.version, info.organization, info.contact, info.url, info.arch) == (
        "lab.p4", "2.1", "Lab", "ops@lab.example", "https://lab.example", "v1model")


def test_arch_key_overrides_the_compilers_value():
    assert _pkg_info('@pkginfo(arch="v1model-lab")').arch == "v1model-lab"


def test_other_annotations_of_main_become_doc_and_annotations():
    info = _pkg_info('@pkginfo(name="x") @brief("A lab switch") @description("Longer") @custom(1)')
    assert (info.doc.brief, info.doc.description) == ("A lab switch", "Longer")
    assert list(info.annotations) == ["@custom(1)"]


def test_unknown_keys_are_ignored_as_p4c_does():
    info = _pkg_info('@pkginfo(name="x", doc="not a PkgInfo key")')
    assert info.name == "x" and not info.HasField("doc")


def test_pkginfo_on_another_declaration_is_not_package_info():
    src = _PROGRAM.replace("ANNOTATIONS", "").replace(
        "control CC(", '@pkginfo(name="not main") control CC(')
    assert compile_text(src, "pkg.p4").p4info.pkg_info.name == ""


@pytest.mark.parametrize("annotation,message", [
    ('@pkginfo(version=2)', "value for 'version' key in @pkginfo annotation is not a string"),
    ('@pkginfo("lab")', '@pkginfo takes a list of key = "value" pairs'),
    ('@pkginfo(name="a", name="b")', "duplicate key 'name'"),
])
def test_malformed_pkginfo_is_a_located_error(annotation, message):
    with pytest.raises(CompileError, match=message) as err:
        _pkg_info(annotation)
    assert "pkg.p4:" in str(err.value)
