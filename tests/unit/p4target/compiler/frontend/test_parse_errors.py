"""Parser: syntax errors and unsupported constructs carry FILE:LINE:COL; never a traceback."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4target.compiler import ast
from p4target.compiler.parser import parse_program, parse_text
from p4target.errors import CompileError, UnsupportedError

KITCHEN_SINK = Path(__file__).with_name("programs") / "kitchen_sink.p4"


def error_of(text, cls=CompileError):
    with pytest.raises(cls) as info:
        parse_text(text, "bad.p4")
    return info.value


@pytest.mark.parametrize("text,line,col,fragment", [
    ("header h { bit<8> a }", 1, 21, "expected ';' after the field, found '}'"),
    ("const bit<8> X = ;", 1, 18, "expected an expression, found ';'"),
    ("struct s {\n  bit<8> a;\n\n", 2, 12, "unterminated struct s"),
    ("control C() { apply { x = 1 } }", 1, 29, "expected ';' after the assignment"),
    ("control C() { apply { x; } }", 1, 24, "expected an assignment or a method call"),
    ("control C() { apply { } bit<8> late; }", 1, 25, "declarations after the apply block"),
    ("parser P() { state s { transition a; x = 1; } }", 1, 38,
     "statements after the transition"),
    ("parser P() { state s { transition select(a) { 1 accept; } } }", 1, 49,
     "expected ':' after the select keyset"),
    ("control C() { table t { key = { a : ; } } apply {} }", 1, 37, "expected a match kind"),
    ("foo;", 1, 1, "expected a declaration"),
    ("const bit<8> X = (a;", 1, 20, "expected ')'"),
    ("control C() { apply { transition accept; } }", 1, 23, "transition is only allowed"),
])
def test_syntax_errors_with_locations(text, line, col, fragment):
    err = error_of(text)
    assert (err.file, err.line, err.column) == ("bad.p4", line, col)
    assert fragment in err.message
    assert str(err).startswith(f"bad.p4:{line}:{col}: error: ")


@pytest.mark.parametrize("text,construct", [
    ("extern E { E(); abstract void f(); }\ncontrol C() { E() e = { void f() {} }; apply {} }",
     "instantiation with an initializer block"),
    ("typedef header h { } h2;", "typedef of an inline type declaration"),
    ("table t { }", "table declared outside a control"),
])
def test_unsupported_constructs_are_named(text, construct):
    err = error_of(text, UnsupportedError)
    assert construct in err.construct
    assert str(err).startswith("bad.p4:") and "unsupported construct" in str(err)


def test_error_location_inside_included_file(tmp_path):
    (tmp_path / "inc.p4").write_text("header h {\n  bit<8> a\n}\n")
    main = tmp_path / "main.p4"
    main.write_text('// top\n#include "inc.p4"\n')
    with pytest.raises(CompileError) as info:
        parse_program(str(main))
    assert (info.value.file, info.value.line) == (str(tmp_path / "inc.p4"), 3)


def test_error_location_after_macro_and_conditional_lines(tmp_path):
    main = tmp_path / "m.p4"
    main.write_text("#define X 1\n#if X\n\nconst bit<8> A = X +;\n#endif\n")
    with pytest.raises(CompileError) as info:
        parse_program(str(main))
    assert (info.value.line, info.value.column) == (4, 21)


def test_kitchen_sink_program_parses():
    prog = parse_program(str(KITCHEN_SINK))
    names = [d.name for d in prog.declarations]
    assert names[-1] == "main" and "MyIngress" in names and "add1" in names
    assert sum(1 for _ in ast.walk(prog)) > 1000


@pytest.mark.slow
def test_mutated_programs_never_raise_anything_but_compile_errors():
    text = KITCHEN_SINK.read_text()
    rng = random.Random(1234)
    pieces = text.split(" ")
    outcomes = {"ok": 0, "error": 0}
    for _ in range(120):
        mutated = list(pieces)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(mutated))
            op = rng.random()
            if op < 0.4:
                del mutated[i]
            elif op < 0.7:
                mutated[i] = rng.choice(["{", "}", "(", ")", ";", "<", ">", "@", "#", "8w",
                                         "..", "&&&", "_", "state", "default", ":"])
            else:
                mutated.insert(i, mutated[rng.randrange(len(mutated))])
        try:
            parse_text(" ".join(mutated), "m.p4")
            outcomes["ok"] += 1
        except CompileError as exc:
            assert str(exc).startswith("m.p4:") or str(exc).startswith("/")
            outcomes["error"] += 1
    assert outcomes["error"] > 40


def test_deeply_nested_expression_is_an_error_not_a_crash():
    err = error_of("const bit<8> X = " + "(" * 5000 + "1" + ")" * 5000 + ";")
    assert "nested too deeply" in err.message
