"""Declarations (BMv2: `init_header_types`, `init_headers`, `init_header_stacks`, unions,
errors, enums, counter/meter/register arrays, value sets, calculations, field lists)."""
from __future__ import annotations

from typing import Any

from ... import hashes
from .values import _MAX_CODE, _MAX_WIDTH, ValueChecks

MAJOR_VERSION, MAX_MINOR_VERSION = 2, 24  # BMv2 1.15's required_major / max_minor_version
CALCULATION_INPUTS = frozenset({"field", "hexstr", "header", "payload"})
# The embedded target allocates every counter, meter and register cell at load. Their memory is
# bounded (p4target/README.md, "Limits"): about this many bytes per cell, all arrays together
# within STATE_BUDGET_BYTES. Real BMv2 allocates eagerly too (16 B per counter cell) and aborts
# on a size of 2**32 or more.
STATE_BUDGET_BYTES = 256 << 20
CELL_BYTES = {"counter_arrays": 16, "meter_arrays": 72, "register_arrays": 8}


class DeclarationChecks(ValueChecks):
    """The program's declarations, and the name tables the other checks look names up in."""

    def meta(self, j: dict) -> None:
        meta = j.get("__meta__")
        if meta is None:
            return
        self.obj(meta, "__meta__")
        if "version" not in meta:
            return
        major, minor = self.arr(meta["version"], "__meta__.version", 2)
        self.integer(major, "__meta__.version[0]")
        self.integer(minor, "__meta__.version[1]")
        if major != MAJOR_VERSION:
            self.fail("__meta__.version", f"BMv2 needs JSON format major version {MAJOR_VERSION}, got {major}")
        if minor > MAX_MINOR_VERSION:
            self.fail("__meta__.version", f"the newest JSON format BMv2 reads is {MAJOR_VERSION}.{MAX_MINOR_VERSION}, "
                                          f"got {major}.{minor}")

    def codes_of(self, entries: Any, path: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, e in enumerate(self.arr(entries, path)):
            self.arr(e, f"{path}[{i}]", 2)
            n = self.string(e[0], f"{path}[{i}][0]")
            v = self.integer(e[1], f"{path}[{i}][1]", 0, _MAX_CODE - 1)
            if n in out or v in out.values():
                self.fail(f"{path}[{i}]", f"duplicate name or value ({n!r}, {v})")
            out[n] = v
        return out

    def codes(self, name: str) -> dict[str, int]:
        return self.codes_of(self.items(name), name)

    def layout(self) -> None:
        self.types = self.named("header_types")
        self.type_fields: dict[str, dict[str, int | str]] = {}
        for n, t in self.types.items():
            p = self.path_of("header_types", n)
            fields: dict[str, int | str] = {}
            varbits = 0
            for i, f in enumerate(self.arr(self.key(t, "fields", p), f"{p}.fields")):
                fp = f"{p}.fields[{i}]"
                self.arr(f, fp)
                if not 2 <= len(f) <= 4:
                    self.fail(fp, f"a field is [name, width] or [name, width, signed(, saturating)], got {len(f)} items")
                fname = self.string(f[0], f"{fp}[0]")
                if fname in fields:
                    self.fail(f"{fp}[0]", f"duplicate field '{fname}'")
                if f[1] == "*":
                    varbits += 1
                    self.integer(self.key(t, "max_length", p), f"{p}.max_length", 0, _MAX_WIDTH // 8)
                else:
                    self.integer(f[1], f"{fp}[1]", 0, _MAX_WIDTH)
                for k in range(2, len(f)):
                    self.boolean(f[k], f"{fp}[{k}]")
                fields[fname] = f[1]
            if varbits > 1:
                self.fail(f"{p}.fields", "a header type has at most one variable-length field")
            self.type_fields[n] = fields
        self.headers = self.named("headers")
        self.header_ids: dict[int, str] = {}
        for n, h in self.headers.items():
            p = self.path_of("headers", n)
            ht = self.string(self.key(h, "header_type", p), f"{p}.header_type")
            if ht not in self.types:
                self.fail(f"{p}.header_type", f"unknown header type '{ht}'")
            if "metadata" in h:
                self.boolean(h["metadata"], f"{p}.metadata")
            self.header_ids[h["id"]] = n
        self.stacks = self.named("header_stacks")
        for n, s in self.stacks.items():
            p = self.path_of("header_stacks", n)
            ht = self.string(self.key(s, "header_type", p), f"{p}.header_type")
            if ht not in self.types:
                self.fail(f"{p}.header_type", f"unknown header type '{ht}'")
            ids = self.arr(self.key(s, "header_ids", p), f"{p}.header_ids")
            if not ids:
                self.fail(f"{p}.header_ids", "a header stack needs at least one header")
            for i, hid in enumerate(ids):
                hname = self.header_by_id(hid, f"{p}.header_ids[{i}]")
                if self.headers[hname]["header_type"] != ht:
                    self.fail(f"{p}.header_ids[{i}]", f"header '{hname}' is not of the stack's type '{ht}'")
        self.union_types = self.named("header_union_types")
        for n, u in self.union_types.items():
            p = self.path_of("header_union_types", n)
            for i, m in enumerate(self.arr(self.key(u, "headers", p), f"{p}.headers")):
                self.arr(m, f"{p}.headers[{i}]", 2)
                self.string(m[0], f"{p}.headers[{i}][0]")
                if self.string(m[1], f"{p}.headers[{i}][1]") not in self.types:
                    self.fail(f"{p}.headers[{i}][1]", f"unknown header type '{m[1]}'")
        self.unions = self.named("header_unions")
        self.union_ids: dict[int, str] = {}
        for n, u in self.unions.items():
            p = self.path_of("header_unions", n)
            if self.string(self.key(u, "union_type", p), f"{p}.union_type") not in self.union_types:
                self.fail(f"{p}.union_type", f"unknown header union type '{u['union_type']}'")
            for i, hid in enumerate(self.arr(self.key(u, "header_ids", p), f"{p}.header_ids")):
                self.header_by_id(hid, f"{p}.header_ids[{i}]")
            self.union_ids[u["id"]] = n
        self.union_stacks = self.named("header_union_stacks")
        for n, us in self.union_stacks.items():
            p = self.path_of("header_union_stacks", n)
            if self.string(self.key(us, "union_type", p), f"{p}.union_type") not in self.union_types:
                self.fail(f"{p}.union_type", f"unknown header union type '{us['union_type']}'")
            for i, uid in enumerate(self.arr(self.key(us, "header_union_ids", p), f"{p}.header_union_ids")):
                if type(uid) is not int or uid not in self.union_ids:
                    self.fail(f"{p}.header_union_ids[{i}]", f"unknown header union id {uid!r:.40}")

    def header_by_id(self, hid: Any, path: str) -> str:
        if type(hid) is not int or hid not in self.header_ids:
            self.fail(path, f"unknown header id {hid!r:.40}")
        return self.header_ids[hid]

    def header(self, v: Any, path: str) -> str:
        if self.string(v, path) not in self.headers:
            self.fail(path, f"unknown header '{v}'")
        return v

    def field_aliases(self) -> None:
        """`field_aliases`: [name, [header, field]], another name for an existing field (BMv2
        asserts that the field exists)."""
        self.aliases: set[tuple[str, str]] = set()
        for i, a in enumerate(self.items("field_aliases")):
            p = f"field_aliases[{i}]"
            self.arr(a, p, 2)
            name = self.string(a[0], f"{p}[0]")
            self.field(a[1], f"{p}[1]", valid_ok=False)
            header, _, field = name.partition(".")
            self.aliases.add((header, field))

    def field(self, v: Any, path: str, valid_ok: bool = True) -> None:
        """A field reference [header, field] (`$valid$` is BMv2's hidden validity field), or
        a field alias split at its first dot."""
        self.arr(v, path, 2)
        if type(v[0]) is str and type(v[1]) is str and (v[0], v[1]) in getattr(self, "aliases", ()):
            return
        h = self.header(v[0], f"{path}[0]")
        f = self.string(v[1], f"{path}[1]")
        if f == "$valid$" and valid_ok:
            return
        if f not in self.type_fields[self.headers[h]["header_type"]]:
            self.fail(path, f"unknown field '{h}.{f}'")

    def stack_field(self, v: Any, path: str) -> None:
        self.arr(v, path, 2)
        s = self.string(v[0], f"{path}[0]")
        if s not in self.stacks:
            self.fail(f"{path}[0]", f"unknown header stack '{s}'")
        if self.string(v[1], f"{path}[1]") not in self.type_fields[self.stacks[s]["header_type"]]:
            self.fail(f"{path}[1]", f"unknown field '{v[1]}' of stack '{s}'")

    def ref(self, table: dict, kind: str, v: Any, path: str) -> str:
        if self.string(v, path) not in table:
            self.fail(path, f"unknown {kind} '{v}'")
        return v

    def stateful(self) -> None:
        used = 0
        for kind, arrays in (("counter_arrays", self.counters), ("meter_arrays", self.meters),
                             ("register_arrays", self.registers)):
            for n, a in arrays.items():
                p = self.path_of(kind, n)
                size = a.get("size", 0) if kind != "register_arrays" else self.key(a, "size", p)
                used += self.integer(size, f"{p}.size", 0) * CELL_BYTES[kind]
                if used > STATE_BUDGET_BYTES:
                    self.fail(f"{p}.size", f"{size} cells take the counter, meter and register "
                                           f"arrays beyond this switch's {STATE_BUDGET_BYTES >> 20} MiB "
                                           f"limit (p4target/README.md, Limits)")
        for n, c in self.counters.items():
            p = self.path_of("counter_arrays", n)
            if c.get("is_direct") is not None:
                self.boolean(c["is_direct"], f"{p}.is_direct")
        for n, m in self.meters.items():
            p = self.path_of("meter_arrays", n)
            if m.get("type") not in ("packets", "bytes"):
                self.fail(f"{p}.type", f"invalid meter type {m.get('type')!r:.40}")
            if "rate_count" in m:
                self.integer(m["rate_count"], f"{p}.rate_count", 0)
            if m.get("is_direct") is not None and self.boolean(m["is_direct"], f"{p}.is_direct"):
                self.field(self.key(m, "result_target", p), f"{p}.result_target", valid_ok=False)
        for n, r in self.registers.items():
            p = self.path_of("register_arrays", n)
            self.integer(self.key(r, "bitwidth", p), f"{p}.bitwidth", 1, _MAX_WIDTH)
        for n, v in self.vsets.items():
            p = self.path_of("parse_vsets", n)
            self.integer(self.key(v, "compressed_bitwidth", p), f"{p}.compressed_bitwidth", 0, _MAX_WIDTH)
            if "max_size" in v:
                self.integer(v["max_size"], f"{p}.max_size", 0)

    def calculation(self, c: dict, p: str) -> None:
        algo = self.string(self.key(c, "algo", p), f"{p}.algo")
        if algo not in hashes.ALGORITHMS:
            self.fail(f"{p}.algo", f"unknown hash algorithm '{algo}'")
        for i, inp in enumerate(self.arr(self.key(c, "input", p), f"{p}.input")):
            self.calc_input(inp, f"{p}.input[{i}]")

    def calc_input(self, inp: Any, ip: str, only_fields: bool = False) -> None:
        self.obj(inp, ip)
        t = self.string(self.key(inp, "type", ip), f"{ip}.type")
        if t not in (("field",) if only_fields else CALCULATION_INPUTS):
            self.fail(f"{ip}.type", f"unsupported input type '{t}'")
        if t == "field":
            self.field(self.key(inp, "value", ip), f"{ip}.value", valid_ok=False)
        elif t == "hexstr":
            self.hexstr(self.key(inp, "value", ip), f"{ip}.value")
            self.integer(self.key(inp, "bitwidth", ip), f"{ip}.bitwidth", 1, _MAX_WIDTH)
        elif t == "header":
            self.header(self.key(inp, "value", ip), f"{ip}.value")

    def field_lists(self) -> None:
        for group in ("field_lists", "learn_lists"):
            for i, fl in enumerate(self.items(group)):
                p = f"{group}[{i}]"
                self.obj(fl, p)
                self.integer(self.key(fl, "id", p), f"{p}.id")
                for k, e in enumerate(self.arr(fl.get("elements", []), f"{p}.elements")):
                    self.obj(e, f"{p}.elements[{k}]")
                    if e.get("type") == "field":
                        self.field(self.key(e, "value", f"{p}.elements[{k}]"), f"{p}.elements[{k}].value",
                                   valid_ok=False)
