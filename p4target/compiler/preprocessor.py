"""C-style preprocessor for P4 sources.

Handles comments, line continuations, ``#include`` (``<core.p4>``/``<v1model.p4>`` resolve to
the built-in files in ``include/``; ``"x.p4"`` relative to the including file, then ``-I``
dirs), object-like and function-like ``#define``, ``#undef``, ``#if``/``#ifdef``/``#ifndef``/
``#elif``/``#else``/``#endif`` with ``defined()`` and integer expressions, ``#line``,
``#error``, ``#warning`` and ``#pragma`` (ignored; ``#pragma once`` honoured).

The result keeps, for every output line, the file and line it came from, so the lexer and
parser report errors in the right place.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Sequence, Tuple

from p4target.errors import CompileError

BUILTIN_INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")

_MAX_INCLUDE_DEPTH = 64
_MAX_EXPANSION_STEPS = 100_000
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIRECTIVE = re.compile(r"\s*#\s*([A-Za-z_]\w*)?(.*)$", re.S)
# Tokens for macro expansion of text lines: strings, identifiers, numbers (with their
# identifier-like suffixes so 8w5 is never split), anything else one char at a time.
_TEXT_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"?|[A-Za-z_]\w*|\d\w*|\s+|.', re.S)


@dataclass
class Macro:
    """A ``#define``; ``params`` is None for object-like macros."""

    name: str
    body: str
    params: Tuple[str, ...] | None = None
    variadic: bool = False


@dataclass
class PreprocessedSource:
    """Preprocessor output: text plus, per output line (0-based index), its origin."""

    text: str
    origins: List[Tuple[str, int]] = field(default_factory=list)

    def origin(self, line: int) -> Tuple[str, int]:
        """(file, line) of 1-based output ``line``."""
        if 1 <= line <= len(self.origins):
            return self.origins[line - 1]
        if self.origins:
            return self.origins[-1]
        return ("<input>", line)


def strip_comments(text: str, file: str) -> str:
    """Replace comments by spaces, keeping newlines so line numbers stay put."""
    out: List[str] = []
    i, n = 0, len(text)
    line = 1
    while i < n:
        c = text[i]
        if c == '"':
            # A string literal may span lines; one never closed ends at its line's end (the
            # lexer reports it there).
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                j = text.find("\n", i)
                j = n if j < 0 else j - 1
            j = min(j + 1, n)
            out.append(text[i:j])
            line += text.count("\n", i, j)
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            if j < 0:
                j = n
            out.append(" ")
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                raise CompileError("unterminated comment", file, line, None)
            chunk = text[i:j + 2]
            newlines = chunk.count("\n")
            line += newlines
            out.append("\n" * newlines if newlines else " ")
            i = j + 2
        else:
            j = i
            while j < n and text[j] not in '"/':
                j += 1
            if j == i:
                j = i + 1
            chunk = text[i:j]
            line += chunk.count("\n")
            out.append(chunk)
            i = j
    return "".join(out)


