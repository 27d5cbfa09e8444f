"""Hand-written Thrift argument/result structs for the calls our switch adds to BMv2's runtime
(the installed simple_switch_CLI package has no generated code for them)."""
from __future__ import annotations

from typing import Any

from thrift.Thrift import TApplicationException, TMessageType


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


class ThriftCaller:
    """Base of our hand-written clients: one synchronous call per method over `protocol`."""

    def __init__(self, protocol: Any) -> None:
        self._prot = protocol
        self._seqid = 0

    def _invoke(self, name: str, args: ThriftStruct, result: ThriftStruct) -> Any:
        """Send `name(args)`, read the reply into `result`; its `success` field, or raise the
        server's TApplicationException (also when the reply carries no result)."""
        self._seqid += 1
        self._prot.writeMessageBegin(name, TMessageType.CALL, self._seqid)
        args.write(self._prot)
        self._prot.writeMessageEnd()
        self._prot.trans.flush()
        _, mtype, _ = self._prot.readMessageBegin()
        if mtype == TMessageType.EXCEPTION:
            exc = TApplicationException()
            exc.read(self._prot)
            self._prot.readMessageEnd()
            raise exc
        result.read(self._prot)
        self._prot.readMessageEnd()
        if getattr(result, "success", None) is None:
            raise TApplicationException(TApplicationException.MISSING_RESULT, f"{name}: no result")
        return result.success
