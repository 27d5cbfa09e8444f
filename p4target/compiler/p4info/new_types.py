"""Values declared with a P4 ``type`` in P4Info: ``type_name`` references, translated widths
and ``type_info.new_types``."""
from __future__ import annotations

from typing import Any

from p4target.compiler.p4info.annotations import annotation_name, apply_annotations
from p4target.compiler.p4info.hints import NewTypeHint


class NewTypes:
    """P4Info of values declared with a P4 ``type``, as p4c writes it: a ``type_name``
    reference, the controller's bit width for a translated type (0 for a string translation),
    and a ``type_info.new_types`` entry for every type referenced."""

    def __init__(self, hints: dict[str, NewTypeHint]) -> None:
        self.hints = hints
        self.used: set[str] = set()

    def reference(self, type_name: str | None) -> bool:
        """Record a use of ``type_name``; False when it is not a P4 ``type``."""
        if not type_name or type_name not in self.hints:
            return False
        self.used.add(type_name)
        return True

    def describe(self, msg: Any, type_name: str | None, width: int) -> None:
        """Set ``bitwidth`` (and ``type_name``) of a match field, action parameter or
        controller header field of data-plane width ``width``."""
        msg.bitwidth = int(width)
        if self.reference(type_name):
            msg.type_name.name = type_name
            nt = self.hints[type_name]
            if nt.uri is not None:
                msg.bitwidth = nt.sdn_bitwidth or 0

    def write(self, type_info: Any) -> None:
        """Fill ``type_info.new_types`` with every type referenced so far."""
        for name in sorted(self.used):
            nt = self.hints[name]
            spec = type_info.new_types[name]
            apply_annotations(spec, [a for a in nt.annotations
                                      if annotation_name(a) != "p4runtime_translation"])
            if nt.uri is not None:
                spec.translated_type.uri = nt.uri
                if nt.sdn_bitwidth is None:
                    spec.translated_type.sdn_string.SetInParent()
                else:
                    spec.translated_type.sdn_bitwidth = nt.sdn_bitwidth
            elif nt.is_bool:
                spec.original_type.bool.SetInParent()
            else:
                bits = spec.original_type.bitstring.int if nt.signed else spec.original_type.bitstring.bit
                bits.bitwidth = nt.bitwidth
