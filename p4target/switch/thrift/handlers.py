"""BMv2 runtime Thrift services ("standard", "simple_pre_lag", "simple_switch") on a SwitchTarget.

Each handler method implements the call of the same name in BMv2's IDL on top of the
engine's runtime API. Errors are raised as the IDL's typed exceptions with BMv2's codes, so
`simple_switch_CLI` prints them as it does against BMv2. The server (`server`) holds
the target's lock around every call.
"""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Sequence

from bm_runtime.simple_pre_lag.ttypes import InvalidMcOperation, McOperationErrorCode
from bm_runtime.standard.ttypes import (BmActionEntry, BmActionEntryType, BmAddEntryOptions, BmConfig,
                                        BmCounterValue, BmMatchParam, BmMatchParamExact, BmMatchParamLPM,
                                        BmMatchParamRange, BmMatchParamTernary, BmMatchParamType,
                                        BmMatchParamValid, BmMeterRateConfig, BmMtActProfGroup,
                                        BmMtActProfMember, BmMtEntry, BmResourceType, CounterOperationErrorCode,
                                        DevMgrErrorCode, DevMgrPortInfo, IdLookupErrorCode, InvalidCounterOperation,
                                        InvalidCrcOperation, InvalidDevMgrOperation, InvalidIdLookup,
                                        InvalidLearnOperation, InvalidMeterOperation, InvalidParseVSetOperation,
                                        InvalidRegisterOperation, InvalidSwapOperation, InvalidTableOperation,
                                        LearnOperationErrorCode, MeterOperationErrorCode,
                                        ParseVSetOperationErrorCode, RegisterOperationErrorCode,
                                        SwapOperationErrorCode, TableOperationErrorCode, CrcErrorCode)
from sswitch_runtime.ttypes import (InvalidMirroringOperation, MirroringOperationErrorCode,
                                    MirroringSessionConfig)

from p4target.engine import (DuplicateEntryError, Engine, EngineError, Exact, InvalidEntryError, Lpm,
                             NoSuchHandleError, Optional, ProgramLoadError, Range, ResourceExhaustedError,
                             Ternary, UnknownNameError, Valid)
from p4target.switch.target import SwitchTarget

TOC = TableOperationErrorCode


class ConfigText:
    """The JSON text the current pipeline was loaded from, so bm_get_config returns it byte for
    byte (the CLI compares its md5 with a local file); re-serialised after a pipeline push."""

    def __init__(self, target: SwitchTarget, text: str | None = None) -> None:
        self._target = target
        self._text = text
        self._for = target.bmv2_json

    def set(self, text: str) -> None:
        self._text, self._for = text, self._target.bmv2_json

    def get(self) -> str:
        current = self._target.bmv2_json
        if current is None:
            return ""
        if self._text is None or current is not self._for:
            self._text, self._for = json.dumps(current), current
        return self._text


