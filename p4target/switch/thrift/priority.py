"""The per-priority egress queue calls of BMv2's SimpleSwitch Thrift service.

Newer simple_switch versions serve `set_egress_priority_queue_depth(port, priority, depth)`
and `set_egress_priority_queue_rate(port, priority, rate_pps)`; the generated
`sswitch_runtime` package installed here predates them. This module adds them on the wire
(same method names, field ids 1..3 in argument order, i32 result) to the server's processor
and offers a client for callers that need them (`PriorityQueueClient`).
"""
from __future__ import annotations

from typing import Any

from sswitch_runtime import SimpleSwitch
from thrift.Thrift import TApplicationException, TMessageType, TType

from p4target.switch.thrift.structs import ThriftCaller, ThriftStruct as _Struct

PRIORITY_METHODS = ("set_egress_priority_queue_depth", "set_egress_priority_queue_rate")


class PriorityDepthArgs(_Struct):
    thrift_spec = (None, (1, TType.I32, "port_num", None, None), (2, TType.I32, "priority", None, None),
                   (3, TType.I32, "depth_pkts", None, None))


class PriorityRateArgs(_Struct):
    thrift_spec = (None, (1, TType.I32, "port_num", None, None), (2, TType.I32, "priority", None, None),
                   (3, TType.I64, "rate_pps", None, None))


class StatusResult(_Struct):
    thrift_spec = ((0, TType.I32, "success", None, None),)


class PriorityProcessor(SimpleSwitch.Processor):
    """SimpleSwitch processor that also serves the two per-priority queue calls; the handler
    must implement them."""

    def __init__(self, handler: Any) -> None:
        super().__init__(handler)
        self._processMap["set_egress_priority_queue_depth"] = PriorityProcessor._process_depth
        self._processMap["set_egress_priority_queue_rate"] = PriorityProcessor._process_rate

    def _process_depth(self, seqid: int, iprot: Any, oprot: Any) -> None:
        args = PriorityDepthArgs()
        args.read(iprot)
        iprot.readMessageEnd()
        self._reply("set_egress_priority_queue_depth", seqid, oprot,
                    lambda: self._handler.set_egress_priority_queue_depth(args.port_num, args.priority,
                                                                          args.depth_pkts))

    def _process_rate(self, seqid: int, iprot: Any, oprot: Any) -> None:
        args = PriorityRateArgs()
        args.read(iprot)
        iprot.readMessageEnd()
        self._reply("set_egress_priority_queue_rate", seqid, oprot,
                    lambda: self._handler.set_egress_priority_queue_rate(args.port_num, args.priority,
                                                                         args.rate_pps))

    @staticmethod
    def _reply(name: str, seqid: int, oprot: Any, call: Any) -> None:
        try:
            result: Any = StatusResult(success=call())
            msg_type = TMessageType.REPLY
        except TApplicationException as exc:
            result, msg_type = exc, TMessageType.EXCEPTION
        except Exception as exc:  # reported to the client, as the generated processors do
            result = TApplicationException(TApplicationException.INTERNAL_ERROR, str(exc))
            msg_type = TMessageType.EXCEPTION
        oprot.writeMessageBegin(name, msg_type, seqid)
        result.write(oprot)
        oprot.writeMessageEnd()
        oprot.trans.flush()


class PriorityQueueClient(ThriftCaller):
    """Client for the two per-priority calls over a (multiplexed "simple_switch") protocol."""

    def set_egress_priority_queue_depth(self, port_num: int, priority: int, depth_pkts: int) -> int:
        return self._call("set_egress_priority_queue_depth",
                          PriorityDepthArgs(port_num=port_num, priority=priority, depth_pkts=depth_pkts))

    def set_egress_priority_queue_rate(self, port_num: int, priority: int, rate_pps: int) -> int:
        return self._call("set_egress_priority_queue_rate",
                          PriorityRateArgs(port_num=port_num, priority=priority, rate_pps=rate_pps))

    def _call(self, name: str, args: _Struct) -> int:
        return self._invoke(name, args, StatusResult())
