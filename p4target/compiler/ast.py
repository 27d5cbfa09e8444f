"""Syntax tree of the P4_16 subset the embedded compiler accepts.

The front end (``preprocessor`` -> ``lexer`` -> ``parser``) builds it; the back end (semantic
analysis, BMv2 JSON, P4Info) consumes it. Every node carries ``loc`` (a
:class:`~p4target.compiler.source.SourceLocation`). Sequences are tuples. Nodes compare and hash
by identity (``eq=False``) so the back end can key dictionaries by node; use :func:`dump` to
compare tree shapes. Declarations keep their ``annotations`` (``@name``, ``@id``,
``@controller_header``, ``@defaultonly``, ``@tableonly``, ``@priority``, ``@field_list``, ...).

Node kinds
----------
Program
    ``Program(declarations)``
Types (``Type``)
    ``BitType(width, signed)`` for ``bit<W>``/``int<W>`` (``bit`` alone is ``bit<1>``);
    ``VarbitType(width)``; ``IntType`` (arbitrary-precision ``int``); ``BoolType``;
    ``ErrorType``; ``StringType``; ``VoidType``; ``MatchKindType``; ``DontCareType`` (``_``);
    ``TypeName(name)`` (a named type, also type parameters); ``SpecializedType(base, args)``
    (``register<bit<32>>``); ``HeaderStackType(element, size)`` (``h_t[4]``);
    ``TupleType(elements)``.
Declarations (``Declaration``)
    ``ConstDecl``, ``TypedefDecl`` (``typedef``), ``NewTypeDecl`` (``type``), ``HeaderDecl``,
    ``HeaderUnionDecl``, ``StructDecl`` (all with ``Field``\\s), ``EnumDecl`` (``EnumMember``\\s,
    ``underlying`` set for serializable enums), ``ErrorDecl``, ``MatchKindDecl``,
    ``ExternDecl`` (``MethodPrototype``\\s; constructors are prototypes with
    ``is_constructor``), ``ExternFunctionDecl``, ``FunctionDecl`` (P4 function with body),
    ``ParserTypeDecl``, ``ControlTypeDecl``, ``PackageTypeDecl``, ``ParserDecl``
    (``ParserState``\\s), ``ControlDecl``, ``ActionDecl``, ``TableDecl``
    (``TableProperty`` kinds: ``KeyProperty``/``KeyElement``, ``ActionsProperty``/``ActionRef``,
    ``DefaultActionProperty``, ``EntriesProperty``/``TableEntry``, ``ExpressionProperty`` for
    ``size``, ``counters``, ``meters``, ``implementation`` and any other property),
    ``VariableDecl``, ``InstantiationDecl`` (``counter(8, CounterType.packets) c;``,
    ``V1Switch(...) main;``), ``ValueSetDecl`` (``value_set<T>(N) vs;``).
    ``Parameter`` (``direction`` is ``"in"``, ``"out"``, ``"inout"`` or ``None``).
Statements (``Statement``)
    ``BlockStatement``, ``AssignmentStatement``, ``MethodCallStatement``, ``IfStatement``,
    ``SwitchStatement`` (``SwitchCase`` with ``body`` ``None`` for a fall-through label),
    ``ExitStatement``, ``ReturnStatement``, ``EmptyStatement``, and the local declarations
    ``VariableDecl``/``ConstDecl``/``InstantiationDecl`` (the latter in control/parser locals).
    Parser states hold statements and a ``transition`` (``PathExpression`` naming the next state,
    or a ``SelectExpression`` with ``SelectCase``\\s).
Expressions (``Expression``)
    ``IntLiteral(value, width, signed)``, ``BoolLiteral``, ``StringLiteral``,
    ``PathExpression(name)`` (identifiers, also type names used as values such as ``error`` in
    ``error.NoMatch`` or ``HashAlgorithm`` in ``HashAlgorithm.crc16``),
    ``MemberExpression(expr, member)`` (also ``.next``, ``.last``, ``.lastIndex``, ``.hit``,
    ``.miss``, ``.action_run``), ``IndexExpression(expr, index)``,
    ``SliceExpression(expr, high, low)``, ``UnaryExpression(op, operand)`` (``-``, ``!``, ``~``,
    ``+``), ``BinaryExpression(op, left, right)`` (``* / % + - |+| |-| << >> < <= > >= == != &
    ^ | && || ++``), ``TernaryExpression``, ``CastExpression(type, expr)``,
    ``MethodCallExpression(method, type_args, args)`` (also constructor calls such as
    ``MyParser()`` in a package instantiation - the back end resolves whether the callee is a
    type), ``NamedArgument(name, value)`` (only inside call argument lists),
    ``ListExpression(elements)`` (``{a, b}``), ``StructExpression(fields)``
    (``{a = 1, b = 2}``, ``NamedExpression``\\s), ``DotsExpression`` (``...``),
    ``TypeExpression(type)`` (a type in expression position, e.g. ``bit<8>`` in ``sizeof``-like
    uses; rare). Keyset-only expressions: ``DefaultExpression`` (``default``),
    ``DontCareExpression`` (``_``), ``MaskExpression(value, mask)`` (``&&&``),
    ``RangeExpression(low, high)`` (``..``).
Annotations
    ``Annotation(name, args, raw)``: ``args`` holds the parsed expression list when the body is
    one (``@name("x")`` -> ``(StringLiteral("x"),)``), else ``()``; ``raw`` is the body's source
    text (``""`` for ``@defaultonly``). A structured annotation (``@name[...]``) has
    ``structured`` set and ``args`` holding its expressions or its ``NamedArgument`` pairs.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Tuple, Union

from p4target.compiler.source import UNKNOWN_LOCATION, SourceLocation

_node = dataclass(eq=False, kw_only=True)


@_node
class Node:
    """Base of every syntax-tree node."""

    loc: SourceLocation = UNKNOWN_LOCATION


# --------------------------------------------------------------------------- annotations
@_node
class Annotation(Node):
    """``@name``, ``@name(body)`` or ``@name[list]``; ``args`` parsed when the body is an
    expression list (always for ``[list]``)."""

    name: str
    args: Tuple["Expression", ...] = ()
    raw: str = ""
    structured: bool = False


Annotations = Tuple[Annotation, ...]


def find_annotation(annotations: Annotations, name: str) -> Annotation | None:
    """The first annotation called ``name``, or None."""
    for ann in annotations:
        if ann.name == name:
            return ann
    return None


# --------------------------------------------------------------------------- types
@_node
class Type(Node):
    """Base of type nodes."""


@_node
class BitType(Type):
    """``bit<W>`` (signed=False) or ``int<W>`` (signed=True); ``width`` is an expression."""

    width: "Expression"
    signed: bool = False


@_node
class VarbitType(Type):
    """``varbit<W>``."""

    width: "Expression"


@_node
class IntType(Type):
    """Arbitrary-precision ``int`` (compile-time only)."""


@_node
class BoolType(Type):
    """``bool``."""


@_node
class ErrorType(Type):
    """``error``."""


@_node
class StringType(Type):
    """``string``."""


@_node
class VoidType(Type):
    """``void`` (method return type)."""


@_node
class MatchKindType(Type):
    """``match_kind``."""


@_node
class DontCareType(Type):
    """``_`` as a type argument."""


@_node
class TypeName(Type):
    """A named type: typedef, header, struct, enum, extern, parser/control type, type parameter."""

    name: str


@_node
class SpecializedType(Type):
    """A generic type with arguments, e.g. ``register<bit<32>>``."""

    base: TypeName
    args: Tuple[Type, ...] = ()


@_node
class HeaderStackType(Type):
    """``element[size]`` (header stack)."""

    element: Type
    size: "Expression"


@_node
class TupleType(Type):
    """``tuple<T1, T2, ...>``."""

    elements: Tuple[Type, ...] = ()


# --------------------------------------------------------------------------- expressions
@_node
class Expression(Node):
    """Base of expression nodes."""


@_node
class IntLiteral(Expression):
    """Integer literal; ``width`` is None for unsized literals (``5``, ``0x1F``)."""

    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@_node
class BoolLiteral(Expression):
    value: bool


@_node
class StringLiteral(Expression):
    value: str


@_node
class PathExpression(Expression):
    """An identifier (variable, parameter, state, action, table, instance, type name...)."""

    name: str


@_node
class MemberExpression(Expression):
    """``expr.member``."""

    expr: Expression
    member: str


@_node
class IndexExpression(Expression):
    """``expr[index]`` (header stack element)."""

    expr: Expression
    index: Expression


@_node
class SliceExpression(Expression):
    """``expr[high:low]``."""

    expr: Expression
    high: Expression
    low: Expression


@_node
class UnaryExpression(Expression):
    """``op operand`` with op in ``- + ! ~``."""

    op: str
    operand: Expression


@_node
class BinaryExpression(Expression):
    """``left op right``."""

    op: str
    left: Expression
    right: Expression


@_node
class TernaryExpression(Expression):
    """``condition ? then : otherwise``."""

    condition: Expression
    then: Expression
    otherwise: Expression


@_node
class CastExpression(Expression):
    """``(type) expr``."""

    type: Type
    expr: Expression


@_node
class NamedArgument(Expression):
    """``name = value`` in a call's argument list."""

    name: str
    value: Expression


