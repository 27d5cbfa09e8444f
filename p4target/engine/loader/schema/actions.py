"""Actions and primitive calls (BMv2: `init_actions`, `add_primitive_to_action`,
`process_single_param`): known primitives, their arities and parameter kinds."""
from __future__ import annotations

from typing import Any

from .values import _MAX_WIDTH, ValueChecks, vector_items

# BMv2's `process_single_param`: the node types a primitive parameter may have
PARAMETER_TYPES = frozenset({"hexstr", "parameters_vector", "field_list", "runtime_data", "header", "field",
                             "calculation", "meter_array", "counter_array", "register_array", "header_stack",
                             "expression", "register", "extern", "string", "stack_field", "header_union",
                             "header_union_stack"})
# primitives of BMv2's core and of simple_switch, with their number of parameters
PRIMITIVES = {
    "assign": 2, "assign_VL": 2, "assign_header": 2, "assign_union": 2, "assign_header_stack": 2,
    "assign_union_stack": 2, "push": 2, "pop": 2, "assume": 1, "assert": 1, "exit": 0, "log_msg": 2,
    "_jump": 1, "_jump_if_zero": 2,
    "modify_field": 2, "modify_field_rng_uniform": 3, "add_to_field": 2, "subtract_from_field": 2,
    "add": 3, "subtract": 3, "bit_xor": 3, "bit_or": 3, "bit_and": 3, "shift_left": 3, "shift_right": 3,
    "drop": 0, "mark_to_drop": 1, "generate_digest": 2, "add_header": 1, "add_header_fast": 1,
    "remove_header": 1, "copy_header": 2, "clone_ingress_pkt_to_egress": 2, "clone_egress_pkt_to_egress": 2,
    "resubmit": 1, "recirculate": 1, "modify_field_with_hash_based_offset": 4, "no_op": 0,
    "execute_meter": 3, "count": 2, "register_read": 3, "register_write": 3, "truncate": 1,
}
# parameters whose kind a primitive fixes (BMv2 casts them when the action runs; a program whose
# action could not run is refused at load): primitive -> {index: accepted parameter types}
PARAMETER_KINDS = {
    "count": {0: {"counter_array"}}, "execute_meter": {0: {"meter_array"}, 2: {"field"}},
    "register_read": {0: {"field", "expression"}, 1: {"register_array"}}, "register_write": {0: {"register_array"}},
    "modify_field_with_hash_based_offset": {2: {"calculation"}}, "push": {0: {"header_stack"}},
    "pop": {0: {"header_stack"}}, "mark_to_drop": {0: {"header"}}, "log_msg": {0: {"string"}, 1: {"parameters_vector"}},
    "assign_union": {0: {"header_union"}, 1: {"header_union"}},
    "assign_header_stack": {0: {"header_stack"}, 1: {"header_stack"}},
    "add_header": {0: {"header", "expression"}}, "remove_header": {0: {"header", "expression"}},
    "add_header_fast": {0: {"header", "expression"}},
    "assign_header": {0: {"header", "expression"}, 1: {"header", "expression"}},
    "copy_header": {0: {"header", "expression"}, 1: {"header", "expression"}},
}


# the parameter holding the id of the field list a copied packet keeps
_FIELD_LIST_PARAMETER = {"clone_ingress_pkt_to_egress": 1, "clone_egress_pkt_to_egress": 1,
                         "resubmit": 0, "recirculate": 0}


