"""Value kinds and name tables shared by the checks: objects, arrays, strings, integers,
booleans, hex strings, required keys, uniquely named top-level objects."""
from __future__ import annotations

import re
from typing import Any

# errors and enum values: BMv2 takes [0, 2**31 - 1)
_MAX_CODE = 2 ** 31 - 1
_MAX_WIDTH = 1 << 16  # widths beyond this are refused (no real program comes near; bounds memory)
_HEX = re.compile(r"-?0[xX][0-9a-fA-F]+\Z|-?[0-9a-fA-F]+\Z")


def vector_items(v: Any) -> list:
    """The items BMv2 iterates in a parameter vector or field list value: an array's items, an
    object's values in key order (p4c writes an empty vector as `{}`), and none for anything
    else (jsoncpp iterates a null, string or number as empty)."""
    if isinstance(v, dict):
        return [v[k] for k in sorted(v)]
    return v if isinstance(v, list) else []


class _Invalid(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)


def _nbytes(hexstr: str) -> int:
    """Bytes of a hex string as BMv2's ByteContainer reads it (sign and 0x prefix dropped)."""
    digits = hexstr.lstrip("-")
    if digits[:2] in ("0x", "0X"):
        digits = digits[2:]
    return (len(digits) + 1) // 2


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(v), type(v).__name__)


class ValueChecks:
    """Checks of single values; `fail` raises with the JSON path."""
    j: Any
    allow: bool

    @staticmethod
    def fail(path: str, message: str) -> None:
        raise _Invalid(path, message)

    def obj(self, v: Any, path: str) -> dict:
        if not isinstance(v, dict):
            self.fail(path, f"must be an object, got {_kind(v)}")
        return v

    def arr(self, v: Any, path: str, size: int | None = None) -> list:
        if not isinstance(v, list):
            self.fail(path, f"must be an array, got {_kind(v)}")
        if size is not None and len(v) != size:
            self.fail(path, f"must be an array of {size} items, got {len(v)}")
        return v


    def string(self, v: Any, path: str) -> str:
        if type(v) is not str:
            self.fail(path, f"must be a string, got {_kind(v)}")
        return v

    def integer(self, v: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
        if type(v) is not int:
            self.fail(path, f"must be an integer, got {_kind(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            self.fail(path, f"{v} is out of range [{lo}, {hi}]")
        return v

    def boolean(self, v: Any, path: str) -> bool:
        """A flag as BMv2 reads it (jsoncpp's asBool): true/false, a number (non-zero and not
        NaN is true; p4c writes header field signedness as 0/1) or null (false); a string, an
        array or an object aborts BMv2's loader and is refused here."""
        if v is None or type(v) is bool:
            return bool(v)
        if type(v) in (int, float):
            return v != 0 and v == v
        self.fail(path, f"must be a boolean, got {_kind(v)}")

    def hexstr(self, v: Any, path: str) -> str:
        if type(v) is not str or not _HEX.match(v):
            self.fail(path, f"must be a hexadecimal string, got {_kind(v)}")
        return v

    def key(self, o: dict, name: str, path: str) -> Any:
        if name not in o:
            self.fail(path, f'needs "{name}"')
        return o[name]

    def items(self, name: str) -> list:
        """A top-level list (absent: empty, as BMv2 reads a missing key)."""
        v = self.j.get(name, [])
        return [] if v is None else self.arr(v, name)

    def named(self, name: str, ids: bool = True) -> dict[str, dict]:
        """Objects of a top-level list by name; names and ids must be unique and well typed."""
        out: dict[str, dict] = {}
        seen: set[int] = set()
        for i, o in enumerate(self.items(name)):
            p = f"{name}[{i}]"
            self.obj(o, p)
            n = self.string(self.key(o, "name", p), f"{p}.name")
            if n in out:
                self.fail(f"{p}.name", f"duplicate name '{n}'")
            if ids:
                oid = self.integer(self.key(o, "id", p), f"{p}.id")
                if oid in seen:
                    self.fail(f"{p}.id", f"duplicate id {oid}")
                seen.add(oid)
            out[n] = o
        return out

    def path_of(self, name: str, obj_name: str) -> str:
        for i, o in enumerate(self.items(name)):
            if isinstance(o, dict) and o.get("name") == obj_name:
                return f"{name}[{i}]"
        return name