class Preprocessor:
    """One preprocessing run (macro table, include stack)."""

    def __init__(self, include_dirs: Sequence[str] = (),
                 defines: Mapping[str, str | None] | None = None) -> None:
        self.include_dirs = [str(d) for d in include_dirs]
        self.macros: Dict[str, Macro] = {}
        self.once: set = set()
        self.lines: List[str] = []
        self.origins: List[Tuple[str, int]] = []
        for name, value in (defines or {}).items():
            if not _IDENT.fullmatch(name):
                raise CompileError(f"invalid macro name in -D: {name!r}")
            self.macros[name] = Macro(name, "1" if value is None else str(value))

    # ------------------------------------------------------------------ files
    def run_file(self, path: str) -> PreprocessedSource:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as exc:
            raise CompileError(f"cannot read {path}: {exc.strerror or exc}") from None
        self._process(text, path, 0)
        return PreprocessedSource("\n".join(self.lines) + "\n", self.origins)

    def run_text(self, text: str, file: str = "<input>") -> PreprocessedSource:
        self._process(text, file, 0)
        return PreprocessedSource("\n".join(self.lines) + "\n", self.origins)

    def _resolve_include(self, name: str, angled: bool, current: str,
                         file: str, line: int) -> str:
        candidates: List[str] = []
        if os.path.isabs(name):
            candidates.append(name)
        elif angled:
            candidates.append(os.path.join(BUILTIN_INCLUDE_DIR, name))
            candidates += [os.path.join(d, name) for d in self.include_dirs]
        else:
            candidates.append(os.path.join(os.path.dirname(os.path.abspath(current)), name))
            candidates += [os.path.join(d, name) for d in self.include_dirs]
            candidates.append(os.path.join(BUILTIN_INCLUDE_DIR, name))
        for cand in candidates:
            if os.path.isfile(cand):
                return cand
        raise CompileError(f"included file not found: {name}", file, line, 1)

    # ------------------------------------------------------------------ main loop
    def _process(self, text: str, file: str, depth: int) -> None:
        if depth > _MAX_INCLUDE_DEPTH:
            raise CompileError("#include nested too deeply (include cycle?)", file, 1, 1)
        text = strip_comments(text.replace("\r\n", "\n").replace("\r", "\n"), file)
        raw_lines = text.split("\n")
        if raw_lines and raw_lines[-1] == "":
            raw_lines.pop()
        # Conditional stack entries: [active_now, some_branch_taken, parent_active, saw_else, line]
        cond: List[list] = []
        active = True
        report_file, line_delta = file, 0
        i = 0
        n = len(raw_lines)
        while i < n:
            start = i
            line_text = raw_lines[i]
            i += 1
            while line_text.endswith("\\") and i < n:  # line continuation
                line_text = line_text[:-1] + raw_lines[i]
                i += 1
            lineno = start + 1
            origin = (report_file, lineno + line_delta)
            m = _DIRECTIVE.match(line_text) if line_text.lstrip().startswith("#") else None
            if m is None:
                if active:
                    self.lines.append(self._expand(line_text, origin))
                else:
                    self.lines.append("")
                self.origins.append(origin)
                for k in range(start + 1, i):  # keep continued lines as blanks
                    self.lines.append("")
                    self.origins.append((report_file, k + 1 + line_delta))
                continue
            directive = m.group(1) or ""
            rest = m.group(2).strip()
            # Blank placeholders keep the output line count aligned with the source.
            for k in range(start, i):
                self.lines.append("")
                self.origins.append((report_file, k + 1 + line_delta))
            ofile, oline = origin
            if directive in ("if", "ifdef", "ifndef"):
                if not active:
                    cond.append([False, True, False, False, oline])
                    continue
                if directive == "if":
                    value = self._eval_condition(rest, ofile, oline)
                else:
                    name = self._directive_name(rest, directive, ofile, oline)
                    value = (name in self.macros) == (directive == "ifdef")
                cond.append([value, value, True, False, oline])
                active = value
            elif directive == "elif":
                if not cond or cond[-1][3]:
                    raise CompileError("#elif without matching #if", ofile, oline, 1)
                top = cond[-1]
                if top[2] and not top[1]:
                    value = self._eval_condition(rest, ofile, oline)
                    top[0] = value
                    top[1] = value
                else:
                    top[0] = False
                active = top[0]
            elif directive == "else":
                if not cond or cond[-1][3]:
                    raise CompileError("#else without matching #if", ofile, oline, 1)
                top = cond[-1]
                top[3] = True
                top[0] = top[2] and not top[1]
                top[1] = True
                active = top[0]
            elif directive == "endif":
                if not cond:
                    raise CompileError("#endif without matching #if", ofile, oline, 1)
                cond.pop()
                active = cond[-1][0] if cond else True
            elif not active:
                continue
            elif directive == "include":
                self._include(rest, file, ofile, oline, depth)
            elif directive == "define":
                self._define(rest, ofile, oline)
            elif directive == "undef":
                self.macros.pop(self._directive_name(rest, "undef", ofile, oline), None)
            elif directive == "line":
                parts = self._expand(rest, origin).split(None, 1)
                if not parts or not parts[0].isdigit():
                    raise CompileError("#line expects a line number", ofile, oline, 1)
                # the line after the directive gets number parts[0]
                line_delta = int(parts[0]) - (lineno + 1)
                if len(parts) > 1:
                    report_file = parts[1].strip().strip('"')
            elif directive == "error":
                raise CompileError(f"#error {rest}".rstrip(), ofile, oline, 1)
            elif directive == "warning":
                continue
            elif directive == "pragma":
                if rest == "once":
                    self.once.add(os.path.abspath(file))
            elif directive == "":
                continue  # a lone '#' is a null directive
            else:
                raise CompileError(f"unknown preprocessor directive #{directive}", ofile, oline, 1)
        if cond:
            raise CompileError("unterminated #if (missing #endif)", file, cond[-1][4], 1)

    def _directive_name(self, rest: str, directive: str, file: str, line: int) -> str:
        m = _IDENT.match(rest)
        if not m:
            raise CompileError(f"#{directive} expects a macro name", file, line, 1)
        return m.group(0)

    def _include(self, rest: str, current: str, file: str, line: int, depth: int) -> None:
        spec = rest
        if not (spec.startswith("<") or spec.startswith('"')):
            spec = self._expand(spec, (file, line)).strip()
        m = re.match(r'<([^>]+)>|"([^"]+)"', spec)
        if not m:
            raise CompileError("#include expects <file> or \"file\"", file, line, 1)
        name = m.group(1) or m.group(2)
        path = self._resolve_include(name, m.group(1) is not None, current, file, line)
        if os.path.abspath(path) in self.once:
            return
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as exc:
            raise CompileError(f"cannot read {path}: {exc.strerror or exc}", file, line, 1) from None
        self._process(text, path, depth + 1)

    def _define(self, rest: str, file: str, line: int) -> None:
        m = _IDENT.match(rest)
        if not m:
            raise CompileError("#define expects a macro name", file, line, 1)
        name = m.group(0)
        after = rest[m.end():]
        if after.startswith("("):  # function-like: no space between name and '('
            close = after.find(")")
            if close < 0:
                raise CompileError(f"unterminated parameter list of macro {name}", file, line, 1)
            params = [p.strip() for p in after[1:close].split(",") if p.strip()]
            variadic = bool(params) and params[-1] == "..."
            if variadic:
                params[-1] = "__VA_ARGS__"
            for p in params:
                if not _IDENT.fullmatch(p):
                    raise CompileError(f"bad parameter {p!r} of macro {name}", file, line, 1)
            self.macros[name] = Macro(name, after[close + 1:].strip(), tuple(params), variadic)
        else:
            self.macros[name] = Macro(name, after.strip())

    # ------------------------------------------------------------------ expansion
    def _expand(self, text: str, origin: Tuple[str, int], disabled: frozenset = frozenset(),
                budget: List[int] | None = None) -> str:
        if not self.macros or not _IDENT.search(text):
            return text
        if budget is None:
            budget = [_MAX_EXPANSION_STEPS]
        tokens = _TEXT_TOKEN.findall(text)
        out: List[str] = []
        k = 0
        while k < len(tokens):
            tok = tokens[k]
            k += 1
            macro = self.macros.get(tok)
            if macro is None or tok in disabled:
                out.append(tok)
                continue
            budget[0] -= 1
            if budget[0] < 0:
                raise CompileError("macro expansion too deep", origin[0], origin[1], 1)
            if macro.params is None:
                out.append(self._expand(macro.body, origin, disabled | {tok}, budget))
                continue
            # function-like: needs '(' next (skipping whitespace)
            j = k
            while j < len(tokens) and tokens[j].isspace():
                j += 1
            if j >= len(tokens) or tokens[j] != "(":
                out.append(tok)
                continue
            args, k = self._collect_args(tokens, j + 1, macro, origin)
            out.append(self._expand(self._substitute(macro, args, origin),
                                    origin, disabled | {tok}, budget))
        return "".join(out)

    def _collect_args(self, tokens: List[str], k: int, macro: Macro,
                      origin: Tuple[str, int]) -> Tuple[List[str], int]:
        args: List[str] = []
        cur: List[str] = []
        level = 0
        while k < len(tokens):
            tok = tokens[k]
            k += 1
            if tok == "(":
                level += 1
            elif tok == ")":
                if level == 0:
                    args.append("".join(cur).strip())
                    break
                level -= 1
            elif tok == "," and level == 0:
                args.append("".join(cur).strip())
                cur = []
                continue
            cur.append(tok)
        else:
            raise CompileError(f"unterminated argument list of macro {macro.name}",
                               origin[0], origin[1], 1)
        params = macro.params or ()
        if args == [""] and not params:
            args = []
        if macro.variadic and len(args) >= len(params):
            args = args[:len(params) - 1] + [", ".join(args[len(params) - 1:])]
        if len(args) != len(params):
            raise CompileError(f"macro {macro.name} expects {len(params)} arguments, "
                               f"got {len(args)}", origin[0], origin[1], 1)
        return args, k

    def _substitute(self, macro: Macro, args: List[str], origin: Tuple[str, int]) -> str:
        mapping = dict(zip(macro.params or (), args))
        body_tokens = _TEXT_TOKEN.findall(macro.body)
        out: List[str] = []
        k = 0
        while k < len(body_tokens):
            tok = body_tokens[k]
            if tok == "#" and k + 1 < len(body_tokens):  # stringize
                j = k + 1
                while j < len(body_tokens) and body_tokens[j].isspace():
                    j += 1
                if j < len(body_tokens) and body_tokens[j] in mapping:
                    val = mapping[body_tokens[j]].replace("\\", "\\\\").replace('"', '\\"')
                    out.append(f'"{val}"')
                    k = j + 1
                    continue
            if tok == "#" and k + 1 < len(body_tokens) and body_tokens[k + 1] == "#":
                while out and out[-1].isspace():  # token pasting
                    out.pop()
                k += 2
                while k < len(body_tokens) and body_tokens[k].isspace():
                    k += 1
                continue
            if tok in mapping:
                out.append(self._expand(mapping[tok], origin))
            else:
                out.append(tok)
            k += 1
        return "".join(out)

    # ------------------------------------------------------------------ #if expressions
    def _eval_condition(self, text: str, file: str, line: int) -> bool:
        # defined(X) / defined X before macro expansion
        def repl(m: "re.Match[str]") -> str:
            return "1" if (m.group(1) or m.group(2)) in self.macros else "0"

        text = re.sub(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))", repl, text)
        text = self._expand(text, (file, line))
        try:
            return _CondEvaluator(text).evaluate() != 0
        except _CondSyntax as exc:
            raise CompileError(f"bad #if expression: {exc}", file, line, 1) from None


