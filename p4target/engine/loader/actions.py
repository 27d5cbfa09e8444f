"""Actions and their primitives (BMv2: `ActionFn`, `ActionPrimitive_`, simple_switch's
primitives): each action body compiled to one function `(P, D)`, `D` its runtime data."""
from __future__ import annotations

from ..errors import ProgramLoadError
from ..packet import DROP_PORT
from ..tables import ActionSpec
from .calculations import Calculations
from .codegen import Namespace, str_literal
from .expressions import Expressions
from .externs import ExternObjects
from .layout import Layout
from .schema.values import vector_items

# simple_switch's P4_14-era arithmetic primitives (p4c-bm's JSON)
_LEGACY_ARITH = {"add_to_field": "+", "subtract_from_field": "-", "add": "+", "subtract": "-",
                 "bit_xor": "^", "bit_or": "|", "bit_and": "&", "shift_left": "<<", "shift_right": ">>"}
JUMPS = ("_jump", "_jump_if_zero")


class Primitives:
    """Source of primitive calls; `action()` compiles a whole action."""

    def __init__(self, layout: Layout, exprs: Expressions, calcs: Calculations, externs: ExternObjects,
                 ns: Namespace) -> None:
        self.layout = layout
        self.exprs = exprs
        self.calcs = calcs
        self.externs = externs
        self.ns = ns

    def primitive(self, p: dict) -> list[str]:
        """Source lines of one primitive call."""
        lay, x = self.layout, self.exprs
        ex = x.ex
        op = p["op"]
        a = p.get("parameters", [])
        if op in ("assign", "modify_field"):
            return [x.assign(a[0], ex(a[1]))]
        if op == "assign_VL":  # a varbit field: value and per-packet size
            return x.assign_varbit(a[0], a[1])
        if op in _LEGACY_ARITH:
            if op in ("add_to_field", "subtract_from_field"):
                return [x.assign(a[0], f"({ex(a[0])} {_LEGACY_ARITH[op]} {ex(a[1])})")]
            return [x.assign(a[0], f"({ex(a[1])} {_LEGACY_ARITH[op]} {ex(a[2])})")]
        if op == "no_op":
            return []
        if op == "add_header_fast":
            return [f"V[{x.header_ref(a[0])}] = 1"]
        if op in ("assign_header", "copy_header"):
            d, s = x.header_ref(a[0]), x.header_ref(a[1])
            return [f"_d = {d}; _s = {s}; _n = HLEN[_d]",
                    "F[HB[_d]:HB[_d] + _n] = F[HB[_s]:HB[_s] + _n]; V[_d] = V[_s]"] + (
                        ["_copy_vl(P, HB[_d], HB[_s], _n)"] if lay.varbit_slots else [])
        if op == "assign_union":
            d, s = lay.unions[a[0]["value"]], lay.unions[a[1]["value"]]
            return [f"F[HB[{dh}]:HB[{dh}] + HLEN[{dh}]] = F[HB[{sh}]:HB[{sh}] + HLEN[{sh}]]; V[{dh}] = V[{sh}]"
                    for dh, sh in zip(d, s)]
        if op == "assign_header_stack":
            d, s = lay.stacks[a[0]["value"]], lay.stacks[a[1]["value"]]
            lines = [f"F[HB[{dh}]:HB[{dh}] + HLEN[{dh}]] = F[HB[{sh}]:HB[{sh}] + HLEN[{sh}]]; V[{dh}] = V[{sh}]"
                     for dh, sh in zip(d, s)]
            lines.append(f"NX[{lay.stack_id[a[0]['value']]}] = NX[{lay.stack_id[a[1]['value']]}]")
            return lines
        if op in ("add_header", "setValid"):
            # like BMv2, making an invalid header valid zeroes its fields and grows the
            # packet-length register by the header's size
            h = x.header_ref(a[0])
            lines = [f"_h = {h}",
                     "if not V[_h]: F[HB[_h]:HB[_h] + HLEN[_h]] = [0] * HLEN[_h]; V[_h] = 1; "
                     "P.length_reg += HBYTES[_h]"]
            if lay.varbit_slots:  # a varbit field of a newly valid header is empty
                lines.insert(1, "if not V[_h]: [P.VL.pop(_k, None) for _k in range(HB[_h], HB[_h] + HLEN[_h])]")
            if h.isdigit():  # a member of a header union: the other members become invalid
                for members in lay.unions.values():
                    if int(h) in members:
                        lines += [f"V[{o}] = 0" for o in members if o != int(h)]
            return lines
        if op in ("remove_header", "setInvalid"):
            shrink = "HBYTES[_h]"
            if lay.varbit_slots:
                shrink += " + sum(P.VL.get(_k, 0) for _k in range(HB[_h], HB[_h] + HLEN[_h])) // 8"
            return [f"_h = {x.header_ref(a[0])}",
                    f"if V[_h]: V[_h] = 0; P.length_reg -= {shrink}"]
        if op == "mark_to_drop" and a and a[0].get("type") == "header":
            # BMv2: egress_spec and mcast_grp of the header passed, by their names in its type
            h = a[0]["value"]
            spec, mgid = lay.field_index.get((h, "egress_spec")), lay.field_index.get((h, "mcast_grp"))
            if spec is None:
                return []  # simple_switch logs a critical error and leaves the packet alone
            return [f"F[{spec}] = {DROP_PORT}"] + ([f"F[{mgid}] = 0"] if mgid is not None else [])
        if op in ("mark_to_drop", "drop"):
            return [f"F[{lay.sm_idx('egress_spec')}] = {DROP_PORT}"] + (
                [f"F[{lay.sm_idx('mcast_grp')}] = 0"] if lay.sm_opt("mcast_grp") is not None else [])
        if op == "exit":
            # as BMv2: the packet is marked and the action's later primitives still run; the
            # pipeline stops before its next node
            return ["P.exited = True"]
        if op in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress"):
            fl = ex(a[1]) if len(a) > 1 else "0"
            return [f"P.clone = ({ex(a[0])}, {fl})"]
        if op == "resubmit":
            return [f"P.resubmit = {ex(a[0]) if a else '0'}"]
        if op == "recirculate":
            return [f"P.recirc = {ex(a[0]) if a else '0'}"]
        if op == "modify_field_with_hash_based_offset":
            calc = self.calcs.symbol(a[2]["value"])
            return [x.assign(a[0], f"({ex(a[1])} + (({calc}(P) % {ex(a[3])}) if {ex(a[3])} else 0))")]
        if op == "modify_field_rng_uniform":
            return [x.assign(a[0], f"_rand({ex(a[1])}, {ex(a[2])})")]
        if op == "count":
            c = self.ns.const("ctr", self.externs.counter(a[0]["value"]))
            return [f"{c}.count({ex(a[1])}, P.length)"]
        if op == "execute_meter":
            # like BMv2, an index beyond the array updates no meter and leaves the result alone
            mt = self.ns.const("mtr", self.externs.meter(a[0]["value"]))
            return [f"_i = {ex(a[1])}",
                    f"if 0 <= _i < {mt}.size: " + x.assign(a[2], f"{mt}.execute(_i, P.length, P.now_us)")]
        if op == "register_read":
            r = self.ns.const("reg", self.externs.register(a[1]["value"]))
            # like BMv2, an index beyond the array leaves the destination unchanged
            return [f"_i = {ex(a[2])}",
                    f"if 0 <= _i < {r}.size: " + x.assign(a[0], f"{r}.values[_i]")]
        if op == "register_write":
            r = self.ns.const("reg", self.externs.register(a[0]["value"]))
            return [f"_i = {ex(a[1])}",
                    f"if 0 <= _i < {r}.size: {r}.values[_i] = ({ex(a[2])}) & {r}.mask"]
        if op == "generate_digest":
            return [f"P.digests = (P.digests or []) + [{ex(a[1])}]"]
        if op == "log_msg":
            fmt = str_literal(a[0]["value"], "log_msg format")
            vals = ", ".join(ex(v) for v in vector_items(a[1]["value"])) if len(a) > 1 else ""
            return [f"P.logs = (P.logs or []) + [({fmt}, ({vals}{',' if vals else ''}))]"]
        if op in ("assert", "assume"):
            return [f"if not {ex(a[0])}: raise AssertFailure({op!r})"]
        if op == "truncate":
            return [f"P.truncate = {ex(a[0])}"]
        if op in ("push", "pop"):
            sid = lay.stack_id[a[0]["value"]]
            ids = lay.stacks[a[0]["value"]]
            return [f"_{op}(P, {sid}, {ids!r}, {ex(a[1])}, _SPANS)"]
        raise ProgramLoadError(f"unsupported primitive '{op}'")

    def _with_jumps(self, prims: list[dict]) -> list[str]:
        """An action body with BMv2's `_jump` / `_jump_if_zero` (conditional code inside actions,
        as p4c emits it): a program counter steps through the primitives."""
        ex = self.exprs.ex
        n = len(prims)
        body = ["_pc = 0", f"while _pc < {n}:"]
        for i, p in enumerate(prims):
            op = p["op"]
            a = p.get("parameters", [])
            body.append(f"    {'if' if i == 0 else 'elif'} _pc == {i}:")
            if op in JUMPS:
                target = a[0] if op == "_jump" else a[1]
                if target.get("type") != "hexstr" or not 0 <= int(target["value"], 16) <= n:
                    raise ProgramLoadError(f"'{op}' at primitive {i} jumps outside its action")
            if op == "_jump":
                body.append(f"        _pc = {ex(a[0])}")
            elif op == "_jump_if_zero":
                body.append(f"        _pc = {ex(a[1])} if not ({ex(a[0])}) else {i + 1}")
            else:
                body += ["        " + line for line in self.primitive(p)]
                body.append(f"        _pc = {i + 1}")
        body += ["    else:", "        break"]
        return body

    def action(self, a: dict) -> ActionSpec:
        """One JSON action compiled: name, id, parameters and its function `(P, D)`."""
        prims = a.get("primitives", [])
        if any(p["op"] in JUMPS for p in prims):
            body = self._with_jumps(prims)
        else:
            body = [line for p in prims for line in self.primitive(p)]
        fn = self.ns.compile_fn("act", "P, D", body)
        return ActionSpec(a["name"], a["id"], [(rd["name"], rd["bitwidth"]) for rd in a.get("runtime_data", [])], fn)
