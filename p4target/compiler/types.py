"""Resolved P4 types used by the back end (the syntax tree's type nodes name them; these
carry widths, fields and members)."""
from __future__ import annotations

from dataclasses import dataclass, field


class P4Type:
    """Base of resolved types."""

    def is_scalar(self) -> bool:
        """True for types stored in one BMv2 field (bits, bool, enums, error)."""
        return False


@dataclass(frozen=True)
class Bits(P4Type):
    """``bit<W>`` / ``int<W>``; ``new_type`` names the P4 ``type`` declaration a value of it
    was declared with (P4Info's ``type_name``; equality ignores it)."""
    width: int
    signed: bool = False
    new_type: str | None = field(default=None, compare=False)

    def is_scalar(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class InfInt(P4Type):
    """Arbitrary-precision ``int`` (untyped integer literals and constants)."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class Bool(P4Type):
    new_type: str | None = field(default=None, compare=False)  # as for Bits

    def is_scalar(self) -> bool:
        return True

    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class StringT(P4Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidT(P4Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class ErrorT(P4Type):
    def is_scalar(self) -> bool:
        return True

    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class MatchKindT(P4Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(eq=False)
class EnumT(P4Type):
    """An enum; ``underlying`` is set for serializable enums, ``members`` maps name -> value."""
    name: str
    members: dict[str, int]
    underlying: Bits | None = None

    def is_scalar(self) -> bool:
        return True

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class StructLike(P4Type):
    """Header, struct or header union: ordered (name, type) fields and the declaration's
    annotations per field."""
    name: str
    fields: list[tuple[str, P4Type]]
    field_annotations: dict[str, tuple] = field(default_factory=dict)
    annotations: tuple = ()

    def field_type(self, name: str) -> P4Type | None:
        for fname, ftype in self.fields:
            if fname == name:
                return ftype
        return None

    def __str__(self) -> str:
        return self.name


class HeaderT(StructLike):
    """``header``. A header with struct-typed fields is stored flat, as p4c does: every field
    renamed ``_<path>_<index>``; ``renamed`` maps each P4 field name to its flat field name,
    or (for a struct) to ``(StructT, {member: ...})`` recursively."""
    renamed: dict | None = None

    def width(self) -> int:
        return sum(bit_width(t) for _, t in self.fields)


class StructT(StructLike):
    """``struct``."""


class UnionT(StructLike):
    """``header_union``."""


@dataclass(frozen=True)
class StackT(P4Type):
    """Header stack ``element[size]`` (``element`` may also be a header union)."""
    element: "HeaderT | UnionT"
    size: int

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(eq=False)
class TupleT(P4Type):
    elements: list[P4Type]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elements)) + ">"


@dataclass(eq=False)
class ExternT(P4Type):
    """An extern object type with resolved type arguments."""
    name: str
    decl: object
    type_args: list[P4Type] = field(default_factory=list)

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class BlockT(P4Type):
    """A parser, control or package type (declaration kept for instantiation)."""
    name: str
    decl: object

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class VarbitT(P4Type):
    width: int

    def __str__(self) -> str:
        return f"varbit<{self.width}>"


@dataclass(frozen=True)
class Translation:
    """``@p4runtime_translation(uri, bit<W> | W | string)`` on a ``type``: the controller sees
    values of ``sdn_bitwidth`` bits, or strings when ``sdn_bitwidth`` is None."""
    uri: str
    sdn_bitwidth: int | None


@dataclass(eq=False)
class NewType:
    """A P4 ``type`` declaration: its underlying type (other new types resolved through) and
    its P4Runtime translation, if annotated."""
    name: str
    underlying: P4Type
    translation: Translation | None = None
    annotations: tuple = ()


def new_type_name(t: P4Type) -> str | None:
    """The ``type`` declaration a scalar type came from (None for plain types)."""
    return getattr(t, "new_type", None)


# width BMv2 uses for error and non-serializable enum fields
ENUM_BITS = 32


def bit_width(t: P4Type) -> int:
    """Width in bits of a scalar type as stored in a BMv2 field."""
    if isinstance(t, Bits):
        return t.width
    if isinstance(t, Bool):
        return 1
    if isinstance(t, EnumT):
        return t.underlying.width if t.underlying else ENUM_BITS
    if isinstance(t, ErrorT):
        return ENUM_BITS
    if isinstance(t, VarbitT):
        return t.width
    raise TypeError(f"type {t} has no bit width")


def is_signed(t: P4Type) -> bool:
    """True for ``int<W>`` (and serializable enums over it)."""
    if isinstance(t, Bits):
        return t.signed
    if isinstance(t, EnumT) and t.underlying:
        return t.underlying.signed
    return False
