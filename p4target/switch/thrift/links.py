"""Thrift calls that change a port's link while the switch runs (our extension; BMv2 has none).

Served on the switch's Thrift server as the multiplexed service "p4target_links":
- `set_port_impairment(1: i32 port, 2: string spec) -> i32` (0; spec as `--impair`, or `off`)
- `get_port_impairment(1: i32 port) -> string` (the spec now applied, or `off`)
- `set_port_rate(1: i32 port, 2: double pps) -> i32` (0; pps 0 = unshaped)
- `get_port_rate(1: i32 port) -> double` (base rate outside rate bursts; 0 = unshaped)
A bad request (unknown port, bad spec or rate) comes back as a TApplicationException whose
message is the one-line reason; nothing is applied then. `LinkClient` is the matching client.
"""
from __future__ import annotations

from typing import Any, Callable

from thrift.Thrift import TApplicationException, TMessageType, TProcessor, TType

from p4target.switch.thrift.structs import ThriftCaller, ThriftStruct as _Struct

from p4target.switch.errors import SwitchError
from p4target.switch.links.control import LinkControl

SERVICE = "p4target_links"


class PortArgs(_Struct):
    thrift_spec = (None, (1, TType.I32, "port", None, None))


class ImpairmentArgs(_Struct):
    thrift_spec = (None, (1, TType.I32, "port", None, None), (2, TType.STRING, "spec", "UTF8", None))


class RateArgs(_Struct):
    thrift_spec = (None, (1, TType.I32, "port", None, None), (2, TType.DOUBLE, "pps", None, None))


class I32Result(_Struct):
    thrift_spec = ((0, TType.I32, "success", None, None),)


class StringResult(_Struct):
    thrift_spec = ((0, TType.STRING, "success", "UTF8", None),)


class DoubleResult(_Struct):
    thrift_spec = ((0, TType.DOUBLE, "success", None, None),)


# method -> (argument struct, result struct, argument names in call order)
METHODS: dict[str, tuple[type[_Struct], type[_Struct], tuple[str, ...]]] = {
    "set_port_impairment": (ImpairmentArgs, I32Result, ("port", "spec")),
    "get_port_impairment": (PortArgs, StringResult, ("port",)),
    "set_port_rate": (RateArgs, I32Result, ("port", "pps")),
    "get_port_rate": (PortArgs, DoubleResult, ("port",)),
}


class LinkHandler:
    """The service's calls on a `LinkControl`, in wire types; user errors become
    TApplicationException(message=reason)."""

    def __init__(self, links: LinkControl) -> None:
        self._links = links

    def set_port_impairment(self, port: int, spec: str) -> int:
        self._guard(lambda: self._links.set_impairment(port, spec or ""))
        return 0

    def get_port_impairment(self, port: int) -> str:
        imp = self._guard(lambda: self._links.impairment(port))
        return "off" if imp is None else imp.describe()

    def set_port_rate(self, port: int, pps: float) -> int:
        if pps is None or pps < 0:
            raise TApplicationException(TApplicationException.UNKNOWN,
                                        f"bad rate {pps} for port {port}: expected packets/s > 0 (or 0: off)")
        self._guard(lambda: self._links.set_rate(port, pps or None))
        return 0

    def get_port_rate(self, port: int) -> float:
        return self._guard(lambda: self._links.rate(port)) or 0.0

    @staticmethod
    def _guard(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except SwitchError as exc:
            raise TApplicationException(TApplicationException.UNKNOWN, str(exc)) from None


class LinkProcessor(TProcessor):
    """Serves METHODS of the "p4target_links" service on `handler` (a LinkHandler, possibly
    wrapped by the server's locking and logging)."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler

    def process(self, iprot: Any, oprot: Any) -> bool:
        name, _, seqid = iprot.readMessageBegin()
        method = METHODS.get(name)
        if method is None:
            iprot.skip(TType.STRUCT)
            iprot.readMessageEnd()
            self._send(oprot, name, seqid, TMessageType.EXCEPTION,
                       TApplicationException(TApplicationException.UNKNOWN_METHOD, f"unknown method {name}"))
            return True
        args_type, result_type, fields = method
        args = args_type()
        args.read(iprot)
        iprot.readMessageEnd()
        try:
            value = getattr(self._handler, name)(*(getattr(args, f) for f in fields))
            self._send(oprot, name, seqid, TMessageType.REPLY, result_type(success=value))
        except TApplicationException as exc:
            self._send(oprot, name, seqid, TMessageType.EXCEPTION, exc)
        except Exception as exc:  # reported to the client, as the generated processors do
            self._send(oprot, name, seqid, TMessageType.EXCEPTION,
                       TApplicationException(TApplicationException.INTERNAL_ERROR, str(exc)))
        return True

    @staticmethod
    def _send(oprot: Any, name: str, seqid: int, msg_type: int, body: Any) -> None:
        oprot.writeMessageBegin(name, msg_type, seqid)
        body.write(oprot)
        oprot.writeMessageEnd()
        oprot.trans.flush()


class LinkClient(ThriftCaller):
    """Client of the "p4target_links" service over a TMultiplexedProtocol for SERVICE."""

    def set_port_impairment(self, port: int, spec: str) -> int:
        return self._call("set_port_impairment", port=port, spec=spec)

    def get_port_impairment(self, port: int) -> str:
        return self._call("get_port_impairment", port=port)

    def set_port_rate(self, port: int, pps: float) -> int:
        return self._call("set_port_rate", port=port, pps=float(pps))

    def get_port_rate(self, port: int) -> float:
        return self._call("get_port_rate", port=port)

    def _call(self, name: str, **values: Any) -> Any:
        args_type, result_type, _ = METHODS[name]
        return self._invoke(name, args_type(**values), result_type())
