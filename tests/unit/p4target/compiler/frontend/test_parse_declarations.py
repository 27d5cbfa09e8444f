"""Parser: top-level declarations (types, externs, packages, built-in includes)."""
from __future__ import annotations

from p4target.compiler import ast
from p4target.compiler.parser import parse_text


def decls(text):
    return parse_text(text, "t.p4").declarations


def lit(value, width=None, signed=False):
    return {"kind": "IntLiteral", "value": value, "width": width, "signed": signed}


def shape(node):
    """ast.dump without literal source text, for compact assertions."""
    d = ast.dump(node)

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if not (k == "text" and
                                                            x.get("kind") == "IntLiteral")}
        if isinstance(x, tuple):
            return tuple(strip(v) for v in x)
        return x
    return strip(d)


def test_const_with_width_literal():
    (c,) = decls("const bit<16> TYPE_IPV4 = 16w0x800;")
    assert isinstance(c, ast.ConstDecl) and c.name == "TYPE_IPV4"
    assert shape(c.type) == {"kind": "BitType", "width": lit(16), "signed": False}
    assert shape(c.value) == lit(0x800, 16)
    assert (c.loc.file, c.loc.line, c.loc.column) == ("t.p4", 1, 1)


def test_typedef_and_newtype():
    t, n = decls("typedef bit<48> mac_t;\n@p4runtime_translation(\"x\", 32) type bit<9> port_t;")
    assert isinstance(t, ast.TypedefDecl) and t.name == "mac_t"
    assert shape(t.type)["width"] == lit(48)
    assert isinstance(n, ast.NewTypeDecl) and n.name == "port_t"
    assert n.annotations[0].name == "p4runtime_translation"
    assert [shape(a) for a in n.annotations[0].args] == [
        {"kind": "StringLiteral", "value": "x"}, lit(32)]


def test_header_struct_union_and_stack_fields():
    h, u, s = decls("""
        header h_t { bit<8> a; int<4> b; varbit<32> opts; bool f; }
        header_union u_t { h_t x; h_t y; }
        struct s_t { h_t h; h_t[4] stack; @field_list(1) bit<9> port; error e; }
    """)
    assert isinstance(h, ast.HeaderDecl)
    assert [(f.name, type(f.type).__name__) for f in h.fields] == [
        ("a", "BitType"), ("b", "BitType"), ("opts", "VarbitType"), ("f", "BoolType")]
    assert h.fields[1].type.signed is True
    assert isinstance(u, ast.HeaderUnionDecl) and [f.name for f in u.fields] == ["x", "y"]
    stack = s.fields[1].type
    assert isinstance(stack, ast.HeaderStackType)
    assert stack.element.name == "h_t" and shape(stack.size) == lit(4)
    assert s.fields[2].annotations[0].name == "field_list"
    assert shape(s.fields[2].annotations[0].args[0]) == lit(1)
    assert isinstance(s.fields[3].type, ast.ErrorType)


def test_enums_plain_and_serializable():
    e, s = decls("enum Color { RED, GREEN, }\nenum bit<8> Kind { DATA = 1, ACK = 0x2 }")
    assert isinstance(e, ast.EnumDecl) and e.underlying is None
    assert [m.name for m in e.members] == ["RED", "GREEN"]
    assert shape(s.underlying)["width"] == lit(8)
    assert [(m.name, m.value.value) for m in s.members] == [("DATA", 1), ("ACK", 2)]


def test_error_and_match_kind_declarations():
    e, m = decls("error { Bad, Worse }\nmatch_kind { fancy }")
    assert isinstance(e, ast.ErrorDecl) and [x.name for x in e.members] == ["Bad", "Worse"]
    assert isinstance(m, ast.MatchKindDecl) and [x.name for x in m.members] == ["fancy"]


def test_extern_object_with_generics_overloads_and_abstract():
    (x,) = decls("""
        extern Thing<T, I> {
            Thing(bit<32> size);
            Thing(bit<32> size, T init);
            T read(in I index);
            void read(out T result, in I index);
            R convert<R>(in T v);
            abstract void cb(inout T v);
        }""")
    assert isinstance(x, ast.ExternDecl) and x.type_params == ("T", "I")
    assert [c.params[-1].name for c in x.constructors] == ["size", "init"]
    methods = [m for m in x.methods if not m.is_constructor]
    assert [m.name for m in methods] == ["read", "read", "convert", "cb"]
    assert methods[0].params[0].direction == "in"
    assert isinstance(methods[1].return_type, ast.VoidType)
    assert methods[2].type_params == ("R",)
    assert methods[3].is_abstract and not methods[0].is_abstract


