"""The deparser (BMv2: `Deparser`): valid headers in order, then the payload."""
from __future__ import annotations

from typing import Callable

from ..errors import ProgramLoadError
from .actions import Primitives
from .layout import Layout


def build_deparser(deparsers: list[dict], layout: Layout, prims: Primitives) -> Callable:
    """The function `(P) -> bytes` of the first deparser."""
    if not deparsers:
        raise ProgramLoadError("BMv2 JSON has no deparser")
    dep = deparsers[0]
    body = ["out = []"]
    # method calls p4c places in the deparser run after the checksum update, before emission
    for prim in dep.get("primitives") or []:
        body += prims.primitive(prim)
    for name in dep.get("order", []):
        hid = layout.hid(name)
        fields = layout.header_fields[name]
        total = sum(w for _, w, _ in fields)
        base = layout.header_base[hid]
        if layout.has_varbit(hid):
            widths = [(base + i, f"P.VL.get({base + i}, 0)" if base + i in layout.varbit_slots else w)
                      for i, (_, w, _) in enumerate(fields)]
            pairs = ", ".join(f"(F[{slot}], {w})" for slot, w in widths)
            body.append(f"if V[{hid}]: out.append(_pack([{pairs}]))")
            continue
        parts = []
        shift = total
        for i, (_, w, _) in enumerate(fields):
            shift -= w
            if w:
                parts.append(f"((F[{base + i}] & {(1 << w) - 1}) << {shift})")
        expr = " | ".join(parts) or "0"
        body.append(f"if V[{hid}]: out.append(({expr}).to_bytes({total // 8}, 'big'))")
    body.append("out.append(P.data[P.off:])")
    body.append("return b''.join(out)")
    return prims.ns.compile_fn("deparse", "P", body)
