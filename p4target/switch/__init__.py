"""Switch process of the embedded P4 target (a simple_switch_grpc look-alike).

`cli` (entry point) runs a `process.SwitchProcess`: the pipeline (`target`), the ports on Linux
interfaces or pcap files (`ports`, `file_ports` for `--use-files`, with link `impairments` applied on egress through a
`delay_line`, and `pcap` capture), scheduled rate bursts on the traffic manager's port
shapers (`port_rates`), the BMv2 Thrift runtime server (`thrift_server`, `thrift_handlers`,
`thrift_priority`, and `thrift_links` for run-time link changes through `link_control`,
driven by the `impair` command), the P4Runtime server (`p4runtime`) and the log
(`switch_log`). Flags are parsed by `options` with BMv2's syntax (`program_options`).
"""