def test_extern_functions():
    f, g = decls("extern void f<T>(out T r, in T lo);\n@pure extern bit<16> g(in bit<8> x);")
    assert isinstance(f, ast.ExternFunctionDecl) and f.prototype.type_params == ("T",)
    assert [(p.direction, p.name) for p in f.prototype.params] == [("out", "r"), ("in", "lo")]
    assert g.annotations[0].name == "pure" and shape(g.prototype.return_type)["width"] == lit(16)


def test_function_declaration():
    (f,) = decls("bit<8> inc(in bit<8> v) { return v + 1; }")
    assert isinstance(f, ast.FunctionDecl) and f.name == "inc"
    (ret,) = f.body.statements
    assert isinstance(ret, ast.ReturnStatement) and ret.value.op == "+"


def test_parser_control_package_types_and_instantiation():
    p, c, k, h, s, main = decls("""
        parser P<H>(packet_in b, out H h);
        control C<H>(inout H h);
        package Pkg<H>(P<H> p, C<H> c);
        header h_t { bit<8> a; }
        struct s_t { h_t h; }
        Pkg(MyP(), MyC()) main;
    """)
    assert isinstance(p, ast.ParserTypeDecl) and p.type_params == ("H",)
    assert isinstance(c, ast.ControlTypeDecl) and c.params[0].direction == "inout"
    assert isinstance(k, ast.PackageTypeDecl)
    assert isinstance(k.params[0].type, ast.SpecializedType)
    assert isinstance(main, ast.InstantiationDecl) and main.name == "main"
    assert main.type.name == "Pkg"
    assert [a.method.name for a in main.args] == ["MyP", "MyC"]


def test_package_instantiation_with_type_args():
    *_, main = decls("package Pkg<H>(bit<8> x);\nstruct s {}\nPkg<s>(1) main;")
    assert isinstance(main.type, ast.SpecializedType)
    assert main.type.args[0].name == "s"


def test_builtin_v1model_declarations_parse():
    ds = decls("#include <core.p4>\n#include <v1model.p4>\n")
    names = {d.name for d in ds}
    assert {"packet_in", "packet_out", "NoAction", "standard_metadata_t", "counter",
            "direct_counter", "meter", "direct_meter", "register", "action_profile",
            "action_selector", "hash", "random", "digest", "mark_to_drop", "clone",
            "clone_preserving_field_list", "resubmit_preserving_field_list",
            "recirculate_preserving_field_list", "truncate", "log_msg", "assert", "assume",
            "verify_checksum", "update_checksum", "verify_checksum_with_payload",
            "update_checksum_with_payload", "V1Switch", "HashAlgorithm", "CloneType",
            "CounterType", "MeterType"} <= names
    sm = next(d for d in ds if d.name == "standard_metadata_t")
    widths = {f.name: (f.type.width.value if isinstance(f.type, ast.BitType) else None)
              for f in sm.fields}
    assert widths == {"ingress_port": 9, "egress_spec": 9, "egress_port": 9,
                      "instance_type": 32, "packet_length": 32, "enq_timestamp": 32,
                      "enq_qdepth": 19, "deq_timedelta": 32, "deq_qdepth": 19,
                      "ingress_global_timestamp": 48, "egress_global_timestamp": 48,
                      "mcast_grp": 16, "egress_rid": 16, "checksum_error": 1,
                      "parser_error": None, "priority": 3}
    hash_algos = next(d for d in ds if d.name == "HashAlgorithm")
    assert [m.name for m in hash_algos.members] == [
        "crc32", "crc32_custom", "crc16", "crc16_custom", "random", "identity", "csum16",
        "xor16"]
    kinds = [m.name for d in ds if isinstance(d, ast.MatchKindDecl) for m in d.members]
    assert kinds == ["exact", "ternary", "lpm", "range", "optional", "selector"]


def test_v1model_version_switch_changes_register_params():
    """As p4c's v1model.p4: 20180101 unless the program chooses; 20200408 adds the index type
    of registers and the PortId_t typedef."""
    default = decls("#include <v1model.p4>\n")
    new = decls("#define V1MODEL_VERSION 20200408\n#include <v1model.p4>\n")
    reg_old = next(d for d in default if d.name == "register")
    reg_new = next(d for d in new if d.name == "register")
    assert reg_old.type_params == ("T",) and reg_new.type_params == ("T", "I")
    assert "PortId_t" in [d.name for d in new] and "PortId_t" not in [d.name for d in default]


def test_annotations_kept_with_raw_body():
    (h,) = decls('@controller_header("packet_in") @weird[k=v] @flag header h { bit<8> a; }')
    anns = {a.name: a for a in h.annotations}
    assert anns["controller_header"].args[0].value == "packet_in"
    assert anns["controller_header"].raw == '"packet_in"'
    # a structured annotation: its key = value list parsed
    assert anns["weird"].raw == "k=v" and anns["weird"].structured
    assert [(a.name, a.value.name) for a in anns["weird"].args] == [("k", "v")]
    assert anns["flag"].raw == "" and anns["flag"].args == ()
