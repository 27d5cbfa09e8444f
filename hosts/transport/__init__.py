"""The loss-tolerant gradient transport: chunking, bounds, reassembly, and sender and receiver
sessions over a sans-IO port and router (no socket, no clock of their own), with the socket
driver (`endpoint`, `mux`) the agents run; a simulator drives the same core (docs/mechanisms.md)."""
