"""The bindings strategy written in the README holds in the installed environment."""
import importlib.metadata as md

import pytest


def test_protobuf_pinned_below_3_21_for_p4runtime_shell():
    major, minor = (int(x) for x in md.version("protobuf").split(".")[:2])
    assert (major, minor) < (3, 21)


def test_p4runtime_bindings_import_and_build_messages():
    from p4.v1 import p4runtime_pb2
    from p4.config.v1 import p4info_pb2

    entry = p4runtime_pb2.TableEntry(table_id=0x02000001, priority=10)
    info = p4info_pb2.P4Info()
    info.tables.add().preamble.name = "MyIngress.ipv4_lpm"
    assert p4runtime_pb2.TableEntry.FromString(entry.SerializeToString()).priority == 10
    assert info.tables[0].preamble.name == "MyIngress.ipv4_lpm"


@pytest.mark.slow
def test_p4runtime_shell_imports_without_leaking_exit():
    import p4runtime_sh.shell as shell

    assert callable(shell.setup) and callable(shell.teardown)
