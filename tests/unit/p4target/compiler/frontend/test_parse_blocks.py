"""Parser: parser blocks, controls, actions, tables and statements."""
from __future__ import annotations

from p4target.compiler import ast
from p4target.compiler.parser import parse_text

PRELUDE = """
header h_t { bit<8> a; bit<16> t; }
struct hs { h_t h; h_t[3] s; }
extern packet_in { void extract<T>(out T hdr); T lookahead<T>(); }
extern counter<I> { counter(bit<32> n, bit<8> kind); void count(in I i); }
extern register<T, I> { register(bit<32> n); void read(out T r, in I i); }
"""


def parse(body):
    return parse_text(PRELUDE + body, "t.p4").declarations[5:]


def parser_states(body):
    (p,) = parse("parser P(packet_in b, out hs hdr) {\n" + body + "\n}")
    return p


def control(body, apply="{}"):
    (c,) = parse("control C(inout hs hdr, inout bit<8> x) {\n" + body + "\napply " + apply + "}")
    return c


def stmts(apply_body, locals_=""):
    return control(locals_, "{" + apply_body + "}").body.statements


def test_parser_locals_states_and_transitions():
    p = parser_states("""
        bit<8> tmp;
        value_set<bit<16>>(4) pvs;
        state start { b.extract(hdr.h); tmp = b.lookahead<bit<8>>(); transition next; }
        state next { b.extract(hdr.s.next); transition accept; }
    """)
    assert isinstance(p, ast.ParserDecl)
    assert [type(d).__name__ for d in p.locals] == ["VariableDecl", "ValueSetDecl"]
    assert p.locals[1].element_type.width.value == 16 and p.locals[1].size.value == 4
    start, nxt = p.states
    assert start.name == "start" and isinstance(start.transition, ast.PathExpression)
    assert start.transition.name == "next"
    look = start.statements[1].value
    assert isinstance(look, ast.MethodCallExpression)
    assert look.method.member == "lookahead" and look.type_args[0].width.value == 8
    ext = nxt.statements[0].call
    assert ext.args[0].member == "next" and ext.args[0].expr.member == "s"


def test_select_with_tuples_masks_ranges_default_and_dontcare():
    p = parser_states("""
        value_set<bit<16>>(4) pvs;
        state start {
            transition select(hdr.h.t, hdr.h.a) {
                (0x8100 &&& 0xEFFF, _): one;
                (0x0800, 1 .. 5): two;
                (pvs, default): accept;
                default: reject;
            }
        }
    """)
    sel = p.states[0].transition
    assert isinstance(sel, ast.SelectExpression) and len(sel.keys) == 2
    c0, c1, c2, c3 = sel.cases
    assert [type(e).__name__ for e in c0.keyset.elements] == ["MaskExpression",
                                                              "DontCareExpression"]
    assert c0.keyset.elements[0].mask.value == 0xEFFF and c0.state == "one"
    rng = c1.keyset.elements[1]
    assert isinstance(rng, ast.RangeExpression) and (rng.low.value, rng.high.value) == (1, 5)
    assert c2.keyset.elements[0].name == "pvs"
    assert isinstance(c2.keyset.elements[1], ast.DefaultExpression)
    assert isinstance(c3.keyset, ast.DefaultExpression) and c3.state == "reject"


def test_select_single_key_plain_values():
    p = parser_states("state start { transition select(hdr.h.a) { 1: accept; _: reject; } }")
    cases = p.states[0].transition.cases
    assert cases[0].keyset.value == 1 and isinstance(cases[1].keyset, ast.DontCareExpression)


def test_verify_statement_in_parser():
    p = parser_states("state start { verify(hdr.h.a == 0, error.NoMatch); transition accept; }")
    call = p.states[0].statements[0].call
    assert call.method.name == "verify"
    assert call.args[1].member == "NoMatch" and call.args[1].expr.name == "error"


def test_actions_with_directional_and_data_params():
    c = control("action a(inout bit<8> v, in bit<8> w, bit<9> port) { v = w; }")
    (a,) = c.locals
    assert isinstance(a, ast.ActionDecl)
    assert [(p.direction, p.name) for p in a.params] == [("inout", "v"), ("in", "w"),
                                                        (None, "port")]


