"""Same seed, same training, where the network allows it (real processes on 127.0.0.1): with
nothing allowed to go missing (topo.agents.RELIABLE_FLAGS) the batches, the initial model and
the aggregation are all seeded, so two runs through a relay that drops 5 % of the packets, at
different timings, end with the same loss and accuracy to the last logged digit, and so does
the TCP baseline, which delivers the same values."""
from hosts.lossy_relay import LossyRelay
from topo.agents import RELIABLE_FLAGS

WORKERS = 2
EPOCHS = 2


def _train(agents, tmp_path, name, loss, relay_seed, extra):
    port = agents.free_port()
    ps_log = tmp_path / f"{name}-ps.jsonl"
    ps = agents.start("hosts.ps", "--workers", str(WORKERS), "--bind", "127.0.0.1", "--port",
                      str(port), "--log", str(ps_log), "--seed", "4", "--epochs", str(EPOCHS),
                      *extra)
    relay, target = None, port
    if loss > 0:
        relay = LossyRelay(("127.0.0.1", 0), ("127.0.0.1", port), loss, seed=relay_seed).start()
        target = relay.address[1]
    workers = [agents.start("hosts.worker", "--rank", str(r), "--workers", str(WORKERS),
                            "--ps", "127.0.0.1", "--ps-port", str(target), "--bind", "127.0.0.1",
                            "--port", "0", "--seed", "4", "--log",
                            str(tmp_path / f"{name}-w{r}.jsonl"), *extra)
               for r in range(WORKERS)]
    try:
        rc, _, err = agents.wait(ps, 180)
        assert rc == 0, err
        for w in workers:
            wrc, _, werr = agents.wait(w, 30)
            assert wrc == 0, werr
    finally:
        dropped = 0
        if relay is not None:
            dropped = relay.counters["dropped_up"] + relay.counters["dropped_down"]
            relay.stop()
    events = agents.read_jsonl(ps_log)
    epochs = [(e["loss"], e["test_loss"], e["accuracy"]) for e in events if e["event"] == "epoch"]
    assert len(epochs) == EPOCHS
    return epochs, dropped


def test_reliable_runs_with_the_same_seed_end_the_same(agents, tmp_path):
    first, dropped_1 = _train(agents, tmp_path, "a", 0.05, 1, RELIABLE_FLAGS)
    second, dropped_2 = _train(agents, tmp_path, "b", 0.05, 2, RELIABLE_FLAGS)
    tcp, _ = _train(agents, tmp_path, "tcp", 0.0, 0, ("--transport", "tcp"))
    print(f"per epoch (train loss, test loss, accuracy): {first}; TCP {tcp}")
    assert dropped_1 > 0 and dropped_2 > 0       # the relay dropped packets (repaired)
    assert first == second == tcp
    assert first[-1][2] > 0.85
