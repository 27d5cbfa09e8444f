"""Annotations in P4Info as p4c writes them: which ones are copied, which become ``doc``."""
from __future__ import annotations

import json
import re
from typing import Any, Iterable

from p4target.errors import P4TargetError

# Annotations p4c consumes itself and never copies into P4Info.
_CONSUMED_ANNOTATIONS = {"name", "id", "hidden", "brief", "description", "max_group_size"}

_DOC_RE = re.compile(r'^@(brief|description)\s*\(\s*"((?:[^"\\]|\\.)*)"\s*\)\s*$', re.S)
_ANNOTATION_NAME_RE = re.compile(r"^@\s*([A-Za-z_][A-Za-z0-9_]*)")


def annotation_name(text: str) -> str:
    """The name of an annotation's text (`@brief("x")` -> `brief`), or ""."""
    m = _ANNOTATION_NAME_RE.match(text.strip())
    return m.group(1) if m else ""


def apply_annotations(target: Any, annotations: Iterable[str], doc_holder: Any = None) -> None:
    """Copy annotations the way p4c does: @brief/@description become ``doc``, the ones p4c
    consumes itself (@name, @id, @hidden, ...) are dropped, structured ones (``@n[...]``) go to
    ``structured_annotations``, the rest are kept verbatim."""
    for text in annotations:
        text = text.strip()
        name = annotation_name(text)
        if name in ("brief", "description"):
            m = _DOC_RE.match(text)
            holder = doc_holder if doc_holder is not None else target
            if m and holder is not None and hasattr(holder, "doc"):
                value = re.sub(r"\\(.)", r"\1", m.group(2))
                setattr(holder.doc, m.group(1), value)
            continue
        if name in _CONSUMED_ANNOTATIONS:
            continue
        if text[len(name) + 1:].startswith("["):
            _add_structured(target.structured_annotations.add(), name, text[len(name) + 2:-1])
            continue
        target.annotations.append(text)


# one item of a structured annotation's canonical text: [key=]("string" | int | true | false)
_ITEM_RE = re.compile(r'\s*(?:([A-Za-z_][A-Za-z0-9_]*)=)?("(?:[^"\\]|\\.)*"|-?\d+|true|false)\s*(?:,|$)')


def _add_structured(out: Any, name: str, body: str) -> None:
    """Fill a p4.config.v1 StructuredAnnotation from the canonical text the compiler writes
    (``k="v", n=2`` becomes a kv_pair_list, ``1, "x"`` an expression_list, ``""`` neither)."""
    out.name = name
    pos = 0
    while pos < len(body):
        m = _ITEM_RE.match(body, pos)
        if m is None:
            raise P4TargetError(f"@{name}: malformed structured annotation body {body!r}")
        pos = m.end()
        key, literal = m.group(1), m.group(2)
        if key is None:
            value = out.expression_list.expressions.add()
        else:
            pair = out.kv_pair_list.kv_pairs.add()
            pair.key = key
            value = pair.value
        if literal.startswith('"'):
            value.string_value = json.loads(literal)
        elif literal in ("true", "false"):
            value.bool_value = literal == "true"
        else:
            value.int64_value = int(literal)


def annotation_int(annotations: Iterable[str], wanted: str) -> int | None:
    """The integer argument of the first `@wanted(N)` annotation, or None."""
    for text in annotations:
        if annotation_name(text) == wanted:
            m = re.search(r"\(\s*(0x[0-9a-fA-F]+|\d+)\s*\)", text)
            if m:
                return int(m.group(1), 0)
    return None