def test_control_locals_variables_and_instantiations():
    c = control("""
        bit<32> v = 5;
        counter<bit<8>>(512, 1) c1;
        register<bit<32>, bit<8>>(16) r;
        const bit<8> K = 3;
    """)
    v, c1, r, k = c.locals
    assert isinstance(v, ast.VariableDecl) and v.initializer.value == 5
    assert isinstance(c1, ast.InstantiationDecl) and c1.type.base.name == "counter"
    assert [a.value for a in c1.args] == [512, 1]
    assert [t.width.value for t in r.type.args] == [32, 8]
    assert isinstance(k, ast.ConstDecl)


def test_table_all_properties():
    c = control("""
        action set(bit<9> p) { }
        action drop() { }
        table t {
            key = { hdr.h.a : exact @name("a"); hdr.h.t : ternary; x : lpm; hdr.s[0].a : range;
                    hdr.h.isValid() : optional; x : selector; }
            actions = { set; @defaultonly drop; @tableonly NoAction(); }
            const default_action = drop();
            size = 1024;
            counters = dc;
            meters = dm;
            implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);
            support_timeout = true;
            @my_ann my_prop = 5;
        }
    """)
    t = c.locals[2]
    assert isinstance(t, ast.TableDecl)
    key = t.property("key")
    assert [e.match_kind for e in key.elements] == ["exact", "ternary", "lpm", "range",
                                                     "optional", "selector"]
    assert key.elements[0].annotations[0].args[0].value == "a"
    assert isinstance(key.elements[4].expression, ast.MethodCallExpression)
    acts = t.property("actions").actions
    assert [(a.name, [x.name for x in a.annotations], a.has_call) for a in acts] == [
        ("set", [], False), ("drop", ["defaultonly"], False), ("NoAction", ["tableonly"], True)]
    da = t.property("default_action")
    assert isinstance(da, ast.DefaultActionProperty) and da.is_const and da.action.name == "drop"
    assert t.property("size").value.value == 1024
    assert t.property("counters").value.name == "dc"
    assert t.property("meters").value.name == "dm"
    impl = t.property("implementation").value
    assert isinstance(impl, ast.MethodCallExpression) and impl.method.name == "action_selector"
    assert impl.args[0].member == "crc16"
    assert isinstance(t.property("support_timeout").value, ast.BoolLiteral)
    assert t.property("my_prop").annotations[0].name == "my_ann"


def test_default_action_with_arguments_not_const():
    c = control("action set(bit<9> p) { }\ntable t { actions = { set; } default_action = set(3); }")
    da = c.locals[1].property("default_action")
    assert not da.is_const and [a.value for a in da.action.args] == [3]


def test_const_entries_with_priorities_and_match_forms():
    c = control("""
        action set(bit<9> p) { }
        table t {
            key = { hdr.h.a : ternary; hdr.h.t : range; }
            actions = { set; }
            const entries = {
                (1, 2 .. 3) : set(1);
                (0x10 &&& 0xF0, _) : set(2);
                priority = 7 : (default, 5) : set(3);
                @priority(2) (_, _) : NoAction();
                4 : set(4);
            }
        }
    """)
    ents = c.locals[1].property("entries")
    assert ents.is_const and len(ents.entries) == 5
    e0, e1, e2, e3, e4 = ents.entries
    assert [type(k).__name__ for k in e0.keys] == ["IntLiteral", "RangeExpression"]
    assert e0.action.name == "set" and e0.action.args[0].value == 1 and e0.priority is None
    assert isinstance(e1.keys[0], ast.MaskExpression) and isinstance(e1.keys[1],
                                                                     ast.DontCareExpression)
    assert e2.priority.value == 7 and isinstance(e2.keys[0], ast.DefaultExpression)
    assert e3.priority is None and e3.annotations[0].name == "priority"  # the back end reads @priority
    assert len(e4.keys) == 1 and e4.keys[0].value == 4


def test_if_else_chain_and_apply_hit_miss():
    s = stmts("if (t.apply().hit) { x = 1; } else if (t.apply().miss) x = 2; else { exit; }")
    (top,) = s
    assert isinstance(top, ast.IfStatement)
    assert top.condition.member == "hit"
    assert isinstance(top.condition.expr, ast.MethodCallExpression)
    assert top.condition.expr.method.member == "apply"
    inner = top.otherwise
    assert isinstance(inner, ast.IfStatement) and inner.condition.member == "miss"
    assert isinstance(inner.then, ast.AssignmentStatement)
    assert isinstance(inner.otherwise.statements[0], ast.ExitStatement)


