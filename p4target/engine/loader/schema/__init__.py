"""BMv2 JSON checked at load time, at least as strictly as BMv2's `P4Objects::init_objects`.

Every node type, shape, required key, value kind and name reference BMv2 checks is checked here,
before anything is built, and a failure names its JSON path, e.g.
`actions[3].primitives[0].parameters[1]: expression node needs "type"`. Where BMv2 would load
JSON that cannot run (no deparser, a dangling next state), the program is refused too. Keys BMv2
falls back on when absent (`action_ids` -> `actions` by name, `with_counters`, `is_direct`,
`verify`/`update`, a transition without `type`...) may stay absent.

| module | BMv2's checks |
|---|---|
| `values` | value kinds (jsoncpp's `asInt`, `asString`...), unique names and ids |
| `declarations` | header types, headers, stacks, unions, errors, enums, stateful arrays, calculations |
| `expressions` | `build_expression` |
| `actions` | `init_actions`, `add_primitive_to_action`, `process_single_param` |
| `parsers` | `init_parsers`, `init_deparsers` |
| `pipelines` | `init_pipelines`, `check_next_nodes`, `init_checksums` |
"""
from __future__ import annotations

from typing import Any

from ...errors import ProgramLoadError
from .actions import PRIMITIVES, ActionChecks
from .declarations import DeclarationChecks
from .expressions import ExpressionChecks
from .parsers import ParserChecks
from .pipelines import KEY_MATCH_TYPES, PipelineChecks
from .values import _Invalid

def validate(j: Any) -> None:
    """Raise ProgramLoadError naming the JSON path of the first thing BMv2 would refuse (or that
    cannot run)."""
    try:
        _Validator(j).run()
    except _Invalid as exc:
        raise ProgramLoadError(str(exc)) from None
    except RecursionError:
        raise ProgramLoadError("BMv2 JSON is nested too deeply") from None


class _Validator(DeclarationChecks, ExpressionChecks, ActionChecks, ParserChecks, PipelineChecks):
    """One run of the checks over one JSON document, in BMv2's order of `init_objects`."""

    def __init__(self, j: Any) -> None:
        self.j = j
        self.primitives = dict(PRIMITIVES)
        self.key_match_types = KEY_MATCH_TYPES

    def run(self) -> None:
        j = self.obj(self.j, "")
        self.meta(j)
        self.layout()
        self.field_aliases()
        self.errors = self.codes("errors")
        for i, e in enumerate(self.items("enums")):
            self.obj(e, f"enums[{i}]")
            self.string(self.key(e, "name", f"enums[{i}]"), f"enums[{i}].name")
            self.codes_of(e.get("entries", []), f"enums[{i}].entries")
        self.calcs = self.named("calculations")
        for n, c in self.calcs.items():
            self.calculation(c, self.path_of("calculations", n))
        self.counters = self.named("counter_arrays")
        self.meters = self.named("meter_arrays")
        self.registers = self.named("register_arrays")
        self.vsets = self.named("parse_vsets")
        self.externs = self.named("extern_instances")
        for n, e in self.externs.items():
            self.fail(f"{self.path_of('extern_instances', n)}.type",
                      f"extern type {e.get('type')!r:.40} is not supported by this switch")
        self.stateful()
        self.actions()
        self.parsers()
        self.deparsers()
        self.pipelines()
        self.checksums()
        self.field_lists()
