"""Accumulates a program in BMv2's JSON format (the shape p4c-bm2-ss writes)."""
from __future__ import annotations

from typing import Any

from p4target.compiler.types import P4Type, VarbitT, bit_width, is_signed


def fresh_name(base: str, used: set[str]) -> str:
    """`base`, or `base_0`, `base_1`, ... whichever is not in `used` yet; it is added to `used`."""
    name, n = base, 0
    while name in used:
        name = f"{base}_{n}"
        n += 1
    used.add(name)
    return name


def hexstr(value: int, bitwidth: int | None = None) -> dict:
    out: dict = {"type": "hexstr", "value": hex(value) if value >= 0 else "-" + hex(-value)}
    if bitwidth is not None:
        out["bitwidth"] = bitwidth
    return out


def expr(op: str, left: dict | None, right: dict | None, **extra: Any) -> dict:
    value = {"op": op, "left": left, "right": right}
    value.update(extra)
    return {"type": "expression", "value": value}


# Primitive-argument types BMv2 reads as they are; action data (``local`` in expressions) is
# ``runtime_data``; any other node (an operation, ``bool``) is an expression, passed as
# ``{"type": "expression", "value": <node>}`` (behavioral-model P4Objects::process_single_param)
_PARAMETER_TYPES = frozenset({"hexstr", "parameters_vector", "field_list", "runtime_data", "header", "field",
                              "calculation", "meter_array", "counter_array", "register_array",
                              "header_stack", "register", "extern", "string", "stack_field",
                              "header_union", "header_union_stack"})
# sources of a parser ``set`` and amounts of ``advance`` BMv2 reads as they are
_SET_SOURCE_TYPES = frozenset({"field", "hexstr", "lookahead"})
_ADVANCE_TYPES = frozenset({"field", "hexstr"})


_BOOLEAN_OPS = frozenset({"==", "!=", "<", ">", "<=", ">=", "and", "or", "not", "d2b", "valid", "valid_union"})


def is_boolean(node: dict) -> bool:
    """Whether an expression node is of BMv2's boolean kind (not data)."""
    if node.get("type") == "bool":
        return True
    value = node.get("value")
    return node.get("type") == "expression" and isinstance(value, dict) and value.get("op") in _BOOLEAN_OPS


def as_expression_argument(node: dict) -> dict:
    """An expression node as the ``expression`` argument BMv2 reads (a boolean one as data:
    BMv2 takes no boolean expression as an argument); already wrapped ones stay."""
    if node.get("type") == "expression" and isinstance(node.get("value"), dict) and "type" in node["value"]:
        return node
    if is_boolean(node):
        node = expr("b2d", None, node)
    return {"type": "expression", "value": node}


def as_parameter(node: Any) -> Any:
    """An expression node in the shape of a primitive's argument (BMv2 JSON)."""
    if not isinstance(node, dict):
        return node
    t = node.get("type")
    if t == "parameters_vector":
        return {**node, "value": [as_parameter(v) for v in node["value"]]}
    if t in _PARAMETER_TYPES:
        return node
    if t == "local":
        return {"type": "runtime_data", "value": node["value"]}
    return as_expression_argument(node)


def as_primitive(primitive: dict) -> dict:
    """A primitive call with every argument in BMv2's parameter shape."""
    return {**primitive, "parameters": [as_parameter(p) for p in primitive["parameters"]]}


def as_parser_op(op: dict) -> dict:
    """A parser operation with its arguments in the shape BMv2's parser loader reads."""
    kind, params = op["op"], op["parameters"]
    if kind == "primitive":
        return {**op, "parameters": [as_primitive(params[0])]}
    if kind == "set" and params[1].get("type") not in _SET_SOURCE_TYPES:
        return {**op, "parameters": [params[0], as_expression_argument(params[1])]}
    if kind == "advance" and params[0].get("type") not in _ADVANCE_TYPES:
        return {**op, "parameters": [as_expression_argument(params[0])]}
    if kind == "extract_VL":
        return {**op, "parameters": [params[0], as_expression_argument(params[1])]}
    return op


