"""Reading untrusted JSON/YAML documents within fixed bounds of size, depth and number length.

Policy files, API requests and the state file all come from outside the process. Each is read
here so that no input can take unbounded time or memory or end in a traceback: the byte size is
capped before decoding, text must be UTF-8, containers may nest only ``MAX_DEPTH`` levels,
integers may have only ``MAX_INT_DIGITS`` digits, and YAML aliases (``*name``, the material of
"billion laughs" bombs) are refused outright. Every failure is a :class:`DocumentError` with a
one-line message.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

MAX_DOCUMENT_BYTES = 1 << 20   # a policy of 64 slots is a few kB; 1 MiB is generous
MAX_DEPTH = 32                 # a policy nests 6 levels deep
MAX_INT_DIGITS = 20            # 2**64 has 20 digits; every field is far smaller
MAX_MESSAGE_CHARS = 200        # errors quote at most this much of an offending value


class DocumentError(ValueError):
    """A document could not be read or decoded within bounds; ``str()`` is one line."""


def short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters so an error never quotes a whole document."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {len(str(value)) if value.bit_length() < 10000 else 'many'} digits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` with its whitespace runs collapsed and cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def read_text(path: str | Path, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of ``path``, read up to ``limit`` bytes (``/dev/zero`` ends quickly)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise DocumentError(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise DocumentError(f"larger than {limit} bytes")
    return decode_utf8(data)


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 text; the error names the first bad byte and its offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") \
            from None


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise DocumentError(f"integer of {len(text.lstrip('-'))} digits is too long "
                            f"(at most {MAX_INT_DIGITS})")
    return int(text)


def _json_constant(name: str) -> Any:
    raise DocumentError(f"{name} is not a JSON number")


def loads_json(text: str | bytes) -> Any:
    """Decode JSON text within the bounds of this module."""
    if isinstance(text, bytes):
        text = decode_utf8(text)
    if len(text) > MAX_DOCUMENT_BYTES * 4:   # characters; the byte cap applies to files
        raise DocumentError(f"larger than {MAX_DOCUMENT_BYTES} bytes")
    try:
        doc = json.loads(text, parse_int=_json_int, parse_constant=_json_constant)
    except RecursionError:
        raise DocumentError(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise DocumentError(f"not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") \
            from None
    check_depth(doc)
    return doc


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader without aliases, with a nesting limit and short integers."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise DocumentError(f"YAML aliases (*name) are not allowed (line {mark.line + 1} "
                                f"column {mark.column + 1})")
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise DocumentError(f"nested deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_DIGITS = re.compile(r"[0-9a-fA-F]")


def _yaml_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    digits = len(_DIGITS.findall(str(node.value)))
    if digits > MAX_INT_DIGITS:
        mark = node.start_mark
        raise DocumentError(f"integer of {digits} digits is too long (at most {MAX_INT_DIGITS}; "
                            f"line {mark.line + 1} column {mark.column + 1})")
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _yaml_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    """YAML 1.1 floats, sexagesimal ones (`1:30.5`) included, whose value must fit a float: PyYAML
    sums the sexagesimal parts times powers of 60 and overflows on long ones."""
    try:
        return yaml.SafeLoader.construct_yaml_float(loader, node)
    except (OverflowError, ValueError):
        mark = node.start_mark
        raise DocumentError(f"number {short(node.value, 40)} does not fit a float "
                            f"(line {mark.line + 1} column {mark.column + 1})") from None


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _yaml_int)
_BoundedLoader.add_constructor("tag:yaml.org,2002:float", _yaml_float)


def loads_yaml(text: str) -> Any:
    """Decode YAML text (one document, no aliases) within the bounds of this module."""
    if len(text) > MAX_DOCUMENT_BYTES * 4:
        raise DocumentError(f"larger than {MAX_DOCUMENT_BYTES} bytes")
    loader = None
    try:
        loader = _BoundedLoader(text)   # the reader already checks the characters here
        doc = loader.get_single_data()
    except RecursionError:
        raise DocumentError(f"nested deeper than {MAX_DEPTH} levels") from None
    except OverflowError:   # any other number PyYAML's constructors cannot hold
        raise DocumentError("a number in the document does not fit") from None
    except yaml.YAMLError as exc:
        raise DocumentError(f"not valid YAML: {one_line(str(exc))}") from None
    finally:
        if loader is not None:
            loader.dispose()
    check_depth(doc)
    return doc


def check_depth(doc: Any, limit: int = MAX_DEPTH) -> None:
    """Raise DocumentError when lists/mappings in ``doc`` nest deeper than ``limit`` levels."""
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, dict)):
            if depth > limit:
                raise DocumentError(f"nested deeper than {limit} levels")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children if isinstance(c, (list, dict)))


def load_file(path: str | Path) -> Any:
    """Read and decode ``path``: JSON when it ends in ``.json``, else YAML."""
    text = read_text(path)
    return loads_json(text) if str(path).endswith(".json") else loads_yaml(text)
