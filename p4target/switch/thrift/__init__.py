"""simple_switch's Thrift runtime API (`server`, `handlers`, `priority`, `structs`) and our
`p4target_links` service for run-time link changes (`links`)."""
