"""What a name or an expression denotes during lowering to BMv2 JSON.

Paths resolve to these values: storage (BMv2 fields, header instances, stacks, unions, structs
of those), compile-time constants, action data, extern instances, tables and actions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4target.compiler import ast
from p4target.compiler.types import HeaderT, P4Type, StackT, StructLike, UnionT


class Value:
    """Base of everything a path can denote."""


@dataclass
class FieldValue(Value):
    """One BMv2 field ``header.field`` holding a scalar of ``type``."""
    header: str
    name: str
    type: P4Type

    def json(self) -> dict:
        return {"type": "field", "value": [self.header, self.name]}


@dataclass
class HeaderValue(Value):
    """A BMv2 header instance (a P4 header, or a metadata struct stored as one)."""
    name: str
    type: StructLike
    metadata: bool = False

    def field(self, name: str) -> Value | None:
        """The field named ``name`` (a struct of fields for struct-typed fields of a header)."""
        renamed = getattr(self.type, "renamed", None)
        if renamed and name in renamed:
            return self._flat(renamed[name])
        ftype = self.type.field_type(name)
        return None if ftype is None else FieldValue(self.name, name, ftype)

    def _flat(self, entry: Any) -> Value:
        if isinstance(entry, str):
            return FieldValue(self.name, entry, self.type.field_type(entry))
        struct_t, members = entry
        return StructValue(struct_t, {m: self._flat(e) for m, e in members.items()})


@dataclass
class StackValue(Value):
    """A header stack; ``elements`` are the BMv2 header instance names. A stack of header
    unions (BMv2 ``header_union_stacks``) has ``unions`` and its union names as ``elements``."""
    name: str
    type: StackT
    elements: list[str]
    unions: list["UnionValue"] | None = None


@dataclass
class UnionValue(Value):
    """A header union; ``members`` maps member name -> header instance."""
    name: str
    type: UnionT
    members: dict[str, HeaderValue]


@dataclass
class StructValue(Value):
    """A struct whose members are other values (fields, headers, stacks, structs)."""
    type: StructLike
    members: dict[str, Value]


@dataclass
class ExprValue(Value):
    """An already-lowered BMv2 expression (e.g. a directly called action's argument)."""
    json: dict
    type: P4Type


@dataclass
class ConstValue(Value):
    """A compile-time constant (int, bool, enum or error member, string)."""
    value: Any
    type: P4Type


@dataclass
class RuntimeDataValue(Value):
    """An action-data parameter of the action being lowered (BMv2 ``runtime_data``)."""
    index: int
    type: P4Type


@dataclass
class DynamicStackElement(Value):
    """``stack[expr]`` with a run-time index; ``parser_next`` marks a parser's ``stack.next``
    (reading it past the end is ``error.StackOutOfBounds``)."""
    stack: StackValue
    index_json: dict
    parser_next: bool = False


@dataclass
class DynamicStackField(ExprValue):
    """``stack[i].f`` with a run-time ``i`` (``json`` is BMv2's dereference of it). Reads and
    writes go element by element, as p4c lowers run-time indices for BMv2: an index past the
    end reads 0 and writes nothing."""
    stack: StackValue | None = None
    index_json: dict | None = None
    field: str = ""

    def element_fields(self) -> list[dict]:
        assert self.stack is not None
        return [{"type": "field", "value": [e, self.field]} for e in self.stack.elements]


@dataclass
class StackLastValue(Value):
    """``stack.last`` in a parser (the last extracted element)."""
    stack: StackValue


@dataclass
class ExternInstance(Value):
    """An instantiated extern: ``kind`` is the extern type name (``register``, ``counter``...)."""
    kind: str
    name: str
    decl: ast.InstantiationDecl
    type_args: list[P4Type] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)


@dataclass
class TableSymbol(Value):
    decl: ast.TableDecl
    name: str
    control: "ControlContext"


@dataclass
class ActionSymbol(Value):
    decl: ast.ActionDecl
    name: str
    control: "ControlContext" | None


@dataclass
class BlockInstance(Value):
    """An instantiated sub-control or sub-parser (``MyCtrl() c;``); ``ctor`` binds its
    constructor parameters (constants, other instances)."""
    decl: Any
    name: str
    args: tuple = ()
    ctor: dict = field(default_factory=dict)


@dataclass
class ValueSetSymbol(Value):
    """A parser value set (``value_set<T>(size) name;``): a select keyset filled at run time."""
    decl: Any
    name: str
    element: P4Type
    size: int


@dataclass
class PacketValue(Value):
    """The ``packet_in`` / ``packet_out`` parameter."""
    direction: str


@dataclass
class TypeValue(Value):
    """A type named where an expression is expected (``HashAlgorithm``, ``error``, ``E``)."""
    type: Any


class ControlContext:
    """Naming scope of one control or parser instance (``prefix`` is its BMv2 name prefix)."""

    def __init__(self, prefix: str, decl: Any) -> None:
        self.prefix = prefix
        self.decl = decl
        self.lowered_actions: dict[tuple, str] = {}

    def qualify(self, name: str, annotations: tuple = ()) -> str:
        """BMv2/P4Info name of a local: ``Prefix.name`` unless ``@name`` says otherwise."""
        ann = ast.find_annotation(annotations, "name")
        if ann is not None and ann.args and isinstance(ann.args[0], ast.StringLiteral):
            given = ann.args[0].value
            if given.startswith("."):
                return given[1:]
            return f"{self.prefix}.{given}" if self.prefix else given
        return f"{self.prefix}.{name}" if self.prefix else name


def is_header(t: P4Type) -> bool:
    return isinstance(t, HeaderT)
