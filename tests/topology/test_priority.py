"""Under one congestion, a high-priority layer's packets queue less than a low-priority layer's.

Default policy: layers 0-3 -> queue 6, layers >= 4 with magnitude class 0-3 -> queue 4. Two
workers send layer 0 and layer 10 interleaved, together above the bottleneck's rate; the PS
reads the switches' queueing-delay telemetry (tele_qdelay_us) from every received header.
"""


def test_high_priority_layer_sees_less_queueing(network, traffic):
    session = network("incast", workers=2, background=0, bottleneck_pps=500, queue_depth=256)
    ps_ip = session.topo.hosts["ps"].ip
    t = traffic(session)
    rx = t.receiver("ps", "--idle", "3")
    senders = [t.start(w, "send", "--dst", ps_ip, "--layers", "0,10", "--count", "150", "--rate", "400",
                       "--rank", str(rank), "--mag", "1")
               for rank, w in enumerate(("w1", "w2"))]
    for s in senders:
        t.result(s)
    report = t.result(rx)
    high, low = report["layers"]["0"], report["layers"]["10"]
    assert high["hops"] == 2 and low["hops"] == 2
    assert low["max_qdepth"] > 10, f"no congestion built: {report}"
    assert high["qdelay_us_mean"] < 0.5 * low["qdelay_us_mean"], report
