"""Front-end speed of the embedded P4 compiler: preprocess + lex + parse, in ms and lines/s.

Measures our own p4src/ program and a generated v1model program of about N lines
(tables, actions, parser states, expressions).
Run: .venv/bin/python benchmarks/compiler_frontend.py [--lines N] [--repeat R]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from p4target.compiler.parser import parse_program


def generated_program(lines: int) -> str:
    """A syntactically rich v1model program of roughly ``lines`` lines."""
    out = ["#include <core.p4>", "#include <v1model.p4>",
           "header h_t { bit<8> a; bit<16> b; bit<32> c; }",
           "struct headers { h_t h; h_t[4] s; }", "struct metadata { bit<32> x; bit<8> y; }",
           "parser P(packet_in p, out headers hdr, inout metadata m, "
           "inout standard_metadata_t sm) {",
           "  state start { p.extract(hdr.h); transition select(hdr.h.a, hdr.h.b) {",
           "    (1, 0x800 &&& 0xFFFF): accept; (2 .. 3, _): accept; default: reject; } }", "}",
           "control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {"]
    i = 0
    while len(out) < lines - 12:
        out += [f"  action a{i}(bit<9> port, bit<32> v) {{",
                "    sm.egress_spec = port;",
                f"    m.x = (v + hdr.h.c * 32w{i}) |+| (bit<32>)hdr.h.a ++ 8w0 >> 2;",
                f"    if (hdr.h.isValid() && m.y != 8w{i % 256}) {{ m.y = hdr.h.b[7:0]; }}",
                "  }",
                f"  table t{i} {{",
                "    key = { hdr.h.a : exact; hdr.h.c : lpm; m.y : ternary; }",
                f"    actions = {{ a{i}; NoAction; }}",
                "    default_action = NoAction();",
                "    size = 1024;",
                "  }"]
        i += 1
    out.append("  apply {")
    out += [f"    t{j}.apply();" for j in range(i)]
    out += ["  }", "}",
            "control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) "
            "{ apply {} }",
            "control V(inout headers hdr, inout metadata m) { apply {} }",
            "control D(packet_out p, in headers hdr) { apply { p.emit(hdr); } }",
            "V1Switch(P(), V(), I(), E(), V(), D()) main;"]
    return "\n".join(out) + "\n"


def time_parse(path: str, include_dirs, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        parse_program(path, include_dirs)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        gen = os.path.join(tmp, "generated.p4")
        text = generated_program(args.lines)
        with open(gen, "w") as f:
            f.write(text)
        rows.append((f"generated ({text.count(chr(10))} lines)", text.count("\n"),
                     time_parse(gen, (), args.repeat)))
    ours = os.path.join(root, "p4src", "gradlane.p4")
    if os.path.exists(ours):
        n = sum(sum(1 for _ in open(os.path.join(root, "p4src", f)))
                for f in os.listdir(os.path.join(root, "p4src")) if f.endswith(".p4"))
        rows.append((f"p4src/gradlane.p4 ({n} lines)", n,
                     time_parse(ours, [os.path.join(root, "p4src")], args.repeat)))
    print(f"{'program':40s} {'median ms':>10s} {'lines/s':>10s}")
    for name, n, sec in rows:
        print(f"{name:40s} {sec * 1e3:10.1f} {n / sec:10.0f}")
    print("(times include preprocessing the built-in core.p4/v1model.p4)")


if __name__ == "__main__":
    main()
