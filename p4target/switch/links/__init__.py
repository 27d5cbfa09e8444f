"""User-space links: impairment specs (`impairments`), the delay line, port rate schedules
(`port_rates`) and the run-time control of all three (`control`)."""
