"""SetForwardingPipelineConfig / GetForwardingPipelineConfig: verify, save, commit, reconcile.

The device config (`p4_device_config`) is the raw BMv2 JSON, as simple_switch_grpc takes it.
"""
from __future__ import annotations

import json
from typing import Callable

from p4.v1 import p4runtime_pb2

from p4target.engine import Engine
from p4target.switch.target import SwitchTarget

from .errors import Code, P4RuntimeError, as_p4runtime_error, invalid
from .reconcile import replay
from .state import PipelineState
from .translate import Translator

Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


def verify(config: p4runtime_pb2.ForwardingPipelineConfig) -> dict:
    """Parse and check a config (BMv2 JSON loads, P4Info matches it); returns the JSON dict."""
    if not config.HasField("p4info"):
        raise invalid("the forwarding pipeline config has no P4Info")
    if not config.p4_device_config:
        raise invalid("the forwarding pipeline config has no device config (BMv2 JSON)")
    try:
        bmv2_json = json.loads(config.p4_device_config)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise invalid(f"device config is not BMv2 JSON: {str(exc)[:200]}") from None
    if not isinstance(bmv2_json, dict):
        raise invalid("device config is not a BMv2 JSON object")
    try:
        scratch = Engine(bmv2_json)
    except Exception as exc:  # whatever a config makes fail, the config cannot be realized
        raise invalid(f"device config rejected: {str(exc)[:2000]}") from None
    try:
        Translator(config.p4info, scratch)
    except P4RuntimeError:
        raise
    except Exception as exc:  # a P4Info the translator cannot read cannot be realized either
        raise invalid(f"P4Info rejected: {str(exc)[:2000]}") from None
    return bmv2_json


class PipelineConfigs:
    """The committed and the saved forwarding pipeline configs of one switch."""

    def __init__(self, target: SwitchTarget) -> None:
        self.target = target
        self.committed: p4runtime_pb2.ForwardingPipelineConfig | None = None
        self._saved: tuple[p4runtime_pb2.ForwardingPipelineConfig, dict] | None = None

    def set(self, req: p4runtime_pb2.SetForwardingPipelineConfigRequest,
            current: PipelineState | None, on_commit: Callable[[PipelineState], None]) -> None:
        """Run one SetForwardingPipelineConfig action; `on_commit` gets the new state."""
        action = req.action
        if action == Req.COMMIT:
            if req.HasField("config"):
                raise invalid("COMMIT takes no config: it realizes the one saved with VERIFY_AND_SAVE")
            if self._saved is None:
                raise P4RuntimeError(Code.FAILED_PRECONDITION, "COMMIT: no saved pipeline config")
            config, bmv2_json = self._saved
            self._commit(config, bmv2_json, None, on_commit)
            self._saved = None
            return
        if action not in (Req.VERIFY, Req.VERIFY_AND_SAVE, Req.VERIFY_AND_COMMIT, Req.RECONCILE_AND_COMMIT):
            raise invalid(f"unsupported pipeline config action {action}")
        bmv2_json = verify(req.config)
        if action == Req.VERIFY:
            return
        config = p4runtime_pb2.ForwardingPipelineConfig()
        config.CopyFrom(req.config)
        if action == Req.VERIFY_AND_SAVE:
            self._saved = (config, bmv2_json)
            return
        keep = current if action == Req.RECONCILE_AND_COMMIT else None
        if keep is not None and self.committed is not None and \
                self.committed.p4_device_config == config.p4_device_config and \
                self.committed.p4info == config.p4info:
            self.committed.cookie.CopyFrom(config.cookie)  # same program: state stays as it is
            return
        self._commit(config, bmv2_json, keep, on_commit)
        self._saved = None

    def _commit(self, config, bmv2_json: dict, keep: PipelineState | None,
                on_commit: Callable[[PipelineState], None]) -> None:
        made: list[PipelineState] = []

        def prepare(engine: Engine) -> None:
            tr = Translator(config.p4info, engine)
            if keep is None:
                made.append(PipelineState(tr, engine))
            else:
                with self.target.lock:
                    made.append(replay(keep, engine, tr))

        try:
            self.target.set_pipeline(bmv2_json, config.p4info, prepare=prepare)
        except P4RuntimeError:
            raise
        except Exception as exc:
            raise as_p4runtime_error(exc) from None
        self.committed = config
        on_commit(made[0])

    def get(self, req: p4runtime_pb2.GetForwardingPipelineConfigRequest) -> p4runtime_pb2.ForwardingPipelineConfig:
        if self.committed is None:
            raise P4RuntimeError(Code.FAILED_PRECONDITION, "no forwarding pipeline config is set")
        out = p4runtime_pb2.ForwardingPipelineConfig()
        if self.committed.HasField("cookie"):
            out.cookie.CopyFrom(self.committed.cookie)
        if req.response_type in (Get.ALL, Get.P4INFO_AND_COOKIE):
            out.p4info.CopyFrom(self.committed.p4info)
        if req.response_type in (Get.ALL, Get.DEVICE_CONFIG_AND_COOKIE):
            out.p4_device_config = self.committed.p4_device_config
        return out
