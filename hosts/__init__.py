"""gradlane end hosts: gradient header layers, the loss-tolerant transport and the agents.

`hosts` knows nothing of P4Runtime; it speaks UDP/TCP sockets only (see hosts/README.md).
"""
