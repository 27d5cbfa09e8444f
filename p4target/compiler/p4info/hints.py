"""What the BMv2 JSON does not say about a program's control-plane API: the hints the back
end hands to the P4Info builder."""
from __future__ import annotations

from dataclasses import dataclass, field

# The PkgInfo fields p4c fills from ``@pkginfo`` keys (``arch`` overrides the compiler's).
PKG_INFO_KEYS = ("name", "version", "arch", "organization", "contact", "url")


@dataclass
class TableHints:
    """P4Info facts of one table that BMv2 JSON does not carry."""
    annotations: list[str] = field(default_factory=list)        # e.g. ['@brief("...")'] (not @name)
    action_scopes: dict[str, str] = field(default_factory=dict)  # action -> TABLE_AND_DEFAULT|TABLE_ONLY|DEFAULT_ONLY
    action_ref_annotations: dict[str, list[str]] = field(default_factory=dict)  # action -> its reference's annotations
    const_default_action: bool = False
    is_const_table: bool = False                                # had `const entries`
    key_names: list[str] | None = None                       # override match field names
    key_bitwidths: list[int] | None = None                   # override widths (expressions, slices)
    key_type_names: list[str | None] | None = None        # P4 ``type`` of each key (P4Info type_name)
    key_match_kinds: list[str] | None = None                 # source match kinds (JSON has "ternary" for "optional")
    key_annotations: list[list[str]] = field(default_factory=list)  # each key's annotations (not @name)
    implementation: str | None = None                        # action profile/selector name
    direct_counter: str | None = None
    direct_meter: str | None = None
    size: int | None = None


@dataclass
class ControllerHeaderHint:
    """A header type annotated ``@controller_header("packet_in"|"packet_out")``."""
    name: str                       # header type name, e.g. "packet_in_header_t"
    controller_header: str          # "packet_in" / "packet_out"
    fields: list[tuple[str, int]]   # (field name, bitwidth) in order
    annotations: list[str] = field(default_factory=list)
    type_names: list[str | None] = field(default_factory=list)  # P4 ``type`` of each field
    field_annotations: list[list[str]] = field(default_factory=list)  # each field's annotations


@dataclass
class DigestHint:
    """One ``digest<T>(...)`` call: its BMv2 learn list and the struct type T."""
    name: str                       # BMv2 learn_list name
    type_name: str                  # struct type name: the P4Info digest name and type_info key
    fields: list[tuple[str, int]]
    type_names: list[str | None] = field(default_factory=list)  # P4 ``type`` of each field


@dataclass
class NewTypeHint:
    """A P4 ``type`` declaration for ``type_info.new_types``: its underlying type (``bitwidth``
    and ``signed``, or ``is_bool``), or with ``uri`` set its ``@p4runtime_translation`` to
    ``sdn_bitwidth`` bits (None: to strings)."""
    bitwidth: int = 0
    signed: bool = False
    is_bool: bool = False
    uri: str | None = None
    sdn_bitwidth: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class P4InfoHints:
    """Everything the back end knows about the program's control-plane API beyond BMv2 JSON.

    ``hidden`` names compiler-synthesized tables/actions to leave out of P4Info (as p4c does
    for ``@hidden``). Without it, a table whose name has no ``.`` (user tables are always
    qualified by their control) is taken as synthesized, and so is an action without ``.``
    that no visible table references. ``counter_units`` maps a counter name to its v1model
    ``CounterType`` ("packets", "bytes", "packets_and_bytes"; default "packets_and_bytes",
    which is what BMv2 counts).
    """
    arch: str = "v1model"
    tables: dict[str, TableHints] = field(default_factory=dict)
    action_annotations: dict[str, list[str]] = field(default_factory=dict)
    action_param_annotations: dict[str, list[list[str]]] = field(default_factory=dict)  # per action-data param
    extern_annotations: dict[str, list[str]] = field(default_factory=dict)   # counters, meters, registers, profiles
    controller_headers: list[ControllerHeaderHint] = field(default_factory=list)
    digests: list[DigestHint] = field(default_factory=list)
    explicit_ids: dict[str, int] = field(default_factory=dict)   # @id annotations: name -> id
    register_types: dict[str, tuple[int, bool]] = field(default_factory=dict)  # name -> (bitwidth, signed)
    # value set name -> its match fields (name, bitwidth, match kind); default one unnamed exact field
    value_set_matches: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)
    # actions called directly from control code: name -> [(param, bitwidth)]; p4c lists them
    direct_actions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # serializable enums a table key or action parameter uses: name -> (bitwidth, [(member, value)])
    serializable_enums: dict[str, tuple[int, list[tuple[str, int]]]] = field(default_factory=dict)
    counter_units: dict[str, str] = field(default_factory=dict)
    # ``@pkginfo(key="value", ...)`` on the main package instance (name, version, arch,
    # organization, contact, url) and the instance's other annotations (@brief/@description
    # become ``pkg_info.doc``)
    pkg_info: dict[str, str] = field(default_factory=dict)
    pkg_annotations: list[str] = field(default_factory=list)
    # P4 ``type`` declarations by name, and the types of action parameters and registers
    new_types: dict[str, NewTypeHint] = field(default_factory=dict)
    action_param_types: dict[str, list[str | None]] = field(default_factory=dict)
    register_type_names: dict[str, str] = field(default_factory=dict)