class _CondSyntax(Exception):
    pass


_COND_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_]\w*)|"
                         r"(\|\||&&|==|!=|<=|>=|<<|>>|[-+*/%<>&|^!~?:()]))")
_BINARY_PREC = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7,
                "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}


class _CondEvaluator:
    """Integer expression evaluator for #if (identifiers left after expansion are 0)."""

    def __init__(self, text: str) -> None:
        self.tokens: List[Tuple[str, object]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _COND_TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise _CondSyntax(f"unexpected {text[pos:].strip()[:10]!r}")
            pos = m.end()
            if m.group(1) is not None:
                self.tokens.append(("num", int(m.group(1), 0) if not m.group(1).startswith("0")
                                    or m.group(1) == "0" or m.group(1)[1:2] in "xX"
                                    else int(m.group(1), 8)))
            elif m.group(2) is not None:
                self.tokens.append(("num", 1 if m.group(2) == "true" else 0))
            else:
                self.tokens.append(("op", m.group(3)))
        self.k = 0

    def evaluate(self) -> int:
        if not self.tokens:
            raise _CondSyntax("empty expression")
        value = self._ternary()
        if self.k != len(self.tokens):
            raise _CondSyntax(f"unexpected {self.tokens[self.k][1]!r}")
        return value

    def _peek(self) -> str | None:
        if self.k < len(self.tokens) and self.tokens[self.k][0] == "op":
            return self.tokens[self.k][1]  # type: ignore[return-value]
        return None

    def _ternary(self) -> int:
        cond = self._binary(1)
        if self._peek() == "?":
            self.k += 1
            a = self._ternary()
            if self._peek() != ":":
                raise _CondSyntax("expected ':'")
            self.k += 1
            b = self._ternary()
            return a if cond else b
        return cond

    def _binary(self, min_prec: int) -> int:
        left = self._unary()
        while True:
            op = self._peek()
            prec = _BINARY_PREC.get(op or "")
            if prec is None or prec < min_prec:
                return left
            self.k += 1
            right = self._binary(prec + 1)
            left = self._apply(op, left, right)  # type: ignore[arg-type]

    @staticmethod
    def _apply(op: str, a: int, b: int) -> int:
        if op in ("/", "%") and b == 0:
            raise _CondSyntax("division by zero")
        return {
            "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
            "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
            "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
            ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
            "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
            "*": lambda: a * b, "/": lambda: int(a / b), "%": lambda: a % b,
        }[op]()

    def _unary(self) -> int:
        if self.k >= len(self.tokens):
            raise _CondSyntax("unexpected end of expression")
        kind, val = self.tokens[self.k]
        self.k += 1
        if kind == "num":
            return val  # type: ignore[return-value]
        if val == "(":
            v = self._ternary()
            if self._peek() != ")":
                raise _CondSyntax("expected ')'")
            self.k += 1
            return v
        if val == "!":
            return int(not self._unary())
        if val == "~":
            return ~self._unary()
        if val == "-":
            return -self._unary()
        if val == "+":
            return self._unary()
        raise _CondSyntax(f"unexpected {val!r}")


def preprocess_file(path: str, include_dirs: Sequence[str] = (),
                    defines: Mapping[str, str | None] | None = None) -> PreprocessedSource:
    """Preprocess the file at ``path``."""
    return Preprocessor(include_dirs, defines).run_file(path)


def preprocess_text(text: str, file: str = "<input>", include_dirs: Sequence[str] = (),
                    defines: Mapping[str, str | None] | None = None) -> PreprocessedSource:
    """Preprocess ``text`` as if it were the file ``file``."""
    return Preprocessor(include_dirs, defines).run_text(text, file)
