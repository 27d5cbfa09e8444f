"""Recursive-descent parser for the P4_16 subset: tokens -> :mod:`p4target.compiler.ast`.

Entry points: :func:`parse_program` (a file, preprocessed) and :func:`parse_text`.
The parser keeps the set of declared type names (headers, structs, typedefs, externs,
parsers, controls, packages, type parameters in scope) because P4 needs it to tell a
declaration (``T x;``, ``register<bit<8>>(4) r;``) from a statement, and a cast from a
parenthesized expression. Expressions and types live in :mod:`parser_expr`.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import List, Mapping, Sequence, Set, Tuple

from p4target.compiler import ast
from p4target.compiler.lexer import UNSUPPORTED_KEYWORDS, Token, tokenize
from p4target.compiler.parser_expr import ExpressionParsing
from p4target.compiler.preprocessor import PreprocessedSource, preprocess_file, preprocess_text
from p4target.errors import CompileError


class Parser(ExpressionParsing):
    """Parses one token list into an :class:`ast.Program`."""

    def __init__(self, tokens: List[Token], source_text: str = "") -> None:
        self.tokens = tokens
        self.k = 0
        self.text = source_text
        self.type_names: Set[str] = set()
        self.type_scopes: List[Set[str]] = []

    # ------------------------------------------------------------------ type names
    def is_type_name(self, name: str) -> bool:
        if name in self.type_names:
            return True
        for scope in self.type_scopes:
            if name in scope:
                return True
        return False

    def declare_type(self, name: str) -> None:
        self.type_names.add(name)

    def _parse_type_params(self) -> Tuple[str, ...]:
        """Optional ``<A, B>`` type parameters; they are pushed as a new type scope by caller."""
        if not self.at("<"):
            return ()
        self.advance()
        names = [self.expect_name("a type parameter").text]
        while self.accept(","):
            names.append(self.expect_name("a type parameter").text)
        self.expect(">", "'>' closing the type parameters")
        return tuple(names)

    # ------------------------------------------------------------------ program
    def parse_program(self) -> ast.Program:
        decls: List[ast.Declaration] = []
        start = self.peek().loc
        while not self.at("eof"):
            if self.accept(";"):
                continue
            decls.append(self.parse_top_declaration())
        return ast.Program(loc=start, declarations=tuple(decls))

    # ------------------------------------------------------------------ annotations
    def parse_annotations(self) -> Tuple[ast.Annotation, ...]:
        anns: List[ast.Annotation] = []
        while self.at("@"):
            at = self.advance()
            name_tok = self.peek()
            if name_tok.kind == "id" or name_tok.kind.isidentifier():
                self.advance()
            else:
                self.error_at(name_tok, "expected an annotation name after '@'")
            args: Tuple[ast.Expression, ...] = ()
            raw = ""
            nxt = self.peek()
            if nxt.kind in ("(", "[") and nxt.offset == name_tok.end or \
                    (nxt.kind == "(" and nxt.loc.line == name_tok.loc.line):
                close = ")" if nxt.kind == "(" else "]"
                open_kind = nxt.kind
                body_start = self.k + 1
                depth = 0
                while True:
                    t = self.advance()
                    if t.kind == "eof":
                        self.error_at(nxt, f"unterminated annotation @{name_tok.text}")
                    if t.kind == open_kind:
                        depth += 1
                    elif t.kind == close:
                        depth -= 1
                        if depth == 0:
                            break
                body_end = self.k - 1
                body = self.tokens[body_start:body_end]
                if body:
                    raw = self.text[body[0].offset:body[-1].end] if self.text else \
                        " ".join(t.text for t in body)
                if open_kind == "(":
                    args = self._parse_annotation_args(body)
                else:
                    anns.append(self._structured_annotation(at, name_tok.text, body, raw))
                    continue
            anns.append(ast.Annotation(loc=at.loc, name=name_tok.text, args=args, raw=raw))
        return tuple(anns)

    def _parse_annotation_args(self, body: List[Token]) -> Tuple[ast.Expression, ...]:
        if not body:
            return ()
        sub = self._sub_parser(body)
        try:
            args = [sub._parse_annotation_arg()]
            while sub.accept(","):
                args.append(sub._parse_annotation_arg())
            if not sub.at("eof"):
                return ()
        except CompileError:
            return ()
        return tuple(args)

    def _sub_parser(self, body: List[Token]) -> "Parser":
        """A parser of an annotation's body tokens, knowing this one's type names."""
        eof = Token("eof", "", None, body[-1].loc, body[-1].end, body[-1].end)
        sub = Parser(list(body) + [eof], self.text)
        sub.type_names = self.type_names
        sub.type_scopes = self.type_scopes
        return sub

    def _structured_annotation(self, at: Token, name: str, body: List[Token], raw: str) -> ast.Annotation:
        """``@name[ expressionList ]`` or ``@name[ kvList ]`` (P4_16 structured annotations):
        one kind of list only, each key once."""
        args: List[ast.Expression] = []
        if body:
            sub = self._sub_parser(body)
            args.append(sub._parse_annotation_arg())
            while sub.accept(","):
                if sub.at("eof"):  # a trailing comma is allowed
                    break
                args.append(sub._parse_annotation_arg())
            if not sub.at("eof"):
                sub.error_at(sub.peek(), f"unexpected '{sub.peek().text}' in structured annotation @{name}")
        named = [a for a in args if isinstance(a, ast.NamedArgument)]
        if named and len(named) != len(args):
            raise CompileError.at(at.loc, f"@{name}: a structured annotation mixes key = value pairs "
                                          "and plain expressions")
        keys = [a.name for a in named]
        for i, key in enumerate(keys):
            if key in keys[:i]:
                raise CompileError.at(named[i].loc, f"@{name}: duplicate key '{key}'")
        return ast.Annotation(loc=at.loc, name=name, args=tuple(args), raw=raw, structured=True)

    def _parse_annotation_arg(self) -> ast.Expression:
        tok = self.peek()
        if tok.text.isidentifier() and self.peek(1).kind == "=":  # keys may be keywords (type=...)
            self.advance()
            self.advance()
            return ast.NamedArgument(loc=tok.loc, name=tok.text, value=self.parse_expression())
        return self.parse_expression()

    # ------------------------------------------------------------------ declarations
    def parse_top_declaration(self) -> ast.Declaration:
        anns = self.parse_annotations()
        tok = self.peek()
        kind = tok.kind
        if kind == "const":
            return self.parse_const(anns)
        if kind == "typedef" or kind == "type":
            return self.parse_typedef(anns)
        if kind in ("header", "struct", "header_union"):
            return self.parse_struct_like(anns)
        if kind == "enum":
            return self.parse_enum(anns)
        if kind == "error" and self.peek(1).kind == "{":
            return self.parse_member_list_decl(anns, ast.ErrorDecl, "error")
        if kind == "match_kind" and self.peek(1).kind == "{":
            return self.parse_member_list_decl(anns, ast.MatchKindDecl, "match_kind")
        if kind == "extern":
            return self.parse_extern(anns)
        if kind == "parser":
            return self.parse_parser(anns)
        if kind == "control":
            return self.parse_control(anns)
        if kind == "package":
            return self.parse_package(anns)
        if kind == "action":
            return self.parse_action(anns)
        if kind == "table":
            self.unsupported_at(tok, "table declared outside a control")
        if kind == "id" and tok.text in UNSUPPORTED_KEYWORDS:
            self.unsupported_at(tok, f"'{tok.text}' declaration")
        if self.starts_type() or (kind == "id" and self.peek(1).kind in ("id", "<")):
            return self.parse_typed_top_declaration(anns)
        self.error_at(tok, f"expected a declaration, found {self.describe(tok)}")
        raise AssertionError

    def parse_typed_top_declaration(self, anns: Tuple[ast.Annotation, ...]) -> ast.Declaration:
        """Instantiation ``T(args) n;``, function ``R f(params) {..}`` or variable ``T n;``."""
        start = self.peek()
        # A generic function's return type may be one of its own type parameters: look for
        # ``R name <`` / ``R name (`` before committing to a type.
        type_ = self.parse_type()
        if self.at("("):
            self.advance()
            args = self.parse_arguments()
            name = self.expect_declared_name("the instance name")
            if self.at("="):
                self.unsupported_at(self.peek(), "instantiation with an initializer block "
                                                 "(abstract method implementations)")
            self.expect(";", "';' after the instantiation")
            return ast.InstantiationDecl(loc=start.loc, name=name.text, annotations=anns,
                                         type=type_, args=args)
        name = self.expect_declared_name("a declaration name")
        if self.at("(") or self.at("<"):
            return self._parse_function_rest(anns, start, type_, name)
        init = None
        if self.accept("="):
            init = self.parse_expression()
        self.expect(";", "';' after the declaration")
        return ast.VariableDecl(loc=start.loc, name=name.text, annotations=anns, type=type_,
                                initializer=init)

    def _parse_function_rest(self, anns, start: Token, ret: ast.Type,
                             name: Token) -> ast.FunctionDecl:
        type_params = self._parse_type_params()
        self.type_scopes.append(set(type_params))
        try:
            params = self.parse_parameters()
            proto = ast.MethodPrototype(loc=name.loc, name=name.text, return_type=ret,
                                        params=params, type_params=type_params,
                                        annotations=anns)
            body = self.parse_block()
        finally:
            self.type_scopes.pop()
        return ast.FunctionDecl(loc=start.loc, name=name.text, annotations=anns,
                                prototype=proto, body=body)

    def parse_const(self, anns) -> ast.ConstDecl:
        start = self.expect("const")
        type_ = self.parse_type()
        name = self.expect_declared_name("the constant's name")
        self.expect("=", "'=' in the constant declaration")
        value = self.parse_expression()
        self.expect(";", "';' after the constant declaration")
        return ast.ConstDecl(loc=start.loc, name=name.text, annotations=anns, type=type_,
                             value=value)

    def parse_typedef(self, anns) -> ast.Declaration:
        start = self.advance()
        if self.peek().kind in ("header", "struct", "header_union", "enum"):
            self.unsupported_at(self.peek(), f"{start.text} of an inline type declaration")
        type_ = self.parse_type()
        name = self.expect_declared_name("the type's name")
        self.expect(";", f"';' after the {start.text} declaration")
        self.declare_type(name.text)
        cls = ast.TypedefDecl if start.kind == "typedef" else ast.NewTypeDecl
        return cls(loc=start.loc, name=name.text, annotations=anns, type=type_)

    def parse_struct_like(self, anns) -> ast.Declaration:
        start = self.advance()
        name = self.expect_declared_name(f"the {start.text} name")
        self.declare_type(name.text)
        type_params = self._parse_type_params()
        self.type_scopes.append(set(type_params))
        try:
            self.expect("{", f"'{{' opening the {start.text} body")
            fields: List[ast.Field] = []
            while not self.accept("}"):
                if self.at("eof"):
                    self.error_at(self.peek(), f"unterminated {start.text} {name.text}")
                f_anns = self.parse_annotations()
                f_start = self.peek()
                f_type = self.parse_type()
                f_name = self.expect_declared_name("a field name")
                self.expect(";", "';' after the field")
                fields.append(ast.Field(loc=f_start.loc, name=f_name.text, type=f_type,
                                        annotations=f_anns))
        finally:
            self.type_scopes.pop()
        cls = {"header": ast.HeaderDecl, "struct": ast.StructDecl,
               "header_union": ast.HeaderUnionDecl}[start.kind]
        return cls(loc=start.loc, name=name.text, annotations=anns, fields=tuple(fields),
                   type_params=type_params)

    def parse_enum(self, anns) -> ast.EnumDecl:
        start = self.expect("enum")
        underlying = None
        if self.peek().kind in ("bit", "int") or (self.peek().kind == "id" and
                                                   self.peek(1).kind == "id"):
            underlying = self.parse_type(allow_stack=False)
        name = self.expect_declared_name("the enum name")
        self.declare_type(name.text)
        self.expect("{", "'{' opening the enum body")
        members: List[ast.EnumMember] = []
        while not self.at("}"):
            self.parse_annotations()
            m = self.expect_declared_name("an enum member")
            value = None
            if self.accept("="):
                value = self.parse_expression()
            members.append(ast.EnumMember(loc=m.loc, name=m.text, value=value))
            if not self.accept(","):
                break
        self.expect("}", "'}' closing the enum")
        return ast.EnumDecl(loc=start.loc, name=name.text, annotations=anns,
                            members=tuple(members), underlying=underlying)

    def parse_member_list_decl(self, anns, cls, keyword: str) -> ast.Declaration:
        start = self.advance()
        self.expect("{")
        members: List[ast.EnumMember] = []
        while not self.at("}"):
            m = self.expect_declared_name(f"a {keyword} member")
            members.append(ast.EnumMember(loc=m.loc, name=m.text))
            if not self.accept(","):
                break
        self.expect("}", f"'}}' closing the {keyword} declaration")
        self.accept(";")
        return cls(loc=start.loc, name=keyword, annotations=anns, members=tuple(members))

    def parse_parameters(self) -> Tuple[ast.Parameter, ...]:
        self.expect("(", "'(' opening the parameter list")
        params: List[ast.Parameter] = []
        if self.accept(")"):
            return ()
        while True:
            anns = self.parse_annotations()
            start = self.peek()
            direction = None
            if start.kind in ("in", "out", "inout"):
                direction = self.advance().kind
            type_ = self.parse_type()
            name = self.expect_declared_name("a parameter name")
            default = None
            if self.accept("="):
                default = self.parse_expression()
            params.append(ast.Parameter(loc=start.loc, name=name.text, type=type_,
                                        direction=direction, default=default, annotations=anns))
            if self.accept(")"):
                return tuple(params)
            self.expect(",", "',' or ')' in the parameter list")

    # ------------------------------------------------------------------ externs, packages
    def parse_extern(self, anns) -> ast.Declaration:
        start = self.expect("extern")
        if self._extern_is_object():
            name = self.advance()
            self.declare_type(name.text)
            type_params = self._parse_type_params()
            self.type_scopes.append(set(type_params))
            try:
                self.expect("{", "'{' opening the extern body")
                methods: List[ast.MethodPrototype] = []
                while not self.accept("}"):
                    if self.at("eof"):
                        self.error_at(self.peek(), f"unterminated extern {name.text}")
                    methods.append(self._parse_method_prototype(name.text))
            finally:
                self.type_scopes.pop()
            return ast.ExternDecl(loc=start.loc, name=name.text, annotations=anns,
                                  type_params=type_params, methods=tuple(methods))
        proto = self._parse_function_prototype(anns)
        self.expect(";", "';' after the extern function declaration")
        return ast.ExternFunctionDecl(loc=start.loc, name=proto.name, annotations=anns,
                                      prototype=proto)

    def _extern_is_object(self) -> bool:
        if self.peek().kind != "id":
            return False
        nxt = self.peek(1).kind
        if nxt == "{":
            return True
        if nxt != "<":
            return False
        depth = 0
        i = 1
        while True:
            kind = self.peek(i).kind
            if kind == "<":
                depth += 1
            elif kind == ">":
                depth -= 1
                if depth == 0:
                    return self.peek(i + 1).kind == "{"
            elif kind in ("eof", ";", "{", "("):
                return False
            i += 1

    def _parse_method_prototype(self, extern_name: str) -> ast.MethodPrototype:
        anns = self.parse_annotations()
        abstract = bool(self.accept("abstract"))
        tok = self.peek()
        if tok.kind == "id" and tok.text == extern_name and self.peek(1).kind == "(":
            self.advance()
            params = self.parse_parameters()
            self.expect(";", "';' after the constructor")
            return ast.MethodPrototype(loc=tok.loc, name=tok.text, return_type=None,
                                       params=params, annotations=anns, is_constructor=True)
        proto = self._parse_function_prototype(anns)
        proto.is_abstract = abstract
        self.expect(";", "';' after the method declaration")
        return proto

    def _parse_function_prototype(self, anns) -> ast.MethodPrototype:
        ret = self.parse_type()
        name = self.expect_declared_name("a function name")
        type_params = self._parse_type_params()
        self.type_scopes.append(set(type_params))
        try:
            params = self.parse_parameters()
        finally:
            self.type_scopes.pop()
        return ast.MethodPrototype(loc=name.loc, name=name.text, return_type=ret, params=params,
                                   type_params=type_params, annotations=anns)

    def parse_package(self, anns) -> ast.PackageTypeDecl:
        start = self.expect("package")
        name = self.expect_declared_name("the package name")
        self.declare_type(name.text)
        type_params = self._parse_type_params()
        self.type_scopes.append(set(type_params))
        try:
            params = self.parse_parameters()
        finally:
            self.type_scopes.pop()
        self.expect(";", "';' after the package declaration")
        return ast.PackageTypeDecl(loc=start.loc, name=name.text, annotations=anns,
                                   type_params=type_params, params=params)

    # ------------------------------------------------------------------ parsers
    def parse_parser(self, anns) -> ast.Declaration:
        start = self.expect("parser")
        name = self.expect_declared_name("the parser name")
        self.declare_type(name.text)
        type_params = self._parse_type_params()
        self.type_scopes.append(set(type_params))
        try:
            params = self.parse_parameters()
            if self.accept(";"):
                return ast.ParserTypeDecl(loc=start.loc, name=name.text, annotations=anns,
                                          type_params=type_params, params=params)
            ctor_params: Tuple[ast.Parameter, ...] = ()
            if self.at("("):
                ctor_params = self.parse_parameters()
            self.expect("{", "'{' opening the parser body")
            locals_: List[ast.Declaration] = []
            states: List[ast.ParserState] = []
            while not self.accept("}"):
                if self.at("eof"):
                    self.error_at(self.peek(), f"unterminated parser {name.text}")
                l_anns = self.parse_annotations()
                if self.at("state"):
                    states.append(self.parse_state(l_anns))
                elif states:
                    self.error_at(self.peek(), "expected a parser state, found "
                                  f"{self.describe(self.peek())}")
                else:
                    locals_.append(self.parse_local_declaration(l_anns, "parser"))
        finally:
            self.type_scopes.pop()
        _no_duplicate_names(locals_)
        return ast.ParserDecl(loc=start.loc, name=name.text, annotations=anns,
                              type_params=type_params, params=params, ctor_params=ctor_params,
                              locals=tuple(locals_), states=tuple(states))

    def parse_state(self, anns) -> ast.ParserState:
        start = self.expect("state")
        name = self.expect_declared_name("the state name")
        self.expect("{", "'{' opening the state")
        statements: List[ast.Statement] = []
        transition: ast.Transition | None = None
        while not self.accept("}"):
            tok = self.peek()
            if tok.kind == "eof":
                self.error_at(tok, f"unterminated state {name.text}")
            if tok.kind == "transition":
                if transition is not None:
                    self.error_at(tok, f"state {name.text} has more than one transition")
                self.advance()
                transition = self.parse_transition()
                continue
            if transition is not None:
                self.error_at(tok, "statements after the transition statement")
            statements.append(self.parse_statement())
        _no_duplicate_names(statements)
        return ast.ParserState(loc=start.loc, name=name.text, statements=tuple(statements),
                               transition=transition, annotations=anns)

    def parse_transition(self) -> ast.Transition:
        tok = self.peek()
        if tok.kind == "select":
            self.advance()
            select = self.parse_select(tok)
            self.accept(";")
            return select
        name = self.expect_name("a state name or select")
        self.expect(";", "';' after the transition")
        return ast.PathExpression(loc=name.loc, name=name.text)

    def parse_select(self, tok: Token) -> ast.SelectExpression:
        self.expect("(", "'(' after select")
        keys: List[ast.Expression] = []
        if not self.at(")"):
            keys.append(self.parse_expression())
            while self.accept(","):
                keys.append(self.parse_expression())
        self.expect(")", "')' closing the select keys")
        self.expect("{", "'{' opening the select cases")
        cases: List[ast.SelectCase] = []
        while not self.accept("}"):
            if self.at("eof"):
                self.error_at(self.peek(), "unterminated select")
            self.parse_annotations()
            start = self.peek()
            keyset = self.parse_keyset()
            self.expect(":", "':' after the select keyset")
            state = self.expect_name("a state name")
            self.expect(";", "';' after the select case")
            cases.append(ast.SelectCase(loc=start.loc, keyset=keyset, state=state.text))
        return ast.SelectExpression(loc=tok.loc, keys=tuple(keys), cases=tuple(cases))

    # ------------------------------------------------------------------ controls
    def parse_control(self, anns) -> ast.Declaration:
        start = self.expect("control")
        name = self.expect_declared_name("the control name")
        self.declare_type(name.text)
        type_params = self._parse_type_params()
        self.type_scopes.append(set(type_params))
        try:
            params = self.parse_parameters()
            if self.accept(";"):
                return ast.ControlTypeDecl(loc=start.loc, name=name.text, annotations=anns,
                                           type_params=type_params, params=params)
            ctor_params: Tuple[ast.Parameter, ...] = ()
            if self.at("("):
                ctor_params = self.parse_parameters()
            self.expect("{", "'{' opening the control body")
            locals_: List[ast.Declaration] = []
            body: ast.BlockStatement | None = None
            while not self.accept("}"):
                if self.at("eof"):
                    self.error_at(self.peek(), f"unterminated control {name.text}")
                l_anns = self.parse_annotations()
                if self.at("apply"):
                    if body is not None:
                        self.error_at(self.peek(), f"control {name.text} has two apply blocks")
                    self.advance()
                    body = self.parse_block(l_anns)
                elif body is not None:
                    self.error_at(self.peek(), "declarations after the apply block")
                else:
                    locals_.append(self.parse_local_declaration(l_anns, "control"))
            if body is None:
                body = ast.BlockStatement(loc=start.loc)
        finally:
            self.type_scopes.pop()
        _no_duplicate_names(locals_)
        return ast.ControlDecl(loc=start.loc, name=name.text, annotations=anns,
                               type_params=type_params, params=params, ctor_params=ctor_params,
                               locals=tuple(locals_), body=body)

    def parse_local_declaration(self, anns, where: str) -> ast.Declaration:
        tok = self.peek()
        if tok.kind == "const":
            return self.parse_const(anns)
        if tok.kind == "action" and where == "control":
            return self.parse_action(anns)
        if tok.kind == "table" and where == "control":
            return self.parse_table(anns)
        if tok.kind == "value_set":
            return self.parse_value_set(anns)
        if tok.kind == "id" and tok.text in UNSUPPORTED_KEYWORDS:
            self.unsupported_at(tok, f"'{tok.text}' in a {where}")
        if self.starts_type() or (tok.kind == "id" and self.peek(1).kind in ("id", "<")):
            start = self.peek()
            type_ = self.parse_type()
            if self.at("("):
                self.advance()
                args = self.parse_arguments()
                name = self.expect_declared_name("the instance name")
                if self.at("="):
                    self.unsupported_at(self.peek(), "instantiation with an initializer block "
                                                     "(abstract method implementations)")
                self.expect(";", "';' after the instantiation")
                return ast.InstantiationDecl(loc=start.loc, name=name.text, annotations=anns,
                                             type=type_, args=args)
            name = self.expect_declared_name("a variable name")
            init = None
            if self.accept("="):
                init = self.parse_expression()
            self.expect(";", "';' after the variable declaration")
            return ast.VariableDecl(loc=start.loc, name=name.text, annotations=anns,
                                    type=type_, initializer=init)
        what = "an action, table, variable, constant or instance" if where == "control" else \
            "a variable, constant, instance, value_set or state"
        self.error_at(tok, f"expected {what} in the {where}, found {self.describe(tok)}")
        raise AssertionError

    def parse_value_set(self, anns) -> ast.ValueSetDecl:
        start = self.expect("value_set")
        self.expect("<", "'<' after value_set")
        elem = self.parse_type()
        self.expect(">", "'>' closing the value_set type")
        self.expect("(", "'(' with the value_set size")
        size = self.parse_expression()
        self.expect(")")
        name = self.expect_declared_name("the value_set name")
        self.expect(";", "';' after the value_set")
        return ast.ValueSetDecl(loc=start.loc, name=name.text, annotations=anns,
                                element_type=elem, size=size)

    def parse_action(self, anns) -> ast.ActionDecl:
        start = self.expect("action")
        name = self.expect_declared_name("the action name")
        params = self.parse_parameters()
        body = self.parse_block()
        return ast.ActionDecl(loc=start.loc, name=name.text, annotations=anns, params=params,
                              body=body)

    # ------------------------------------------------------------------ tables
    def parse_table(self, anns) -> ast.TableDecl:
        start = self.expect("table")
        name = self.expect_declared_name("the table name")
        if self.accept("("):  # p4c accepts an empty parameter list: `table t() { ... }`
            self.expect(")", "')' closing the table's empty parameter list")
        self.expect("{", "'{' opening the table")
        props: List[ast.TableProperty] = []
        while not self.accept("}"):
            if self.at("eof"):
                self.error_at(self.peek(), f"unterminated table {name.text}")
            props.append(self.parse_table_property())
        return ast.TableDecl(loc=start.loc, name=name.text, annotations=anns,
                             properties=tuple(props))

    def parse_table_property(self) -> ast.TableProperty:
        anns = self.parse_annotations()
        is_const = bool(self.accept("const"))
        tok = self.expect_name("a table property")
        pname = tok.text
        self.expect("=", f"'=' after {pname}")
        loc = tok.loc
        if pname == "key":
            self.expect("{", "'{' opening the key")
            elements: List[ast.KeyElement] = []
            while not self.accept("}"):
                if self.at("eof"):
                    self.error_at(self.peek(), "unterminated key")
                e_start = self.peek()
                expr = self.parse_expression()
                self.expect(":", "':' and a match kind after the key field")
                kind = self.expect_name("a match kind")
                e_anns = self.parse_annotations()
                self.expect(";", "';' after the key element")
                elements.append(ast.KeyElement(loc=e_start.loc, expression=expr,
                                               match_kind=kind.text, annotations=e_anns))
            return ast.KeyProperty(loc=loc, name=pname, is_const=is_const, annotations=anns,
                                   elements=tuple(elements))
        if pname == "actions":
            self.expect("{", "'{' opening the actions list")
            actions: List[ast.ActionRef] = []
            while not self.accept("}"):
                if self.at("eof"):
                    self.error_at(self.peek(), "unterminated actions list")
                actions.append(self.parse_action_ref())
                self.expect(";", "';' after the action")
            return ast.ActionsProperty(loc=loc, name=pname, is_const=is_const,
                                       annotations=anns, actions=tuple(actions))
        if pname == "default_action":
            ref = self.parse_action_ref()
            self.expect(";", "';' after default_action")
            return ast.DefaultActionProperty(loc=loc, name=pname, is_const=is_const,
                                             annotations=anns, action=ref)
        if pname == "entries":
            self.expect("{", "'{' opening the entries")
            entries: List[ast.TableEntry] = []
            while not self.accept("}"):
                if self.at("eof"):
                    self.error_at(self.peek(), "unterminated entries")
                entries.append(self.parse_entry())
            return ast.EntriesProperty(loc=loc, name=pname, is_const=is_const,
                                       annotations=anns, entries=tuple(entries))
        value = self.parse_expression()
        self.expect(";", f"';' after {pname}")
        return ast.ExpressionProperty(loc=loc, name=pname, is_const=is_const, annotations=anns,
                                      value=value)

    def parse_action_ref(self) -> ast.ActionRef:
        anns = self.parse_annotations()
        start = self.peek()
        if self.at("."):
            self.advance()
        name = self.expect_name("an action name")
        text = name.text
        while self.at(".") and self.peek(1).kind == "id":  # qualified names (ctrl.action)
            self.advance()
            text += "." + self.advance().text
        args: Tuple[ast.Expression, ...] = ()
        has_call = False
        if self.accept("("):
            has_call = True
            args = self.parse_arguments()
        return ast.ActionRef(loc=start.loc, name=text, args=args, annotations=anns,
                             has_call=has_call)

    def parse_entry(self) -> ast.TableEntry:
        anns = self.parse_annotations()
        start = self.peek()
        is_const = bool(self.accept("const"))
        priority: ast.Expression | None = None
        if self.peek().kind == "id" and self.peek().text == "priority" and \
                self.peek(1).kind == "=":
            self.advance()
            self.advance()
            priority = self.parse_expression()
            self.expect(":", "':' after the entry priority")
        keyset = self.parse_keyset()
        keys = keyset.elements if isinstance(keyset, ast.ListExpression) and \
            self.tokens[self.k - 1].kind == ")" else (keyset,)
        self.expect(":", "':' between the entry keys and its action")
        action = self.parse_action_ref()
        trailing = self.parse_annotations()
        self.expect(";", "';' after the entry")
        anns = anns + trailing
        return ast.TableEntry(loc=start.loc, keys=tuple(keys), action=action,
                              priority=priority, is_const=is_const, annotations=anns)

    # ------------------------------------------------------------------ statements
    def parse_block(self, anns: Tuple[ast.Annotation, ...] = ()) -> ast.BlockStatement:
        start = self.expect("{", "'{' opening a block")
        stmts: List[ast.Statement] = []
        while not self.accept("}"):
            if self.at("eof"):
                self.error_at(self.peek(), "unterminated block (missing '}')")
            stmts.append(self.parse_statement())
        _no_duplicate_names(stmts)
        return ast.BlockStatement(loc=start.loc, statements=tuple(stmts), annotations=anns)

    def parse_statement(self) -> ast.Statement:
        anns = self.parse_annotations()
        tok = self.peek()
        kind = tok.kind
        if kind == "{":
            return self.parse_block(anns)
        if kind == "if":
            self.advance()
            self.expect("(", "'(' after if")
            cond = self.parse_expression()
            self.expect(")", "')' closing the if condition")
            then = self.parse_statement()
            otherwise = None
            if self.accept("else"):
                otherwise = self.parse_statement()
            return ast.IfStatement(loc=tok.loc, condition=cond, then=then, otherwise=otherwise)
        if kind == "switch":
            return self.parse_switch()
        if kind == "exit":
            self.advance()
            self.expect(";", "';' after exit")
            return ast.ExitStatement(loc=tok.loc)
        if kind == "return":
            self.advance()
            value = None
            if not self.at(";"):
                value = self.parse_expression()
            self.expect(";", "';' after return")
            return ast.ReturnStatement(loc=tok.loc, value=value)
        if kind == ";":
            self.advance()
            return ast.EmptyStatement(loc=tok.loc)
        if kind == "const":
            return self.parse_const(anns)
        if kind == "transition":
            self.error_at(tok, "transition is only allowed at the end of a parser state")
        if kind in ("action", "table"):
            self.error_at(tok, f"{kind} declarations belong in the control's local "
                               "declarations, not in a block")
        if kind == "id" and tok.text in UNSUPPORTED_KEYWORDS:
            self.unsupported_at(tok, f"'{tok.text}' statement")
        if kind == "id" and tok.text == "for" and self.peek(1).kind == "(":
            return dataclasses.replace(self.parse_for(), annotations=tuple(anns))
        if kind == "id" and tok.text in ("break", "continue") and self.peek(1).kind == ";":
            self.advance()
            self.advance()
            return ast.BreakStatement(loc=tok.loc) if tok.text == "break" else \
                ast.ContinueStatement(loc=tok.loc)
        if self._starts_local_declaration():
            return self.parse_local_declaration(anns, "block")
        target = self.parse_expression()
        if self.at("="):
            self.advance()
            value = self.parse_expression()
            self.expect(";", "';' after the assignment")
            return ast.AssignmentStatement(loc=tok.loc, target=target, value=value)
        compound = self._compound_assignment(tok, target)
        if compound is not None:
            self.expect(";", "';' after the assignment")
            return compound
        if isinstance(target, ast.MethodCallExpression):
            self.expect(";", "';' after the method call")
            return ast.MethodCallStatement(loc=tok.loc, call=target)
        self.error_at(self.peek(), "expected an assignment or a method call, found "
                      f"{self.describe(self.peek())}")
        raise AssertionError

    def parse_for(self) -> ast.Statement:
        start = self.advance()
        self.expect("(", "'(' after for")
        for_in = self._parse_for_in(start)
        if for_in is not None:
            return for_in
        init = self._for_clauses(";")
        self.expect(";", "';' after the for loop's initialization")
        cond = None if self.at(";") else self.parse_expression()
        self.expect(";", "';' after the for loop's condition")
        update = self._for_clauses(")")
        self.expect(")", "')' closing the for loop header")
        body = self.parse_statement()
        return ast.ForStatement(loc=start.loc, init=tuple(init), condition=cond,
                                update=tuple(update), body=body)

    def _compound_assignment(self, tok: Token, target: ast.Expression) -> ast.AssignmentStatement | None:
        """``target op= value`` as ``target = target op value``; the back end evaluates a
        target with a call in it once (see ``ast.CompoundAssignmentStatement``)."""
        op = self.compound_assignment_op()
        if op is None:
            return None
        value = self.parse_expression()
        return ast.CompoundAssignmentStatement(
            loc=tok.loc, target=target, op=op, rhs=value,
            value=ast.BinaryExpression(loc=tok.loc, op=op, left=target, right=value))

    def _parse_for_in(self, start: Token) -> ast.ForInStatement | None:
        """``for (T x in e) body`` / ``for (x in e) body`` (``e``: ``lo .. hi``, a list, a stack),
        or None (the cursor unmoved) for a C-style header."""
        mark = self.k
        type_ = None
        if not (self.peek().kind == "id" and self._is_in(self.peek(1))):
            if not self._starts_local_declaration():
                return None
            type_ = self.parse_type()
            if not (self.peek().kind == "id" and self._is_in(self.peek(1))):
                self.k = mark
                return None
        name = self.advance()
        self.advance()  # in
        collection = self.parse_expression()
        if self.at(".."):
            op = self.advance()
            collection = ast.RangeExpression(loc=op.loc, low=collection, high=self.parse_expression())
        self.expect(")", "')' closing the for loop header")
        body = self.parse_statement()
        return ast.ForInStatement(loc=start.loc, type=type_, name=name.text, collection=collection,
                                  body=body)

    def _for_clauses(self, end: str) -> list:
        out: list = []
        if self.at(end):
            return out
        out.append(self._for_clause())
        while self.accept(","):
            out.append(self._for_clause())
        return out

    @staticmethod
    def _is_in(tok: Token) -> bool:
        return tok.kind == "in" or (tok.kind == "id" and tok.text == "in")

    def _for_clause(self) -> ast.Statement:
        tok = self.peek()
        if self._starts_local_declaration():
            type_ = self.parse_type()
            name = self.expect_declared_name("a variable name")
            init = self.parse_expression() if self.accept("=") else None
            return ast.VariableDecl(loc=tok.loc, name=name.text, annotations=(), type=type_,
                                    initializer=init)
        target = self.parse_expression()
        if self.accept("="):
            return ast.AssignmentStatement(loc=tok.loc, target=target, value=self.parse_expression())
        compound = self._compound_assignment(tok, target)
        if compound is not None:
            return compound
        if isinstance(target, ast.MethodCallExpression):
            return ast.MethodCallStatement(loc=tok.loc, call=target)
        self.error_at(self.peek(), "expected a declaration, an assignment or a call in the for "
                                   f"loop header, found {self.describe(self.peek())}")
        raise AssertionError

    def _starts_local_declaration(self) -> bool:
        tok = self.peek()
        kind = tok.kind
        if kind in ("bit", "int", "varbit", "bool", "tuple", "string"):
            return True
        if kind == "error":
            return self.peek(1).kind == "id"
        if kind == "id":
            nxt = self.peek(1).kind
            if nxt == "id":
                return True
            if self.is_type_name(tok.text):
                return nxt in ("<", "(", "[")
        return False

    def parse_switch(self) -> ast.SwitchStatement:
        start = self.expect("switch")
        self.expect("(", "'(' after switch")
        expr = self.parse_expression()
        self.expect(")", "')' closing the switch expression")
        self.expect("{", "'{' opening the switch cases")
        cases: List[ast.SwitchCase] = []
        while not self.accept("}"):
            tok = self.peek()
            if tok.kind == "eof":
                self.error_at(tok, "unterminated switch")
            if tok.kind == "default":
                self.advance()
                label: ast.Expression = ast.DefaultExpression(loc=tok.loc)
            else:
                label = self.parse_expression()
            self.expect(":", "':' after the switch label")
            body = None
            if self.at("{") or self.at("@"):
                body = self.parse_block(self.parse_annotations())
            cases.append(ast.SwitchCase(loc=tok.loc, label=label, body=body))
        return ast.SwitchStatement(loc=start.loc, expression=expr, cases=tuple(cases))


# ---------------------------------------------------------------------- entry points
def parse_source(source: PreprocessedSource) -> ast.Program:
    """Parse already preprocessed source."""
    tokens = tokenize(source)
    parser = Parser(tokens, source.text)
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, 20000))
        return parser.parse_program()
    except RecursionError:
        tok = parser.peek()
        raise CompileError("program nested too deeply", tok.loc.file, tok.loc.line,
                           tok.loc.column) from None
    finally:
        sys.setrecursionlimit(limit)


def parse_program(path: str, include_dirs: Sequence[str] = (),
                  defines: Mapping[str, str | None] | None = None) -> ast.Program:
    """Preprocess, lex and parse the P4 file at ``path`` into an :class:`ast.Program`.

    Raises :class:`~p4target.errors.CompileError` (``UnsupportedError`` for constructs outside
    the supported subset) with the location in the original file.
    """
    return parse_source(preprocess_file(str(path), include_dirs, defines))


def parse_text(text: str, file: str = "<input>", include_dirs: Sequence[str] = (),
               defines: Mapping[str, str | None] | None = None) -> ast.Program:
    """Like :func:`parse_program` for program text (``file`` names it in errors and anchors
    relative ``#include``\\s)."""
    return parse_source(preprocess_text(text, file, include_dirs, defines))


def _no_duplicate_names(items: Sequence[ast.Statement]) -> None:
    """Refuse a second declaration of a name in the same scope (a block, a state, a control's or
    a parser's locals), as p4c does."""
    seen: dict[str, ast.Declaration] = {}
    for d in items:
        if not isinstance(d, ast.Declaration) or not d.name:
            continue
        first = seen.setdefault(d.name, d)
        if first is not d:
            line = first.loc.line if first.loc is not None else "?"
            raise CompileError.at(d.loc, f"duplicate declaration of '{d.name}' (first declared on line {line})")