class ActionChecks(ValueChecks):
    """Actions, primitives and their parameters."""

    def actions(self) -> None:
        self.action_ids: dict[int, dict] = {}
        self.action_names: dict[str, dict] = {}
        for i, a in enumerate(self.items("actions")):
            p = f"actions[{i}]"
            self.obj(a, p)
            name = self.string(self.key(a, "name", p), f"{p}.name")
            aid = self.integer(self.key(a, "id", p), f"{p}.id")
            if aid in self.action_ids:
                self.fail(f"{p}.id", f"duplicate id {aid}")
            self.action_ids[aid] = a
            self.action_names.setdefault(name, a)
            params = self.arr(a.get("runtime_data", []), f"{p}.runtime_data")
            for k, rd in enumerate(params):
                rp = f"{p}.runtime_data[{k}]"
                self.obj(rd, rp)
                self.string(self.key(rd, "name", rp), f"{rp}.name")
                self.integer(self.key(rd, "bitwidth", rp), f"{rp}.bitwidth", 0, _MAX_WIDTH)
            prims = self.arr(a.get("primitives", []), f"{p}.primitives")
            for k, prim in enumerate(prims):
                self.primitive(prim, f"{p}.primitives[{k}]", len(params), len(prims))

    def primitive(self, prim: Any, path: str, nparams: int = 0, nprims: int = 0) -> None:
        self.obj(prim, path)
        op = self.string(self.key(prim, "op", path), f"{path}.op")
        if op not in self.primitives:
            self.fail(f"{path}.op", f"unknown primitive '{op}'")
        params = self.arr(prim.get("parameters", []), f"{path}.parameters")
        if len(params) != self.primitives[op]:
            self.fail(f"{path}.parameters", f"primitive '{op}' takes {self.primitives[op]} parameter(s), "
                                            f"got {len(params)}")
        kinds = PARAMETER_KINDS.get(op, {})
        for k, param in enumerate(params):
            self.parameter(param, f"{path}.parameters[{k}]", nparams)
            if k in kinds and param["type"] not in kinds[k]:
                self.fail(f"{path}.parameters[{k}].type", f"primitive '{op}' needs {' or '.join(sorted(kinds[k]))} "
                                                          f"here, got '{param['type']}'")
        if op in _FIELD_LIST_PARAMETER and len(params) > _FIELD_LIST_PARAMETER[op]:
            k = _FIELD_LIST_PARAMETER[op]
            if params[k].get("type") == "hexstr":
                fid = int(params[k]["value"], 16)
                ids = {fl.get("id") for fl in self.j.get("field_lists") or () if isinstance(fl, dict)}
                # simple_switch looks the id up when the packet is copied (field_lists.at()) and
                # aborts if no field list has it; a resubmit/recirculate id of 0 means "none"
                if fid not in ids and not (fid == 0 and op in ("resubmit", "recirculate")):
                    self.fail(f"{path}.parameters[{k}]", f"'{op}' names field list {fid}, which does not "
                                                         "exist (simple_switch would abort on the copy)")
        if op in ("_jump", "_jump_if_zero"):
            target = params[-1]
            if target.get("type") != "hexstr" or not 0 <= int(target["value"], 16) <= nprims:
                self.fail(f"{path}.parameters[{len(params) - 1}]", f"'{op}' jumps outside its action")

    def parameter(self, param: Any, path: str, nparams: int) -> None:
        self.obj(param, path)
        t = self.string(self.key(param, "type", path), f"{path}.type")
        if t not in PARAMETER_TYPES:
            self.fail(f"{path}.type", f"parameter type '{t}' not supported")
        v = self.key(param, "value", path)
        vp = f"{path}.value"
        if t == "hexstr":
            self.hexstr(v, vp)
        elif t in ("parameters_vector", "field_list"):
            keys = sorted(v) if isinstance(v, dict) else None
            for k, item in enumerate(vector_items(v)):
                ip = f"{vp}.{keys[k]}" if keys is not None else f"{vp}[{k}]"
                if t == "field_list" and (not isinstance(item, dict) or item.get("type") != "field"):
                    self.fail(ip, "a field list holds fields only")
                self.parameter(item, ip, nparams)
        elif t == "runtime_data":
            self.integer(v, vp, 0)
            if v >= nparams:
                self.fail(vp, f"runtime_data {v} but the action has {nparams} parameter(s)")
        elif t == "expression":
            self.typed_value(param, path)
        elif t == "string":
            self.string(v, vp)
        elif t == "register":
            self.expression(param, path)
        else:
            tables = {"calculation": (self.calcs, "calculation"), "meter_array": (self.meters, "meter array"),
                      "counter_array": (self.counters, "counter array"),
                      "register_array": (self.registers, "register array"), "extern": (self.externs, "extern"),
                      "header_union": (self.unions, "header union"),
                      "header_union_stack": (self.union_stacks, "header union stack"),
                      "header_stack": (self.stacks, "header stack"), "header": (self.headers, "header")}
            if t in tables:
                self.ref(*tables[t], v, vp)
            elif t == "field":
                self.field(v, vp)
            elif t == "stack_field":
                self.stack_field(v, vp)
