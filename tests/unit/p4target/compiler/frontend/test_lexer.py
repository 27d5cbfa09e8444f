"""Lexer: literals, operators, keywords and locations."""
from __future__ import annotations

import pytest

from p4target.compiler.lexer import parse_int_literal, tokenize
from p4target.compiler.preprocessor import preprocess_text
from p4target.errors import CompileError


def kinds(text):
    return [t.kind for t in tokenize(preprocess_text(text))][:-1]


@pytest.mark.parametrize("text,value", [
    ("5", (5, None, False)), ("1_000", (1000, None, False)), ("0x1F", (31, None, False)),
    ("0XfF", (255, None, False)), ("0b1010", (10, None, False)), ("0o17", (15, None, False)),
    ("0d19", (19, None, False)), ("8w5", (5, 8, False)), ("16w0xBEEF", (0xBEEF, 16, False)),
    ("4w0b1_0_1", (5, 4, False)), ("16s-3", (-3, 16, True)), ("8s0x7f", (127, 8, True)),
    ("32W0o10", (8, 32, False)),
])
def test_integer_literals(text, value):
    assert parse_int_literal(text) == value
    toks = tokenize(preprocess_text(text))
    assert (toks[0].kind, toks[0].value) == ("num", value)


def test_operators_longest_match():
    assert kinds("a &&& b |+| c |-| d ++ e .. f ... && || << <= >= == != ") == [
        "id", "&&&", "id", "|+|", "id", "|-|", "id", "++", "id", "..", "id", "...", "&&", "||",
        "<<", "<=", ">=", "==", "!="]


def test_right_angles_are_single_tokens():
    assert kinds("a >> b") == ["id", ">", ">", "id"]


def test_keywords_identifiers_dontcare():
    assert kinds("header headers _ _x apply transition") == [
        "header", "id", "_", "id", "apply", "transition"]


def test_string_literal_unescaped():
    tok = tokenize(preprocess_text(r'"a\"b\n"'))[0]
    assert (tok.kind, tok.value) == ("str", 'a"b\n')


def test_token_locations_are_line_and_column():
    toks = tokenize(preprocess_text("a\n  bb cc", "f.p4"))
    assert [(t.text, t.loc.line, t.loc.column) for t in toks[:3]] == [
        ("a", 1, 1), ("bb", 2, 3), ("cc", 2, 6)]
    assert toks[1].loc.file == "f.p4"


@pytest.mark.parametrize("text,message,column", [
    ("x = 5x;", "malformed integer literal '5x'", 5),
    ("x = $;", "unexpected character '$'", 5),
    ('x = "abc', "unterminated string literal", 5),
])
def test_lexical_errors(text, message, column):
    with pytest.raises(CompileError) as info:
        tokenize(preprocess_text(text, "bad.p4"))
    assert info.value.message == message
    assert (info.value.file, info.value.line, info.value.column) == ("bad.p4", 1, column)


def test_a_string_literal_may_span_lines_and_keeps_comment_like_text():
    """As p4c reads them (SONiC PINS writes its @entry_restriction constraints so): the
    newlines, `//` and `/* */` inside are the string's; tokens after it keep their lines."""
    toks = tokenize(preprocess_text('@a("\n  // one\n  /* two */ x;\n") y\nz', "f.p4"))
    s = next(t for t in toks if t.kind == "str")
    assert s.value == "\n  // one\n  /* two */ x;\n"
    assert (s.loc.line, s.loc.column) == (1, 4)
    assert [(t.text, t.loc.line, t.loc.column) for t in toks if t.kind == "id"] == [
        ("a", 1, 2), ("y", 4, 4), ("z", 5, 1)]


def test_a_string_never_closed_is_still_unterminated_at_its_line():
    with pytest.raises(CompileError) as e:
        tokenize(preprocess_text('x;\ny = "abc\nz;\n', "f.p4"))
    assert "unterminated string literal" in str(e.value) and e.value.line == 2
