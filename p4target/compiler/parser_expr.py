"""Expression and type parsing for the P4_16 parser (a mixin of :class:`parser.Parser`).

Precedence (loosest first), as in the P4_16 grammar: ``?:``, ``||``, ``&&``, ``== !=``,
``< > <= >=``, ``|``, ``^``, ``&``, ``<< >>``, ``++ + - |+| |-|``, ``* / %``, prefix
``! ~ - +``, postfix ``. [] () <T>()``. Keyset operators ``&&&`` and ``..`` bind loosest of all
and only appear in select cases and table entries.
"""
from __future__ import annotations

from typing import List, Tuple

from p4target.compiler import ast
from p4target.compiler.lexer import Token
from p4target.errors import CompileError, UnsupportedError

_BINARY_PRECEDENCE = {
    "||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4, "|": 5, "^": 6,
    "&": 7, "<<": 8, ">>": 8, "++": 9, "+": 9, "-": 9, "|+|": 9, "|-|": 9, "*": 10, "/": 10,
    "%": 10,
}
_PREFIX_OPS = frozenset({"!", "~", "-", "+"})
COMPOUND_ASSIGNMENTS = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", "|+|=", "|-|="})
_BASE_TYPE_KEYWORDS = frozenset({"bit", "int", "varbit", "bool", "error", "string", "void",
                                 "match_kind", "tuple", "_"})
# Keyword tokens accepted as names after '.' (``t.apply()``) and as table property names.
_NAME_KEYWORDS = frozenset({"apply", "state", "type", "key", "actions", "entries", "error",
                            "default", "in", "out", "inout"})

# Of those, the ones P4 reserves: never the name of a declaration.
_RESERVED_NAMES = frozenset({"error", "default", "in", "out", "inout"})

# Keywords P4 also allows as plain names (nonTypeName), e.g. a parameter called ``type``.
_KEYWORD_VALUE_NAMES = frozenset({"apply", "state", "type"})


