"""Switch process of the embedded P4 target (a simple_switch_grpc look-alike).

`cli` (entry point) runs a `process.SwitchProcess`: the pipeline (`target`), the ports on Linux
interfaces or pcap files (`ports`, `file_ports` for `--use-files`, `pcap` capture), the
user-space links (`links/`: impairments applied on egress through a delay line, scheduled rate
bursts on the traffic manager's port shapers, and their run-time control), the BMv2 Thrift
runtime server (`thrift/`: server, handlers, priority queues, and our `p4target_links` service
driven by the `impair` command), the P4Runtime server (`p4runtime/`), the log (`switch_log`) and
the stats file (`stats_file`). Flags are parsed by `options` with BMv2's syntax
(`program_options`).
"""
