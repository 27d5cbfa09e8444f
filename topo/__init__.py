"""Mininet topologies for gradlane: `make run|demo|stop|check-env`.

`topo` wires the other packages together. Modules, in the order a run uses them:
`topologies` (built-in incast / leaf-spine / PCN tree, built with the topology description
model of docs/contracts.md, `controller.topology`, which topo writes and the controller reads);
`shaping` (who makes link delay/loss: netem, the
embedded switch's `--impair`, or nobody); `network` with `switch_node` (one `$SWITCH` process per
switch, health-checked) and `host_node` (agent hosts); `session` (network + controller daemon
+ run record); `link_bursts` (loss bursts started at run time on a running session's
bottleneck, e.g. at chosen training rounds); `training` and `summary` (a job on the hosts and its report); `cli` (Mininet CLI
commands); `run`, `stop`, `check_env` (the entry points); `pidfile` (every process a run starts,
stopped by PID); `agents` (the other packages' command lines); `processes`; `toolchain`.
"""