def data_hex(value: int, width: int) -> str:
    """Action data / match key as p4c writes it: hex, two's complement within width."""
    value &= (1 << width) - 1 if width else 0
    return "0x" + format(value, "0" + str(max(1, (width + 3) // 4)) + "x")


class Bmv2Program:
    """Lists of the BMv2 JSON document, with ids assigned in insertion order."""

    def __init__(self, program_name: str) -> None:
        self.program_name = program_name
        self.header_types: list[dict] = []
        self.headers: list[dict] = []
        self.header_stacks: list[dict] = []
        self.header_union_types: list[dict] = []
        self.header_unions: list[dict] = []
        self.field_lists: list[dict] = []
        self.learn_lists: list[dict] = []
        self.errors: list[list] = []
        self.enums: list[dict] = []
        self.parsers: list[dict] = []
        self.parse_vsets: list[dict] = []
        self.header_union_stacks: list[dict] = []
        self.deparsers: list[dict] = []
        self.meter_arrays: list[dict] = []
        self.counter_arrays: list[dict] = []
        self.register_arrays: list[dict] = []
        self.calculations: list[dict] = []
        self.actions: list[dict] = []
        self.pipelines: list[dict] = []
        self.checksums: list[dict] = []
        self.extern_instances: list[dict] = []
        self.field_aliases: list[list] = []
        self.scalar_fields: list[list] = []
        self._scalar_names: set[str] = set()
        self._header_type_ids: dict[str, str] = {}

    # ------------------------------------------------------------------ storage
    def add_header_type(self, name: str, fields: list[tuple[str, P4Type]]) -> str:
        """Add a header type once (by name); returns its BMv2 name."""
        if name in self._header_type_ids:
            return self._header_type_ids[name]
        out_fields: list[list] = []
        for fname, ftype in fields:
            # a varbit field's width is "*"; the type then carries its largest size in bytes
            out_fields.append([fname, "*"] if isinstance(ftype, VarbitT)
                              else [fname, bit_width(ftype), is_signed(ftype)])
        header_type = {"name": name, "id": len(self.header_types), "fields": out_fields}
        if any(isinstance(ftype, VarbitT) for _, ftype in fields):
            header_type["max_length"] = (sum(bit_width(ftype) for _, ftype in fields) + 7) // 8
        self.header_types.append(header_type)
        self._header_type_ids[name] = name
        return name

    def add_header(self, name: str, header_type: str, metadata: bool) -> int:
        hid = len(self.headers)
        self.headers.append({"name": name, "id": hid, "header_type": header_type,
                             "metadata": metadata, "pi_omit": True})
        return hid

    def header_id(self, name: str) -> int:
        for h in self.headers:
            if h["name"] == name:
                return h["id"]
        raise KeyError(name)

    def header_union_id(self, name: str) -> int:
        for u in self.header_unions:
            if u["name"] == name:
                return u["id"]
        raise KeyError(name)

    def add_scalar(self, base: str, t: P4Type) -> str:
        """A fresh field of the ``scalars`` metadata header; returns its (unique) name."""
        name = fresh_name(base, self._scalar_names)
        self.scalar_fields.append([name, bit_width(t), is_signed(t)])
        return name

    # ------------------------------------------------------------------ code
    def add_action(self, name: str, runtime_data: list[tuple[str, int]], primitives: list[dict]) -> int:
        aid = len(self.actions)
        self.actions.append({"name": name, "id": aid,
                             "runtime_data": [{"name": n, "bitwidth": w} for n, w in runtime_data],
                             "primitives": primitives})
        return aid

    def add_calculation(self, algo: str, inputs: list[dict]) -> str:
        # a constant input is as many bytes as its hex string: BMv2 reads "0x1" of 16 bits as
        # one byte, so write it at its width ("0x0001") as p4c does
        inputs = [dict(i, value="0x" + format(int(i["value"], 16) & ((1 << i["bitwidth"]) - 1),
                                              f"0{(i['bitwidth'] + 7) // 8 * 2}x"))
                  if i.get("type") == "hexstr" and "bitwidth" in i else i for i in inputs]
        for c in self.calculations:
            if c["algo"] == algo and c["input"] == inputs:
                return c["name"]
        name = f"calc_{len(self.calculations)}" if self.calculations else "calc"
        self.calculations.append({"name": name, "id": len(self.calculations), "algo": algo,
                                  "input": inputs})
        return name

    def document(self) -> dict:
        """The whole BMv2 JSON document."""
        scalars_type = {"name": "scalars_0", "id": len(self.header_types),
                        "fields": self._padded(self.scalar_fields)}
        header_types = self.header_types + [scalars_type]
        headers = [{"name": "scalars", "id": len(self.headers), "header_type": "scalars_0",
                    "metadata": True, "pi_omit": True}]
        # BMv2 looks headers up by id: scalars goes last so existing ids stay valid
        headers = self.headers + headers
        # like p4c, every header type is padded to whole bytes, as BMv2 asserts (in practice
        # the scalars and metadata: a P4 header that is not whole bytes is a compile error)
        for t in header_types:
            t["fields"] = self._padded(t["fields"])
        return {
            "header_types": header_types,
            "headers": headers,
            "header_stacks": self.header_stacks,
            "header_union_types": self.header_union_types,
            "header_unions": self.header_unions,
            "header_union_stacks": self.header_union_stacks,
            "field_lists": self.field_lists,
            "errors": self.errors,
            "enums": self.enums,
            "parsers": [{**p, "parse_states": [{**st, "parser_ops": [as_parser_op(op) for op in st["parser_ops"]]}
                                                for st in p["parse_states"]]}
                        for p in self.parsers],
            "parse_vsets": self.parse_vsets,
            "deparsers": [{**d, "primitives": [as_primitive(p) for p in d["primitives"]]}
                          for d in self.deparsers],
            "meter_arrays": self.meter_arrays,
            "counter_arrays": self.counter_arrays,
            "register_arrays": self.register_arrays,
            "calculations": self.calculations,
            "learn_lists": self.learn_lists,
            "actions": [{**a, "primitives": [as_primitive(p) for p in a["primitives"]]}
                        for a in self.actions],
            "pipelines": self.pipelines,
            "checksums": self.checksums,
            "force_arith": [],
            "extern_instances": self.extern_instances,
            "field_aliases": self.field_aliases,
            "program": self.program_name,
            "__meta__": {"version": [2, 23], "compiler": "gradlane p4target"},
        }

    @staticmethod
    def _padded(fields: list[list]) -> list[list]:
        """BMv2 wants every header a whole number of bytes long: pad with ``_padding``."""
        fields = [f for f in fields if not f[0].startswith("_padding")]
        if any(not isinstance(f[1], int) for f in fields):
            return fields  # a varbit ('*') field: its size is per packet
        total = sum(f[1] for f in fields)
        if total % 8:
            fields = fields + [["_padding", 8 - total % 8, False]]
        return fields
