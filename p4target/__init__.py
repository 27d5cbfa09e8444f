"""Embedded P4 target: a P4_16 (v1model) compiler emitting BMv2 JSON + P4Info, and a
software switch that loads BMv2 JSON and serves P4Runtime like simple_switch_grpc.

This package knows nothing of gradients; it is a general-purpose v1model target.
"""
