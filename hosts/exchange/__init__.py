"""The PS/worker round exchange over each transport: ltp and mlt (UDP, loss-tolerant) and tcp."""
