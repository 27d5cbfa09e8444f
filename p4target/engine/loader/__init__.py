"""BMv2 JSON -> a runnable `Program`, along BMv2's own concepts (`include/bm/bm_sim/`).

| module | BMv2 concept |
|---|---|
| `schema/` | `P4Objects::init_objects`' checks: node types, shapes, required keys, names (one module per BMv2 init step) |
| `layout` | `PHVFactory`: a slot per field, header ids, stacks, unions |
| `expressions` | `Expression`: expression nodes to Python source |
| `calculations` | `NamedCalculation`: hash and checksum inputs |
| `externs` | counter, meter and register arrays, parser value sets |
| `actions` | `ActionFn` and the primitives of simple_switch |
| `parser` | `Parser`, `ParseState`: extractors and parse states |
| `match_tables` | `MatchTable*`, `ActionProfile`: tables and their apply nodes |
| `pipeline` | `Pipeline`, `Conditional`: the control graph |
| `checksums` | `Checksum`: verify and update |
| `deparser` | `Deparser` |
| `names`, `codegen` | the names generated code uses; compiling audited source |

`load_program()` is the one entry point.
"""
from __future__ import annotations

from typing import Callable

from ..errors import ProgramLoadError
from ..program import Program
from .actions import Primitives
from .calculations import Calculations
from .checksums import build_checksums
from .codegen import Namespace
from .deparser import build_deparser
from .expressions import Expressions
from .externs import ExternObjects
from .layout import Layout
from .match_tables import ProgramActions, TableBuilder, build_profile
from .names import LOOKAHEAD, lookahead
from .parser import ParserBuilder
from .pipeline import build_pipeline
from .schema import validate

# the exceptions a JSON the validator let through can still raise while it is built
_MALFORMED = (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError, RecursionError)


def _build(j: dict) -> Program:
    ns = Namespace()
    layout = Layout(j)
    layout.publish(ns)
    ns[LOOKAHEAD] = lookahead(layout.error_value("PacketTooShort"))
    exprs = Expressions(layout, ns)
    calcs = Calculations(j, layout, exprs, ns)
    externs = ExternObjects(j)
    prims = Primitives(layout, exprs, calcs, externs, ns)
    actions = ProgramActions()
    for a in j.get("actions", []):
        actions.add(prims.action(a))
    field_lists = {fl["id"]: [layout.fidx(e["value"]) for e in fl.get("elements", []) if e.get("type") == "field"]
                   for fl in j.get("field_lists", [])}
    learn_lists = {ll["id"]: (ll["name"], [layout.fidx(e["value"]) for e in ll.get("elements", [])
                                           if e.get("type") == "field"])
                   for ll in j.get("learn_lists", [])}
    profiles = {}
    tables = TableBuilder(j, layout, actions, externs.meters, profiles, calcs, ns)
    prog = Program(j, layout.field_index, layout.field_width, layout.header_index, layout.header_fields,
                   layout.metadata, layout.stacks, layout.errors, layout.F0, layout.V0, layout.NX0,
                   actions.by_name, actions.by_id, tables.tables, profiles, externs.counters,
                   externs.meters, externs.registers, field_lists, learn_lists)
    prog.value_sets = externs.value_sets
    prog.parser = ParserBuilder(layout, exprs, prims, externs, ns).build(j.get("parsers", []))
    pipes = {p["name"]: p for p in j.get("pipelines", [])}
    for required in ("ingress", "egress"):
        if required not in pipes:
            raise ProgramLoadError(f"BMv2 JSON has no '{required}' pipeline")
    for name in ("ingress", "egress"):
        for prof in pipes[name].get("action_profiles", []):
            profiles[prof["name"]] = build_profile(prof, calcs)
        setattr(prog, name, build_pipeline(pipes[name], tables, actions, prims))
    prog.verify_checksums, prog.update_checksums = build_checksums(j.get("checksums", []), layout, exprs,
                                                                   calcs, ns)
    prog.deparser = build_deparser(j.get("deparsers", []), layout, prims)
    return prog


def load_program(bmv2_json: dict, log: Callable[[str], None] | None = None) -> Program:
    """Check a BMv2 JSON dict as strictly as BMv2 does and compile it into a Program; raises
    ProgramLoadError (naming the JSON path where it can) when it cannot."""
    if not isinstance(bmv2_json, dict):
        raise ProgramLoadError("BMv2 JSON must be an object")
    messages: list[str] = []
    try:
        validate(bmv2_json)
        prog = _build(bmv2_json)
    except ProgramLoadError:
        raise
    except _MALFORMED as exc:
        raise ProgramLoadError(f"malformed BMv2 JSON: {type(exc).__name__}: {str(exc)[:200]}") from None
    prog.log = messages
    return prog
