"""Lexer: preprocessed P4 text -> tokens with source locations.

Token kinds: ``"id"`` (identifier), ``"num"`` (integer literal; ``value`` is
``(int value, width or None, signed)``), ``"str"`` (string literal; ``value`` is the unescaped
text), ``"eof"``, and for keywords and punctuation the text itself (``"header"``, ``"{"``,
``"&&&"``...). ``>`` is always a single token; the parser joins two adjacent ``>`` into a shift
so that ``bit<bit<8>>``-style nesting needs no special casing. ``_`` has kind ``"_"``.
"""
from __future__ import annotations

import re
from typing import List, Tuple

from p4target.compiler.preprocessor import PreprocessedSource
from p4target.compiler.source import SourceLocation
from p4target.errors import CompileError

KEYWORDS = frozenset("""
abstract action apply bool bit const control default else enum error exit extern false
header header_union if in inout int match_kind out package parser return select state string
struct switch table transition true tuple type typedef value_set varbit void
""".split())

# Keywords of newer P4_16 revisions we do not support; reported as unsupported when parsed
# in a position where they would start a construct.
UNSUPPORTED_KEYWORDS = frozenset({"list", "this"})

# compound assignments (P4_16 1.2.4) first; ``>>=`` lexes as ``>`` ``>=`` (``>`` stays single)
_PUNCT = ["|+|=", "|-|=", "<<=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
          "&&&", "|+|", "|-|", "...", "..", "++", "<<", "<=", ">=", "==", "!=", "&&", "||",
          "{", "}", "(", ")", "[", "]", "<", ">", ";", ":", ",", ".", "=", "+", "-", "*", "/",
          "%", "&", "|", "^", "~", "!", "?", "@"]

_INT_BODY = r"(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)"
_TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\f\v]+)"
    r"|(?P<nl>\n)"
    r"|(?P<int>[0-9][0-9_]*(?:[wW]|[sS]-?)" + _INT_BODY + r"|" + _INT_BODY + r")(?![A-Za-z_0-9])"
    r"|(?P<badint>[0-9][A-Za-z0-9_]*)"
    r"|(?P<id>[A-Za-z_][A-Za-z0-9_]*)"
    r'|(?P<str>"(?:[^"\\]|\\.)*")'  # may span lines (as in p4c: annotation bodies do)
    r"|(?P<punct>" + "|".join(re.escape(p) for p in _PUNCT) + r")"
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


class Token:
    """One token; ``loc`` points into the original (unpreprocessed) file."""

    __slots__ = ("kind", "text", "value", "loc", "offset", "end")

    def __init__(self, kind: str, text: str, value: object, loc: SourceLocation,
                 offset: int, end: int) -> None:
        self.kind = kind
        self.text = text
        self.value = value
        self.loc = loc
        self.offset = offset
        self.end = end

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r}, {self.loc})"


def parse_int_literal(text: str) -> Tuple[int, int | None, bool]:
    """(value, width or None, signed) of a P4 integer literal such as ``8w0x1F`` or ``16s5``."""
    width: int | None = None
    signed = False
    m = re.match(r"([0-9][0-9_]*)([wsWS])(-?)(.*)$", text)
    body = text
    if m and not text[:2].lower() in ("0x", "0b", "0o", "0d"):
        width = int(m.group(1).replace("_", ""))
        signed = m.group(2) in "sS"
        body = m.group(4)
    body = body.replace("_", "")
    prefix = body[:2].lower()
    if prefix == "0x":
        value = int(body[2:], 16)
    elif prefix == "0b":
        value = int(body[2:], 2)
    elif prefix == "0o":
        value = int(body[2:], 8)
    elif prefix == "0d":
        value = int(body[2:], 10)
    else:
        value = int(body, 10)
    if m and width is not None and m.group(3):
        value = -value
    return value, width, signed


def _unescape(body: str) -> str:
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokenize(source: PreprocessedSource) -> List[Token]:
    """All tokens of ``source`` followed by one ``eof`` token."""
    text = source.text
    origins = source.origins
    tokens: List[Token] = []
    append = tokens.append
    line = 1
    line_start = 0
    origin = source.origin(1)
    pos = 0
    n = len(text)
    match = _TOKEN_RE.match
    keywords = KEYWORDS
    while pos < n:
        m = match(text, pos)
        if m is None:
            col = pos - line_start + 1
            bad = text[pos]
            if bad == '"':
                raise CompileError("unterminated string literal", origin[0], origin[1], col)
            raise CompileError(f"unexpected character {bad!r}", origin[0], origin[1], col)
        kind = m.lastgroup
        end = m.end()
        if kind == "ws":
            pos = end
            continue
        if kind == "nl":
            line += 1
            line_start = end
            origin = origins[line - 1] if line - 1 < len(origins) else source.origin(line)
            pos = end
            continue
        tok_text = m.group(kind)  # type: ignore[arg-type]
        loc = SourceLocation(origin[0], origin[1], pos - line_start + 1)
        if kind == "id":
            if tok_text in keywords:
                append(Token(tok_text, tok_text, None, loc, pos, end))
            elif tok_text == "_":
                append(Token("_", tok_text, None, loc, pos, end))
            else:
                append(Token("id", tok_text, tok_text, loc, pos, end))
        elif kind == "badint":
            raise CompileError(f"malformed integer literal {tok_text!r}",
                               loc.file, loc.line, loc.column)
        elif kind == "int":
            try:
                value = parse_int_literal(tok_text)
            except ValueError:
                raise CompileError(f"malformed integer literal {tok_text!r}",
                                   loc.file, loc.line, loc.column) from None
            append(Token("num", tok_text, value, loc, pos, end))
        elif kind == "str":
            append(Token("str", tok_text, _unescape(tok_text[1:-1]), loc, pos, end))
            newlines = tok_text.count("\n")
            if newlines:
                line += newlines
                line_start = pos + tok_text.rfind("\n") + 1
                origin = origins[line - 1] if line - 1 < len(origins) else source.origin(line)
        else:
            append(Token(tok_text, tok_text, None, loc, pos, end))
        pos = end
    # End of input is reported just after the last token (where a missing '}' belongs).
    if tokens:
        last_tok = tokens[-1]
        eof_loc = SourceLocation(last_tok.loc.file, last_tok.loc.line,
                                 last_tok.loc.column + len(last_tok.text))
    else:
        first = source.origin(1)
        eof_loc = SourceLocation(first[0], first[1], 1)
    append(Token("eof", "", None, eof_loc, n, n))
    return tokens
