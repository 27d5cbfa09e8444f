"""Helpers the test tiers share, imported as `support.<module>` (pytest's pythonpath is `tests`).

| module | what |
|---|---|
| `dataplane` | `p4src/gradlane.p4` compiled with the embedded compiler |
| `p4info_index` | name <-> id lookups over a P4Info message, for tests of what the compiler wrote |
| `p4runtime_server` | a small in-process P4Runtime server for the controller's tests |
| `controller_topologies` | topology descriptions for the controller's tests (the diamond) |
| `switch_process` | `python -m p4target switch` as a child process, stopped by PID |
| `switch_probes` | probe frames and an L3 router for switch-process tests on veth links |
| `topology_helpers` | host traffic, policies and gradctl output for the Mininet tests |
| `traffic` | the traffic script those tests run inside Mininet hosts |
"""
