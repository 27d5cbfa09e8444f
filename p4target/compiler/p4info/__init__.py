"""P4Info for the embedded compiler, interchangeable with p4c-bm2-ss's.

| module | owns |
|---|---|
| `hints` | what the back end knows beyond the BMv2 JSON (`P4InfoHints` and its parts) |
| `ids` | p4c's ids (resource prefix + Jenkins hash, `@id`, collision probing) and aliases |
| `annotations` | which annotations P4Info keeps, and `@brief`/`@description` as `doc` |
| `new_types` | P4 `type` declarations: `type_name`, translated widths, `type_info.new_types` |
| `builder` | `build_p4info(bmv2_json, hints)`: the P4Info message of a program |
| `formats` | files in p4c's three formats (text, JSON, binary) by suffix |

This package's names are re-exported here for its users (`from p4target.compiler.p4info import
build_p4info, write_p4info`).
"""
from p4target.compiler.p4info.builder import DEFAULT_TABLE_SIZE, build_p4info
from p4target.compiler.p4info.formats import (FORMATS_BY_SUFFIX, TEXT_HEADER, p4info_format, parse_p4info,
                                              read_p4info, serialize_p4info, write_p4info)
from p4target.compiler.p4info.hints import (PKG_INFO_KEYS, ControllerHeaderHint, DigestHint, NewTypeHint,
                                            P4InfoHints, TableHints)
from p4target.compiler.p4info.ids import (PREFIX_ACTION, PREFIX_ACTION_PROFILE, PREFIX_CONTROLLER_HEADER,
                                          PREFIX_COUNTER, PREFIX_DIGEST, PREFIX_DIRECT_COUNTER,
                                          PREFIX_DIRECT_METER, PREFIX_METER, PREFIX_REGISTER, PREFIX_TABLE,
                                          PREFIX_VALUE_SET, SymbolIds, hashed_id, jenkins_one_at_a_time)

__all__ = [
    "DEFAULT_TABLE_SIZE", "build_p4info",
    "FORMATS_BY_SUFFIX", "TEXT_HEADER", "p4info_format", "parse_p4info", "read_p4info",
    "serialize_p4info", "write_p4info",
    "PKG_INFO_KEYS", "ControllerHeaderHint", "DigestHint", "NewTypeHint", "P4InfoHints", "TableHints",
    "PREFIX_ACTION", "PREFIX_ACTION_PROFILE", "PREFIX_CONTROLLER_HEADER", "PREFIX_COUNTER",
    "PREFIX_DIGEST", "PREFIX_DIRECT_COUNTER", "PREFIX_DIRECT_METER", "PREFIX_METER", "PREFIX_REGISTER",
    "PREFIX_TABLE", "PREFIX_VALUE_SET", "SymbolIds", "hashed_id", "jenkins_one_at_a_time",
]