@_node
class MethodCallExpression(Expression):
    """``method<type_args>(args)``; also constructor calls (``MyParser()``)."""

    method: Expression
    type_args: Tuple[Type, ...] = ()
    args: Tuple[Expression, ...] = ()


@_node
class ListExpression(Expression):
    """``{a, b, c}`` (tuple / list / header or struct initializer by position)."""

    elements: Tuple[Expression, ...] = ()


@_node
class NamedExpression(Node):
    """``name = value`` inside a struct expression."""

    name: str
    value: Expression


@_node
class StructExpression(Expression):
    """``{a = 1, b = 2}``; ``type`` set for ``(T){...}``-style typed initializers if present."""

    fields: Tuple[NamedExpression, ...] = ()
    type: Type | None = None


@_node
class DotsExpression(Expression):
    """``...``."""


@_node
class TypeExpression(Expression):
    """A type used where an expression is expected."""

    type: Type


@_node
class DefaultExpression(Expression):
    """``default`` (keyset / switch label)."""


@_node
class DontCareExpression(Expression):
    """``_`` (keyset wildcard or don't-care argument)."""


@_node
class MaskExpression(Expression):
    """``value &&& mask``."""

    value: Expression
    mask: Expression


@_node
class RangeExpression(Expression):
    """``low .. high``."""

    low: Expression
    high: Expression


