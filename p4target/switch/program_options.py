"""Command-line syntax as BMv2 reads it (boost::program_options' default style), so every
argv that `simple_switch` accepts is split the same way here.

- `--name VALUE`, `--name=VALUE`; a unique prefix of a long name is that option (`--thrift`
  is `--thrift-port`); a flag takes no value.
- `-x VALUE` and `-xVALUE`: the value glued to a short option is everything after the letter,
  spaces included (p4c's STF runner passes `"-i 0@pcap0"` as one argument).
- An option that needs a value takes the next token unless that is a known option (so
  `--use-files -1` is a value); one with an implicit value (`--pcap [DIR]`) does the same and
  falls back on its implicit value (boost >= 1.65).
- `--` ends the options: every later token is positional. `-` alone is positional.
- A single-valued option given twice is an error; repeatable ones collect every value.
"""
from __future__ import annotations

from dataclasses import dataclass

from p4target.switch.errors import OptionError


@dataclass(frozen=True)
class Spec:
    """One option: its long name, optional one-letter alias and how it takes a value."""

    name: str
    short: str | None = None
    takes_value: bool = True
    implicit: str | None = None  # value when given without one
    repeatable: bool = False
    ours: bool = False  # not a BMv2 flag: never makes a BMv2 flag's prefix ambiguous


@dataclass
class Parsed:
    """The options given (name -> value, list of values for repeatable ones, True for flags)
    and the positional tokens in order; `after_separator` are the tokens after `--`."""

    values: dict[str, object]
    positionals: list[str]
    after_separator: list[str]


def _looks_like_option(token: str) -> bool:
    return len(token) > 1 and token.startswith("-")


class OptionSyntax:
    """A set of option specs and the boost-style parser over them."""

    def __init__(self, specs: list[Spec]) -> None:
        self._long = {s.name: s for s in specs}
        self._short = {s.short: s for s in specs if s.short}

    def _long_spec(self, name: str) -> Spec:
        spec = self._long.get(name)
        if spec is not None:
            return spec
        guesses = sorted(n for n in self._long if n.startswith(name)) if name else []
        if len(guesses) > 1:
            theirs = [n for n in guesses if not self._long[n].ours]
            guesses = theirs if len(theirs) == 1 else guesses
        if len(guesses) == 1:
            return self._long[guesses[0]]
        if guesses:
            raise OptionError(f"option '--{name}' is ambiguous and matches "
                              + ", ".join(f"'--{g}'" for g in guesses))
        raise OptionError(f"unrecognised option '--{name}'")

    def parse(self, argv: list[str]) -> Parsed:
        """Split `argv`; raises OptionError naming the offending option."""
        values: dict[str, object] = {}
        positionals: list[str] = []
        after: list[str] = []
        i = 0
        while i < len(argv):
            token = argv[i]
            i += 1
            if token == "--":
                after = list(argv[i:])
                break
            if token.startswith("--"):
                name, eq, glued = token[2:].partition("=")
                spec = self._long_spec(name)
                shown = f"--{spec.name}"
                value, i = self._value(spec, shown, glued if eq else None, argv, i)
            elif _looks_like_option(token):
                spec = self._short.get(token[1])
                if spec is None:
                    raise OptionError(f"unrecognised option '{token[:2]}'")
                shown = f"-{spec.short}"
                value, i = self._value(spec, shown, token[2:] or None, argv, i)
            else:
                positionals.append(token)
                continue
            self._store(values, spec, value)
        return Parsed(values, positionals, after)

    def _is_known_option(self, token: str) -> bool:
        if token == "--":
            return True
        if token.startswith("--"):
            try:
                self._long_spec(token[2:].partition("=")[0])
            except OptionError:
                return False
            return True
        return _looks_like_option(token) and token[1] in self._short

    def _value(self, spec: Spec, shown: str, glued: str | None, argv: list[str], i: int) -> tuple[object, int]:
        if not spec.takes_value:
            if glued is not None:
                raise OptionError(f"option '{shown}' does not take a value")
            return True, i
        if glued is not None:
            return glued, i
        if i < len(argv) and not self._is_known_option(argv[i]):  # so `--use-files -1` is a value
            return argv[i], i + 1
        if spec.implicit is not None:
            return spec.implicit, i
        raise OptionError(f"the required argument for option '{shown}' is missing")

    @staticmethod
    def _store(values: dict[str, object], spec: Spec, value: object) -> None:
        if spec.repeatable:
            values.setdefault(spec.name, []).append(value)  # type: ignore[union-attr]
        elif spec.name in values:
            raise OptionError(f"option '--{spec.name}' cannot be specified more than once")
        else:
            values[spec.name] = value