def test_switch_on_action_run_with_fallthrough_and_default():
    (sw,) = stmts("switch (t.apply().action_run) { a: b: { x = 1; } default: { return; } }")
    assert isinstance(sw, ast.SwitchStatement)
    assert sw.expression.member == "action_run"
    labels = [(type(c.label).__name__, getattr(c.label, "name", None), c.body is None)
              for c in sw.cases]
    assert labels == [("PathExpression", "a", True), ("PathExpression", "b", False),
                      ("DefaultExpression", None, False)]
    assert isinstance(sw.cases[2].body.statements[0], ast.ReturnStatement)


def test_local_declarations_in_apply_and_nested_block():
    s = stmts("bit<8> y = 1; h_t tmp; const bit<4> K = 2; { y = K; } ; return;")
    assert [type(x).__name__ for x in s] == ["VariableDecl", "VariableDecl", "ConstDecl",
                                             "BlockStatement", "EmptyStatement",
                                             "ReturnStatement"]
    assert s[1].type.name == "h_t"


def test_method_calls_on_headers_and_stacks():
    s = stmts("hdr.h.setValid(); hdr.h.setInvalid(); hdr.s.push_front(2); hdr.s.pop_front(1);"
              " x = (bit<8>)hdr.s.lastIndex; hdr.s[1].a = hdr.s.last.a;")
    names = [st.call.method.member for st in s[:4]]
    assert names == ["setValid", "setInvalid", "push_front", "pop_front"]
    assert s[2].call.args[0].value == 2
    assert s[4].value.expr.member == "lastIndex"
    assert isinstance(s[5].target.expr, ast.IndexExpression)
    assert s[5].value.expr.member == "last"


def test_generic_function_call_statement_and_named_args():
    (s, t) = stmts("digest<hs>(1, hdr); f(a = 1, b = _);")
    assert s.call.type_args[0].name == "hs" and s.call.method.name == "digest"
    assert [(type(a).__name__, a.name) for a in t.call.args] == [("NamedArgument", "a"),
                                                                 ("NamedArgument", "b")]
    assert isinstance(t.call.args[1].value, ast.DontCareExpression)


def test_direct_control_application_and_sub_instances():
    (c,) = parse("""
        control Sub(inout hs hdr) { apply {} }
        control C(inout hs hdr) { Sub() sub; apply { sub.apply(hdr); } }
    """)[1:]
    inst = c.locals[0]
    assert isinstance(inst, ast.InstantiationDecl) and inst.type.name == "Sub"
    assert c.body.statements[0].call.method.member == "apply"


def test_for_in_loops_over_ranges_lists_and_stacks():
    rng, lst, stack, c_style = stmts("""
        for (bit<8> i in 1 .. x) { }
        for (x in {1, 2}) { }
        for (h_t e in hdr.s) { }
        for (bit<8> i = 0, x = 1; i < 3; i = i + 1) { }
    """)
    assert isinstance(rng, ast.ForInStatement) and rng.name == "i" and isinstance(rng.type, ast.BitType)
    assert isinstance(rng.collection, ast.RangeExpression)
    assert isinstance(lst, ast.ForInStatement) and lst.type is None
    assert isinstance(lst.collection, ast.ListExpression)
    assert isinstance(stack.collection, ast.MemberExpression) and stack.name == "e"
    assert isinstance(c_style, ast.ForStatement) and len(c_style.init) == 2


def test_compound_assignments_become_plain_ones():
    add, shr, sat = stmts("x += 1; x >>= 2; hdr.h.t[7:0] |-|= 3;")
    assert isinstance(add, ast.AssignmentStatement) and add.value.op == "+"
    assert add.value.left == add.target
    assert shr.value.op == ">>" and sat.value.op == "|-|"
    assert isinstance(sat.target, ast.SliceExpression)
    (cmp,) = stmts("x = (bit<8>)(x > 1 ? 1 : 0);")  # '>' followed by a number stays a comparison
    assert isinstance(cmp, ast.AssignmentStatement)
