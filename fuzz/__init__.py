"""Bounded fuzzers (``make fuzz``, not in CI): frames and P4Runtime requests against a local
embedded switch, policy files against the loader and gradctl, gradient packets against a
local parameter server. Each stops by itself (count and time bounds) and reports counts tried
and failures: crashes, hangs and tracebacks."""