def _bytes(value: int, width_bits: int) -> bytes:
    return value.to_bytes(max(1, (width_bits + 7) // 8), "big")


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


class StandardHandler:
    """The "standard" service: tables, action profiles, counters, meters, registers, config."""

    def __init__(self, target: SwitchTarget, config: ConfigText, ports: dict[int, str] | None = None,
                 thrift_port: int = 0) -> None:
        self.target = target
        self.config = config
        self.ports = ports or {}
        self.thrift_port = thrift_port
        self._staged: tuple[dict, str] | None = None

    # -- helpers -------------------------------------------------------------------------
    def _engine(self, exc: type = InvalidTableOperation, code: int = TOC.INVALID_TABLE_NAME) -> Engine:
        engine = self.target.engine
        if engine is None:
            raise exc(code=code)
        return engine

    def _table(self, name: str) -> tuple[Engine, Any]:
        engine = self._engine()
        try:
            return engine, engine.table(name)
        except UnknownNameError:
            raise InvalidTableOperation(code=TOC.INVALID_TABLE_NAME) from None

    @staticmethod
    def _key(table: Any, match_key: Sequence[BmMatchParam]) -> list:
        if len(match_key) != len(table.keys):
            raise InvalidTableOperation(code=TOC.BAD_MATCH_KEY)
        key = []
        for param, field in zip(match_key, table.keys):
            t = param.type
            if t == BmMatchParamType.EXACT:
                key.append(Exact(_int(param.exact.key)))
            elif t == BmMatchParamType.LPM:
                key.append(Lpm(_int(param.lpm.key), param.lpm.prefix_length))
            elif t == BmMatchParamType.TERNARY:
                value, mask = _int(param.ternary.key), _int(param.ternary.mask)
                if field.match_type == "optional":
                    key.append(Optional(value, wildcard=mask == 0))
                else:
                    key.append(Ternary(value, mask))
            elif t == BmMatchParamType.VALID:
                key.append(Valid(bool(param.valid.key)))
            elif t == BmMatchParamType.RANGE:
                key.append(Range(_int(param.range.start), _int(param.range.end_)))
            else:
                raise InvalidTableOperation(code=TOC.BAD_MATCH_KEY)
        return key

    @staticmethod
    def _params(table_or_prof: Any, action: str, data: Sequence[bytes]) -> list[int]:
        spec = table_or_prof.actions.get(action)
        if spec is None:
            raise InvalidTableOperation(code=TOC.INVALID_ACTION_NAME)
        if len(data) != len(spec.params):
            raise InvalidTableOperation(code=TOC.BAD_ACTION_DATA)
        return [_int(d) for d in data]

    @staticmethod
    def _priority(table: Any, options: BmAddEntryOptions | None) -> int | None:
        if table.match_type != "ternary":
            return None
        return options.priority if options is not None and options.priority is not None else 0

    @staticmethod
    def _table_error(exc: EngineError) -> InvalidTableOperation:
        if isinstance(exc, DuplicateEntryError):
            code = TOC.DUPLICATE_ENTRY
        elif isinstance(exc, NoSuchHandleError):
            code = TOC.INVALID_HANDLE
        elif isinstance(exc, ResourceExhaustedError):
            code = TOC.TABLE_FULL
        elif isinstance(exc, UnknownNameError):
            code = TOC.INVALID_ACTION_NAME
        elif isinstance(exc, InvalidEntryError):
            text = str(exc)
            code = (TOC.DEFAULT_ACTION_IS_CONST if "const default" in text
                    else TOC.BAD_ACTION_DATA if "data" in text or "parameter" in text
                    else TOC.BAD_MATCH_KEY)
        else:
            code = TOC.ERROR
        return InvalidTableOperation(code=code)

    def _match_params(self, table: Any, entry: Any) -> list[BmMatchParam]:
        params = []
        for value, field in zip(entry.key, table.keys):
            w = field.width
            if isinstance(value, Valid):
                params.append(BmMatchParam(type=BmMatchParamType.VALID, valid=BmMatchParamValid(value.valid)))
            elif isinstance(value, Lpm):
                params.append(BmMatchParam(type=BmMatchParamType.LPM,
                                           lpm=BmMatchParamLPM(_bytes(value.value, w), value.prefix_len)))
            elif isinstance(value, Ternary):
                params.append(BmMatchParam(type=BmMatchParamType.TERNARY, ternary=BmMatchParamTernary(
                    _bytes(value.value, w), _bytes(value.mask, w))))
            elif isinstance(value, Range):
                params.append(BmMatchParam(type=BmMatchParamType.RANGE, range=BmMatchParamRange(
                    _bytes(value.low, w), _bytes(value.high, w))))
            elif isinstance(value, Optional):
                mask = 0 if value.wildcard else (1 << w) - 1
                params.append(BmMatchParam(type=BmMatchParamType.TERNARY, ternary=BmMatchParamTernary(
                    _bytes(value.value, w), _bytes(mask, w))))
            else:
                v = value.value if isinstance(value, Exact) else int(value)
                params.append(BmMatchParam(type=BmMatchParamType.EXACT, exact=BmMatchParamExact(_bytes(v, w))))
        return params

    @staticmethod
    def _action_data(actions: dict, action: str | None, data: Sequence[int]) -> list[bytes]:
        spec = actions.get(action) if action else None
        widths = [bw for _, bw in spec.params] if spec is not None else [32] * len(data)
        return [_bytes(v, w) for v, w in zip(data, widths)]

    def _action_entry(self, table: Any, entry: Any) -> BmActionEntry:
        if entry.member is not None:
            return BmActionEntry(action_type=BmActionEntryType.MBR_HANDLE, mbr_handle=entry.member)
        if entry.group is not None:
            return BmActionEntry(action_type=BmActionEntryType.GRP_HANDLE, grp_handle=entry.group)
        return BmActionEntry(action_type=BmActionEntryType.ACTION_DATA, action_name=entry.action,
                             action_data=self._action_data(table.actions, entry.action, entry.action_data))

    def _mt_entry(self, table: Any, entry: Any) -> BmMtEntry:
        priority = entry.priority if table.match_type == "ternary" else -1
        return BmMtEntry(match_key=self._match_params(table, entry),
                         options=BmAddEntryOptions(priority=priority), entry_handle=entry.handle,
                         action_entry=self._action_entry(table, entry))

    # -- match tables --------------------------------------------------------------------
    def bm_mt_get_num_entries(self, cxt_id: int, table_name: str) -> int:
        return len(self._table(table_name)[1].entries)

    def bm_mt_clear_entries(self, cxt_id: int, table_name: str, reset_default_entry: bool) -> None:
        engine, _ = self._table(table_name)
        engine.table_clear(table_name)
        if reset_default_entry:
            engine.table_reset_default(table_name)

    def _add(self, table_name: str, match_key: Sequence[BmMatchParam], options: Any, **target: Any) -> int:
        engine, table = self._table(table_name)
        key = self._key(table, match_key)
        try:
            return engine.table_add(table_name, key, priority=self._priority(table, options), **target)
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_add_entry(self, cxt_id: int, table_name: str, match_key: list, action_name: str,
                        action_data: list, options: Any) -> int:
        _, table = self._table(table_name)
        if table.profile is not None:
            raise InvalidTableOperation(code=TOC.WRONG_TABLE_TYPE)
        data = self._params(table, action_name, action_data)
        return self._add(table_name, match_key, options, action=action_name, action_data=data)

    def bm_mt_indirect_add_entry(self, cxt_id: int, table_name: str, match_key: list, mbr_handle: int,
                                 options: Any) -> int:
        _, table = self._table(table_name)
        if table.profile is None:
            raise InvalidTableOperation(code=TOC.WRONG_TABLE_TYPE)
        if mbr_handle not in table.profile.members:
            raise InvalidTableOperation(code=TOC.INVALID_MBR_HANDLE)
        return self._add(table_name, match_key, options, member=mbr_handle)

    def bm_mt_indirect_ws_add_entry(self, cxt_id: int, table_name: str, match_key: list, grp_handle: int,
                                    options: Any) -> int:
        _, table = self._table(table_name)
        if table.profile is None or table.profile.selector is None:
            raise InvalidTableOperation(code=TOC.WRONG_TABLE_TYPE)
        if grp_handle not in table.profile.groups:
            raise InvalidTableOperation(code=TOC.INVALID_GRP_HANDLE)
        return self._add(table_name, match_key, options, group=grp_handle)

    def bm_mt_set_default_action(self, cxt_id: int, table_name: str, action_name: str, action_data: list) -> None:
        engine, table = self._table(table_name)
        data = self._params(table, action_name, action_data)
        try:
            engine.table_set_default(table_name, action_name, data)
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_reset_default_entry(self, cxt_id: int, table_name: str) -> None:
        engine, _ = self._table(table_name)
        engine.table_reset_default(table_name)

    bm_mt_indirect_reset_default_entry = bm_mt_reset_default_entry

    def bm_mt_delete_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> None:
        engine, _ = self._table(table_name)
        try:
            engine.table_delete(table_name, entry_handle)
        except EngineError as exc:
            raise self._table_error(exc) from None

    bm_mt_indirect_delete_entry = bm_mt_delete_entry

    def bm_mt_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int, action_name: str,
                           action_data: list) -> None:
        engine, table = self._table(table_name)
        data = self._params(table, action_name, action_data)
        try:
            engine.table_modify(table_name, entry_handle, action_name, data)
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_indirect_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int, mbr_handle: int) -> None:
        engine, _ = self._table(table_name)
        try:
            engine.table_modify(table_name, entry_handle, None, member=mbr_handle)
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_indirect_ws_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int,
                                       grp_handle: int) -> None:
        engine, _ = self._table(table_name)
        try:
            engine.table_modify(table_name, entry_handle, None, group=grp_handle)
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_set_entry_ttl(self, cxt_id: int, table_name: str, entry_handle: int, timeout_ms: int) -> None:
        self._table(table_name)
        raise InvalidTableOperation(code=TOC.AGEING_DISABLED)

    bm_mt_indirect_set_entry_ttl = bm_mt_set_entry_ttl

    def bm_mt_indirect_set_default_member(self, cxt_id: int, table_name: str, mbr_handle: int) -> None:
        self._table(table_name)
        raise InvalidTableOperation(code=TOC.ERROR)

    bm_mt_indirect_ws_set_default_group = bm_mt_indirect_set_default_member

    def bm_mt_get_entries(self, cxt_id: int, table_name: str) -> list:
        engine, table = self._table(table_name)
        return [self._mt_entry(table, e) for e in engine.table_entries(table_name)]

    def bm_mt_get_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> BmMtEntry:
        _, table = self._table(table_name)
        try:
            return self._mt_entry(table, table.get(entry_handle))
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_get_entry_from_key(self, cxt_id: int, table_name: str, match_key: list, options: Any) -> BmMtEntry:
        engine, table = self._table(table_name)
        try:
            entry = engine.table_find(table_name, self._key(table, match_key), self._priority(table, options))
        except EngineError as exc:
            raise self._table_error(exc) from None
        if entry is None:
            raise InvalidTableOperation(code=TOC.BAD_MATCH_KEY)
        return self._mt_entry(table, entry)

    def bm_mt_get_default_entry(self, cxt_id: int, table_name: str) -> BmActionEntry:
        engine, table = self._table(table_name)
        action, data = engine.table_get_default(table_name)
        if action is None:
            return BmActionEntry(action_type=BmActionEntryType.NONE)
        return BmActionEntry(action_type=BmActionEntryType.ACTION_DATA, action_name=action,
                             action_data=self._action_data(table.actions, action, data))

    def bm_mt_read_counter(self, cxt_id: int, table_name: str, entry_handle: int) -> BmCounterValue:
        engine, table = self._table(table_name)
        if not table.with_counters:
            raise InvalidTableOperation(code=TOC.COUNTERS_DISABLED)
        try:
            packets, nbytes = engine.table_entry_counter(table_name, entry_handle)
        except EngineError as exc:
            raise self._table_error(exc) from None
        return BmCounterValue(bytes=nbytes, packets=packets)

    def bm_mt_reset_counters(self, cxt_id: int, table_name: str) -> None:
        engine, table = self._table(table_name)
        if not table.with_counters:
            raise InvalidTableOperation(code=TOC.COUNTERS_DISABLED)
        for handle in list(table.entries):
            engine.table_entry_counter_write(table_name, handle, 0, 0)

    def bm_mt_write_counter(self, cxt_id: int, table_name: str, entry_handle: int, value: BmCounterValue) -> None:
        engine, table = self._table(table_name)
        if not table.with_counters:
            raise InvalidTableOperation(code=TOC.COUNTERS_DISABLED)
        try:
            engine.table_entry_counter_write(table_name, entry_handle, value.packets, value.bytes)
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_set_meter_rates(self, cxt_id: int, table_name: str, entry_handle: int, rates: list) -> None:
        engine, table = self._table(table_name)
        if table.direct_meter is None:
            raise InvalidTableOperation(code=TOC.METERS_DISABLED)
        try:
            engine.table_entry_meter_set(table_name, entry_handle,
                                         [(r.units_per_micros, r.burst_size) for r in rates])
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_get_meter_rates(self, cxt_id: int, table_name: str, entry_handle: int) -> list:
        engine, table = self._table(table_name)
        if table.direct_meter is None:
            raise InvalidTableOperation(code=TOC.METERS_DISABLED)
        try:
            rates = engine.table_entry_meter_get(table_name, entry_handle) or []
        except EngineError as exc:
            raise self._table_error(exc) from None
        return [BmMeterRateConfig(units_per_micros=r, burst_size=b) for r, b in rates]

    # -- action profiles -----------------------------------------------------------------
    def _profile(self, name: str) -> tuple[Engine, Any]:
        engine = self._engine(code=TOC.INVALID_ACTION_PROFILE_NAME)
        try:
            return engine, engine.action_profile(name)
        except UnknownNameError:
            raise InvalidTableOperation(code=TOC.INVALID_ACTION_PROFILE_NAME) from None

    def _prof_call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except NoSuchHandleError as exc:
            text = str(exc)
            code = TOC.INVALID_GRP_HANDLE if "group" in text and "member" not in text else TOC.INVALID_MBR_HANDLE
            if "is not in group" in text:
                code = TOC.MBR_NOT_IN_GRP
            raise InvalidTableOperation(code=code) from None
        except InvalidEntryError as exc:
            code = TOC.MBR_STILL_USED if "still" in str(exc) else TOC.BAD_ACTION_DATA
            raise InvalidTableOperation(code=code) from None
        except EngineError as exc:
            raise self._table_error(exc) from None

    def bm_mt_act_prof_add_member(self, cxt_id: int, act_prof_name: str, action_name: str, action_data: list) -> int:
        engine, prof = self._profile(act_prof_name)
        data = self._params(prof, action_name, action_data)
        return self._prof_call(engine.act_prof_add_member, act_prof_name, action_name, data)

    def bm_mt_act_prof_delete_member(self, cxt_id: int, act_prof_name: str, mbr_handle: int) -> None:
        engine, _ = self._profile(act_prof_name)
        self._prof_call(engine.act_prof_delete_member, act_prof_name, mbr_handle)

    def bm_mt_act_prof_modify_member(self, cxt_id: int, act_prof_name: str, mbr_handle: int, action_name: str,
                                     action_data: list) -> None:
        engine, prof = self._profile(act_prof_name)
        data = self._params(prof, action_name, action_data)
        self._prof_call(engine.act_prof_modify_member, act_prof_name, mbr_handle, action_name, data)

    def bm_mt_act_prof_create_group(self, cxt_id: int, act_prof_name: str) -> int:
        engine, prof = self._profile(act_prof_name)
        if prof.selector is None:
            raise InvalidTableOperation(code=TOC.NO_ACTION_PROFILE_SELECTION)
        return self._prof_call(engine.act_prof_create_group, act_prof_name)

    def bm_mt_act_prof_delete_group(self, cxt_id: int, act_prof_name: str, grp_handle: int) -> None:
        engine, _ = self._profile(act_prof_name)
        self._prof_call(engine.act_prof_delete_group, act_prof_name, grp_handle)

    def bm_mt_act_prof_add_member_to_group(self, cxt_id: int, act_prof_name: str, mbr_handle: int,
                                           grp_handle: int) -> None:
        engine, prof = self._profile(act_prof_name)
        if grp_handle not in prof.groups:
            raise InvalidTableOperation(code=TOC.INVALID_GRP_HANDLE)
        self._prof_call(engine.act_prof_add_member_to_group, act_prof_name, mbr_handle, grp_handle)

    def bm_mt_act_prof_remove_member_from_group(self, cxt_id: int, act_prof_name: str, mbr_handle: int,
                                                grp_handle: int) -> None:
        engine, _ = self._profile(act_prof_name)
        self._prof_call(engine.act_prof_remove_member_from_group, act_prof_name, mbr_handle, grp_handle)

    def _member(self, prof: Any, handle: int) -> BmMtActProfMember:
        action, data = prof.members[handle]
        return BmMtActProfMember(mbr_handle=handle, action_name=action,
                                 action_data=self._action_data(prof.actions, action, data))

    def bm_mt_act_prof_get_members(self, cxt_id: int, act_prof_name: str) -> list:
        _, prof = self._profile(act_prof_name)
        return [self._member(prof, h) for h in sorted(prof.members)]

    def bm_mt_act_prof_get_member(self, cxt_id: int, act_prof_name: str, mbr_handle: int) -> BmMtActProfMember:
        _, prof = self._profile(act_prof_name)
        if mbr_handle not in prof.members:
            raise InvalidTableOperation(code=TOC.INVALID_MBR_HANDLE)
        return self._member(prof, mbr_handle)

    def bm_mt_act_prof_get_groups(self, cxt_id: int, act_prof_name: str) -> list:
        _, prof = self._profile(act_prof_name)
        return [BmMtActProfGroup(grp_handle=h, mbr_handles=list(prof.groups[h])) for h in sorted(prof.groups)]

    def bm_mt_act_prof_get_group(self, cxt_id: int, act_prof_name: str, grp_handle: int) -> BmMtActProfGroup:
        _, prof = self._profile(act_prof_name)
        if grp_handle not in prof.groups:
            raise InvalidTableOperation(code=TOC.INVALID_GRP_HANDLE)
        return BmMtActProfGroup(grp_handle=grp_handle, mbr_handles=list(prof.groups[grp_handle]))

    # -- counters, meters, registers -----------------------------------------------------
    def _extern(self, exc: type, codes: Any, fn_name: str, name: str, *args: Any) -> Any:
        engine = self._engine(exc, codes.ERROR)
        try:
            return getattr(engine, fn_name)(name, *args)
        except UnknownNameError:
            bad_name = {InvalidCounterOperation: "INVALID_COUNTER_NAME", InvalidMeterOperation: "INVALID_METER_NAME",
                        InvalidRegisterOperation: "INVALID_REGISTER_NAME"}[exc]
            raise exc(code=getattr(codes, bad_name)) from None
        except (InvalidEntryError, IndexError):
            raise exc(code=codes.INVALID_INDEX) from None
        except EngineError:
            raise exc(code=codes.ERROR) from None

    def bm_counter_read(self, cxt_id: int, counter_name: str, index: int) -> BmCounterValue:
        packets, nbytes = self._extern(InvalidCounterOperation, CounterOperationErrorCode, "counter_read",
                                       counter_name, index)
        return BmCounterValue(bytes=nbytes, packets=packets)

    def bm_counter_reset_all(self, cxt_id: int, counter_name: str) -> None:
        self._extern(InvalidCounterOperation, CounterOperationErrorCode, "counter_reset", counter_name)

    def bm_counter_write(self, cxt_id: int, counter_name: str, index: int, value: BmCounterValue) -> None:
        self._extern(InvalidCounterOperation, CounterOperationErrorCode, "counter_write", counter_name, index,
                     value.packets, value.bytes)

    def bm_meter_set_rates(self, cxt_id: int, meter_array_name: str, index: int, rates: list) -> None:
        self._extern(InvalidMeterOperation, MeterOperationErrorCode, "meter_set_rates", meter_array_name, index,
                     [(r.units_per_micros, r.burst_size) for r in rates])

    def bm_meter_array_set_rates(self, cxt_id: int, meter_array_name: str, rates: list) -> None:
        meter = self._extern(InvalidMeterOperation, MeterOperationErrorCode, "meter", meter_array_name)
        for index in range(meter.size):
            self.bm_meter_set_rates(cxt_id, meter_array_name, index, rates)

    def bm_meter_get_rates(self, cxt_id: int, meter_array_name: str, index: int) -> list:
        rates = self._extern(InvalidMeterOperation, MeterOperationErrorCode, "meter_get_rates",
                             meter_array_name, index) or []
        return [BmMeterRateConfig(units_per_micros=r, burst_size=b) for r, b in rates]

    def bm_register_read(self, cxt_id: int, register_array_name: str, idx: int) -> int:
        return self._extern(InvalidRegisterOperation, RegisterOperationErrorCode, "register_read",
                            register_array_name, idx)

    def bm_register_read_all(self, cxt_id: int, register_array_name: str) -> list:
        reg = self._extern(InvalidRegisterOperation, RegisterOperationErrorCode, "register", register_array_name)
        return list(reg.values)

    def bm_register_write(self, cxt_id: int, register_array_name: str, index: int, value: int) -> None:
        self._extern(InvalidRegisterOperation, RegisterOperationErrorCode, "register_write", register_array_name,
                     index, value)

    def bm_register_write_range(self, cxt_id: int, register_array_name: str, start_index: int, end_index: int,
                                value: int) -> None:
        reg = self._extern(InvalidRegisterOperation, RegisterOperationErrorCode, "register", register_array_name)
        if not 0 <= start_index <= end_index < reg.size:
            raise InvalidRegisterOperation(code=RegisterOperationErrorCode.INVALID_INDEX)
        for index in range(start_index, end_index + 1):
            self.bm_register_write(cxt_id, register_array_name, index, value)

    def bm_register_reset(self, cxt_id: int, register_array_name: str) -> None:
        self._extern(InvalidRegisterOperation, RegisterOperationErrorCode, "register_reset", register_array_name)

    # -- parser value sets (values are big-endian bytes of the unpadded key) --------------
    def _vset(self, fn_name: str, name: str, *args: Any) -> Any:
        engine = self._engine(InvalidParseVSetOperation, ParseVSetOperationErrorCode.ERROR)
        try:
            return getattr(engine, fn_name)(name, *args)
        except UnknownNameError:
            raise InvalidParseVSetOperation(code=ParseVSetOperationErrorCode.INVALID_PARSE_VSET_NAME) from None
        except EngineError:
            raise InvalidParseVSetOperation(code=ParseVSetOperationErrorCode.ERROR) from None

    def bm_parse_vset_add(self, cxt_id: int, parse_vset_name: str, value: bytes) -> None:
        self._vset("parse_vset_add", parse_vset_name, int.from_bytes(value, "big"))

    def bm_parse_vset_remove(self, cxt_id: int, parse_vset_name: str, value: bytes) -> None:
        self._vset("parse_vset_remove", parse_vset_name, int.from_bytes(value, "big"))

    def bm_parse_vset_get(self, cxt_id: int, parse_vset_name: str) -> list[bytes]:
        vs = self._vset("parse_vset", parse_vset_name)
        return [v.to_bytes((vs.bitwidth + 7) // 8, "big") for v in vs.values]

    def bm_parse_vset_clear(self, cxt_id: int, parse_vset_name: str) -> None:
        self._vset("parse_vset_clear", parse_vset_name)

    # -- features this target does not offer over Thrift ---------------------------------
    def bm_learning_ack(self, *args: Any) -> None:
        raise InvalidLearnOperation(code=LearnOperationErrorCode.ERROR)

    bm_learning_ack_buffer = bm_learning_set_timeout = bm_learning_set_buffer_size = bm_learning_ack

    def bm_set_crc16_custom_parameters(self, *args: Any) -> None:
        raise InvalidCrcOperation(code=CrcErrorCode.INVALID_CALCULATION_NAME)

    bm_set_crc32_custom_parameters = bm_set_crc16_custom_parameters

    def bm_dev_mgr_add_port(self, *args: Any) -> None:
        raise InvalidDevMgrOperation(code=DevMgrErrorCode.ERROR)

    bm_dev_mgr_remove_port = bm_dev_mgr_add_port

    def bm_dev_mgr_show_ports(self) -> list:
        return [DevMgrPortInfo(port_num=p, iface_name=i, is_up=True, extra={}) for p, i in sorted(self.ports.items())]

    # -- configuration -------------------------------------------------------------------
    def bm_get_config(self) -> str:
        return self.config.get()

    def bm_get_config_md5(self) -> bytes:
        return hashlib.md5(self.config.get().encode()).digest()

    def bm_load_new_config(self, config_str: str) -> None:
        """Stage a new program (checked now, as BMv2 builds it before the swap); like BMv2, a
        second one before `swap_configs` is refused with ONGOING_SWAP. A program that does not
        load is refused (BMv2's Thrift API has no code of its own for it)."""
        if self._staged is not None:
            raise InvalidSwapOperation(code=SwapOperationErrorCode.ONGOING_SWAP)
        try:
            parsed = json.loads(config_str)
            Engine(parsed)  # validate now, as BMv2 does before the swap
        except (ValueError, RecursionError, ProgramLoadError, EngineError):
            raise InvalidSwapOperation(code=SwapOperationErrorCode.CONFIG_SWAP_DISABLED) from None
        self._staged = (parsed, config_str)

    def bm_swap_configs(self) -> None:
        if self._staged is None:
            raise InvalidSwapOperation(code=SwapOperationErrorCode.NO_ONGOING_SWAP)
        parsed, text = self._staged
        self._staged = None
        self.target.set_pipeline(parsed, None)
        self.config.set(text)

    def bm_reset_state(self) -> None:
        current = self.target.bmv2_json
        if current is not None:
            self.target.set_pipeline(current, self.target.p4info)

    def bm_serialize_state(self) -> str:
        return ""

    def bm_mgmt_get_info(self) -> BmConfig:
        return BmConfig(device_id=self.target.device_id, thrift_port=self.thrift_port,
                        notifications_socket="", elogger_socket="", debugger_socket="")

    def bm_get_id_from_name(self, cxt_id: int, resource_type: int, resource_name: str) -> int:
        program = self.target.bmv2_json or {}
        sections = {BmResourceType.COUNTER: ["counter_arrays"], BmResourceType.METER: ["meter_arrays"],
                    BmResourceType.REGISTER: ["register_arrays"], BmResourceType.LEARNING_LIST: ["learn_lists"]}
        if resource_type in (BmResourceType.MATCH_TABLE, BmResourceType.ACTION_PROFILE):
            key = "tables" if resource_type == BmResourceType.MATCH_TABLE else "action_profiles"
            items = [o for p in program.get("pipelines", []) for o in p.get(key, [])]
        elif resource_type in sections:
            items = [o for s in sections[resource_type] for o in program.get(s, [])]
        else:
            raise InvalidIdLookup(code=IdLookupErrorCode.INVALID_RESOURCE_TYPE)
        for obj in items:
            if obj.get("name") == resource_name:
                return int(obj["id"])
        raise InvalidIdLookup(code=IdLookupErrorCode.INVALID_RESOURCE_NAME)


def _port_map(text: str | None) -> list[int]:
    """BMv2's port bitmap string ('1' at position len-1-p means port p) -> sorted ports."""
    if not text:
        return []
    if set(text) - {"0", "1"}:
        raise InvalidMcOperation(code=McOperationErrorCode.ERROR)
    return [p for p, c in enumerate(reversed(text)) if c == "1"]


class PreHandler:
    """The "simple_pre_lag" (and "simple_pre") service: multicast groups and L1 nodes."""

    def __init__(self, target: SwitchTarget) -> None:
        self.target = target

    def _engine(self) -> Engine:
        engine = self.target.engine
        if engine is None:
            raise InvalidMcOperation(code=McOperationErrorCode.ERROR)
        return engine

    def bm_mc_mgrp_create(self, cxt_id: int, mgrp: int) -> int:
        try:
            self._engine().mc_mgrp_create(mgrp)
        except EngineError:
            raise InvalidMcOperation(code=McOperationErrorCode.INVALID_MGID) from None
        return mgrp

    def bm_mc_mgrp_destroy(self, cxt_id: int, mgrp_handle: int) -> None:
        try:
            self._engine().mc_mgrp_destroy(mgrp_handle)
        except EngineError:
            raise InvalidMcOperation(code=McOperationErrorCode.INVALID_MGRP_HANDLE) from None

    def bm_mc_node_create(self, cxt_id: int, rid: int, port_map: str, lag_map: str | None = None) -> int:
        if _port_map(lag_map):
            raise InvalidMcOperation(code=McOperationErrorCode.ERROR)  # LAGs are not modelled
        return self._engine().mc_node_create(rid, _port_map(port_map))

    def bm_mc_node_update(self, cxt_id: int, l1_handle: int, port_map: str, lag_map: str | None = None) -> None:
        try:
            self._engine().mc_node_update(l1_handle, _port_map(port_map))
        except EngineError:
            raise InvalidMcOperation(code=McOperationErrorCode.INVALID_L1_HANDLE) from None

    def bm_mc_node_associate(self, cxt_id: int, mgrp_handle: int, l1_handle: int) -> None:
        engine = self._engine()
        if mgrp_handle not in engine.mc_groups:
            raise InvalidMcOperation(code=McOperationErrorCode.INVALID_MGRP_HANDLE)
        try:
            engine.mc_node_associate(mgrp_handle, l1_handle)
        except EngineError:
            raise InvalidMcOperation(code=McOperationErrorCode.INVALID_L1_HANDLE) from None

    def bm_mc_node_dissociate(self, cxt_id: int, mgrp_handle: int, l1_handle: int) -> None:
        engine = self._engine()
        if mgrp_handle not in engine.mc_groups:
            raise InvalidMcOperation(code=McOperationErrorCode.INVALID_MGRP_HANDLE)
        try:
            engine.mc_node_dissociate(mgrp_handle, l1_handle)
        except EngineError:
            raise InvalidMcOperation(code=McOperationErrorCode.INVALID_L1_HANDLE) from None

    def bm_mc_node_destroy(self, cxt_id: int, l1_handle: int) -> None:
        try:
            self._engine().mc_node_destroy(l1_handle)
        except EngineError:
            raise InvalidMcOperation(code=McOperationErrorCode.INVALID_L1_HANDLE) from None

    def bm_mc_set_lag_membership(self, cxt_id: int, lag_index: int, port_map: str) -> None:
        raise InvalidMcOperation(code=McOperationErrorCode.ERROR)

    def bm_mc_get_entries(self, cxt_id: int) -> str:
        engine = self._engine()
        nodes = sorted(engine.mc_nodes.items())
        return json.dumps({
            "mgrps": [{"id": g, "l1_handles": list(n)} for g, n in sorted(engine.mc_groups.items())],
            "l1_handles": [{"handle": h, "rid": rid, "l2_handle": h} for h, (rid, _) in nodes],
            "l2_handles": [{"handle": h, "ports": sorted(ports), "lags": []} for h, (_, ports) in nodes],
            "lags": [],
        })


class SimpleSwitchHandler:
    """The "simple_switch" service: mirroring sessions, egress queue depths and rates, clock."""

    def __init__(self, target: SwitchTarget) -> None:
        self.target = target
        self._started = time.monotonic()

    def _engine(self) -> Engine:
        engine = self.target.engine
        if engine is None:
            raise InvalidMirroringOperation(code=MirroringOperationErrorCode.SESSION_NOT_FOUND)
        return engine

    def mirroring_session_add(self, mirror_id: int, config: MirroringSessionConfig) -> None:
        try:
            self._engine().mirroring_add(mirror_id, config.port, 0, config.mgid)
        except EngineError:
            raise InvalidMirroringOperation(code=MirroringOperationErrorCode.SESSION_NOT_FOUND) from None

    def mirroring_session_delete(self, mirror_id: int) -> None:
        try:
            self._engine().mirroring_delete(mirror_id)
        except EngineError:
            raise InvalidMirroringOperation(code=MirroringOperationErrorCode.SESSION_NOT_FOUND) from None

    def mirroring_session_get(self, mirror_id: int) -> MirroringSessionConfig:
        try:
            session = self._engine().mirroring_get(mirror_id)
        except EngineError:
            raise InvalidMirroringOperation(code=MirroringOperationErrorCode.SESSION_NOT_FOUND) from None
        return MirroringSessionConfig(port=session.port, mgid=session.mgrp)

    def mirroring_mapping_add(self, mirror_id: int, egress_port: int) -> int:
        self.mirroring_session_add(mirror_id, MirroringSessionConfig(port=egress_port))
        return 0

    def mirroring_mapping_delete(self, mirror_id: int) -> int:
        try:
            self.mirroring_session_delete(mirror_id)
        except InvalidMirroringOperation:
            return 1
        return 0

    def mirroring_mapping_get_egress_port(self, mirror_id: int) -> int:
        try:
            port = self.mirroring_session_get(mirror_id).port
        except InvalidMirroringOperation:
            return -1
        return -1 if port is None else port

    def _priority_ok(self, priority: int) -> bool:
        return 0 <= priority < self.target.priority_queues

    def set_egress_queue_depth(self, port_num: int, depth_pkts: int) -> int:
        self.target.set_queue_depth(depth_pkts, port_num)
        return 0

    def set_all_egress_queue_depths(self, depth_pkts: int) -> int:
        self.target.set_queue_depth(depth_pkts)
        return 0

    def set_egress_priority_queue_depth(self, port_num: int, priority: int, depth_pkts: int) -> int:
        if not self._priority_ok(priority):
            return 1
        self.target.set_queue_depth(depth_pkts, port_num, priority)
        return 0

    def set_egress_queue_rate(self, port_num: int, rate_pps: int) -> int:
        self.target.set_queue_rate(rate_pps, port_num)
        return 0

    def set_all_egress_queue_rates(self, rate_pps: int) -> int:
        self.target.set_queue_rate(rate_pps)
        return 0

    def set_egress_priority_queue_rate(self, port_num: int, priority: int, rate_pps: int) -> int:
        if not self._priority_ok(priority):
            return 1
        self.target.set_queue_rate(rate_pps, port_num, priority)
        return 0

    def get_time_elapsed_us(self) -> int:
        engine = self.target.engine
        if engine is not None:
            return int(engine.clock_us())
        return int((time.monotonic() - self._started) * 1e6)

    def get_time_since_epoch_us(self) -> int:
        return int(time.time() * 1e6)
