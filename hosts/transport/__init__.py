"""The loss-tolerant gradient transport: chunking, bounds, reassembly, sender and receiver
sessions on one UDP endpoint, and the reliable TCP baseline."""
