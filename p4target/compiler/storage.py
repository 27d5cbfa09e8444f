"""Allocation of BMv2 storage (header instances, stacks, unions, scalar fields) for P4 values."""
from __future__ import annotations

from typing import Any

from p4target.compiler.bmv2_json import Bmv2Program, fresh_name
from p4target.compiler.semantics import fail
from p4target.compiler.types import (Bits, Bool, EnumT, ErrorT, HeaderT, P4Type, StackT, StructT,
                                     TupleT, UnionT, VarbitT)
from p4target.compiler.values import (FieldValue, HeaderValue, StackValue, StructValue, UnionValue,
                                      Value)
from p4target.errors import UnsupportedError

SCALAR_TYPES = (Bits, Bool, EnumT, ErrorT)


class Storage:
    """Creates BMv2 storage for variables and block parameters in one program."""

    def __init__(self, out: Bmv2Program) -> None:
        self.out = out
        self._instance_names: set[str] = {"scalars", "standard_metadata"}

    def unique_instance(self, base: str) -> str:
        return fresh_name(base, self._instance_names)

    def header(self, name: str, t: HeaderT, metadata: bool = False) -> HeaderValue:
        self.out.add_header_type(t.name, t.fields)
        name = self.unique_instance(name)
        self.out.add_header(name, t.name, metadata)
        return HeaderValue(name, t, metadata)

    def stack(self, name: str, t: StackT) -> StackValue:
        if isinstance(t.element, UnionT):
            return self.union_stack(name, t)
        name = self.unique_instance(name)
        self.out.add_header_type(t.element.name, t.element.fields)
        elems = []
        ids = []
        for i in range(t.size):
            ename = f"{name}[{i}]"
            self._instance_names.add(ename)
            ids.append(self.out.add_header(ename, t.element.name, False))
            elems.append(ename)
        self.out.header_stacks.append({"name": name, "id": len(self.out.header_stacks),
                                       "header_type": t.element.name, "size": t.size,
                                       "header_ids": ids})
        return StackValue(name, t, elems)

    def union_stack(self, name: str, t: StackT) -> StackValue:
        name = self.unique_instance(name)
        unions = [self.union(f"{name}[{i}]", t.element) for i in range(t.size)]
        self.out.header_union_stacks.append({
            "name": name, "id": len(self.out.header_union_stacks), "union_type": t.element.name,
            "header_union_ids": [self.out.header_union_id(u.name) for u in unions]})
        return StackValue(name, t, [u.name for u in unions], unions)

    def union(self, name: str, t: UnionT) -> UnionValue:
        name = self.unique_instance(name)
        if not any(u["name"] == t.name for u in self.out.header_union_types):
            self.out.header_union_types.append({
                "name": t.name, "id": len(self.out.header_union_types),
                "headers": [[m, mt.name] for m, mt in t.fields]})
        members = {}
        ids = []
        for m, mt in t.fields:
            if not isinstance(mt, HeaderT):
                raise fail(None, f"union member '{m}' must be a header")
            h = self.header(f"{name}.{m}", mt)
            members[m] = h
            ids.append(self.out.header_id(h.name))
        self.out.header_unions.append({"name": name, "id": len(self.out.header_unions),
                                       "union_type": t.name, "header_ids": ids})
        return UnionValue(name, t, members)

    def variable(self, name: str, t: P4Type, node: Any = None) -> Value:
        """Storage for a variable of any type (scalars live in the ``scalars`` header)."""
        if isinstance(t, SCALAR_TYPES):
            return FieldValue("scalars", self.out.add_scalar(name, t), t)
        if isinstance(t, HeaderT):
            return self.header(name, t)
        if isinstance(t, VarbitT):
            # as p4c: a metadata header of its own (BMv2 allows one varbit field per header)
            h = self.header(name, HeaderT(f"$varbit{t.width}", [("field", t)]), metadata=True)
            return FieldValue(h.name, "field", t)
        if isinstance(t, StackT):
            return self.stack(name, t)
        if isinstance(t, UnionT):
            return self.union(name, t)
        if isinstance(t, StructT):
            return StructValue(t, {f: self.variable(f"{name}.{f}", ft, node) for f, ft in t.fields})
        if isinstance(t, TupleT):
            # a tuple is stored like a struct whose members are its elements, in order
            st = StructT(str(t), [(f"f{i}", et) for i, et in enumerate(t.elements)])
            return self.variable(name, st, node)
        raise UnsupportedError.at(getattr(node, "loc", None), f"variable of type {t}")

    def headers_param(self, t: P4Type, node: Any = None, prefix: str = "") -> Value:
        """The headers struct shared by parser, controls and deparser: one instance per member,
        named after the member as p4c does."""
        if not isinstance(t, StructT):
            return self.variable(prefix or "hdr", t, node)
        members: dict[str, Value] = {}
        for f, ft in t.fields:
            name = f"{prefix}.{f}" if prefix else f
            if isinstance(ft, StructT):
                members[f] = self.headers_param(ft, node, name)
            else:
                members[f] = self.variable(name, ft, node)
        return StructValue(t, members)

    def metadata_param(self, t: P4Type, node: Any = None) -> Value:
        """User metadata: its scalars become ``scalars`` fields ``userMetadata.<path>``."""
        return self.variable("userMetadata", t, node)