# --------------------------------------------------------------------------- statements
@_node
class Statement(Node):
    """Base of statement nodes."""


@_node
class BlockStatement(Statement):
    statements: Tuple[Statement, ...] = ()
    annotations: Annotations = ()


@_node
class AssignmentStatement(Statement):
    target: Expression
    value: Expression


@_node
class CompoundAssignmentStatement(AssignmentStatement):
    """``target op= rhs``, held as ``target = target op rhs`` (``value``); ``op`` and ``rhs``
    let the back end evaluate a target with a call in it once, as P4 requires."""
    op: str
    rhs: Expression


@_node
class MethodCallStatement(Statement):
    call: MethodCallExpression


@_node
class IfStatement(Statement):
    condition: Expression
    then: Statement
    otherwise: Statement | None = None


@_node
class SwitchCase(Node):
    """``label: body``; ``body`` None for a fall-through label (``a:`` then ``b: {...}``)."""

    label: Expression
    body: BlockStatement | None = None


@_node
class SwitchStatement(Statement):
    """``switch (expr) { cases }`` (usually ``t.apply().action_run``)."""

    expression: Expression
    cases: Tuple[SwitchCase, ...] = ()


@_node
class ExitStatement(Statement):
    pass


@_node
class ReturnStatement(Statement):
    value: Expression | None = None


@_node
class EmptyStatement(Statement):
    pass


@_node
class ForStatement(Statement):
    """``for (init; condition; update) body``; init and update are comma-separated simple
    statements (declarations, assignments, calls)."""
    init: Tuple[Statement, ...] = ()
    condition: Expression | None = None
    update: Tuple[Statement, ...] = ()
    body: Statement | None = None
    annotations: Annotations = ()


@_node
class ForInStatement(Statement):
    """``for (T name in collection) body`` (``type`` None: ``name`` is an existing variable);
    the collection is a ``RangeExpression``, a list expression or a header stack."""
    type: Type | None = None
    name: str = ""
    collection: Expression | None = None
    body: Statement | None = None
    annotations: Annotations = ()


@_node
class BreakStatement(Statement):
    pass