class ExpressionParsing:
    """Mixin with token-cursor helpers, types and expressions."""

    tokens: List[Token]
    k: int

    # ------------------------------------------------------------------ cursor helpers
    def peek(self, offset: int = 0) -> Token:
        i = self.k + offset
        return self.tokens[i] if i < len(self.tokens) else self.tokens[-1]

    def advance(self) -> Token:
        tok = self.tokens[self.k]
        if tok.kind != "eof":
            self.k += 1
        return tok

    def at(self, kind: str) -> bool:
        return self.tokens[self.k].kind == kind

    def accept(self, kind: str) -> Token | None:
        if self.tokens[self.k].kind == kind:
            return self.advance()
        return None

    def expect(self, kind: str, what: str | None = None) -> Token:
        tok = self.tokens[self.k]
        if tok.kind != kind:
            self.error_at(tok, f"expected {what or repr(kind)}, found {self.describe(tok)}")
        return self.advance()

    def expect_name(self, what: str = "a name") -> Token:
        """An identifier (or a keyword allowed as a name, such as ``apply`` or ``key``)."""
        tok = self.tokens[self.k]
        if tok.kind == "id" or tok.kind in _NAME_KEYWORDS:
            return self.advance()
        self.error_at(tok, f"expected {what}, found {self.describe(tok)}")
        raise AssertionError  # unreachable

    def expect_declared_name(self, what: str = "a name") -> Token:
        """The name a declaration introduces: keywords P4 reserves (``out``, ``default`` ...) are
        refused there, as p4c does, though they may follow '.' or name a table property."""
        tok = self.tokens[self.k]
        if tok.kind in _RESERVED_NAMES:
            self.error_at(tok, f"'{tok.text}' is a keyword and cannot be {what}")
        return self.expect_name(what)

    @staticmethod
    def describe(tok: Token) -> str:
        if tok.kind == "eof":
            return "end of input"
        return repr(tok.text)

    @staticmethod
    def error_at(tok: Token, message: str) -> None:
        raise CompileError(message, tok.loc.file, tok.loc.line, tok.loc.column)

    @staticmethod
    def unsupported_at(tok: Token, construct: str, detail: str = "") -> None:
        raise UnsupportedError(construct, tok.loc.file, tok.loc.line, tok.loc.column, detail)

    def is_type_name(self, name: str) -> bool:
        raise NotImplementedError

    def _is_shift_right(self) -> bool:
        a = self.tokens[self.k]
        b = self.peek(1)
        return a.kind == ">" and b.kind == ">" and b.offset == a.end

    def compound_assignment_op(self) -> str | None:
        """The operator of a compound assignment at the cursor (``+=`` -> ``+``, ``>>=`` ->
        ``>>``), consuming it, or None."""
        tok = self.tokens[self.k]
        if tok.kind in COMPOUND_ASSIGNMENTS:
            self.advance()
            return tok.kind[:-1]
        nxt = self.peek(1)
        if tok.kind == ">" and nxt.kind == ">=" and nxt.offset == tok.end:
            self.advance()
            self.advance()
            return ">>"
        return None

    # ------------------------------------------------------------------ types
    def starts_type(self, offset: int = 0) -> bool:
        tok = self.peek(offset)
        if tok.kind in _BASE_TYPE_KEYWORDS:
            return True
        return tok.kind == "id" and self.is_type_name(tok.text)

    def parse_type(self, allow_stack: bool = True) -> ast.Type:
        tok = self.advance()
        loc = tok.loc
        kind = tok.kind
        result: ast.Type
        if kind in ("bit", "int", "varbit"):
            if self.at("<"):
                self.advance()
                width = self._parse_width()
                self.expect(">", "'>' closing the width")
                if kind == "varbit":
                    result = ast.VarbitType(loc=loc, width=width)
                else:
                    result = ast.BitType(loc=loc, width=width, signed=(kind == "int"))
            elif kind == "bit":
                result = ast.BitType(loc=loc, width=ast.IntLiteral(loc=loc, value=1, text="1"))
            elif kind == "int":
                result = ast.IntType(loc=loc)
            else:
                self.error_at(tok, "varbit needs a width: varbit<W>")
                raise AssertionError
        elif kind == "bool":
            result = ast.BoolType(loc=loc)
        elif kind == "error":
            result = ast.ErrorType(loc=loc)
        elif kind == "string":
            result = ast.StringType(loc=loc)
        elif kind == "void":
            result = ast.VoidType(loc=loc)
        elif kind == "match_kind":
            result = ast.MatchKindType(loc=loc)
        elif kind == "_":
            result = ast.DontCareType(loc=loc)
        elif kind == "tuple":
            self.expect("<", "'<' after tuple")
            result = ast.TupleType(loc=loc, elements=self._parse_type_args_rest())
        elif kind == "id" or (kind == "." and self.at("id")):
            if kind == ".":
                tok = self.advance()
            name = ast.TypeName(loc=tok.loc, name=tok.text)
            if self.at("<"):
                self.advance()
                result = ast.SpecializedType(loc=loc, base=name, args=self._parse_type_args_rest())
            else:
                result = name
        else:
            self.error_at(tok, f"expected a type, found {self.describe(tok)}")
            raise AssertionError
        if allow_stack and self.at("["):
            self.advance()
            size = self.parse_expression()
            self.expect("]", "']' closing the header stack size")
            result = ast.HeaderStackType(loc=loc, element=result, size=size)
        return result

    def _parse_width(self) -> ast.Expression:
        tok = self.peek()
        if tok.kind == "num":
            self.advance()
            return self._int_literal(tok)
        if tok.kind == "(":
            self.advance()
            expr = self.parse_expression()
            self.expect(")")
            return expr
        if tok.kind == "id":
            self.advance()
            expr: ast.Expression = ast.PathExpression(loc=tok.loc, name=tok.text)
            while self.at("."):
                self.advance()
                member = self.expect_name("a member name")
                expr = ast.MemberExpression(loc=member.loc, expr=expr, member=member.text)
            return expr
        self.error_at(tok, f"expected a width, found {self.describe(tok)}")
        raise AssertionError

    def _parse_type_args_rest(self) -> Tuple[ast.Type, ...]:
        """Type arguments after '<' up to and including the closing '>'."""
        args = [self.parse_type()]
        while self.accept(","):
            args.append(self.parse_type())
        self.expect(">", "'>' closing the type arguments")
        return tuple(args)

    def _try_type_args_call(self) -> Tuple[ast.Type, ...] | None:
        """At '<': speculatively parse ``<types>(``; restore the cursor and return None if not."""
        if not self.starts_type(1):
            return None
        save = self.k
        try:
            self.advance()
            args = self._parse_type_args_rest()
        except CompileError:
            self.k = save
            return None
        if not self.at("("):
            self.k = save
            return None
        return args

    # ------------------------------------------------------------------ expressions
    @staticmethod
    def _int_literal(tok: Token) -> ast.IntLiteral:
        value, width, signed = tok.value  # type: ignore[misc]
        return ast.IntLiteral(loc=tok.loc, value=value, width=width, signed=signed, text=tok.text)

    def parse_expression(self) -> ast.Expression:
        cond = self._parse_binary(1)
        if self.at("?"):
            self.advance()
            then = self.parse_expression()
            self.expect(":", "':' of the conditional expression")
            otherwise = self.parse_expression()
            return ast.TernaryExpression(loc=cond.loc, condition=cond, then=then, otherwise=otherwise)
        return cond

    def _parse_binary(self, min_prec: int) -> ast.Expression:
        left = self._parse_prefix()
        tokens = self.tokens
        while True:
            tok = tokens[self.k]
            op = tok.kind
            if op == ">" and self._is_shift_right():
                op = ">>"
            elif op == ">" and self.peek(1).kind == ">=" and self.peek(1).offset == tok.end:
                return left  # ``>>=``
            prec = _BINARY_PRECEDENCE.get(op)
            if prec is None or prec < min_prec:
                return left
            self.advance()
            if op == ">>":
                self.advance()
            right = self._parse_binary(prec + 1)
            left = ast.BinaryExpression(loc=left.loc, op=op, left=left, right=right)

    def _parse_prefix(self) -> ast.Expression:
        tok = self.tokens[self.k]
        if tok.kind in _PREFIX_OPS:
            self.advance()
            operand = self._parse_prefix()
            return ast.UnaryExpression(loc=tok.loc, op=tok.kind, operand=operand)
        return self._parse_postfix(self._parse_primary())

    def _parse_primary(self) -> ast.Expression:
        tok = self.advance()
        kind = tok.kind
        loc = tok.loc
        if kind == "num":
            return self._int_literal(tok)
        if kind == "id" or kind in _KEYWORD_VALUE_NAMES:
            return ast.PathExpression(loc=loc, name=tok.text)
        if kind == "true" or kind == "false":
            return ast.BoolLiteral(loc=loc, value=(kind == "true"))
        if kind == "str":
            return ast.StringLiteral(loc=loc, value=tok.value)  # type: ignore[arg-type]
        if kind == "(":
            if self._looks_like_cast():
                type_ = self.parse_type()
                self.expect(")", "')' closing the cast type")
                operand = self._parse_prefix()
                return ast.CastExpression(loc=loc, type=type_, expr=operand)
            expr = self.parse_expression()
            self.expect(")", "')'")
            return expr
        if kind == "{":
            return self._parse_brace_expression(tok)
        if kind == "error":
            return ast.PathExpression(loc=loc, name="error")
        if kind == "." and self.at("id"):
            name = self.advance()
            return ast.PathExpression(loc=loc, name=name.text)
        if kind == "...":
            return ast.DotsExpression(loc=loc)
        if kind == "_":
            return ast.DontCareExpression(loc=loc)
        if kind in ("bit", "int", "varbit", "bool", "tuple", "string"):
            self.k -= 1
            return ast.TypeExpression(loc=loc, type=self.parse_type(allow_stack=False))
        if kind in ("this",) or tok.text in ("this",):
            self.unsupported_at(tok, "'this' expression")
        if kind == "eof":
            self.error_at(tok, "unexpected end of input in an expression")
        self.error_at(tok, f"expected an expression, found {self.describe(tok)}")
        raise AssertionError

    def _looks_like_cast(self) -> bool:
        """After '(': a type followed by ')' then an operand means a cast."""
        tok = self.peek()
        if tok.kind in ("bit", "int", "varbit", "bool", "tuple", "string"):
            return True
        if tok.kind == "id" and self.is_type_name(tok.text):
            nxt = self.peek(1).kind
            return nxt in (")", "<")
        return False

    def _parse_brace_expression(self, open_tok: Token) -> ast.Expression:
        loc = open_tok.loc
        if self.accept("}"):
            return ast.ListExpression(loc=loc, elements=())
        if (self.peek().kind == "id" or self.peek().kind in _NAME_KEYWORDS) and \
                self.peek(1).kind == "=":
            fields: List[ast.NamedExpression] = []
            while True:
                name = self.expect_name("a field name")
                self.expect("=")
                value = self.parse_expression()
                fields.append(ast.NamedExpression(loc=name.loc, name=name.text, value=value))
                if not self.accept(","):
                    break
                if self.at("}"):
                    break
            self.expect("}", "'}' closing the struct expression")
            return ast.StructExpression(loc=loc, fields=tuple(fields))
        elements = [self.parse_expression()]
        while self.accept(","):
            if self.at("}"):
                break
            elements.append(self.parse_expression())
        self.expect("}", "'}' closing the list expression")
        return ast.ListExpression(loc=loc, elements=tuple(elements))

    def _parse_postfix(self, expr: ast.Expression) -> ast.Expression:
        tokens = self.tokens
        while True:
            tok = tokens[self.k]
            kind = tok.kind
            if kind == ".":
                self.advance()
                member = self.peek()
                if member.kind == "id" or member.kind in _NAME_KEYWORDS:
                    self.advance()
                else:
                    self.error_at(member, f"expected a member name after '.', "
                                          f"found {self.describe(member)}")
                expr = ast.MemberExpression(loc=member.loc, expr=expr, member=member.text)
            elif kind == "[":
                self.advance()
                first = self.parse_expression()
                if self.accept(":"):
                    low = self.parse_expression()
                    self.expect("]", "']' closing the slice")
                    expr = ast.SliceExpression(loc=tok.loc, expr=expr, high=first, low=low)
                else:
                    self.expect("]", "']' closing the index")
                    expr = ast.IndexExpression(loc=tok.loc, expr=expr, index=first)
            elif kind == "(":
                self.advance()
                args = self.parse_arguments()
                expr = ast.MethodCallExpression(loc=expr.loc, method=expr, args=args)
            elif kind == "<" and isinstance(expr, (ast.PathExpression, ast.MemberExpression)):
                type_args = self._try_type_args_call()
                if type_args is None:
                    return expr
                self.expect("(")
                args = self.parse_arguments()
                expr = ast.MethodCallExpression(loc=expr.loc, method=expr,
                                                type_args=type_args, args=args)
            else:
                return expr

    def parse_arguments(self) -> Tuple[ast.Expression, ...]:
        """Call arguments after '(' up to and including ')'."""
        args: List[ast.Expression] = []
        if self.accept(")"):
            return ()
        while True:
            tok = self.peek()
            if (tok.kind == "id" or tok.kind in _NAME_KEYWORDS) and self.peek(1).kind == "=":
                self.advance()
                self.advance()
                value = self.parse_expression()
                args.append(ast.NamedArgument(loc=tok.loc, name=tok.text, value=value))
            elif tok.kind == "_" and self.peek(1).kind in (",", ")"):
                self.advance()
                args.append(ast.DontCareExpression(loc=tok.loc))
            else:
                args.append(self.parse_expression())
            if self.accept(")"):
                return tuple(args)
            self.expect(",", "',' or ')' in the argument list")

    # ------------------------------------------------------------------ keysets
    def parse_simple_keyset(self) -> ast.Expression:
        """``default``, ``_``, ``e``, ``e &&& m`` or ``lo .. hi``."""
        tok = self.peek()
        if tok.kind == "default":
            self.advance()
            return ast.DefaultExpression(loc=tok.loc)
        if tok.kind == "_" and self.peek(1).kind in (",", ")", ":"):
            self.advance()
            return ast.DontCareExpression(loc=tok.loc)
        value = self.parse_expression()
        if self.at("&&&"):
            op = self.advance()
            mask = self.parse_expression()
            return ast.MaskExpression(loc=op.loc, value=value, mask=mask)
        if self.at(".."):
            op = self.advance()
            high = self.parse_expression()
            return ast.RangeExpression(loc=op.loc, low=value, high=high)
        return value

    def parse_keyset(self) -> ast.Expression:
        """A select-case or entry keyset: a simple keyset or a parenthesized tuple of them."""
        tok = self.peek()
        if tok.kind == "(":
            save = self.k
            self.advance()
            elements = [self.parse_simple_keyset()]
            while self.accept(","):
                elements.append(self.parse_simple_keyset())
            if self.accept(")") and (len(elements) > 1 or self.at(":")):
                if len(elements) == 1:
                    return elements[0]
                return ast.ListExpression(loc=tok.loc, elements=tuple(elements))
            # a parenthesized expression that continues, e.g. (a + b) &&& m
            self.k = save
        return self.parse_simple_keyset()
