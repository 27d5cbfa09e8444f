"""Hand-written Thrift argument/result structs for the calls our switch adds to BMv2's runtime
(the installed simple_switch_CLI package has no generated code for them)."""
from __future__ import annotations

from typing import Any


class ThriftStruct:
    """A Thrift struct described by ``thrift_spec`` (the generated-code layout), read and written
    with the protocol's own struct codec."""

    thrift_spec: tuple = ()

    def __init__(self, **values: Any) -> None:
        for spec in self.thrift_spec:
            if spec is not None:
                setattr(self, spec[2], values.get(spec[2]))

    def read(self, iprot: Any) -> None:
        iprot.readStruct(self, self.thrift_spec)

    def write(self, oprot: Any) -> None:
        oprot.writeStruct(self, self.thrift_spec)
