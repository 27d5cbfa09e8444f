"""Under one congestion, a high-priority layer's packets queue less than a low-priority layer's.

Default policy: layers 0-3 -> queue 6, layers >= 4 with magnitude class 0-3 -> queue 4. Two
workers send layer 0 and layer 10 interleaved, each layer alone above the bottleneck port's
rate; the PS reads the switches' queueing-delay telemetry (tele_qdelay_us) of every header.
"""

BOTTLENECK_PPS = 500
PER_SENDER_PPS = 600  # two senders, two layers: 600 pps per layer, 1200 pps into a 500 pps port


def test_high_priority_layer_sees_less_queueing(network, traffic):
    session = network("incast", workers=2, background=0, bottleneck_pps=BOTTLENECK_PPS, queue_depth=512)
    ps_ip = session.topo.hosts["ps"].ip
    t = traffic(session)
    rx = t.receiver("ps", "--idle", "3")
    senders = [t.start(w, "send", "--dst", ps_ip, "--layers", "0,10", "--count", "300",
                       "--rate", str(PER_SENDER_PPS), "--rank", str(rank), "--mag", "1")
               for rank, w in enumerate(("w1", "w2"))]
    for s in senders:
        t.result(s)
    report = t.result(rx)
    high, low = report["layers"]["0"], report["layers"]["10"]
    print("queueing delay mean (us): high", high["qdelay_us_mean"], "low", low["qdelay_us_mean"])
    assert high["hops"] == 2 and low["hops"] == 2
    assert low["max_qdepth"] > 20, f"no congestion built at the bottleneck: {report['layers']}"
    # If both layers queue alike, the bottleneck port is not shaped as a whole: with BMv2's
    # per-priority-queue rates (set_egress_queue_rate) every queue drains at the full rate on
    # its own and strict priority never has to choose.
    assert high["qdelay_us_mean"] < 0.5 * low["qdelay_us_mean"], report["layers"]
