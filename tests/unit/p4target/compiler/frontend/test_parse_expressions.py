"""Parser: expressions (precedence, literals, casts, slices, lists, calls)."""
from __future__ import annotations

import pytest

from p4target.compiler import ast
from p4target.compiler.parser import parse_text


def expr(text, types=""):
    prog = parse_text(types + f"\nconst bit<8> X = {text};", "e.p4")
    return prog.declarations[-1].value


def sexpr(node):
    """Compact prefix form: (op a b) for operators, names and values for leaves."""
    if isinstance(node, ast.BinaryExpression):
        return f"({node.op} {sexpr(node.left)} {sexpr(node.right)})"
    if isinstance(node, ast.UnaryExpression):
        return f"({node.op}u {sexpr(node.operand)})"
    if isinstance(node, ast.TernaryExpression):
        return f"(? {sexpr(node.condition)} {sexpr(node.then)} {sexpr(node.otherwise)})"
    if isinstance(node, ast.IntLiteral):
        return node.text
    if isinstance(node, ast.PathExpression):
        return node.name
    if isinstance(node, ast.BoolLiteral):
        return str(node.value).lower()
    if isinstance(node, ast.MemberExpression):
        return f"{sexpr(node.expr)}.{node.member}"
    if isinstance(node, ast.SliceExpression):
        return f"{sexpr(node.expr)}[{sexpr(node.high)}:{sexpr(node.low)}]"
    if isinstance(node, ast.IndexExpression):
        return f"{sexpr(node.expr)}[{sexpr(node.index)}]"
    if isinstance(node, ast.CastExpression):
        return f"(cast {type(node.type).__name__} {sexpr(node.expr)})"
    if isinstance(node, ast.MethodCallExpression):
        return f"{sexpr(node.method)}({', '.join(sexpr(a) for a in node.args)})"
    raise AssertionError(type(node).__name__)


@pytest.mark.parametrize("text,tree", [
    ("a + b * c", "(+ a (* b c))"),
    ("a - b - c", "(- (- a b) c)"),
    ("a |+| b |-| c", "(|-| (|+| a b) c)"),
    ("a ++ b + c", "(+ (++ a b) c)"),
    ("a << 2 + 1", "(<< a (+ 2 1))"),
    ("a >> 1 & m", "(& (>> a 1) m)"),
    ("a & b == c", "(== (& a b) c)"),
    ("a | b ^ c & d", "(| a (^ b (& c d)))"),
    ("a < b == c > d", "(== (< a b) (> c d))"),
    ("a <= b && c >= d || !e", "(|| (&& (<= a b) (>= c d)) (!u e))"),
    ("a == 1 ? b : c ? d : e", "(? (== a 1) b (? c d e))"),
    ("-a * ~b", "(* (-u a) (~u b))"),
    ("a % b / c", "(/ (% a b) c)"),
    ("(a + b) * c", "(* (+ a b) c)"),
    ("x.y[3:0] ++ z[7:4]", "(++ x.y[3:0] z[7:4])"),
    ("s[1].f", "s[1].f"),
    ("true && false", "(&& true false)"),
])
def test_precedence_and_associativity(text, tree):
    assert sexpr(expr(text)) == tree


def test_shift_right_needs_adjacent_angles():
    assert sexpr(expr("a >> b")) == "(>> a b)"
    with pytest.raises(Exception):
        expr("a > > b")


def test_casts_to_base_and_named_types():
    e = expr("(bit<8>)(t_t)x", types="typedef bit<4> t_t;")
    assert isinstance(e, ast.CastExpression) and e.type.width.value == 8
    assert isinstance(e.expr, ast.CastExpression) and e.expr.type.name == "t_t"
    assert sexpr(expr("(bit<8>)a + b")) == "(+ (cast BitType a) b)"
    assert isinstance(expr("(bool)a").type, ast.BoolType)
    assert expr("(int<4>)a").type.signed is True


def test_parenthesized_name_is_not_a_cast():
    assert sexpr(expr("(a) + b")) == "(+ a b)"


def test_width_literals_keep_width_and_sign():
    e = expr("8w0xFF + 16s-3 + 0b1_0")
    rr = e.right
    ll = e.left
    assert (ll.left.value, ll.left.width, ll.left.signed) == (255, 8, False)
    assert (ll.right.value, ll.right.width, ll.right.signed) == (-3, 16, True)
    assert (rr.value, rr.width) == (2, None)


def test_list_and_struct_expressions():
    lst = expr("{a, 8w1, {b}}")
    assert isinstance(lst, ast.ListExpression) and len(lst.elements) == 3
    assert isinstance(lst.elements[2], ast.ListExpression)
    st = expr("{x = 1, y = b}")
    assert isinstance(st, ast.StructExpression)
    assert [(f.name, sexpr(f.value)) for f in st.fields] == [("x", "1"), ("y", "b")]
    assert expr("{}").elements == ()


def test_generic_method_call_vs_comparison():
    call = expr("pkt.lookahead<bit<16>>()")
    assert isinstance(call, ast.MethodCallExpression) and call.type_args[0].width.value == 16
    nested = expr("f<tuple<bit<8>, bool>>(1)")
    assert isinstance(nested.type_args[0], ast.TupleType)
    assert len(nested.type_args[0].elements) == 2
    cmp_ = expr("a < b && c > d")
    assert sexpr(cmp_) == "(&& (< a b) (> c d))"


def test_string_literal_and_error_member_and_enum_member():
    assert expr('"hello"').value == "hello"
    assert sexpr(expr("error.NoMatch")) == "error.NoMatch"
    assert sexpr(expr("HashAlgorithm.crc16")) == "HashAlgorithm.crc16"


def test_dots_and_dont_care():
    assert isinstance(expr("..."), ast.DotsExpression)


def test_expression_locations_point_at_their_start():
    e = expr("a +\n   b")
    assert (e.loc.line, e.loc.column) == (2, 18)
    assert (e.right.loc.line, e.right.loc.column) == (3, 4)


def test_keywords_usable_as_plain_names():
    prog = parse_text("control C(in bit<8> type, inout bit<8> x) { apply { x = type + 1; } }")
    (stmt,) = prog.declarations[0].body.statements
    assert stmt.value.left.name == "type"


def test_parenthesized_literal_is_not_a_cast_to_int():
    assert sexpr(expr("(32w1 << 4) - 1")) == "(- (<< 32w1 4) 1)"
    assert sexpr(expr("(int<8>)a + (5)")) == "(+ (cast BitType a) 5)"