@_node
class ContinueStatement(Statement):
    pass


# --------------------------------------------------------------------------- declarations
@_node
class Declaration(Statement):
    """Base of declarations (also usable as statements where P4 allows)."""

    name: str = ""
    annotations: Annotations = ()


@_node
class ConstDecl(Declaration):
    type: Type
    value: Expression


@_node
class TypedefDecl(Declaration):
    type: Type


@_node
class NewTypeDecl(Declaration):
    """``type T_base NAME;``."""

    type: Type


@_node
class Field(Node):
    name: str
    type: Type
    annotations: Annotations = ()


@_node
class HeaderDecl(Declaration):
    fields: Tuple[Field, ...] = ()
    type_params: Tuple[str, ...] = ()


@_node
class HeaderUnionDecl(Declaration):
    fields: Tuple[Field, ...] = ()
    type_params: Tuple[str, ...] = ()


@_node
class StructDecl(Declaration):
    fields: Tuple[Field, ...] = ()
    type_params: Tuple[str, ...] = ()


@_node
class EnumMember(Node):
    name: str
    value: Expression | None = None


@_node
class EnumDecl(Declaration):
    """``enum E {A, B}`` or serializable ``enum bit<8> E {A = 1}`` (``underlying`` set)."""

    members: Tuple[EnumMember, ...] = ()
    underlying: Type | None = None


@_node
class ErrorDecl(Declaration):
    """``error { A, B }`` (name is ``"error"``; several declarations add up)."""

    members: Tuple[EnumMember, ...] = ()


@_node
class MatchKindDecl(Declaration):
    """``match_kind { exact, ternary }`` (name is ``"match_kind"``)."""

    members: Tuple[EnumMember, ...] = ()


@_node
class Parameter(Node):
    name: str
    type: Type
    direction: str | None = None
    default: Expression | None = None
    annotations: Annotations = ()


@_node
class MethodPrototype(Node):
    """A method (or function) signature; constructors have ``return_type`` None."""

    name: str
    return_type: Type | None
    params: Tuple[Parameter, ...] = ()
    type_params: Tuple[str, ...] = ()
    annotations: Annotations = ()
    is_abstract: bool = False
    is_constructor: bool = False


@_node
class ExternDecl(Declaration):
    """``extern Name<T> { constructors and methods }``."""

    type_params: Tuple[str, ...] = ()
    methods: Tuple[MethodPrototype, ...] = ()

    @property
    def constructors(self) -> Tuple[MethodPrototype, ...]:
        return tuple(m for m in self.methods if m.is_constructor)


@_node
class ExternFunctionDecl(Declaration):
    """``extern R f<T>(params);``."""

    prototype: MethodPrototype


@_node
class FunctionDecl(Declaration):
    """A P4 function with a body: ``R f(params) { ... }``."""

    prototype: MethodPrototype
    body: BlockStatement


@_node
class ParserTypeDecl(Declaration):
    """``parser P<H>(packet_in b, out H h);``."""

    type_params: Tuple[str, ...] = ()
    params: Tuple[Parameter, ...] = ()


@_node
class ControlTypeDecl(Declaration):
    type_params: Tuple[str, ...] = ()
    params: Tuple[Parameter, ...] = ()


@_node
class PackageTypeDecl(Declaration):
    type_params: Tuple[str, ...] = ()
    params: Tuple[Parameter, ...] = ()


@_node
class VariableDecl(Declaration):
    type: Type
    initializer: Expression | None = None


@_node
class InstantiationDecl(Declaration):
    """``Type(args) name;`` — extern instance, package instance (``main``), sub-parser/control."""

    type: Type
    args: Tuple[Expression, ...] = ()


@_node
class ValueSetDecl(Declaration):
    """``value_set<T>(size) name;`` inside a parser."""

    element_type: Type
    size: Expression


@_node
class SelectCase(Node):
    """``keyset : state``; keyset is an expression, ``ListExpression`` for tuples,
    ``DefaultExpression``/``DontCareExpression``, ``MaskExpression`` or ``RangeExpression``."""

    keyset: Expression
    state: str


@_node
class SelectExpression(Expression):
    """``select(keys) { cases }``."""

    keys: Tuple[Expression, ...] = ()
    cases: Tuple[SelectCase, ...] = ()


Transition = Union[PathExpression, SelectExpression]


