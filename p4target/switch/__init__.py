"""Switch process of the embedded P4 target (a simple_switch_grpc look-alike).

Built so far: command-line options (`options`), the pcap file format (`pcap`) and link
impairment specs and decisions (`impairments`).
"""
