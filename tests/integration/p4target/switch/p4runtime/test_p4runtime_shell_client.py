"""Interoperability with p4runtime-shell's client class (no shell global state)."""
import json

import pytest
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from p4runtime_sh.p4runtime import P4RuntimeClient, P4RuntimeWriteException


def test_p4runtime_shell_client_pushes_writes_reads_and_parses_errors(switch, program, ids, helpers, tmp_path):
    bmv2, p4info = program
    (tmp_path / "p4info.txt").write_text(text_format.MessageToString(p4info))
    (tmp_path / "prog.json").write_text(json.dumps(bmv2))
    client = P4RuntimeClient(0, switch.addr, (0, 1))
    try:
        assert client.api_version().startswith("1.")
        client.set_fwd_pipe_config(str(tmp_path / "p4info.txt"), str(tmp_path / "prog.json"))
        assert client.get_p4info() == p4info
        entry = ids.entry("MyIngress.t_exact", [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [2])
        client.write_update(helpers.update("INSERT", "table_entry", entry))
        got = [e.table_entry for resp in client.read_one(p4runtime_pb2.Entity(table_entry=entry)) for e in resp.entities]
        assert got == [entry]
        with pytest.raises(P4RuntimeWriteException) as e:
            client.write_update(helpers.update("INSERT", "table_entry", entry))
        assert [(i, err.canonical_code) for i, err in e.value.errors] == [(0, code_pb2.ALREADY_EXISTS)]
        switch.target.receive(0, bytes([1, 2, 0, 3, 0, 0, 0, 4]))
        assert switch.sink.get()[0] == 2
    finally:
        client.tear_down()
