"""gradlane end hosts: gradient header layers, the loss-tolerant transport and the agents.

`hosts` knows nothing of P4Runtime; it speaks UDP/TCP sockets only. Every agent takes --help,
prints one-line errors (exit 2), exits cleanly (0) on SIGTERM, writes --pid-file PATH, logs
JSON lines to --log FILE (default stdout) and can --die-with-parent.

Agents
  python -m hosts.ps --workers N [--bind 0.0.0.0] [--port 19527] [--epochs 8] [--rounds R]
        [--lr 0.1] [--momentum 0.9]
  python -m hosts.worker --rank R --workers N --ps IP [--ps-port 19527] [--bind ADDR]
        [--port 19527 | 0] [--rounds R]
    shared model flags:     --model mlp|cnn --hidden 64 (64-64-10 MLP on sklearn digits; cnn: its
        dense width) --filters 16 (cnn) --batch 32 --seed 1
    shared transport flags: --transport ltp|tcp|mlt --job 1 --job-key FILE (required: the job's
        secret, 0600; the PS creates it when missing) [--packet-mac]
        --bound 0.1 --layer-bounds B0,B1,..
        --bound-scope tensor|layer (tensor; layer with --layer-bounds) --pull-bound B | --reliable-pull
        --phase-aware [--phase-delta 0.4 --phase-check-rounds 10 --phase-per-layer]
        --hole-fill zero|previous|mean-delivered (default mean-delivered)
        --deadline telemetry|adaptive|fixed (ltp: telemetry, mlt: fixed) --deadline-ms 500
        [--pull-deadline-ms] --deadline-floor-ms 200 --deadline-ceiling-ms 2000 --deadline-mult 3
        --chunk-elems 64 --pace-pps 0 --probe-ms 20 --order interleave|shuffle|layer
        --window 10 (0: none) --cc ecn|reno --cc-delay-ms 20 --cc-mark-depth 40 --peer-timeout 10
        --join-timeout 60 --pcn [--pcn-threshold 10 --pcn-timeout-ms 50]
        --tcp-cc NAME --tcp-ecn on|off (tcp only)
    mlt is the software-MLT baseline: one fixed bound for push and pull, every packet PLAIN.
    JSON events: start (config), bounds (scope, bounds below one chunk), round (time_s, push_s,
        pull_s, compute_s, control_s, wait_s (worker), closed_by, resends, delivered,
        delivered_min, delivered_tensor(_min) (PS), violations, deadline_ms, telemetry,
        deadline_adaptation, bytes, retransmissions, drops, bounds, phase), violation, adaptation (law, stage, round, deadline_ms, reason),
        epoch (loss, test_loss, accuracy), done (violations per layer; tcp: connections).
  python -m hosts.pcn serve [--port 19527 --tcp-port 5002 --gradlane-bytes B --ranks N]
                    | start --ps IP [--threshold 10 --count N]
                    | bursts --ps IP --transport tcp|gradlane --bytes B [--pcn --lead-ms 1000]
  python -m hosts.background sink|flows|microburst|incast ...   (DCTCP if available, else cubic)
  python -m hosts.lossy_relay --listen H:P --target H:P --loss F [--data-only] [--seed S]
        [--burst START+DURATION@LOSS ...]   (loss bursts, the switch's syntax, e.g. 5s+100ms@0.8)
  python -m hosts.tensor_exchange recv|send ...   (the transport alone, random tensors, per-round
        JSON; used by benchmarks/transport.py and for path tests)

Start-up: a worker joins the PS with a handshake proving the job's key (--job-key FILE; HELLO
kind 8, HELLO_ACK kind 9, HMAC-SHA256 over both sides' nonces: exchange/join.py) and exits with
a one-line error if the PS's answer shows a different model, --chunk-elems, --transport or --job. Host-defined control kinds: 6 PCN_START, 7 PCN_ACK, 8 HELLO, 9 HELLO_ACK.

Modules
  wire (struct fast path, GRADLANE_UDP_PORT, KIND_*, FLAG_*, TOS helpers), headers (Scapy
  GradientHeader + control payload layers), transport/ (chunking, bounds, phase, holes,
  deadline, reassembly, endpoint, mux, sender, receiver, counters), exchange/ (config, ltp/mlt
  over UDP, tcp baseline, tcp_options), training/ (dataset, models: mlp and cnn, aggregate), loss_model,
  lossy_relay, pcn, ddl_bursts (the PCN experiment's DDL bursts over TCP or our sender), background,
  cli, jsonlog, errors (HostsError, ConfigError, PacketError,
  PeerTimeout). docs/mechanisms.md maps each paper's mechanism to its module.
"""