@_node
class ParserState(Node):
    """``state name { statements transition ...; }``; ``transition`` None means reject
    implicitly (P4 requires one, but the back end reports it)."""

    name: str
    statements: Tuple[Statement, ...] = ()
    transition: Transition | None = None
    annotations: Annotations = ()


@_node
class ParserDecl(Declaration):
    type_params: Tuple[str, ...] = ()
    params: Tuple[Parameter, ...] = ()
    ctor_params: Tuple[Parameter, ...] = ()
    locals: Tuple[Declaration, ...] = ()
    states: Tuple[ParserState, ...] = ()


@_node
class ActionDecl(Declaration):
    params: Tuple[Parameter, ...] = ()
    body: BlockStatement = field(default_factory=BlockStatement)


@_node
class KeyElement(Node):
    """``expression : match_kind`` in a table key."""

    expression: Expression
    match_kind: str
    annotations: Annotations = ()


@_node
class ActionRef(Node):
    """An action named in a table (``a``, ``a(args)``); annotations (``@defaultonly``)."""

    name: str
    args: Tuple[Expression, ...] = ()
    annotations: Annotations = ()
    has_call: bool = False
    """True when written with parentheses (``a()``), as default_action requires."""


@_node
class TableEntry(Node):
    """A ``const entries`` entry: keyset (one expression per key), action, optional priority.

    ``keys`` holds one expression per table key, except that a lone ``default`` or ``_``
    keyset (``default : a();``) is a single ``DefaultExpression``/``DontCareExpression``
    covering every key. ``priority`` comes from ``priority = N :`` or, failing that, from an
    ``@priority(N)`` annotation (which stays in ``annotations`` too); larger values win as in
    P4Runtime."""

    keys: Tuple[Expression, ...]
    action: ActionRef
    priority: Expression | None = None
    is_const: bool = False
    annotations: Annotations = ()


@_node
class TableProperty(Node):
    name: str
    is_const: bool = False
    annotations: Annotations = ()


@_node
class KeyProperty(TableProperty):
    elements: Tuple[KeyElement, ...] = ()


@_node
class ActionsProperty(TableProperty):
    actions: Tuple[ActionRef, ...] = ()


@_node
class DefaultActionProperty(TableProperty):
    action: ActionRef = None  # type: ignore[assignment]


@_node
class EntriesProperty(TableProperty):
    entries: Tuple[TableEntry, ...] = ()


@_node
class ExpressionProperty(TableProperty):
    """``size = 1024``, ``counters = c``, ``implementation = action_selector(...)``, ..."""

    value: Expression = None  # type: ignore[assignment]


@_node
class TableDecl(Declaration):
    properties: Tuple[TableProperty, ...] = ()

    def property(self, name: str) -> TableProperty | None:
        """The property called ``name`` (``key``, ``actions``, ``size``...), or None."""
        for prop in self.properties:
            if prop.name == name:
                return prop
        return None


@_node
class ControlDecl(Declaration):
    type_params: Tuple[str, ...] = ()
    params: Tuple[Parameter, ...] = ()
    ctor_params: Tuple[Parameter, ...] = ()
    locals: Tuple[Declaration, ...] = ()
    body: BlockStatement = field(default_factory=BlockStatement)


@_node
class Program(Node):
    """A whole preprocessed compilation unit (built-in includes first)."""

    declarations: Tuple[Declaration, ...] = ()


# --------------------------------------------------------------------------- helpers
def dump(node: Any, with_loc: bool = False) -> Any:
    """A plain nested structure (tuples/dicts) of a tree, for tests and debugging."""
    if isinstance(node, Node):
        out = {"kind": type(node).__name__}
        for f in fields(node):
            if f.name == "loc" and not with_loc:
                continue
            out[f.name] = dump(getattr(node, f.name), with_loc)
        return out
    if isinstance(node, (tuple, list)):
        return tuple(dump(n, with_loc) for n in node)
    if is_dataclass(node):
        return str(node)
    return node


def walk(node: Any):
    """Yield ``node`` and every node below it (pre-order)."""
    if isinstance(node, Node):
        yield node
        for f in fields(node):
            if f.name != "loc":
                yield from walk(getattr(node, f.name))
    elif isinstance(node, (tuple, list)):
        for n in node:
            yield from walk(n)
